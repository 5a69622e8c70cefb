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

**Rounding.** ``W_t`` are float sums of non-negative terms (:func:`~placement.exact.floors._type_sums`,
node sums per group, then along the cover tree): at most ``n`` (nodes plus groups) additions of
terms no larger than the whole graph's compute, so each is within ``n ulp(1) W_t(all) / 2`` of
its exact value, and the difference of two within ``slack[t] = 2 n ulp(1) W_t(all)``, which
the test subtracts: it never cuts a stage whose exact compute is within the bound. The received
terms are a float sum of positive terms, scaled down by ``1e-9`` (far above its rounding for
up to 10^6 terms). Blocked groups count 0 in ``W_t`` (a stage holding one cannot run on ``t``
at all), which only weakens the bound.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .floors import _group_compute, _type_sums, cover_tree


@njit(cache=True, nogil=True, inline="always")
def beyond_reach(
    i,
    j,
    n_open,
    open_cells,
    prev_state,
    best,
    reach,
    ideal_work,
    slack,
    received,
    type_cross,
    overlap,
    upper_bound,
    objective,
):
    """Whether no stage ``J' \\ I`` with ``J' ⊇ J`` (``J = j``) can improve an open cell of row ``i`` on any type.

    ``received[c]``: the communication terms (class ``c``) of the nodes of ``I`` that feed the
    stage before ``J`` was added; they stay in the load of every stage grown from it (added to
    the compute, or with ``overlap`` a second lower bound of ``max(compute, communication)``).
    """
    for k in range(n_open - 1, -1, -1):  # the most devices first: the likeliest to be reachable (an early exit)
        s = open_cells[k]
        for t in range(prev_state.shape[0]):
            back = prev_state[t, s]
            if back < 0:
                continue
            low = reach[j, back, t] - ideal_work[i, t] - slack[t]  # a lower bound of the stage's compute
            if type_cross[t] >= 0:
                fed = received[type_cross[t]] * (1.0 - 1e-9)  # a sum of <= 1e6 positive terms: error < 1e-10
                low = max(low, fed) if overlap else low + fed
            if low > upper_bound or (objective == 0 and low >= best[i, s]):
                continue
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
            value = ideal_work[i, t] if feasible else np.inf
            for e in range(up_start[i], up_start[i + 1]):
                other = reach[up_target[e], s, t]
                if other < value:
                    value = other
            reach[i, s, t] = value


def reach_inputs(inputs, lattice: tuple, best: np.ndarray, upper_bound: float, objective: int):
    """(reach, ideal_work, slack, tree_below, tree_added) for a run over ``lattice`` with the table ``best`` (its full ideal's row filled).

    ``reach[n - 1]`` (the full ideal) holds ``W_t(all)`` where that row's cell is within the bound.
    """
    up_start, up_group, up_target, n_ideals = lattice
    n = int(n_ideals)
    plain, _, _ = _group_compute(inputs)
    _, ideal_work = _type_sums(up_start, up_group, up_target, n, plain)
    ideal_work = np.ascontiguousarray(ideal_work)
    n_nodes = inputs.node_val.shape[1]
    whole = ideal_work[n - 1]
    slack = 2.0 * (n_nodes + plain.shape[1] + 2) * np.finfo(np.float64).eps * np.abs(whole)
    reach = np.full((n, best.shape[1], inputs.n_types), np.inf)
    full = best[n - 1]
    feasible = (full <= upper_bound) | ((objective == 1) & (full < np.inf))
    reach[n - 1][feasible] = whole
    below, added = cover_tree(up_start, up_group, up_target, n)
    return reach, ideal_work, slack, below, added
