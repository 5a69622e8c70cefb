"""The enumeration of a lattice's ideals, compiled: :func:`walk_ideals` (called by :func:`placement.exact.ideals.enumerate_ideals`).

It visits exactly what the plain-Python enumeration did, in the same order, so the lattice (its ideal
numbering, cover edges and their order) is the same bit for bit: level by level (ideals of ``size``
groups, in the order they were found), each ideal's addable groups by increasing index, a new
ideal numbered when first reached. Ideals are bit sets of ``words`` 64-bit words; a hash table
(open addressing, linear probing, at most half full) maps a bit set to its number.
"""

from __future__ import annotations

import numpy as np
from numba import njit

#: Return codes of :func:`walk_ideals`.
WALK_DONE = 0
WALK_TOO_MANY = 1  # past the ideal cap or the memory estimate (the last three outputs say where)


@njit(cache=True, nogil=True, inline="always")
def _hash(row):
    h = np.uint64(1469598103934665603)
    for w in range(row.shape[0]):
        h = (h ^ row[w]) * np.uint64(1099511628211)
        h ^= h >> np.uint64(29)
    return h


@njit(cache=True, nogil=True)
def _find(table, masks, row):
    """The slot of ``row`` in ``table``: its entry (ideal + 1) or an empty slot (0) where it would go."""
    mask = np.uint64(table.shape[0] - 1)
    slot = _hash(row) & mask
    while True:
        entry = table[slot]
        if entry == 0:
            return slot
        k = entry - 1
        same = True
        for w in range(row.shape[0]):
            if masks[k, w] != row[w]:
                same = False
                break
        if same:
            return slot
        slot = (slot + np.uint64(1)) & mask


@njit(cache=True, nogil=True)
def _rehash(masks, count, size):
    table = np.zeros(size, dtype=np.int64)
    for k in range(count):
        slot = _find(table, masks, masks[k])
        table[slot] = k + 1
    return table


@njit(cache=True, nogil=True)
def walk_ideals(pred, succ_start, succ, sources, max_ideals, per_ideal, max_bytes):
    """Every ideal of the order graph given as ``pred[g]`` (the bit set of g's predecessors) and ``succ`` (CSR).

    Returns (code, masks, sizes, up_start, up_group, up_target, count, level, on_level): the bit sets
    ``masks[:count]``, their sizes, the cover edges in CSR form (as :class:`IdealLattice` holds them),
    and with ``code == WALK_TOO_MANY`` the count, level and ideals on the last level when a cap was
    passed (the same test as the plain enumeration: ``count > max_ideals`` or ``count * per_ideal +
    16 * edges > max_bytes``).
    """
    n = pred.shape[0]
    words = pred.shape[1]
    cap = 1024
    masks = np.zeros((cap, words), dtype=np.uint64)
    avail = np.zeros((cap, words), dtype=np.uint64)
    sizes = np.zeros(cap, dtype=np.int32)
    up_start = np.zeros(cap + 1, dtype=np.int64)
    edge_cap = 4096
    up_group = np.zeros(edge_cap, dtype=np.int32)
    up_target = np.zeros(edge_cap, dtype=np.int32)
    table = np.zeros(4096, dtype=np.int64)
    avail[0, :] = sources
    table[_find(table, masks, masks[0])] = 1
    count = 1
    edges = 0
    rows_done = 0  # ideals whose cover edges are listed (up_start[:rows_done + 1] set)
    level = np.zeros(1, dtype=np.int64)
    new = np.zeros(words, dtype=np.uint64)
    for size in range(n):
        next_level = np.empty(0, dtype=np.int64)
        found = np.empty(max(16, 2 * level.shape[0]), dtype=np.int64)
        n_found = 0
        for i in level:
            for w in range(words):
                bits = avail[i, w]
                while bits:
                    low = bits & (~bits + np.uint64(1))
                    bits ^= low
                    g = w * 64
                    probe = low
                    while probe > np.uint64(1):
                        probe >>= np.uint64(1)
                        g += 1
                    for v in range(words):
                        new[v] = masks[i, v]
                    new[w] |= low
                    slot = _find(table, masks, new)
                    j = table[slot] - 1
                    if j < 0:
                        j = count
                        if count == masks.shape[0]:  # grow the per-ideal arrays
                            bigger = 2 * masks.shape[0]
                            masks = np.concatenate((masks, np.zeros((bigger - count, words), dtype=np.uint64)))
                            avail = np.concatenate((avail, np.zeros((bigger - count, words), dtype=np.uint64)))
                            sizes = np.concatenate((sizes, np.zeros(bigger - count, dtype=np.int32)))
                            up_start = np.concatenate((up_start, np.zeros(bigger - count, dtype=np.int64)))
                        masks[j, :] = new
                        avail[j, :] = avail[i, :]
                        avail[j, w] ^= low
                        for e in range(succ_start[g], succ_start[g + 1]):
                            s = succ[e]
                            ready = True
                            for v in range(words):
                                if pred[s, v] & new[v] != pred[s, v]:
                                    ready = False
                                    break
                            if ready:
                                avail[j, s // 64] |= np.uint64(1) << np.uint64(s % 64)
                        sizes[j] = size + 1
                        count += 1
                        if n_found == found.shape[0]:
                            found = np.concatenate((found, np.empty(found.shape[0], dtype=np.int64)))
                        found[n_found] = j
                        n_found += 1
                        if 2 * count > table.shape[0]:
                            table = _rehash(masks, count, 4 * table.shape[0])
                        else:
                            table[slot] = j + 1
                        if count > max_ideals or count * per_ideal + 16 * edges > max_bytes:
                            return (
                                WALK_TOO_MANY,
                                masks,
                                sizes,
                                up_start,
                                up_group,
                                up_target,
                                count,
                                size + 1,
                                n_found,
                            )
                    if edges == up_group.shape[0]:
                        up_group = np.concatenate((up_group, np.zeros(edges, dtype=np.int32)))
                        up_target = np.concatenate((up_target, np.zeros(edges, dtype=np.int32)))
                    up_group[edges] = g
                    up_target[edges] = j
                    edges += 1
            rows_done += 1
            up_start[rows_done] = edges
        next_level = found[:n_found].copy()
        level = next_level
    for k in range(level.shape[0]):  # the full ideal: nothing to add
        rows_done += 1
        up_start[rows_done] = edges
    return (
        WALK_DONE,
        masks[:count].copy(),
        sizes[:count].copy(),
        up_start[: rows_done + 1].copy(),
        up_group[:edges].copy(),
        up_target[:edges].copy(),
        count,
        n,
        level.shape[0],
    )
