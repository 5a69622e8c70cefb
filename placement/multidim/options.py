"""Exact per-stage option choice under the memory cap, by Pareto fronts over the options.

For a stage S at tensor degree t, choosing option o_v for each node v gives

* compute ``P = sum p``, parameter bytes ``W = sum w``, boundary bytes ``E`` (edges leaving S, with the
  chosen options' sync bytes), memory slope ``A = sum a`` and constant ``B = sum b``;
* on d replicas of kind K with y microbatches in flight:
  time ``(E/d + 4(d-1)W/(dN)) / K.bytes_per_ms + P / (K.speed d)`` (ms), memory ``A y + B <= K.memory``.

Time grows with P, E and W; memory with A and B. So an optimal choice for *every* (K, d, y) lies on the
Pareto front of the combinations over (P, E, W, A, B): a DP over the nodes of S that keeps only
non-dominated partial sums is exact (a dominated partial choice can be swapped for its dominator in any
completion without raising any coordinate). Combinations with ``A + B`` above the largest memory cap
are dropped (y >= 1, so they never fit).

When every node's options share their sync bytes and parameter bytes (Piper's workloads), E and W do
not depend on the choice and the front is over (P, A, B) and does not depend on the stage's boundary,
so it is built incrementally as the stage grows (:func:`extend_front`).
"""

from __future__ import annotations

import numpy as np

#: Columns of a front: P, E, W, A, B.
P, E, W, A, B = range(5)


def prune(points: np.ndarray, choices: list, cap: float) -> tuple[np.ndarray, list]:
    """Keep the rows of ``points`` (k x 5) that fit ``cap`` at y = 1 and no other row dominates.

    Among equal rows the first is kept. ``choices[i]`` (a tuple of option indices) follows row i.
    """
    keep = points[:, A] + points[:, B] <= cap * (1 + 1e-12)
    points, choices = points[keep], [c for c, k in zip(choices, keep) if k]
    if len(points) <= 1:
        return points, choices
    order = np.lexsort(points.T[::-1])  # by P, then E, W, A, B
    points, choices = points[order], [choices[i] for i in order]
    le = np.all(points[:, None, :] <= points[None, :, :], axis=2)  # le[i, j]: row i <= row j everywhere
    # j is dominated by an earlier row i (sorted, so a dominator of a distinct row comes first) ...
    dominated = np.triu(le, 1).any(axis=0)
    # (of equal rows the earlier copy wins: the strict upper triangle encodes it)
    alive = ~dominated
    return points[alive], [c for c, a in zip(choices, alive) if a]


def extend_front(points: np.ndarray, choices: list, options: np.ndarray, cap: float) -> tuple[np.ndarray, list]:
    """Front of (stage + one node): every front row plus every option row of the node (options: m x 5)."""
    combined = (points[:, None, :] + options[None, :, :]).reshape(-1, 5)
    combos = [c + (j,) for c in choices for j in range(len(options))]
    return prune(combined, combos, cap)


def empty_front() -> tuple[np.ndarray, list]:
    """The front of an empty stage: one all-zero row, no choice."""
    return np.zeros((1, 5)), [()]


def best_time_table(
    points: np.ndarray,
    degrees: np.ndarray,
    y_max: np.ndarray,
    memory: float,
    bandwidth: float,
    speed: float,
    microbatches: int,
) -> list[np.ndarray]:
    """Minimum stage time for each degree d (``degrees``) and y = 1..``y_max[d]`` (inf where nothing fits).

    ``bandwidth`` is in bytes per ms (:attr:`~placement.multidim.model.DeviceKind.bytes_per_ms`), so the
    times are in ms. Returns one non-decreasing array per degree (index y - 1).
    """
    out = []
    if len(points) == 0:
        return [np.full(int(ym), np.inf) for ym in y_max]
    ymax = int(max(y_max)) if len(y_max) else 0
    ys = np.arange(1, ymax + 1, dtype=np.float64)
    fits = points[:, A][:, None] * ys[None, :] + points[:, B][:, None] <= memory  # F x Y
    uniform = np.all(points[:, E] == points[0, E]) and np.all(points[:, W] == points[0, W])
    if uniform:
        order = np.argsort(points[:, P], kind="stable")
        fits_sorted = fits[order]
        any_fit = fits_sorted.any(axis=0)
        first = np.argmax(fits_sorted, axis=0)
        pmin = np.where(any_fit, points[order, P][first], np.inf)
        e, w = points[0, E], points[0, W]
        for d, ym in zip(degrees, y_max):
            d = float(d)
            base = (e / d + 4 * (d - 1) * w / d / microbatches) / bandwidth
            out.append(base + pmin[: int(ym)] / (speed * d))
        return out
    for d, ym in zip(degrees, y_max):
        d = float(d)
        cost = (points[:, E] / d + 4 * (d - 1) * points[:, W] / d / microbatches) / bandwidth + points[:, P] / (
            speed * d
        )
        table = np.where(fits[:, : int(ym)], cost[:, None], np.inf).min(axis=0)
        out.append(table)
    return out
