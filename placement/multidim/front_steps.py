"""One node added to a stage's option front, uniform case (every node's options share their sync and
parameter bytes, so a front is over the columns (P, A, B): compute, memory slope, memory constant).

Two representations, chosen by :data:`PER_Y_HORIZON` and :data:`PAB_MAX_ROWS` in
:func:`placement.multidim.stages.stage_fronts` (by default the first, then the second once a front is wide):

* one front over (P, A, B) for every y at once (:func:`extend_pab`: quadratic dominance test);
* one (time, memory) front per y (:func:`step_per_y`, compiled in :mod:`.kernel` when
  :data:`COMPILED`, else the numpy reference :func:`extend_per_y`), read out by :func:`rows_per_y`.
"""

from __future__ import annotations

import bisect

import numpy as np


def extend_pab(points: np.ndarray, options: np.ndarray, cap: float, horizon: int, safe: float = -1.0) -> np.ndarray:
    """Uniform-case front step over columns (P, A, B): all sums, drop what cannot fit, drop dominated rows.

    Only y in 1..``horizon`` is ever asked, and memory A y + B is linear in y, so row q dominates row p
    when P_q <= P_p and q's memory is no larger at y = 1 and at y = horizon.

    ``safe``: a row with memory at most ``safe`` at y = horizon fits at every y <= horizon with any
    completion of the stage (the caller subtracts the most memory the nodes not yet added could take,
    at the smallest cap). The first such row by P then dominates every row with a larger or equal P in
    every stage that extends this one, so those rows are dropped.
    """
    if len(points) * len(options) <= SMALL_STEP:
        return _extend_pab_small(points, options, cap, horizon, safe)
    comb = (points[:, None, :] + options[None, :, :]).reshape(-1, 3)
    comb = comb[comb[:, 1] + comb[:, 2] <= cap]
    if len(comb) <= 1:
        return comb
    comb = comb[np.lexsort((comb[:, 2], comb[:, 1], comb[:, 0]))]
    high = comb[:, 1] * horizon + comb[:, 2]
    sure = np.flatnonzero(high <= safe)
    if len(sure):
        # invariant: rows are sorted by P, so the rows before the first sure row have a smaller or equal P
        comb, high = comb[: sure[0] + 1], high[: sure[0] + 1]
        if len(comb) == 1:
            return comb
    low = comb[:, 1] + comb[:, 2]
    le = (comb[:, None, 0] <= comb[None, :, 0]) & (low[:, None] <= low[None, :]) & (high[:, None] <= high[None, :])
    # a row is dominated by an earlier (lexicographically smaller or equal) row: le[r, c] with r < c
    idx = np.arange(len(comb))
    return comb[~(le & (idx[:, None] < idx[None, :])).any(axis=0)]


#: :func:`extend_pab` on at most this many sums (rows x options) runs in plain Python
#: (:func:`_extend_pab_small`: the same float operations in the same order, so the same rows; numpy's
#: per-call overhead dominates such small steps, the most common ones on BERT and GNMT). 16 while the plain
#: path compared every pair of rows; 64 since it bisects a staircase (BERT at 8 / 32 / 128 devices, solve CPU s
#: in process, best of 7: 0.042 / 0.050 / 0.068 -> 0.041 / 0.049 / 0.062; GNMT and ResNet unchanged).
SMALL_STEP = 64


def _extend_pab_small(points: np.ndarray, options: np.ndarray, cap: float, horizon: int, safe: float) -> np.ndarray:
    """:func:`extend_pab` on few rows, in plain Python floats (IEEE doubles: the same sums and tests).

    Sorted by (P, A, B) as ``np.lexsort`` does (stable), cut after the first sure row, and a row is dropped
    when an earlier row is no larger in P, in memory at y = 1 and at y = ``horizon``.
    """
    comb = [
        (p + o, a + oa, b + ob)
        for p, a, b in points.tolist()
        for o, oa, ob in options.tolist()
        if a + oa + (b + ob) <= cap
    ]
    if len(comb) <= 1:
        return np.array(comb, dtype=np.float64).reshape(-1, 3)
    comb.sort()
    high = [a * horizon + b for _, a, b in comb]
    for r, h in enumerate(high):
        if h <= safe:
            # invariant: rows are sorted by P, so the rows before the first sure row have a smaller or equal P
            del comb[r + 1 :], high[r + 1 :]
            break
    # Rows come by P, so a row is dropped when an earlier kept row is no larger in memory at y = 1 and at
    # y = horizon (a dropped row's dominator dominates what it would: the relation is transitive). The kept
    # rows' 2-D minima are a staircase: lows increasing, highs strictly decreasing, so the least high among
    # the lows <= a row's low is the staircase's last point at or below that low (one bisection per row).
    lows: list[float] = []
    highs: list[float] = []
    kept = []
    for (p, a, b), h in zip(comb, high):
        low = a + b
        j = bisect.bisect_right(lows, low) - 1
        if j >= 0 and highs[j] <= h:
            continue
        kept.append((p, a, b))
        i = bisect.bisect_left(lows, low)
        end = i
        while end < len(lows) and highs[end] >= h:  # points no better at either y: dominated by this row
            end += 1
        lows[i:end], highs[i:end] = [low], [h]
    return np.array(kept, dtype=np.float64).reshape(-1, 3)


#: Largest horizon for which :func:`~placement.multidim.stages.stage_fronts` keeps one (time, memory) front per y (cheap sorts)
#: instead of one front over (P, A, B) (quadratic dominance test, but independent of the horizon).
PER_Y_HORIZON = 64

#: With :data:`PER_Y_HORIZON` > 0, :func:`~placement.multidim.stages.stage_fronts` first builds the (P, A, B)
#: fronts (no per-y arrays, no compiled kernel: the cheapest while fronts stay narrow, as on BERT-32 and
#: GNMT, whose widest fronts have 66 and 127 rows) and switches to per-y fronts as soon as one grows past
#: this many rows (ResNet's do within 0.05 s, and their quadratic dominance test would take minutes).
#: 0 = per-y fronts directly.
PAB_MAX_ROWS = 256


def extend_per_y(front: tuple, options: np.ndarray, ys: np.ndarray, cap: float, safe: np.ndarray) -> tuple:
    """Uniform-case front step with one front per y: rows (P, A, B), dominance on (P, A y + B) at that y.

    ``front`` is (P, A, B), each of shape (len(ys), width), padded with P = inf. For a fixed y the
    memory of a stage is the number A y + B, so a row is useless at y when another row has no larger P
    and no larger memory at y: each front is a 2-D Pareto front (sort, running minimum). Row r is kept
    at y only if nothing dominates it at y, so for every y the front holds a row of least P among the
    choices that fit at y, whatever nodes are added later (a dominator stays one when the same options
    are added to both). ``safe[y]``: a row whose memory at y is at most this fits with any completion,
    so the rows after the first such row (larger or equal P) are dropped.
    """
    P, A, B = front
    H = len(ys)
    P = (P[:, :, None] + options[None, None, :, 0]).reshape(H, -1)
    A = (A[:, :, None] + options[None, None, :, 1]).reshape(H, -1)
    B = (B[:, :, None] + options[None, None, :, 2]).reshape(H, -1)
    M = A * ys[:, None] + B
    P = np.where(M <= cap, P, np.inf)  # padding (inf) and rows that cannot fit sort last
    # a stable sort by P (runs of sorted rows, one per option); rows of equal P keep any order, so a
    # dominated one may survive (harmless), but every row dropped below has a dominator before it
    width = P.shape[1]
    flat = np.argsort(P, axis=1, kind="stable") + (np.arange(H) * width)[:, None]
    P, A, B, M = P.ravel()[flat], A.ravel()[flat], B.ravel()[flat], M.ravel()[flat]
    prev = np.concatenate((np.full((H, 1), np.inf), np.minimum.accumulate(M, axis=1)[:, :-1]), axis=1)
    keep = np.isfinite(P) & (M < prev)  # invariant: kept rows have increasing P and decreasing memory
    sure = keep & (M <= safe[:, None])
    first = np.where(sure.any(axis=1), np.argmax(sure, axis=1), width)
    keep &= np.arange(width)[None, :] <= first[:, None]
    counts = keep.sum(axis=1)
    out_w = int(counts.max()) if len(counts) else 0
    rows, cols = np.nonzero(keep)
    at = rows * out_w + (np.cumsum(keep, axis=1) - 1)[rows, cols]  # kept rows first, still by P
    P2, A2, B2 = np.full(H * out_w, np.inf), np.zeros(H * out_w), np.zeros(H * out_w)
    P2[at], A2[at], B2[at] = P[rows, cols], A[rows, cols], B[rows, cols]
    return P2.reshape(H, out_w), A2.reshape(H, out_w), B2.reshape(H, out_w)


def memory_horizon(slope: float, constant: float, cap: float, horizon: int) -> int:
    """Largest y (<= horizon) at which a stage of least memory ``slope * y + constant`` may fit ``cap``.

    Rounded up (one more y than the float quotient says, never fewer): a larger horizon only costs work.
    0 when even y = 1 cannot fit.
    """
    room = cap * (1 + 1e-9) - constant
    if room < slope:
        return 0
    if slope <= 0:
        return horizon
    return int(min(horizon, room // slope + 1))


#: Use the compiled per-y front steps of :mod:`.kernel` (True), the numpy reference versions above
#: (False), or choose per solve by its size (None, :func:`use_compiled`).
COMPILED: bool | None = None

#: With ``COMPILED = None``, solves whose lattice has at most this many (pairs of ideals x largest y) use
#: the numpy steps: importing numba and loading the cached kernel costs about 0.4 CPU s and 100 MB, more
#: than the kernel saves on small solves (BERT-32 at 8 to 128 devices; measured, see docs/benchmarks/multidim.md).
COMPILE_MIN_WORK = 120_000


def use_compiled(ideals: int, horizon: int) -> bool:
    """Whether a solve over ``ideals`` ideals with fronts up to y = ``horizon`` uses the compiled steps."""
    if COMPILED is not None:
        return COMPILED
    return ideals * (ideals - 1) // 2 * horizon > COMPILE_MIN_WORK


def step_per_y(
    front: tuple, options: np.ndarray, ys: np.ndarray, cap: float, safe: np.ndarray, compiled: bool = True
) -> tuple:
    """One node added to a per-y front (P, A, B, rows used per y): compiled, or the numpy reference."""
    P, A, B, count = front
    if compiled:
        from . import kernel  # noqa: PLC0415 - numba is imported only by solves that use it

        return kernel.extend_per_y(P, A, B, count, options, ys, float(cap), safe)
    P2, A2, B2 = extend_per_y((P, A, B), options, ys, cap, safe)
    return P2, A2, B2, np.isfinite(P2).sum(axis=1)


def rows_per_y(front: tuple, ys: np.ndarray, caps: np.ndarray, compiled: bool = True) -> np.ndarray:
    """Distinct least-P rows fitting each (y, cap), sorted by P (see :func:`best_rows`)."""
    if not compiled:
        return best_rows(front[:3], ys, list(caps))
    from . import kernel  # noqa: PLC0415

    out = kernel.best_rows(*front, ys, caps)  # type: ignore[call-arg]
    if len(caps) == 1:
        return out  # one block: by P already, copies dropped
    out = out[np.lexsort((out[:, 2], out[:, 1], out[:, 0]))]
    fresh = np.concatenate(([True], np.any(out[1:] != out[:-1], axis=1)))
    return out[fresh]


def best_rows(front: tuple, ys: np.ndarray, caps: list) -> np.ndarray:
    """For every y and every cap, the least-P row of the per-y front that fits; rows (P, A, B) by P.

    Every returned row is a real choice, so the least P of a returned row fitting at (y, cap) is the
    least P of any choice fitting there: the stage-time tables need nothing else.
    """
    P, A, B = front
    M = A * ys[:, None] + B
    picks = []
    for c in caps:
        fits = np.isfinite(P) & (M <= c)
        has = fits.any(axis=1)
        col = np.argmax(fits, axis=1)  # rows are by increasing P: the first fitting row is the best
        rows = np.flatnonzero(has)
        picks.append(np.stack((P[rows, col[rows]], A[rows, col[rows]], B[rows, col[rows]]), axis=1))
    out = np.concatenate(picks)
    out = out[np.lexsort((out[:, 2], out[:, 1], out[:, 0]))]
    # the same row is the best at many y: keep one copy (the tables' width follows the distinct rows)
    fresh = np.concatenate(([True], np.any(out[1:] != out[:-1], axis=1)))
    return out[fresh]
