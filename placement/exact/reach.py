"""Reach: the kernel's bound from the rows already final, cutting search branches that can end no split.

A stage ``J \\ I`` on device type ``t`` can improve the open cell ``(I, s)`` only if the cell
``(J, s')`` after it (``s'`` = ``s`` with one device of ``t`` fewer) holds a split within the
search's bound (``best[J, s'] <= upper_bound``, the condition under which the kernel extends a
state at all) and the stage's compute on ``t`` is at most the bound. The stage's compute is
``W_t(J) - W_t(I)``, ``W_t`` being the compute on ``t`` of an ideal's groups, and every
superset ``J`` the search can still reach from a partial stage ``J0`` contains ``J0``. So with

    ``reach[J0, s', t] = min { W_t(J) : J ⊇ J0, best[J, s'] <= upper_bound }``

(``inf`` when there is none), no stage grown from ``J0`` can improve ``(I, s)`` on ``t`` when
``reach[J0, s', t] - W_t(I) > upper_bound`` (objective 0 also when it is ``>= best[I, s]``:
a value through a stage is at least its compute). When that holds for every open cell and
every type, the search skips ``J0`` and all of its supersets (:func:`beyond_reach`). Every
superset of ``J0`` has a ``reach`` at least ``J0``'s, so a superset reached again by another
path is skipped too, and no split whose loads are all within the bound is ever cut.

``reach`` is the DP over fewer devices read backwards: a row's entries are filled when the row
is closed (:func:`fill_reach`), from its own cells and its covers' entries, which are final
(they are supersets: filled before). The full ideal's entries are set by the caller.

The search adds a second term (:func:`beyond_reach`'s ``received``): the communication terms
of the nodes of ``I`` that already feed the partial stage. They stay in the load of every stage
grown from it (a node of ``I`` only gains successors in the stage as it grows), so they add to
the compute bound (with ``overlap``, where a load is ``max(compute, communication)``, they are
a second bound beside it). Only nodes of ``I`` count: in a training graph a node outside the
stage may also lie beyond ``J`` (a backward edge) and join a later stage.

**The output bound** (``reach[..., WITH_OUTPUT]``; not with ``overlap``). Let ``C_t(X)`` be
the communication terms on ``t`` of the nodes of ``X`` with a successor outside ``X``
(:func:`ideal_output`). The stage ``S = J \\ I`` sends every node of ``S`` with a successor
outside ``J``; ``C_t(J)`` counts those and the nodes of ``I`` with a successor outside ``J``,
which lie in ``A(J0)``: the nodes of ``I`` with a successor outside both ``I`` and the partial
stage (a set that only shrinks as the stage grows). So the stage's load is at least
``W_t(J) - W_t(I) + C_t(J) - c_t(A(J0)) + received``, and over the supersets ``J`` within the
bound at least ``reach[J0, s', t, WITH_OUTPUT] - W_t(I) - c_t(A(J0)) + received``. The search
keeps ``c_t(A(J0))`` as the output terms of ``I`` (``row_output``) less those of the nodes that
have left ``A`` (``absorbed``), both sums of positive terms, rounded outward by ``1e-9``. The
check takes the larger of the two bounds.

**Rounding.** ``W_t`` are float sums of non-negative terms (:func:`~placement.exact.floors._type_sums`,
node sums per group, then along the cover tree): at most ``n`` (nodes plus groups) additions of
terms no larger than the whole graph's compute, so each is within ``n ulp(1) W_t(all) / 2`` of
its exact value, and the difference of two within ``slack[t, COMPUTE] = 2 n ulp(1) W_t(all)``,
which the test subtracts: it never cuts a stage whose exact compute is within the bound.
``C_t(J)`` is at most ``2 n`` additions and subtractions from zero of terms whose total is
``C_t`` of all nodes; ``slack[t, WITH_OUTPUT]`` adds ``4 (2 n + 2) ulp(1)`` times that total. The received
terms are a float sum of positive terms, scaled down by ``1e-9`` (far above its rounding for
up to 10^6 terms). Blocked groups count 0 in ``W_t`` (a stage holding one cannot run on ``t``
at all), which only weakens the bound.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .floors import _group_compute, _type_sums, cover_tree

#: Bounds per ideal: 0 its compute ``W_t``, 1 its compute plus its output ``W_t + C_t`` (the last axis of ``reach``).
COMPUTE, WITH_OUTPUT = 0, 1


@njit(cache=True, nogil=True, inline="always")
def _cell_reachable(i, j, s, prev_state, best, bounds, stage, settings):
    """Whether some stage grown from ``J`` (``j``) may still improve cell ``(i, s)`` on some type (:func:`beyond_reach`)."""
    reach, ideal_work, slack, type_cross = bounds
    received, absorbed, row_output = stage
    overlap, upper_bound, objective = settings
    for t in range(prev_state.shape[0]):
        back = prev_state[t, s]
        if back < 0:
            continue
        low = reach[j, back, t, COMPUTE] - ideal_work[i, t, COMPUTE] - slack[t, COMPUTE]
        cl = type_cross[t]
        if cl >= 0:
            fed = received[cl] * (1.0 - 1e-9)  # sums of <= 1e6 positive terms: error < 1e-10
            if overlap:
                low = max(low, fed)
            else:
                low += fed
                # The stage sends at least C(J') minus what nodes of I still send past it.
                skipping = row_output[cl] * (1.0 + 1e-9) - absorbed[cl] * (1.0 - 1e-9)
                sends = reach[j, back, t, WITH_OUTPUT] - ideal_work[i, t, COMPUTE] - slack[t, WITH_OUTPUT]
                low = max(low, sends - skipping + fed)
        if not (low > upper_bound or (objective == 0 and low >= best[i, s])):
            return True
    return False


@njit(cache=True, nogil=True, inline="always")
def beyond_reach(i, j, n_open, open_cells, is_open, hint, prev_state, best, bounds, stage, settings):
    """Whether no stage ``J' \\ I`` with ``J' ⊇ J`` (``J = j``) can improve an open cell of row ``i`` on any type.

    ``bounds`` = (reach, ideal_work, slack, type_cross); ``stage`` = (received, absorbed,
    row_output): per class, the output terms of the nodes of ``I`` that feed the partial stage,
    of those whose every successor outside ``I`` is in it, and of all with a successor outside
    ``I`` (module docstring); ``settings`` = (overlap, upper_bound, objective).
    ``hint[0]``: the state found reachable last (tried first; -1 none), updated.
    """
    s = hint[0]
    if s >= 0 and is_open[s] and _cell_reachable(i, j, s, prev_state, best, bounds, stage, settings):
        return False
    for k in range(n_open - 1, -1, -1):  # the most devices first: the likeliest to be reachable
        s = open_cells[k]
        if s != hint[0] and _cell_reachable(i, j, s, prev_state, best, bounds, stage, settings):
            hint[0] = s
            return False
    return True


@njit(cache=True, nogil=True, inline="always")
def fill_reach(i, up_start, up_target, best, reach, ideal_work, upper_bound, objective):
    """Row ``i`` is final: ``reach[i]`` from its own cells within the bound and its covers' entries."""
    n_states = best.shape[1]
    n_types = reach.shape[2]
    for s in range(n_states):
        feasible = best[i, s] <= upper_bound or (objective == 1 and best[i, s] < np.inf)
        for t in range(n_types):
            for b in range(2):
                value = ideal_work[i, t, b] if feasible else np.inf
                for e in range(up_start[i], up_start[i + 1]):
                    other = reach[up_target[e], s, t, b]
                    if other < value:
                        value = other
                reach[i, s, t, b] = value


@njit(cache=True, nogil=True)
def _children(below, n_ideals):
    """The cover tree's children in CSR form: the children of ideal ``i`` are ``children[start[i]:start[i + 1]]``."""
    start = np.zeros(n_ideals + 1, dtype=np.int64)
    for j in range(1, n_ideals):
        start[below[j] + 1] += 1
    for i in range(n_ideals):
        start[i + 1] += start[i]
    fill = start[:-1].copy()
    children = np.empty(max(n_ideals - 1, 0), dtype=np.int64)
    for j in range(1, n_ideals):
        children[fill[below[j]]] = j
        fill[below[j]] += 1
    return start, children


@njit(cache=True, nogil=True)
def _enter_group(g, graph, member, inside_succ, node_weight, value):
    """Add group ``g`` to the ideal; ``value[k]`` follows the weights of its nodes with a successor outside.

    ``inside_succ[x]``: successors of ``x`` inside the ideal (of any node, inside or not).
    """
    group_start, group_nodes, pred_start, preds, out_degree = graph
    n_sets = node_weight.shape[0]
    for e in range(group_start[g], group_start[g + 1]):  # the new nodes: a successor outside?
        x = group_nodes[e]
        member[x] = True
        if inside_succ[x] < out_degree[x]:
            for k in range(n_sets):
                value[k] += node_weight[k, x]
    for e in range(group_start[g], group_start[g + 1]):  # their predecessors have one more successor inside
        x = group_nodes[e]
        for q in range(pred_start[x], pred_start[x + 1]):
            p = preds[q]
            inside_succ[p] += 1
            if member[p] and inside_succ[p] == out_degree[p]:
                for k in range(n_sets):
                    value[k] -= node_weight[k, p]


@njit(cache=True, nogil=True)
def _leave_group(g, graph, member, inside_succ):
    """Undo :func:`_enter_group`'s membership and successor counts for group ``g``."""
    group_start, group_nodes, pred_start, preds, _ = graph
    for e in range(group_start[g], group_start[g + 1]):
        x = group_nodes[e]
        member[x] = False
        for q in range(pred_start[x], pred_start[x + 1]):
            inside_succ[preds[q]] -= 1


@njit(cache=True, nogil=True)
def ideal_output(lattice, graph, node_weight):
    """Per ideal ``J`` and row ``k``: ``sum(node_weight[k, x])`` over the nodes ``x`` of ``J`` with a successor outside ``J``.

    ``lattice`` = (up_start, up_group, up_target, n_ideals); ``graph`` = (group_start,
    group_nodes, pred_start, preds, out_degree). A depth-first walk of the cover tree
    (:func:`~placement.exact.floors.cover_tree`) adds one group per step and takes it back on
    the way up; a child's sum is its parent's plus its group's changes, so each sum is at most
    ``2 * nodes`` additions and subtractions of terms from zero (the rounding allowance of
    :func:`reach_inputs`).
    """
    up_start, up_group, up_target, n_ideals = lattice
    n_rows, n_nodes = node_weight.shape
    below, added = cover_tree(up_start, up_group, up_target, n_ideals)
    start, children = _children(below, n_ideals)
    sums = np.zeros((n_ideals, n_rows))
    member = np.zeros(n_nodes, dtype=np.bool_)
    inside_succ = np.zeros(n_nodes, dtype=np.int64)
    path = np.zeros(n_ideals, dtype=np.int64)  # the ideals from the empty one to the current one
    cursor = np.zeros(n_ideals, dtype=np.int64)  # per depth: the next child of path[depth] to visit
    cursor[0] = start[0]
    depth = 0
    while depth >= 0:
        i = path[depth]
        if cursor[depth] < start[i + 1]:
            j = children[cursor[depth]]
            cursor[depth] += 1
            sums[j] = sums[i]
            _enter_group(added[j], graph, member, inside_succ, node_weight, sums[j])
            depth += 1
            path[depth] = j
            cursor[depth] = start[j]
        else:
            if depth > 0:
                _leave_group(added[i], graph, member, inside_succ)
            depth -= 1
    return sums


def output_terms(inputs) -> np.ndarray:
    """Per device type and node: the node's communication term on that type (0 for a type without communication)."""
    per_type = np.zeros((inputs.n_types, inputs.node_val.shape[1]))
    for t in range(inputs.n_types):
        if inputs.type_cross[t] >= 0:
            per_type[t] = inputs.cross_val[inputs.type_cross[t]]
    return per_type


def node_graph(inputs) -> tuple:
    """(group_start, group_nodes, pred_start, preds, out_degree): the graph arrays :func:`ideal_output` reads."""
    return inputs.group_start, inputs.group_nodes, inputs.pred_start, inputs.preds, inputs.out_degree


def reach_inputs(inputs, lattice: tuple, best: np.ndarray, upper_bound: float, objective: int):
    """(reach, ideal_work, slack, tree_below, tree_added) for a run over ``lattice`` with the table ``best`` (its full ideal's row filled).

    ``ideal_work[J, t]`` = (``W_t(J)``, ``W_t(J) + C_t(J)``), ``C_t`` the output terms of the
    ideal's nodes on ``t`` (0 for a type without communication); ``slack[t]`` their rounding
    allowances (module docstring); the cover tree (rows mark their ideal's nodes along it).
    ``reach[n - 1]`` (the full ideal) holds the full ideal's entries where its cell is within
    the bound.
    """
    up_start, up_group, up_target, n_ideals = lattice
    n = int(n_ideals)
    plain, _, _ = _group_compute(inputs)
    _, work = _type_sums(up_start, up_group, up_target, n, plain)
    n_types, n_nodes = inputs.n_types, inputs.node_val.shape[1]
    per_type = output_terms(inputs)
    output = ideal_output((up_start, up_group, up_target, n), node_graph(inputs), per_type)
    ideal_work = np.ascontiguousarray(np.stack([work, work + output], axis=2))
    ulp = np.finfo(np.float64).eps
    slack = np.stack(
        [
            2.0 * (n_nodes + plain.shape[1] + 2) * ulp * np.abs(work[n - 1]),
            2.0 * (n_nodes + plain.shape[1] + 2) * ulp * np.abs(work[n - 1])
            + 4.0 * (2 * n_nodes + 2) * ulp * per_type.sum(axis=1),
        ],
        axis=1,
    )
    reach = np.full((n, best.shape[1], n_types, 2), np.inf)
    full = best[n - 1]
    feasible = (full <= upper_bound) | ((objective == 1) & (full < np.inf))
    reach[n - 1][feasible] = ideal_work[n - 1]
    below, added = cover_tree(up_start, up_group, up_target, n)
    return reach, ideal_work, np.ascontiguousarray(slack), below, added
