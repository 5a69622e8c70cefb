"""Pair mode of the lattice kernel: the target ideals' data, and when pair mode is used.

A row whose cells all have floor ``inf`` stays empty, so no stage can end there. When few rows
can hold a value (the *targets*), :func:`placement.exact.kernel.lattice_dp` compares each row
with the targets directly instead of walking every superset in between (the module docstring
of :mod:`placement.exact.kernel`, "Pair mode"). This module decides when (the ``PAIR_*``
limits) and builds the targets' bit sets, prefix sums with error bounds (derivation:
:mod:`placement.exact.exactsum`, step 5) and boundary edges; and it holds pair mode's two steps of a
row's search (:mod:`placement.exact.row_search`): the next target (:func:`next_target`) and the
stage to it as a search level (:func:`pair_stage`).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, NamedTuple

import numpy as np
from numba import njit

from .cells import _can_improve
from .exactsum import EPS
from .floors import cover_tree

if TYPE_CHECKING:
    from .inputs import KernelInputs


@njit(cache=True, nogil=True, inline="always")
def _holds(bits, k, g):
    """Whether the bit set ``bits[k]`` (64 groups per word) holds group ``g``."""
    return ((bits[k, g >> 6] >> np.uint64(g & 63)) & np.uint64(1)) != 0


#: Pair mode (see :func:`target_pairs`) is used on lattices of at least this many ideals (below, the
#: walk takes milliseconds and pair mode's setup as long; measured in scripts/bench_dp.py) ...
PAIR_MIN_IDEALS = 2_000

#: ... when at most this many rows can hold a value ...
PAIR_MAX_TARGETS = 16_384

#: ... and they are at most this fraction of the ideals.
PAIR_MAX_FRACTION = 0.25

#: Pair mode keeps one bit set per ideal: at most this many bytes of them.
MAX_BITS_BYTES = 1 << 28


class Targets(NamedTuple):
    """Pair mode's data (:func:`target_pairs`): per target ideal, by increasing ideal index."""

    ideal: np.ndarray  # [k]: the target's ideal
    pos: np.ndarray  # [I]: ideal I's position among the targets (-1: not a target)
    bits: np.ndarray  # [k, w]: the target's groups, 64 per word
    sums: np.ndarray  # [k, q]: its additive sums (floats) ...
    errors: np.ndarray  # ... and their error bounds
    blocked: np.ndarray  # [k, t]: its nodes that cannot run on type t
    edge_start: np.ndarray  # its boundary edges are edge_src/edge_dst[edge_start[k]:edge_start[k + 1]]
    edge_src: np.ndarray
    edge_dst: np.ndarray
    node_group: np.ndarray  # [x]: the group of node x


def no_targets() -> Targets:
    """The ``targets`` argument of :func:`lattice_dp` that keeps the cover-edge search."""
    empty_i = np.zeros(0, dtype=np.int64)
    return Targets(
        empty_i,
        empty_i,
        np.zeros((0, 1), dtype=np.uint64),
        np.zeros((0, 1)),
        np.zeros((0, 1)),
        np.zeros((0, 1), dtype=np.int64),
        empty_i,
        empty_i,
        empty_i,
        empty_i,
    )


@njit(cache=True, nogil=True)
def _target_data(
    up_start, up_group, up_target, n_ideals, is_target, n_words, group_sum, group_blocked, node_group, succ_start, succs
):
    """Bits, sums with error bounds, blocked counts and boundary edges of the target ideals (see :func:`target_pairs`)."""
    bits = np.zeros((n_ideals, n_words), dtype=np.uint64)
    below, added = cover_tree(up_start, up_group, up_target, n_ideals)
    for j in range(1, n_ideals):  # an ideal's bits: those of the ideal it covers in the tree, plus one group
        g = added[j]
        for w in range(n_words):
            bits[j, w] = bits[below[j], w]
        bits[j, g >> 6] |= np.uint64(1) << np.uint64(g & 63)
    n_t = 0
    for i in range(n_ideals):
        if is_target[i]:
            n_t += 1
    ideal = np.empty(n_t, dtype=np.int64)
    pos = np.full(n_ideals, -1, dtype=np.int64)
    k = 0
    for i in range(n_ideals):
        if is_target[i]:
            ideal[k] = i
            pos[i] = k
            k += 1
    n_val, n_groups = group_sum.shape
    n_types = group_blocked.shape[0]
    t_bits = np.empty((n_t, n_words), dtype=np.uint64)
    t_sum = np.zeros((n_t, n_val))
    t_err = np.zeros((n_t, n_val))
    t_blocked = np.zeros((n_t, n_types), dtype=np.int64)
    n_nodes = node_group.shape[0]
    fr_start = np.zeros(n_t + 1, dtype=np.int64)
    src = np.empty(n_nodes + 1, dtype=np.int64)
    dst = np.empty(n_nodes + 1, dtype=np.int64)
    for k in range(n_t):
        i = ideal[k]
        for w in range(n_words):
            t_bits[k, w] = bits[i, w]
        for g in range(n_groups):
            if _holds(bits, i, g):
                for q in range(n_val):
                    v = group_sum[q, g]
                    r = t_sum[k, q] + v
                    t_sum[k, q] = r
                    t_err[k, q] += EPS * (abs(v) + abs(r))  # the group sum's rounding and this addition's
                for t in range(n_types):
                    t_blocked[k, t] += group_blocked[t, g]
        n_fr = fr_start[k]
        for x in range(n_nodes):  # the boundary edges: one end inside, the other outside
            g = node_group[x]
            x_in = _holds(bits, i, g)
            for z in range(succ_start[x], succ_start[x + 1]):
                h = node_group[succs[z]]
                if _holds(bits, i, h) == x_in:
                    continue
                if n_fr == src.shape[0]:
                    grown = np.empty(2 * n_fr, dtype=np.int64)
                    grown[:n_fr] = src
                    src = grown
                    grown = np.empty(2 * n_fr, dtype=np.int64)
                    grown[:n_fr] = dst
                    dst = grown
                src[n_fr] = x
                dst[n_fr] = succs[z]
                n_fr += 1
        fr_start[k + 1] = n_fr
    n_fr = fr_start[n_t]
    return ideal, pos, t_bits, t_sum, t_err, t_blocked, fr_start, src[:n_fr].copy(), dst[:n_fr].copy()


def target_pairs(inputs: KernelInputs, lattice: tuple, floor: np.ndarray) -> Targets | None:
    """The ``targets`` of :func:`lattice_dp` for pair mode, or None when pair mode does not pay.

    A row whose cells all have floor ``inf`` is never relaxed, so it stays ``inf`` (closure
    only copies within a row; the full ideal's row is given) and no stage can end there. When
    few rows can (the *targets*: a lattice of at least :data:`PAIR_MIN_IDEALS` ideals, at most
    :data:`PAIR_MAX_TARGETS` targets and :data:`PAIR_MAX_FRACTION` of the ideals), the kernel
    compares each row ``I`` with the targets ``K > I`` directly instead of walking every
    superset between them: ``K`` must contain ``I`` (bit sets of groups), the additive sums of
    ``K \\ I`` are the differences of the two ideals' float sums with their error bounds (every
    group sum correctly rounded, then ``EPS * (|group sum| + |partial sum|)`` per addition), and
    a node pays its communication term when an edge joins it to the other side of ``K \\ I``;
    every such edge crosses the boundary of ``I`` or of ``K`` (kept per target: its boundary
    edges, in either direction, as training graphs have backward edges). Where an interval cannot
    decide, the kernel rebuilds the exact sums as the cover-edge search does.
    """
    up_start, up_group, up_target, n_ideals = lattice
    a = inputs
    n_ideals = int(n_ideals)
    is_target = np.asarray((floor < math.inf).any(axis=1), dtype=np.bool_)
    is_target[n_ideals - 1] = True
    n_targets = int(is_target.sum())
    n_groups = a.group_start.shape[0] - 1
    n_words = max(1, -(-n_groups // 64))
    if (
        n_ideals < PAIR_MIN_IDEALS
        or n_targets > PAIR_MAX_TARGETS
        or n_targets > PAIR_MAX_FRACTION * n_ideals
        or n_ideals * n_words * 8 > MAX_BITS_BYTES
    ):
        return None
    n_nodes = a.out_degree.shape[0]
    node_group = np.empty(n_nodes, dtype=np.int64)
    for g in range(n_groups):
        node_group[a.group_nodes[a.group_start[g] : a.group_start[g + 1]]] = g
    # Successors in CSR form (from the predecessor lists).
    owner = np.repeat(np.arange(n_nodes), np.diff(a.pred_start))
    order = np.argsort(a.preds, kind="stable")
    succs = owner[order].astype(np.int64)
    succ_start = np.zeros(n_nodes + 1, dtype=np.int64)
    succ_start[1:] = np.cumsum(np.bincount(a.preds, minlength=n_nodes))
    n_val = a.node_val.shape[0]
    group_sum = np.zeros((n_val, n_groups))
    for q in range(n_val):
        for g in range(n_groups):
            group_sum[q, g] = math.fsum(a.node_val[q, a.group_nodes[a.group_start[g] : a.group_start[g + 1]]].tolist())
    data = _target_data(
        up_start,
        up_group,
        up_target,
        n_ideals,
        is_target,
        n_words,
        group_sum,
        a.group_blocked,
        node_group,
        succ_start,
        succs,
    )
    ideal, pos, bits, sums, errors, blocked, edge_start, edge_src, edge_dst = data
    return Targets(ideal, pos, bits, sums, errors, blocked, edge_start, edge_src, edge_dst, node_group)


# ----------------------------------------------------------------------------- the search's pair mode (row_search)
@njit(cache=True, nogil=True, inline="always")
def next_target(i, row_pos, cand, n_open, devs, table, pair_targets, settings, work):
    """Pair mode's next target from position ``cand``: ``(target_pos, cand)``, ``target_pos = -1`` when none is left.

    The target ``K`` (position ``target_pos``) contains ``I``, could improve an open cell, and its stage's
    compute (an interval from the two ideals' sums) fits on some type.
    """
    type_compute, next_state, limit = devs.type_compute, devs.next_state, work.limit
    tgt_sum, tgt_err, tgt_blocked, tgt_bits = (
        pair_targets.sums,
        pair_targets.errors,
        pair_targets.blocked,
        pair_targets.bits,
    )
    upper_bound, objective = settings.upper_bound, settings.objective
    while cand < pair_targets.ideal.shape[0]:
        c = cand
        cand += 1
        j = pair_targets.ideal[c]
        if not _can_improve(i, j, n_open, work.open_cells, devs.prev_state, table.useful, table.best, objective):
            continue
        fits = False
        for t in range(type_compute.shape[0]):
            if next_state[t, 0] < 0 or tgt_blocked[c, t] > tgt_blocked[row_pos, t]:
                continue
            compute_q = type_compute[t]
            d = tgt_sum[c, compute_q] - tgt_sum[row_pos, compute_q]
            d_lo = d - 2.0 * (tgt_err[c, compute_q] + tgt_err[row_pos, compute_q] + EPS * abs(d))
            if d_lo > upper_bound or d_lo > limit[t] or (objective == 0 and d_lo >= limit[t]):
                continue
            fits = True
        if not fits:
            continue
        for w in range(tgt_bits.shape[1]):
            if tgt_bits[row_pos, w] & ~tgt_bits[c, w]:
                fits = False
                break
        if fits:
            return c, cand
    return -1, cand


@njit(cache=True, nogil=True, inline="always")
def pair_stage(target_pos, row_pos, toggles, graph, pair_targets, work):
    """The stage ``K \\ I`` of pair mode as a search level: ``(stage_depth, toggles)``, ``stage_depth`` its number of groups.

    Additive sums are differences of the two ideals' sums; boundary terms come from the
    boundary edges of ``I`` and ``K``.
    """
    stage_sums, stage_errors, mark, tgt_bits = work.stage_sums, work.stage_errors, work.mark, pair_targets.bits
    n_val = graph.node_val.shape[0]
    stage_depth = 0
    for w in range(tgt_bits.shape[1]):
        stage_bits = tgt_bits[target_pos, w] & ~tgt_bits[row_pos, w]
        while stage_bits:
            stage_bits &= stage_bits - np.uint64(1)
            stage_depth += 1
    for q in range(n_val):
        d = pair_targets.sums[target_pos, q] - pair_targets.sums[row_pos, q]
        stage_sums[stage_depth, q] = d
        stage_errors[stage_depth, q] = (
            pair_targets.errors[target_pos, q] + pair_targets.errors[row_pos, q] + EPS * abs(d)
        )
    for q in range(n_val, stage_sums.shape[1]):
        stage_sums[stage_depth, q] = 0.0
        stage_errors[stage_depth, q] = 0.0
    for t in range(work.blocked.shape[1]):
        work.blocked[stage_depth, t] = pair_targets.blocked[target_pos, t] - pair_targets.blocked[row_pos, t]
    # A node crosses when an edge joins it to the other side of the stage: such an edge
    # crosses the boundary of I or of K (the ideals' boundary edges, both directions).
    toggles += 1
    for side in range(2):
        c = target_pos if side == 0 else row_pos
        for m in range(pair_targets.edge_start[c], pair_targets.edge_start[c + 1]):
            u = pair_targets.edge_src[m]
            if mark[u] == toggles:
                continue
            g = pair_targets.node_group[u]
            h = pair_targets.node_group[pair_targets.edge_dst[m]]
            u_in = _holds(tgt_bits, target_pos, g) and not _holds(tgt_bits, row_pos, g)
            v_in = _holds(tgt_bits, target_pos, h) and not _holds(tgt_bits, row_pos, h)
            if u_in == v_in:
                continue
            mark[u] = toggles
            for cl in range(graph.cross_val.shape[0]):
                v = graph.cross_val[cl, u]
                if v != 0.0:
                    q = n_val + cl
                    r = stage_sums[stage_depth, q] + v
                    stage_sums[stage_depth, q] = r
                    stage_errors[stage_depth, q] += EPS * abs(r)
    return stage_depth, toggles
