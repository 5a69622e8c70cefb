"""The open cells of a row of the lattice kernel's table.

A cell ``(I, s)`` is *open* while its value is above its floor (the contract in
:mod:`placement.exact.lattice_search`, "Open cells"): only open cells are relaxed, and the
search of a row stops once none is left. Per device type ``t``, ``limit[t]`` is the largest
value among the open cells a stage on ``t`` can improve: a stage whose compute is at least
that (objective 1: above it) can improve nothing on ``t``.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True, inline="always")
def _can_improve(i, j, n_open, open_cells, prev_state, useful, best, objective):
    """Whether a state of ``J`` worth extending lies under an open cell of row ``i`` that it could improve.

    A value through a stage is ``max(base, load)`` or ``base + duration``, both ``>= base``
    (objective 1 may still win a tie on the device count).
    """
    for k in range(n_open):
        nxt = open_cells[k]
        for t in range(prev_state.shape[0]):
            back = prev_state[t, nxt]
            if back >= 0 and useful[j, back]:
                if best[j, back] < best[i, nxt] or (objective == 1 and best[j, back] == best[i, nxt]):
                    return True
    return False


@njit(cache=True, nogil=True)
def _stale(i, nxt, old, new, floor, has_floor, prev_state, limit):
    """Whether lowering cell ``(i, nxt)`` from ``old`` to ``new`` may close it or lower a limit.

    Otherwise the open cells and limits are left as they are (a stale limit is only larger: safe).
    """
    if has_floor and not new > floor[i, nxt]:
        return True
    for t in range(prev_state.shape[0]):
        if prev_state[t, nxt] >= 0 and old >= limit[t]:
            return True
    return False


@njit(cache=True, nogil=True)
def _open_cells(i, best, floor, has_floor, prev_state, open_cells, is_open, limit):
    """List row ``i``'s open cells (value above the floor) in ``open_cells`` (flags in ``is_open``); returns their number.

    ``limit[t]``: the largest value among the open cells a stage on type ``t`` can improve
    (``-inf``: none). State 0 (no device) is never the target of a stage.
    """
    for t in range(prev_state.shape[0]):
        limit[t] = -np.inf
    n_open = 0
    is_open[0] = False
    for s in range(1, best.shape[1]):
        is_open[s] = not has_floor or best[i, s] > floor[i, s]
        if not is_open[s]:
            continue
        open_cells[n_open] = s
        n_open += 1
        for t in range(prev_state.shape[0]):
            if prev_state[t, s] >= 0 and best[i, s] > limit[t]:
                limit[t] = best[i, s]
    return n_open
