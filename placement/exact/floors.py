"""Floors of the DP table's cells: per cell, the value at or below which it is final.

:func:`cell_floors` bounds every cell ``(I, s)`` from below by a fractional work bound (plus
the largest group) on both sides of ``I`` and marks the cells no split within the search's
bound passes through (floor ``inf``: never relaxed); see the module docstring of
:mod:`placement.exact.kernel`, "Open cells". :func:`cover_tree` (a spanning tree of the
lattice's cover edges) is shared with pair mode.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np
from numba import njit

if TYPE_CHECKING:
    from .inputs import KernelInputs


@njit(cache=True, nogil=True)
def cover_tree(up_start, up_group, up_target, n_ideals):
    """A spanning tree of the cover relation: per ideal ``j > 0``, one ideal ``below[j]`` it covers.

    ``added[j]`` is the group between them. ``below[j] < j`` (subsets have smaller indices), so a pass over ``j`` in increasing order
    can build any per-ideal sum from ``below[j]``'s. Entries of ideal 0 are -1.
    """
    below = np.full(n_ideals, -1, dtype=np.int64)
    added = np.full(n_ideals, -1, dtype=np.int64)
    for i in range(n_ideals):  # the first cover edge that reaches each ideal
        for e in range(up_start[i], up_start[i + 1]):
            j = up_target[e]
            if below[j] < 0:
                below[j] = i
                added[j] = up_group[e]
    return below, added


@njit(cache=True, nogil=True)
def _bound_sums(up_start, up_group, up_target, n_ideals, group_compute, type_sets):
    """Per ideal and type set: the weighted work and the largest group outside and inside the ideal.

    ``group_compute`` = (weighted, plain), each ``[t, g]``: group ``g``'s compute on type ``t``
    (``inf``: blocked), times the type's weight for the sums / as it is (see :func:`cell_floors`).
    ``type_sets[k, t]``: type ``t`` belongs to set ``k``. Returns (work_out,
    group_out, work_in, group_in), each ``[ideal, set]``: sums of ``min_t weight_t *
    compute[t, g]`` and maxima of ``min_t compute[t, g]`` over the groups outside / inside.
    """
    weighted, plain = group_compute
    n_sets = type_sets.shape[0]
    n_types = type_sets.shape[1]
    n_groups = plain.shape[1]
    cheapest_w = np.full((n_sets, n_groups), np.inf)
    cheapest = np.full((n_sets, n_groups), np.inf)
    for k in range(n_sets):
        for g in range(n_groups):
            for t in range(n_types):
                if type_sets[k, t]:
                    cheapest_w[k, g] = min(cheapest_w[k, g], weighted[t, g])
                    cheapest[k, g] = min(cheapest[k, g], plain[t, g])
    work_out = np.zeros((n_ideals, n_sets))
    group_out = np.zeros((n_ideals, n_sets))
    work_in = np.zeros((n_ideals, n_sets))
    group_in = np.zeros((n_ideals, n_sets))
    below, added = cover_tree(up_start, up_group, up_target, n_ideals)
    for j in range(1, n_ideals):  # inside: from the ideal this one covers in the tree
        i = below[j]
        g = added[j]
        for k in range(n_sets):
            work_in[j, k] = work_in[i, k] + cheapest_w[k, g]
            group_in[j, k] = max(group_in[i, k], cheapest[k, g])
    for i in range(n_ideals - 2, -1, -1):  # outside: from any ideal covering this one
        e = up_start[i]
        j = up_target[e]
        g = up_group[e]
        for k in range(n_sets):
            work_out[i, k] = work_out[j, k] + cheapest_w[k, g]
            group_out[i, k] = max(group_out[j, k], cheapest[k, g])
    return work_out, group_out, work_in, group_in


@njit(cache=True, nogil=True)
def _type_sums(up_start, up_group, up_target, n_ideals, plain):
    """Per ideal and type: the compute of the groups outside and inside the ideal (blocked groups count 0)."""
    n_types = plain.shape[0]
    out = np.zeros((n_ideals, n_types))
    inside = np.zeros((n_ideals, n_types))
    below, added = cover_tree(up_start, up_group, up_target, n_ideals)
    for j in range(1, n_ideals):
        i = below[j]
        g = added[j]
        for t in range(n_types):
            v = plain[t, g]
            inside[j, t] = inside[i, t] + (v if v < np.inf else 0.0)
    for i in range(n_ideals - 2, -1, -1):
        e = up_start[i]
        j = up_target[e]
        g = up_group[e]
        for t in range(n_types):
            v = plain[t, g]
            out[i, t] = out[j, t] + (v if v < np.inf else 0.0)
    return out, inside


def _absorb(plain: np.ndarray, r: int, t: int, cap: float) -> float:
    """The most compute (measured on type ``r``) one device of type ``t`` can take within ``cap`` of its own compute.

    A fractional knapsack over the groups that run on both types, best ratio first; an upper bound
    of what any stage of load <= cap on ``t`` takes off the ``r`` devices.
    """
    cr, ct = plain[r], plain[t]
    ok = np.isfinite(cr) & np.isfinite(ct) & (cr > 0)
    cr, ct = cr[ok], ct[ok]
    free = ct <= 0
    total = float(cr[free].sum())
    cr, ct = cr[~free], ct[~free]
    order = np.argsort(-(cr / ct), kind="stable")
    room = cap
    for g in order:
        if ct[g] <= room:
            room -= ct[g]
            total += cr[g]
        else:
            total += cr[g] * room / ct[g]
            break
    return total


def _capacity_ok(plain, sums_out, sums_in, counts, upper_bound) -> np.ndarray:
    """Per cell: whether the groups on each side of the ideal fit the side's devices at ``upper_bound`` (see cell_floors)."""
    n_types, n_states = counts.shape
    n_ideals = sums_out.shape[0]
    ok = np.ones((n_ideals, n_states), dtype=np.bool_)
    if not math.isfinite(upper_bound):
        return ok
    everything = counts[:, n_states - 1]
    for r in range(n_types):
        absorb = np.array([0.0 if t == r else _absorb(plain, r, t, upper_bound) for t in range(n_types)]) * (1 + 1e-9)
        for side, sums in ((0, sums_out), (1, sums_in)):
            n = counts if side == 0 else everything[:, None] - counts  # [type, state]
            room = n[r] * upper_bound + (absorb[:, None] * n).sum(axis=0)  # per state
            work = sums[:, r][:, None] * (1.0 - 1e-9) - 1e-12 * abs(float(sums_out[0, r]))
            ok &= work <= room[None, :]
    return ok


def _group_compute(inputs: KernelInputs) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per type and group the compute (``inf``: blocked), the types' weights ``1 / total`` and the weighted compute."""
    a = inputs
    n_groups = a.group_start.shape[0] - 1
    plain = np.zeros((a.n_types, n_groups))
    for t in range(a.n_types):
        row = a.node_val[a.type_compute[t]]
        for g in range(n_groups):
            plain[t, g] = (
                math.inf
                if a.group_blocked[t, g] > 0
                else float(row[a.group_nodes[a.group_start[g] : a.group_start[g + 1]]].sum())
            )
    totals = np.where(np.isfinite(plain), plain, 0.0).sum(axis=1)
    weight = np.where(totals > 0, 1.0 / np.where(totals > 0, totals, 1.0), 0.0)
    finite = np.isfinite(plain)
    weighted = np.where(finite, np.where(finite, plain, 0.0) * weight[:, None], math.inf)
    return plain, weight, weighted


def root_bound(inputs: KernelInputs) -> float:
    """A lower bound of the optimal max-load with every device: the larger of two bounds of the empty ideal.

    :func:`cell_floors`' work bound, and the smallest bound the capacity bound (:func:`_capacity_ok`)
    admits for the whole graph on every device, found by bisection (the test is monotone in the
    bound: more room per device). Scaled down by ``1e-9`` relative like the floors; ``inf`` when
    some group runs nowhere.
    """
    plain, weight, weighted = _group_compute(inputs)
    a = inputs
    counts = np.asarray([int(a.strides[t + 1] // a.strides[t]) - 1 for t in range(a.n_types)])
    present = counts > 0
    if not present.any():
        return math.inf
    cheapest = np.where(present[:, None], plain, math.inf).min(axis=0)
    work = float(np.where(present[:, None], weighted, math.inf).min(axis=0).sum())
    scale = float((counts * weight).sum())
    frac = work / scale if scale > 0 else (math.inf if math.isinf(work) else 0.0)
    bound = max(frac, float(cheapest.max(initial=0.0))) * (1.0 - 1e-9)
    return max(bound, _capacity_root(plain, counts, bound))


def _capacity_root(plain: np.ndarray, counts: np.ndarray, low: float, steps: int = 16) -> float:
    """The capacity bound of the whole graph: bisection between ``low`` (a lower bound) and a bound it admits.

    Returns a value at which :func:`_capacity_ok` fails for the empty ideal with every device (so
    the optimum is above it), or ``low``. Scaled like the floors: the test itself keeps its margin.
    """
    if not math.isfinite(low):
        return low
    totals = np.where(np.isfinite(plain), plain, 0.0).sum(axis=1)[None, :]  # [1 ideal, type]: the whole graph
    none = np.zeros_like(totals)

    def fits(bound: float) -> bool:
        return bool(_capacity_ok(plain, totals, none, counts[:, None], bound)[0, 0])

    high = max(low, 1e-300) * 2.0
    while not fits(high):
        if not math.isfinite(high):
            return low
        high *= 2.0
    lowest_failing = low
    for _ in range(steps):
        mid = 0.5 * (lowest_failing + high)
        if fits(mid):
            high = mid
        else:
            lowest_failing = mid
    return lowest_failing


def cell_floors(
    inputs: KernelInputs,
    lattice: tuple,
    upper_bound: float,
    *,
    clamp: bool = True,
    lower: float = -math.inf,
    feasible: np.ndarray | None = None,
) -> np.ndarray:
    """Per cell ``(I, s)`` of the table, the value at or below which it is final (``floor``).

    A lower bound of the max-load of any split of the groups *outside* ``I`` on the devices
    of ``s`` (``out``), and of the groups *inside* ``I`` on the devices that ``s`` leaves over
    (``in``), each the larger of a fractional work bound and the largest group: for weights
    ``y_t >= 0`` with ``sum_t n_t y_t = 1`` every split has max-load ``>= sum_g min_t y_t
    compute_t(g)`` (each stage's load is at least its compute; LP duality), with ``y_t``
    proportional to ``1 / (the whole graph's compute on t)``. Both bounds are scaled down by
    ``1e-9`` relative, far above the rounding of the sums.

    A second, *capacity* bound (:func:`_capacity_ok`) counts what each side's devices can hold
    within ``upper_bound``: for a reference type ``r``, every stage on ``r`` computes at most
    ``upper_bound``, and a stage on another type ``t`` takes off the ``r`` devices at most
    ``A_t``, the fractional knapsack of the ``r``-compute of the groups whose ``t``-compute fits in
    ``upper_bound`` (:func:`_absorb`). So the ``r``-compute of the side's groups must be at most
    ``n_r * upper_bound + sum_t n_t * A_t``, for every ``r``. Unlike the work bound it sees that a
    slow CPU core cannot take a share of every group (the work bound's weights let it), which is
    what makes a cut just below the optimum a fast feasibility test (:mod:`placement.exact.dp`).

    A cell is *needed* when ``in <= upper_bound`` and ``out <= upper_bound`` and both sides pass
    the capacity bound: every cell on an
    optimal split of any state ``q <= all devices`` whose optimum is ``<= upper_bound`` is
    needed (the bounds only shrink with more devices, and a stage added to a prefix raises
    its bound to at most max(bound, the stage's compute)). Cells that are not needed get floor
    ``inf`` (never relaxed); needed cells get ``max(L, out)`` with ``clamp`` (``L`` = ``out``
    of the empty ideal with every device, a lower bound of every optimum read from row 0: a
    value at or below ``L`` can never be the difference between two answers, so such a cell
    only needs an achievable value, see the module docstring), ``out`` without; ``lower`` raises ``L`` (it must be a lower bound of
    the optimum with every device). ``feasible`` (tie-break pass): a boolean table of
    the cells whose max-load is ``<= upper_bound``; needed feasible cells get ``-inf`` (open
    until final), the others ``inf``.
    """
    up_start, up_group, up_target, n_ideals = lattice
    a = inputs
    n_types = a.n_types
    plain, weight, weighted = _group_compute(a)
    n_states = a.n_states
    counts = np.asarray(
        [(np.arange(n_states) // int(a.strides[t])) % (int(a.strides[t + 1] // a.strides[t])) for t in range(n_types)]
    )
    present = counts > 0  # [type, state]
    sets, set_of_state = np.unique(present.T, axis=0, return_inverse=True)
    set_of_state = set_of_state.reshape(-1)
    work_out, group_out, work_in, group_in = _bound_sums(
        up_start, up_group, up_target, int(n_ideals), (weighted, plain), sets.astype(np.bool_)
    )
    scale = (counts * weight[:, None]).sum(axis=0)  # sum_t n_t w_t per state

    def bound(work, group, states):
        k = set_of_state[states]
        frac = np.where(
            scale[states] > 0,
            work[:, k] / np.where(scale[states] > 0, scale[states], 1.0),
            np.where(np.isinf(work[:, k]), math.inf, 0.0),
        )
        return np.maximum(frac, group[:, k]) * (1.0 - 1e-9)

    states = np.arange(n_states)
    out = bound(work_out, group_out, states)
    inner = bound(work_in, group_in, (n_states - 1) - states)  # the devices s leaves over
    needed = (out <= upper_bound) & (inner <= upper_bound)
    sums_out, sums_in = _type_sums(up_start, up_group, up_target, int(n_ideals), plain)
    needed &= _capacity_ok(plain, sums_out, sums_in, counts, upper_bound)
    if feasible is not None:
        return np.where(needed & feasible, -math.inf, math.inf)
    floor = out
    if clamp:
        floor = np.maximum(floor, max(lower, out[0, n_states - 1]))
    return np.where(needed, floor, math.inf)
