"""The two enumerations of a lattice's ideals behind :func:`placement.exact.ideals.enumerate_ideals`.

:func:`plain` walks in plain Python (bit sets as ints); :func:`compiled` hands the same walk to the
numba function :func:`placement.exact.ideal_walk.walk_ideals` (64-bit words), imported only when
called, so that small lattices and refusals never load numba. Both visit level by level (ideals of
one size, in the order found), each ideal's addable groups by increasing index, and number a new
ideal when first reached: the same lattice, bit for bit. Each returns a :class:`Walk`; with the
caps passed (``count > max_ideals`` or ``count * per_ideal + 16 * cover edges > max_bytes``, tested
when an ideal is found) it says where.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Walk:
    """The ideals as bit sets (``masks[0]`` empty), their sizes and cover edges in CSR form; or ``too_many``.

    ``too_many`` is ``(count, level, ideals on that level)`` when a cap stopped the walk (else None).
    """

    masks: list
    sizes: object
    up_start: object
    up_group: object
    up_target: object
    too_many: tuple[int, int, int] | None = None


def walk_loaded() -> bool:
    """Whether this process has the compiled walk at hand (imported and its machine code loaded)."""
    walk = sys.modules.get("placement.exact.ideal_walk")
    return walk is not None and bool(walk.walk_ideals.signatures)


def plain(groups, max_ideals: int, max_bytes: int, per_ideal: int, stop_after: int) -> Walk | None:
    """The walk in plain Python; None once it has found more than ``stop_after`` ideals (the compiled walk takes over)."""
    n = groups.count
    pred_mask = [0] * n
    succs: list[list[int]] = [[] for _ in range(n)]
    for a, b in groups.order_edges:
        pred_mask[b] |= 1 << a
        succs[a].append(b)
    sources = 0
    for g in range(n):
        if pred_mask[g] == 0:
            sources |= 1 << g
    index: dict[int, int] = {0: 0}
    masks = [0]
    available = [sources]  # groups addable to each ideal, as a bitmask
    level = [0]
    up_start = [0]
    up_group: list[int] = []
    up_target: list[int] = []
    sizes = [0]
    for size in range(n):
        next_level: list[int] = []
        for i in level:
            mask, avail = masks[i], available[i]
            bits = avail
            while bits:
                low = bits & -bits
                g = low.bit_length() - 1
                bits ^= low
                new = mask | low
                j = index.get(new)
                if j is None:
                    j = len(masks)
                    index[new] = j
                    new_avail = avail ^ low
                    for s in succs[g]:
                        if pred_mask[s] & new == pred_mask[s]:
                            new_avail |= 1 << s
                    masks.append(new)
                    available.append(new_avail)
                    sizes.append(size + 1)
                    next_level.append(j)
                    if len(masks) > stop_after and len(masks) <= max_ideals:
                        return None
                    if len(masks) > max_ideals or len(masks) * per_ideal + 16 * len(up_group) > max_bytes:
                        return Walk([], [], [], [], [], (len(masks), size + 1, len(next_level)))
                up_group.append(g)
                up_target.append(j)
            up_start.append(len(up_group))
        level = next_level
    up_start.extend([len(up_group)] * len(level))  # the full ideal: nothing to add
    return Walk(masks, sizes, up_start, up_group, up_target)


def compiled(n: int, order_edges, max_ideals: int, max_bytes: int, per_ideal: int) -> Walk:
    """The walk by :func:`placement.exact.ideal_walk.walk_ideals` over ``n`` groups and the order graph's edges."""
    words = max(1, (n + 63) // 64)
    pred = np.zeros((n, words), dtype=np.uint64)
    succ_lists: list[list[int]] = [[] for _ in range(n)]
    for a, b in order_edges:
        pred[b, a // 64] |= np.uint64(1) << np.uint64(a % 64)
        succ_lists[a].append(b)
    succ_start = np.zeros(n + 1, dtype=np.int64)
    succ_start[1:] = np.cumsum([len(s) for s in succ_lists])
    succ = np.asarray([b for s in succ_lists for b in s], dtype=np.int64)
    sources = np.zeros(words, dtype=np.uint64)
    for g in range(n):
        if not pred[g].any():
            sources[g // 64] |= np.uint64(1) << np.uint64(g % 64)
    from .ideal_walk import WALK_TOO_MANY, walk_ideals  # numba: loaded only for large lattices

    code, masks, sizes, up_start, up_group, up_target, count, level, on_level = walk_ideals(
        pred, succ_start, succ, sources, int(max_ideals), int(per_ideal), int(min(max_bytes, 2**62))
    )
    if code == WALK_TOO_MANY:
        return Walk([], [], [], [], [], (int(count), int(level), int(on_level)))
    data, width = masks.tobytes(), 8 * masks.shape[1]  # one copy, then slices: ~2x a tobytes() per row
    masks_as_ints = [int.from_bytes(data[k : k + width], "little") for k in range(0, len(data), width)]
    return Walk(masks_as_ints, sizes, up_start, up_group, up_target)
