"""The decision DP at a threshold tau: can every stage take at most tau per sample?

Stages are built from the last to the first. ``h_j[s, c]`` is the fewest devices of the last kind for a
plan of the nodes outside ideal j whose stages all take at most tau, with sum of d equal to s and c
devices used of each other kind; a row (j, i, t, k, d) of the tables extends h_i into h_j when the
stage's y = ceil(s / d) is at most the row's :meth:`~placement.multidim.tables.StageTables.ycount`.

* :func:`decide` -- several kinds: dense float tables over (s, c);
* :func:`decide_front` -- one kind: Pareto fronts over (s, devices) (four integer arrays).
"""

from __future__ import annotations

import numpy as np

from .model import MultiProblem
from .tables import StageTables


def decide(tables: StageTables, lattice, problem: MultiProblem, s_max: int, step: int, tau: float):
    """Decision DP at ``tau``: (feasible, h tables per ideal, ycount per row)."""
    kinds = problem.kinds
    last = len(kinds) - 1
    cdims = tuple(kinds[k].count // step + 1 for k in range(last))
    ycount = tables.ycount(tau)
    active = np.flatnonzero(ycount > 0)
    cap_last = kinds[last].count
    h: list[np.ndarray | None] = [None] * lattice.count
    full = lattice.full
    h_full = np.full((s_max + 1,) + cdims, np.inf)
    h_full[(0,) + (0,) * len(cdims)] = 0.0
    h[full] = h_full
    rows_by_j: dict[int, list[int]] = {}
    for r in active.tolist():
        rows_by_j.setdefault(int(tables.j[r]), []).append(r)
    I, T, K, D = tables.i, tables.t, tables.k, tables.d
    for j in range(full - 1, -1, -1):
        hj = np.full((s_max + 1,) + cdims, np.inf)
        for r in rows_by_j.get(j, ()):
            hi = h[I[r]]
            if hi is None:
                continue
            d, t, k = int(D[r]), int(T[r]), int(K[r])
            top = min(s_max, d * int(ycount[r]))
            if top < d:
                continue
            source = hi[: top - d + 1]
            if k == last:
                target = hj[d : top + 1]
                np.minimum(target, source + d * t, out=target)
            else:
                shift = d * t // step
                size = cdims[k]
                if shift >= size:
                    continue
                cut = [slice(None)] * (1 + len(cdims))
                put = [slice(d, top + 1)] + [slice(None)] * len(cdims)
                cut[1 + k] = slice(0, size - shift)
                put[1 + k] = slice(shift, size)
                target = hj[tuple(put)]
                np.minimum(target, source[tuple(cut)], out=target)
        hj[hj > cap_last] = np.inf
        if np.isfinite(hj).any():
            h[j] = hj
    feasible = h[0] is not None
    return feasible, h, ycount


def decide_front(tables: StageTables, lattice, problem: MultiProblem, s_max: int, tau: float):
    """Decision DP at ``tau`` for one device kind, on Pareto fronts.

    With one kind, ``h_j[s]`` only matters through its Pareto points (s, devices): a suffix with a smaller
    sum of d and no more devices is never worse for the earlier stages (their y only falls). Each front
    is kept sorted by s with devices strictly decreasing; each point carries (row, source point) to read
    the plan back. Returns (feasible, fronts, ycount).
    """
    cap = problem.kinds[0].count
    ycount = tables.ycount(tau)
    big = np.int64(1) << 40  # padding: never <= top, never a device count
    L = lattice.count
    width = s_max + 1  # a front has distinct sums s in 0..s_max
    FS = np.full((L, width), big, dtype=np.int64)
    FV = np.full((L, width), big, dtype=np.int64)
    BR = np.full((L, width), -1, dtype=np.int64)
    BX = np.full((L, width), -1, dtype=np.int64)
    length = np.zeros(L, dtype=np.int64)
    full = lattice.full
    FS[full, 0] = FV[full, 0] = 0
    length[full] = 1
    used = 1  # widest front so far
    D, DT, I = tables.d, tables.d * tables.t, tables.i
    for j in range(full - 1, -1, -1):
        lo, hi = tables.row_range[j]
        if hi == lo:
            continue
        rows = lo + np.flatnonzero((ycount[lo:hi] > 0) & (length[I[lo:hi]] > 0))
        if len(rows) == 0:
            continue
        src = I[rows]
        d = D[rows]
        top = np.minimum(s_max, d * ycount[rows])
        cs = FS[src, :used] + d[:, None]
        cv = FV[src, :used] + DT[rows][:, None]
        ok = (cs <= top[:, None]) & (cv <= cap)
        if not ok.any():
            continue
        r_idx, x_idx = np.nonzero(ok)
        cs, cv = cs[r_idx, x_idx], cv[r_idx, x_idx]
        order = np.lexsort((cv, cs))
        cs, cv = cs[order], cv[order]
        prev = np.concatenate(([big], np.minimum.accumulate(cv)[:-1]))
        keep = np.flatnonzero(cv < prev)  # invariant: s increasing, devices strictly decreasing
        m = len(keep)
        FS[j, :m], FV[j, :m] = cs[keep], cv[keep]
        BR[j, :m], BX[j, :m] = rows[r_idx[order[keep]]], x_idx[order[keep]]
        length[j] = m
        used = max(used, m)
    if length[0] == 0:
        return False, None, ycount
    return True, (FS, FV, BR, BX, length), ycount
