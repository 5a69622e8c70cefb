"""The search of one row of the lattice kernel's table: candidate stages, then their evaluation.

:func:`~placement.exact.lattice_search.lattice_dp` (the contract is its module docstring) calls
:func:`_search_row` for each row ``I`` and then :func:`_close_row`. The search makes candidate
stages ``J \\ I`` in one of two ways and hands each to the one evaluate-and-relax step
(:func:`placement.exact.stage_eval._evaluate_and_relax`):

* the **cover-edge search** (:func:`_next_edge`, :func:`_push_group`): a depth-first search over
  the supersets ``J`` of ``I`` through cover edges, adding one group per level; each level keeps
  its running sums (``stage_sums``, with error bounds ``stage_errors``) and is undone on pop;
* **pair mode** (:func:`placement.exact.pairs.next_target`, :func:`placement.exact.pairs.pair_stage`): each target ``K > I`` directly, the
  stage's sums being differences of the two ideals' sums.

Every helper is inlined (``inline="always"``) and receives its arrays *borrowed*
(:mod:`placement.exact.borrow`: no reference counts), grouped in the named tuples below; that is
what lets per-pair helpers cost nothing next to the code written out in one function (the
measurements are in :mod:`placement.exact.lattice_search`). The search's main arrays (fields of
:class:`Work`): ``stage_sums``/``stage_errors`` the running sums and their error bounds per
depth, ``exact_terms``/``exact_len`` the exact sums, ``lo_q``/``hi_q`` the stage's quantities as
intervals, ``mark`` (push or pair) and ``rebuild_mark`` (exact rebuild) node stamps. In the code,
``stage_depth`` is the number of groups in the stage (its depth in the search), ``target_pos``
pair mode's target, ``compute_q`` the ``node_val`` row of a type's compute, ``toggles`` the stamp
counter of ``mark``; ``settings`` and ``pair_targets`` are the :class:`Settings` and the targets.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from .cells import _open_cells
from .codes import INHERIT
from .exactsum import EPS
from .pairs import next_target, pair_stage
from .reach import beyond_reach, fill_reach
from .stage import _crossing, _feeding, _move_group
from .stage_eval import _evaluate_and_relax


class Graph(NamedTuple):
    """The lattice (cover edges in CSR form) and the graph's per-node data (module ``lattice_search``)."""

    up_start: np.ndarray
    up_group: np.ndarray
    up_target: np.ndarray
    group_start: np.ndarray
    group_nodes: np.ndarray
    pred_start: np.ndarray
    preds: np.ndarray
    out_degree: np.ndarray
    node_fwd: np.ndarray
    node_val: np.ndarray
    cross_val: np.ndarray
    in_val: np.ndarray
    group_blocked: np.ndarray
    ideal_work: (
        np.ndarray
    )  # [ideal, t, 2]: the ideal's compute on t, and plus its output (reach.py; tiny without reach)
    work_slack: np.ndarray  # [t, 2]: their rounding allowances
    tree_below: np.ndarray  # [ideal]: the cover tree (floors.cover_tree): the ideal it covers, and the group between
    tree_added: np.ndarray


class DeviceTypes(NamedTuple):
    """Per device type: its ``node_val`` rows, scale classes and memory cap; the states' transitions."""

    type_compute: np.ndarray
    type_fwd: np.ndarray
    type_cross: np.ndarray
    type_cap: np.ndarray
    type_dur_cross: np.ndarray
    next_state: np.ndarray
    prev_state: np.ndarray
    flight: np.ndarray


class Table(NamedTuple):
    """The DP table (:func:`~placement.exact.lattice_search.new_table`), the cells' floors and the counters."""

    best: np.ndarray
    parent_ideal: np.ndarray
    parent_type: np.ndarray
    useful: np.ndarray
    used: np.ndarray
    floor: np.ndarray
    counters: np.ndarray
    reach: (
        np.ndarray
    )  # [ideal, s, t, 2]: the least ideal_work of a superset within the bound (reach.py; 1 x 1 x 1 x 1: off)


class Settings(NamedTuple):
    """The scalar arguments of ``lattice_dp`` (``has_floor``: ``floor`` is not 1 x 1; ``min_flight``: over states >= 1)."""

    n_states: int
    mem_w: int
    mem_p: int
    mem_a: int
    opt_mult: float
    overlap: bool
    upper_bound: float
    closure: bool
    mode_lo: int
    mode_hi: int
    count_only: bool
    objective: int
    has_floor: bool
    min_flight: int
    has_reach: bool


class Work(NamedTuple):
    """The search's work arrays (:func:`~placement.exact.lattice_search._work_arrays`); depth-indexed ones have ``max_depth`` rows."""

    exact_terms: np.ndarray  # [depth, q, MAXP]: exact sums of the stage (rebuilt on demand)
    exact_len: np.ndarray  # [depth, q]: their lengths
    stage_sums: np.ndarray  # [depth, q]: running sums per search depth (restored on pop, never subtracted back)
    stage_errors: np.ndarray  # [depth, q]: their error bounds
    lo_q: np.ndarray  # [q]: the stage's quantities as intervals [lo_q, hi_q]
    hi_q: np.ndarray
    load_lo: np.ndarray  # [mode, t]: the stage's load per mode and type, as an interval
    load_hi: np.ndarray
    dur_lo: np.ndarray  # [t]: its duration (tie-break), as an interval
    dur_hi: np.ndarray
    rebuild_mark: np.ndarray  # [x]: node stamps of the exact rebuild (by pair count)
    blocked: np.ndarray  # [depth, t]: the stage's nodes that cannot run on t
    tmp: np.ndarray  # scratch of _round_sum
    stamp: np.ndarray  # [J]: the row that last reached J (each superset once per row)
    in_stage: np.ndarray  # [x]: the node state (membership and successor counts, stage.py)
    stage_succ: np.ndarray
    fwd_succ_in: np.ndarray
    mark: np.ndarray  # [x]: node stamps of a push or a pair (by toggles)
    affected: np.ndarray  # a push's nodes whose boundary terms may change, and their old state
    old_cross: np.ndarray
    old_feed: np.ndarray
    stack_ideal: np.ndarray  # [depth]: the cover-edge search's stack: ideal, next edge, group added
    stack_pos: np.ndarray
    stack_group: np.ndarray
    alive_t: np.ndarray  # [t]: the stage is alive on t
    open_cells: np.ndarray  # the states of row i whose cell may still improve
    is_open: np.ndarray  # [s]: state s is among them
    limit: np.ndarray  # [t]: the largest incumbent among the open cells a stage on t can improve
    received: np.ndarray  # [depth, class]: the stage's communication terms of nodes of I (its input; reach.py)
    row_of_node: np.ndarray  # [x]: the row whose ideal holds x (reach only: set when the row starts)
    succ_in_row: np.ndarray  # [x]: for a node of I, its successors in I
    absorbed: np.ndarray  # [depth, class]: output terms of nodes of I with every successor outside I in the stage
    row_output: np.ndarray  # [class]: output terms of the nodes of I with a successor outside I
    old_absorbed: np.ndarray  # a push's affected nodes: absorbed before the move
    reach_hint: np.ndarray  # [1]: the state last found reachable (reach.beyond_reach)


@njit(cache=True, nogil=True, inline="always")
def _search_row(i, graph, devs, table, pair_targets, settings, work, toggles, pairs):
    """Search row ``i`` (every superset row final); returns ``(toggles, pairs)`` advanced."""
    up_start = graph.up_start
    stack_ideal, stack_pos, stack_group = work.stack_ideal, work.stack_pos, work.stack_group
    pair_mode = pair_targets.ideal.shape[0] > 0
    n_open = _open_cells(
        i, table.best, table.floor, settings.has_floor, devs.prev_state, work.open_cells, work.is_open, work.limit
    )
    depth = 0 if n_open > 0 or settings.count_only else -1  # no open cell: nothing to search
    stack_ideal[0] = i
    stack_pos[0] = up_start[i]
    stack_group[0] = -1
    work.stamp[i] = i
    for q in range(work.stage_sums.shape[1]):
        work.stage_sums[0, q] = 0.0
        work.stage_errors[0, q] = 0.0
    for t in range(devs.type_compute.shape[0]):
        work.blocked[0, t] = 0
    for cl in range(work.received.shape[1]):
        work.received[0, cl] = 0.0
    if settings.has_reach and depth == 0 and not pair_mode:
        _mark_row(i, graph, work)
        work.reach_hint[0] = -1
    row_pos = pair_targets.pos[i] if pair_mode else -1  # pair mode: the row's place among the targets
    cand = row_pos + 1  # the next target to try (supersets have larger indices)
    while True:
        target_pos = -1
        if pair_mode:
            if n_open == 0 or row_pos < 0:
                break
            target_pos, cand = next_target(i, row_pos, cand, n_open, devs, table, pair_targets, settings, work)
            if target_pos < 0:
                break
            j = pair_targets.ideal[target_pos]
            stage_depth, toggles = pair_stage(target_pos, row_pos, toggles, graph, pair_targets, work)
            pairs += 1
        else:
            if depth < 0:
                break
            depth, j = _next_edge(i, depth, graph, work)
            if j < 0:
                continue
            stage_depth = depth
            if settings.has_reach and _unreachable(i, j, n_open, stage_depth - 1, graph, devs, table, settings, work):
                stack_group[stage_depth] = -1  # nothing was moved: the pop has nothing to undo
                stack_pos[stage_depth] = up_start[j + 1]  # no stage through J or its supersets can end a split
                continue
            pairs += 1
            if settings.count_only:
                stack_pos[stage_depth] = up_start[j]
                _move_group(stack_group[stage_depth], True, _node_links(graph), _node_state(work))
                continue
            toggles = _push_group(i, stack_group[stage_depth], stage_depth, toggles, graph, work, settings.has_reach)
        changed, alive = _evaluate_and_relax(
            i, j, stage_depth, target_pos, row_pos, pairs, n_open, graph, devs, table, pair_targets, settings, work
        )
        if pair_mode:
            if changed:
                n_open = _open_cells(
                    i,
                    table.best,
                    table.floor,
                    settings.has_floor,
                    devs.prev_state,
                    work.open_cells,
                    work.is_open,
                    work.limit,
                )
            continue
        if not alive:
            stack_pos[stage_depth] = up_start[j + 1]  # dead: no supersets, the pop undoes it
            continue
        stack_pos[stage_depth] = up_start[j]
        if changed:
            n_open = _open_cells(
                i,
                table.best,
                table.floor,
                settings.has_floor,
                devs.prev_state,
                work.open_cells,
                work.is_open,
                work.limit,
            )
            if n_open == 0:  # every cell of row i is final: unwind the search
                for level in range(stage_depth + 1):
                    stack_pos[level] = up_start[stack_ideal[level] + 1]
    return toggles, pairs


@njit(cache=True, nogil=True, inline="always")
def _mark_row(i, graph, work):
    """Reach's data of row ``i``: its nodes, their successors inside ``I``, the output terms of ``I`` (module ``reach``).

    Nodes are marked because a node outside the stage may also lie beyond ``J`` (training graphs).
    """
    group_start, group_nodes, pred_start, preds = graph.group_start, graph.group_nodes, graph.pred_start, graph.preds
    for cl in range(work.row_output.shape[0]):
        work.row_output[cl] = 0.0
        work.absorbed[0, cl] = 0.0
    for sweep in range(3):  # mark the nodes; count successors inside; add the outputs
        k = i
        while k > 0:
            g = graph.tree_added[k]
            for e in range(group_start[g], group_start[g + 1]):
                x = group_nodes[e]
                if sweep == 0:
                    work.row_of_node[x] = i
                    work.succ_in_row[x] = 0
                elif sweep == 1:
                    for q in range(pred_start[x], pred_start[x + 1]):
                        if work.row_of_node[preds[q]] == i:
                            work.succ_in_row[preds[q]] += 1
                elif work.succ_in_row[x] < graph.out_degree[x]:
                    for cl in range(work.row_output.shape[0]):
                        work.row_output[cl] += graph.cross_val[cl, x]
            k = graph.tree_below[k]


@njit(cache=True, nogil=True, inline="always")
def _skips(i, u, graph, work):
    """Whether ``u`` is a node of ``I`` with a successor outside both ``I`` and the stage (its output skips the stage)."""
    if work.row_of_node[u] != i:
        return False
    return work.stage_succ[u] < graph.out_degree[u] - work.succ_in_row[u]


@njit(cache=True, nogil=True, inline="always")
def _unreachable(i, j, n_open, level, graph, devs, table, settings, work):
    """Whether no stage grown from ``J`` (``j``) can improve an open cell of row ``i`` (:func:`~placement.exact.reach.beyond_reach`).

    ``level``: the search depth of ``J``'s parent; its received terms are in every such stage.
    """
    return beyond_reach(
        i,
        j,
        n_open,
        work.open_cells,
        work.is_open,
        work.reach_hint,
        devs.prev_state,
        table.best,
        (table.reach, graph.ideal_work, graph.work_slack, devs.type_cross),
        (work.received[level], work.absorbed[level], work.row_output),
        (settings.overlap, settings.upper_bound, settings.objective),
    )


@njit(cache=True, nogil=True, inline="always")
def _node_links(graph):
    """The graph arrays :func:`~placement.exact.stage._move_group` reads."""
    return (graph.group_start, graph.group_nodes, graph.pred_start, graph.preds, graph.node_fwd)


@njit(cache=True, nogil=True, inline="always")
def _node_state(work):
    """The stage's node state: membership and successor counts (:mod:`placement.exact.stage`)."""
    return (work.in_stage, work.stage_succ, work.fwd_succ_in)


@njit(cache=True, nogil=True, inline="always")
def _next_edge(i, depth, graph, work):
    """The cover-edge search's next step from ``depth``: ``(depth, J)``, ``J = -1`` after a pop or a superset seen before.

    A new superset ``J`` is pushed as level ``depth + 1`` (ideal and group; its edges and sums
    are the caller's); a level without edges left is popped, undoing its group's node state.
    """
    stack_ideal, stack_pos, stack_group = work.stack_ideal, work.stack_pos, work.stack_group
    top = stack_ideal[depth]
    if stack_pos[depth] >= graph.up_start[top + 1]:
        # pop: undo the node states of the group that made this level (expansions are per level)
        g = stack_group[depth]
        if g >= 0:
            _move_group(g, False, _node_links(graph), _node_state(work))
        return depth - 1, -1
    e = stack_pos[depth]
    stack_pos[depth] = e + 1
    j = graph.up_target[e]
    if work.stamp[j] == i:
        return depth, -1
    work.stamp[j] = i
    stack_ideal[depth + 1] = j
    stack_group[depth + 1] = graph.up_group[e]
    return depth + 1, j


@njit(cache=True, nogil=True, inline="always")
def _push_group(i, g, stage_depth, toggles, graph, work, has_reach):
    """Level ``stage_depth``'s running sums and error bounds: level ``stage_depth - 1``'s plus group ``g``'s nodes; returns ``toggles``.

    Moves ``g`` into the node state; the boundary terms of its nodes and their predecessors
    change where their crossing or feeding state does.
    """
    stage_sums, stage_errors, mark = work.stage_sums, work.stage_errors, work.mark
    node_val, cross_val, in_val, out_degree = graph.node_val, graph.cross_val, graph.in_val, graph.out_degree
    pred_start, preds, node_fwd = graph.pred_start, graph.preds, graph.node_fwd
    in_stage, stage_succ, fwd_succ_in = work.in_stage, work.stage_succ, work.fwd_succ_in
    n_val = node_val.shape[0]
    n_cross = cross_val.shape[0]
    q_in = n_val + n_cross
    depth = stage_depth - 1
    for q in range(stage_sums.shape[1]):
        stage_sums[stage_depth, q] = stage_sums[depth, q]
        stage_errors[stage_depth, q] = stage_errors[depth, q]
    for t in range(work.blocked.shape[1]):
        work.blocked[stage_depth, t] = work.blocked[depth, t] + graph.group_blocked[t, g]
    toggles += 1
    n_aff = 0
    for k in range(graph.group_start[g], graph.group_start[g + 1]):
        x = graph.group_nodes[k]
        for q in range(n_val):
            v = node_val[q, x]
            if v != 0.0:
                r = stage_sums[stage_depth, q] + v
                stage_sums[stage_depth, q] = r
                stage_errors[stage_depth, q] += EPS * abs(r)
        # x and its predecessors may change their boundary terms: note their old state once.
        for m in range(pred_start[x] - 1, pred_start[x + 1]):
            u = x if m < pred_start[x] else preds[m]
            if mark[u] != toggles:
                mark[u] = toggles
                work.affected[n_aff] = u
                work.old_cross[n_aff] = _crossing(in_stage, stage_succ, out_degree, u)
                work.old_feed[n_aff] = _feeding(in_stage, fwd_succ_in, node_fwd, u)
                n_aff += 1
    if has_reach:
        for a in range(n_aff):
            work.old_absorbed[a] = not _skips(i, work.affected[a], graph, work)
    _move_group(g, True, _node_links(graph), _node_state(work))
    for a in range(n_aff):
        u = work.affected[a]
        now_cross = _crossing(in_stage, stage_succ, out_degree, u)
        if now_cross != work.old_cross[a]:
            sign = 1.0 if now_cross else -1.0
            for cl in range(n_cross):
                v = cross_val[cl, u]
                if v != 0.0:
                    q = n_val + cl
                    r = stage_sums[stage_depth, q] + sign * v
                    stage_sums[stage_depth, q] = r
                    stage_errors[stage_depth, q] += EPS * abs(r)
        now_feed = _feeding(in_stage, fwd_succ_in, node_fwd, u)
        if now_feed != work.old_feed[a]:
            v = in_val[u]
            if v != 0.0:
                r = stage_sums[stage_depth, q_in] + (v if now_feed else -v)
                stage_sums[stage_depth, q_in] = r
                stage_errors[stage_depth, q_in] += EPS * abs(r)
    if has_reach:
        _track_row(i, stage_depth, n_aff, graph, work)
    return toggles


@njit(cache=True, nogil=True, inline="always")
def _track_row(i, stage_depth, n_aff, graph, work):
    """Reach's terms of level ``stage_depth`` after a push: the parent level's, plus what the push's affected nodes of ``I`` changed.

    A node of ``I`` that now crosses feeds the stage (``received``); one whose every successor
    outside ``I`` is now in the stage no longer sends past it (``absorbed``). Neither is undone
    until the pop (the stage only grows).
    """
    n_cross = graph.cross_val.shape[0]
    for cl in range(n_cross):
        work.received[stage_depth, cl] = work.received[stage_depth - 1, cl]
        work.absorbed[stage_depth, cl] = work.absorbed[stage_depth - 1, cl]
    for a in range(n_aff):
        u = work.affected[a]
        if work.row_of_node[u] != i:
            continue
        fed = not work.old_cross[a] and _crossing(work.in_stage, work.stage_succ, graph.out_degree, u)
        absorbed = not work.old_absorbed[a] and not _skips(i, u, graph, work)
        for cl in range(n_cross):
            if fed:
                work.received[stage_depth, cl] += graph.cross_val[cl, u]
            if absorbed:
                work.absorbed[stage_depth, cl] += graph.cross_val[cl, u]


@njit(cache=True, nogil=True, inline="always")
def _close_row(i, graph, devs, table, settings):
    """Row ``i`` is final: close it (``closure``), mark the states worth extending (``useful``), fill its ``reach``."""
    best, parent_ideal, parent_type, useful, used = (
        table.best,
        table.parent_ideal,
        table.parent_type,
        table.useful,
        table.used,
    )
    prev_state, closure, objective = devs.prev_state, settings.closure, settings.objective
    for s in range(settings.n_states):
        if closure:
            for d in range(prev_state.shape[0]):
                back = prev_state[d, s]
                if back < 0:
                    continue
                if best[i, back] < best[i, s] or (
                    objective == 1 and best[i, back] == best[i, s] and used[i, back] < used[i, s]
                ):
                    best[i, s] = best[i, back]
                    parent_ideal[i, s] = -1
                    parent_type[i, s] = INHERIT + d
                    if objective == 1:
                        used[i, s] = used[i, back]
        if best[i, s] <= settings.upper_bound or (objective == 1 and best[i, s] < np.inf):
            dominated = False
            if closure:
                for d in range(prev_state.shape[0]):
                    back = prev_state[d, s]
                    if back >= 0 and best[i, back] <= best[i, s] and (objective == 0 or used[i, back] <= used[i, s]):
                        dominated = True
            useful[i, s] = not dominated
    if settings.has_reach:
        fill_reach(
            i, graph.up_start, graph.up_target, best, table.reach, graph.ideal_work, settings.upper_bound, objective
        )
