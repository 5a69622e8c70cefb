"""The stage ``J \\ I`` of the lattice kernel: its nodes' state, running sums and exact sums.

A node *crosses* the stage boundary when an edge joins it to the other side (it is inside with
a successor outside, or outside with a successor inside); it *feeds* the stage when it is a
forward node outside with a forward successor inside (the stage input, for recomputation).
The node state (``in_stage``, ``stage_succ``: successors inside, ``fwd_succ_in``: forward
successors inside, when the node is forward) tells both in O(1).

The cover-edge search adds one group per level (:func:`push_group`): the level's running sums
are the previous level's plus the group's terms, with their error bounds
(:mod:`placement.exact.exactsum`, steps 1-3). Where an interval cannot decide, the stage's
exact sums are rebuilt from its nodes (:func:`rebuild_exact`), the correctly rounded values
that :func:`placement.evaluate.device_loads` computes.
"""

from __future__ import annotations

from numba import njit

from .exactsum import _grow
from .pairs import _holds


@njit(cache=True, nogil=True)
def _crossing(in_stage, stage_succ, out_degree, u):
    """Whether node ``u`` has an edge to the other side of the stage."""
    if in_stage[u]:
        return stage_succ[u] < out_degree[u]
    return stage_succ[u] > 0


@njit(cache=True, nogil=True)
def _feeding(in_stage, fwd_succ_in, node_fwd, u):
    """Whether node ``u`` is a forward node outside the stage feeding a forward node inside."""
    return (not in_stage[u]) and node_fwd[u] and fwd_succ_in[u] > 0


@njit(cache=True, nogil=True)
def _move_group(g, enter, node_links, node_state):
    """Move group ``g``'s nodes into (``enter``) or out of the stage: membership and successor counts.

    ``node_links`` = (group_start, group_nodes, pred_start, preds, node_fwd); ``node_state`` =
    (in_stage, stage_succ, fwd_succ_in), updated in place.
    """
    group_start, group_nodes, pred_start, preds, node_fwd = node_links
    in_stage, stage_succ, fwd_succ_in = node_state
    step = 1 if enter else -1
    for k in range(group_start[g], group_start[g + 1]):
        x = group_nodes[k]
        in_stage[x] = enter
        for m in range(pred_start[x], pred_start[x + 1]):
            u = preds[m]
            stage_succ[u] += step
            if node_fwd[x] and node_fwd[u]:
                fwd_succ_in[u] += step


@njit(cache=True, nogil=True)
def rebuild_exact(
    level, pair_id, stack_group, node_links, node_state, node_terms, expansions, expansion_len, rebuild_mark
):
    """Rebuild ``expansions[level]``: the exact sums of the stage made of the groups ``stack_group[1..level]``.

    ``node_terms`` = (node_val, cross_val, in_val, out_degree). The node state must hold that stage. Boundary nodes (stage nodes, and outside predecessors
    of stage nodes) are counted once each, under the stamp ``pair_id``.
    """
    group_start, group_nodes, pred_start, preds, node_fwd = node_links
    in_stage, stage_succ, fwd_succ_in = node_state
    node_val, cross_val, in_val, out_degree = node_terms
    n_val = node_val.shape[0]
    n_cross = cross_val.shape[0]
    q_in = n_val + n_cross
    for q in range(expansion_len.shape[1]):
        expansion_len[level, q] = 0
    for depth in range(1, level + 1):
        g = stack_group[depth]
        for k in range(group_start[g], group_start[g + 1]):
            x = group_nodes[k]
            for q in range(n_val):
                v = node_val[q, x]
                if v != 0.0:
                    expansion_len[level, q] = _grow(expansions[level, q], expansion_len[level, q], v)
            for m in range(pred_start[x] - 1, pred_start[x + 1]):
                u = x if m < pred_start[x] else preds[m]
                if rebuild_mark[u] == pair_id:
                    continue
                rebuild_mark[u] = pair_id
                if _crossing(in_stage, stage_succ, out_degree, u):
                    for cl in range(n_cross):
                        v = cross_val[cl, u]
                        if v != 0.0:
                            q = n_val + cl
                            expansion_len[level, q] = _grow(expansions[level, q], expansion_len[level, q], v)
                if _feeding(in_stage, fwd_succ_in, node_fwd, u) and in_val[u] != 0.0:
                    expansion_len[level, q_in] = _grow(expansions[level, q_in], expansion_len[level, q_in], in_val[u])


@njit(cache=True, nogil=True)
def enter_target_stage(target, row_pos, bits, stack_group, node_links, node_state):
    """Pair mode, before an exact rebuild: list the groups of ``K \\ I`` as ``stack_group[1..]`` and move them in.

    Returns their number (the caller moves them out again after the pair).
    """
    moved = 0
    for g in range(node_links[0].shape[0] - 1):
        if _holds(bits, target, g) and not _holds(bits, row_pos, g):
            moved += 1
            stack_group[moved] = g
            _move_group(g, True, node_links, node_state)
    return moved
