"""Compiled per-y option fronts (numba): the inner step of :func:`placement.multidim.stages.stage_fronts`.

Same contract as :func:`placement.multidim.front_steps.extend_per_y` and
:func:`~placement.multidim.front_steps.best_rows`
(the numpy versions, kept as the readable reference and used where numba is unavailable): for each y,
a front of rows (P, A, B) sorted by P with memory ``A y + B`` strictly decreasing, every row fitting the
cap at y, cut after the first row whose memory is at most ``safe[y]``. Fronts are padded arrays of shape
(H, width) with ``count[h]`` rows used in row h.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def extend_per_y(P, A, B, count, options, ys, cap, safe):  # pragma: no cover - compiled
    """Front of (stage + one node) at every y: all sums of a front row and an option, sorted by P,
    dominated rows (no smaller memory than an earlier row) dropped, cut after the first safe row.

    Returns (P2, A2, B2, count2); rows of P2 past count2[h] are padding (inf).
    """
    H = P.shape[0]
    m = options.shape[0]
    width = 1
    for h in range(H):
        width = max(width, count[h] * m)
    P2 = np.full((H, width), np.inf)
    A2 = np.zeros((H, width))
    B2 = np.zeros((H, width))
    count2 = np.zeros(H, dtype=np.int64)
    cp = np.empty(width)
    ca = np.empty(width)
    cb = np.empty(width)
    used = 0
    for h in range(H):
        y = ys[h]
        c = 0
        for r in range(count[h]):  # row-major (row, option), as the numpy version flattens
            for o in range(m):
                a = A[h, r] + options[o, 1]
                b = B[h, r] + options[o, 2]
                if a * y + b <= cap:
                    cp[c] = P[h, r] + options[o, 0]
                    ca[c] = a
                    cb[c] = b
                    c += 1
        if c == 0:
            continue
        order = np.argsort(cp[:c], kind="mergesort")  # stable, like the numpy version
        best = np.inf
        k = 0
        for q in range(c):
            x = order[q]
            mem = ca[x] * y + cb[x]
            if mem < best:  # invariant: kept rows have increasing P and strictly decreasing memory
                best = mem
                P2[h, k] = cp[x]
                A2[h, k] = ca[x]
                B2[h, k] = cb[x]
                k += 1
                if mem <= safe[h]:
                    break  # fits with any completion: every later (slower) row is useless
        count2[h] = k
        used = max(used, k)
    return P2[:, :used], A2[:, :used], B2[:, :used], count2


@njit(cache=True, nogil=True)
def best_rows(P, A, B, count, ys, caps):  # pragma: no cover - compiled
    """For every cap and y, the least-P row of the front that fits (rows are by increasing P).

    Per cap the picks come by increasing y, so their P never decreases (a choice fitting at y + 1
    fits at y): consecutive copies are dropped here and each cap's block is sorted by P. With
    several caps the caller merges the blocks.
    """
    H = P.shape[0]
    out = np.empty((H * len(caps), 3))
    k = 0
    for cap in caps:
        first = k
        for h in range(H):
            y = ys[h]
            for r in range(count[h]):
                if A[h, r] * y + B[h, r] <= cap:
                    if k == first or not (
                        out[k - 1, 0] == P[h, r] and out[k - 1, 1] == A[h, r] and out[k - 1, 2] == B[h, r]
                    ):
                        out[k, 0] = P[h, r]
                        out[k, 1] = A[h, r]
                        out[k, 2] = B[h, r]
                        k += 1
                    break
    return out[:k]
