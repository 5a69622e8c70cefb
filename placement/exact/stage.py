"""The stage ``J \\ I`` of the lattice kernel: its nodes' state, running sums and exact sums.

A node *crosses* the stage boundary when an edge joins it to the other side (it is inside with
a successor outside, or outside with a successor inside); it *feeds* the stage when it is a
forward node outside with a forward successor inside (the stage input, for recomputation).
The node state (``in_stage``, ``stage_succ``: successors inside, ``fwd_succ_in``: forward
successors inside, when the node is forward) tells both in O(1).

:func:`placement.exact.lattice_search.lattice_dp` moves a group in when its search pushes it and
out when it pops it (:func:`_move_group`), and reads the crossing and feeding of the nodes a
move can change (the group's nodes and their predecessors) before and after.
"""

from __future__ import annotations

from numba import njit


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
