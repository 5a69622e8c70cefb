"""Pareto front of launchable layouts: iteration time vs memory per GPU vs GPU count (and cost with a price).

:func:`pareto_front` enumerates every shape of a space (:mod:`placement.perf.search`) best-first by its time bound,
GPU counts in increasing order, and skips what cannot join the front: a whole shape when a plan already found
(no more GPUs) is as fast as the shape's bound and as lean as its memory floor (:func:`memory_floor`), the rest of a
shape's layer splits once that holds for their (growing) bounds, a split whose heaviest rank's floor or leanest
variant is so dominated, and a recompute variant that an earlier one of its chain or a found plan dominates.
Free per-rank splits (Megatron-Core's ``--pipeline-model-parallel-layout``) join through :func:`_free_front`.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Iterator, Sequence

from .collectives import Links
from .free_split import TIE_RTOL, FreeSplits, free_bound, free_template
from .hardware import Cluster, Dtype
from .layout import Layout, Recompute, RecomputeMethod, stage_layers
from .memory import _stage_activations, free_split_floor, layer_activation_bytes, static_parts
from .params import DEFAULT_PARAMS, PerfParams
from .partial_split import PartialSplits, partial_bound, partial_template
from .predict import _layer_cost, _LayerCost, iteration_time, predict
from .search import (
    _COUNTERS,
    _FAMILY,
    Plan,
    _candidates,
    _capacity,
    _chains,
    _checked,
    _mode_of,
    _splits_allowed,
    static_memory_bound,
)
from .spaces import SearchSpace, divisors, get_space
from .splits import _ends_seconds, split_bounds, with_split
from .transformer import TransformerSpec


def _pareto_filter(plans: Sequence[Plan], with_cost: bool) -> list[Plan]:
    def key(p: Plan) -> tuple[float, ...]:
        k = (p.iteration_seconds, p.memory_bytes, float(p.gpus))
        return (*k, p.cost_per_iteration or 0.0) if with_cost else k

    keyed = sorted(((key(p), p) for p in plans), key=lambda kp: kp[0])
    front: list[tuple[tuple[float, ...], Plan]] = []
    for k, plan in keyed:
        if any(all(a <= b for a, b in zip(f, k, strict=True)) for f, _ in front):
            continue
        front.append((k, plan))
    return [p for _, p in front]


def gpu_counts(cluster: Cluster, most: int = 4) -> list[int]:
    """GPU counts for the front: the ``most`` largest divisors of the cluster size in whole nodes (or one partial node)."""
    g = cluster.gpus_per_node
    counts = [n for n in divisors(cluster.gpus) if (n % g == 0) or (n < g and g % n == 0)]
    return counts[-most:]


#: What :func:`memory_floor` depends on: the static memory's family and one layer's checkpoint.
_FLOOR_KEY = (*_FAMILY, "micro_batch", "sequence_parallel", "dtype")


def memory_floor(model: TransformerSpec, shape: Layout, params: PerfParams, any_split: bool) -> float:
    """Bytes below which no split or recompute variant of ``shape`` gets: the static bound plus the rank of at
    least ``ceil(L / p)`` layers holding one micro-batch of layer inputs (full recomputation keeps the least)."""
    most = -(-model.layers // shape.pipeline)
    checkpoint = layer_activation_bytes(model, shape, Recompute.FULL)
    return static_memory_bound(model, shape, params, any_split) + most * checkpoint


class _Staircase:
    """The 2-D front (time, memory) of the plans found so far, for dominance queries in O(log n).

    Invariant: ``times`` strictly increasing, ``mems`` strictly decreasing (each point is the leanest of the
    plans at least as fast as it), so the leanest plan at least as fast as ``t`` is the last point with time
    <= ``t``. Every plan found has no more GPUs than the ones still to come (counts run in increasing
    order), so a point that 2-D dominates a candidate dominates it in 3-D too.
    """

    def __init__(self) -> None:
        self.times: list[float] = []
        self.mems: list[float] = []

    def leanest(self, seconds: float) -> float:
        """Least memory of a plan at least as fast as ``seconds`` (inf: none)."""
        i = bisect.bisect_right(self.times, seconds) - 1
        return self.mems[i] if i >= 0 else math.inf

    def dominated(self, seconds: float, memory: float) -> bool:
        """Some plan found is at least as fast as ``seconds`` and as lean as ``memory``."""
        return self.leanest(seconds) <= memory

    def fastest(self, memory: float) -> float:
        """Least time of a plan at most ``memory`` bytes (inf: none); the points that lean form a suffix."""
        lo, hi = 0, len(self.mems)
        while lo < hi:
            mid = (lo + hi) // 2
            if self.mems[mid] <= memory:
                hi = mid
            else:
                lo = mid + 1
        return self.times[lo] if lo < len(self.times) else math.inf

    def add(self, seconds: float, memory: float) -> bool:
        """Insert the point unless dominated (returns whether it was inserted); drop the points it dominates."""
        if self.dominated(seconds, memory):
            return False
        pos = bisect.bisect_left(self.times, seconds)
        end = pos
        while end < len(self.times) and self.mems[end] >= memory:
            end += 1
        self.times[pos:end] = [seconds]
        self.mems[pos:end] = [memory]
        return True


class _Leanest:
    """The least memory of any recompute variant of a split of one shape, from its layer counts.

    Each chain's last variant (full recomputation of every layer, or the chain's only member) is the chain's
    leanest; its memory is :class:`~placement.perf.memory.RecomputeMemory`'s total of that variant, summed here in
    the same order from the same parts (static parts per rank and count cached, activations of the rank's count),
    so it is bit-equal without building the split's layout (``tests/test_perf_pareto.py`` compares both).
    """

    def __init__(self, space: SearchSpace, model: TransformerSpec, shape: Layout, params: PerfParams) -> None:
        from .chains import _variant

        self.model, self.shape, self.reserve = model, shape, params.reserve_bytes
        self.templates = []
        for mode in space.recompute:
            if mode is Recompute.NONE:
                self.templates.append(shape)
            elif mode is Recompute.SELECTIVE:
                self.templates.append(_variant(shape, recompute=mode))
            else:  # block recomputation of every layer of a chunk (None: all) sizes as k = the largest chunk
                self.templates.append(
                    _variant(shape, recompute=mode, recompute_method=RecomputeMethod.BLOCK, recompute_layers=None)
                )
        self.per_layer = (
            layer_activation_bytes(model, shape, Recompute.NONE),
            layer_activation_bytes(model, shape, Recompute.FULL),
        )
        self.statics: dict[tuple[int, int], float] = {}
        self.totals: dict[tuple[int, int, int], float] = {}

    def leanest(self, counts: tuple[int, int, int] | None) -> float:
        """Bytes of the leanest variant of the split ``(first, middle, last)`` (None: the shape's own split)."""
        model, shape, p = self.model, self.shape, self.shape.pipeline
        if counts is None:
            per_rank = stage_layers(model, shape)
            uneven = shape.uneven
        else:
            first, middle, last = counts
            per_rank = (first,) + (middle,) * (p - 2) + (last,)
            uneven = not (first == last and (p == 2 or first == middle) and first * p == model.layers)
        ranks = [0] + ([p - 1] if p > 1 else []) + ([1] if uneven and p > 2 else [])  # memory.sizing_ranks
        best = math.inf
        for i, lay in enumerate(self.templates):
            worst = -1.0
            for r in ranks:
                n = per_rank[r]
                if (i, r, n) not in self.totals:  # the splits of a shape share most (rank, count) pairs
                    if (r, n) not in self.statics:
                        weights, gradients, optimizer = static_parts(model, shape, r, n)
                        self.statics[(r, n)] = weights + gradients + optimizer
                    acts, out = _stage_activations(model, lay, r, self.per_layer, n)
                    self.totals[(i, r, n)] = self.statics[(r, n)] + acts + out + self.reserve
                worst = max(worst, self.totals[(i, r, n)])
            best = min(best, worst)
        return best


def _front_of_shape(
    space: SearchSpace, model: TransformerSpec, cluster: Cluster, shape: Layout, bound: float, params: PerfParams,
    capacity: float, floor: float, stair: _Staircase, found: list[Plan], price: float | None,
) -> tuple[_LayerCost | None, tuple[float, ...] | None]:  # fmt: skip
    """Append to ``found`` (and ``stair``) the variants of ``shape`` (every split) that no plan found dominates;
    returns the shape's per-layer cost and :func:`~placement.perf.splits._ends_seconds` where they were computed."""
    cost = None  # one layer's cost: the same for every split, computed once it is needed
    ends = None
    if not _splits_allowed(space, shape.pipeline, shape.schedule):
        stream: Iterator[tuple[float, tuple[int, int, int] | None]] = iter([(bound, None)])
    else:
        cost = _layer_cost(model, cluster, shape, params, Links.of(cluster, params))
        ends = _ends_seconds(model, cluster, shape, params, cost)
        stream = split_bounds(model, cluster, shape, params, ends)
    checkpoint = layer_activation_bytes(model, shape, Recompute.FULL)
    sizer: _Leanest | None = None
    floors: dict[int, float] = {}  # a middle rank of n layers: static bytes, reserve, one checkpoint per layer
    for split_bound, counts in stream:
        if stair.dominated(split_bound, floor):
            break  # bounds only grow along the stream: every later split is dominated too
        most = max(stage_layers(model, shape) if counts is None else counts)
        if most not in floors:
            floors[most] = sum(static_parts(model, shape, None, most)) + params.reserve_bytes + most * checkpoint
        if floors[most] > capacity or stair.dominated(split_bound, floors[most]):
            continue
        # memory never grows along a chain: the chains' last variants bound the split's memory (sized from the
        # counts alone, bit-equal to the chains' own: no layout is built for a split that fails here)
        if counts is None:  # the shape's own split (one per shape): its chains directly
            split, chains = shape, _chains(space, model, params, shape)
            leanest = min(chain.memory(len(chain) - 1) for chain in chains)
        else:
            if sizer is None:
                sizer = _Leanest(space, model, shape, params)
            leanest = sizer.leanest(counts)
        if leanest > capacity or stair.dominated(split_bound, leanest):
            continue
        if counts is not None:
            split = with_split(shape, model.layers, counts)
            chains = _chains(space, model, params, split)
        # the split without recomputation is at least as fast as each of its variants (tested chain order)
        if cost is None:
            cost = _layer_cost(model, cluster, shape, params, Links.of(cluster, params))
        fastest = iteration_time(model, cluster, split, params, cost).total
        split_bound = max(split_bound, fastest)
        for chain in chains:
            # variants leaner than every plan at least as fast as the bound form a suffix of the chain
            # (memory never grows along it): find its start by bisection
            limit = min(stair.leanest(split_bound), math.nextafter(capacity, math.inf))
            lo, hi = 0, len(chain)
            while lo < hi:
                mid = (lo + hi) // 2
                if chain.memory(mid) < limit:
                    hi = mid
                else:
                    lo = mid + 1
            lowest, at_least = math.inf, split_bound  # time never falls along a chain: the last one bounds the rest
            for i in range(lo, len(chain)):
                mem = chain.memory(i)
                if mem >= lowest or stair.dominated(at_least, mem):
                    continue  # every plan kept has no more GPUs than this one
                lowest = mem
                layout = chain.layout(i)
                if layout is not split and stair.dominated(_recompute_bound(model, layout, cost, fastest, params), mem):
                    continue
                seconds = fastest if layout is split else iteration_time(model, cluster, layout, params, cost).total
                at_least = max(at_least, seconds)
                if stair.add(seconds, mem):
                    prediction = predict(model, cluster, layout, params, check=False, with_band=False)
                    found.append(Plan(layout, prediction, cluster.gpus, price))
    return cost, ends


def _free_front(
    space: SearchSpace, model: TransformerSpec, cluster: Cluster, shape: Layout, params: PerfParams,
    capacity: float, floor: float, stair: _Staircase, found: list[Plan], price: float | None,
    cost: _LayerCost | None = None, ends: tuple[float, ...] | None = None,
) -> None:  # fmt: skip
    """Append to ``found`` (and ``stair``) the free splits of ``shape`` (p >= 3; recompute none, selective, full of
    every layer) that no plan found dominates: for each mode, the (time, memory) front of its free splits.

    The walk: the least-time free split within a memory cap ``Q`` (ties within :data:`TIE_RTOL`: the least memory;
    :func:`placement.perf.free_split.best_free_split`, exact) is a front point of the mode's splits; every other
    front point is leaner, so the next cap is just below its memory, and also just below the leanest plan found
    that is at least as fast (a later point is slower, so it must be leaner than that plan to join). The caps
    fall strictly, over finitely many byte values; the walk stops when no split fits under the cap, none is
    faster than the fastest plan found within the mode's memory floor (every slower split is dominated by it),
    or the cap is below that floor (the larger of the shape's and :func:`~placement.perf.memory.free_split_floor`). A mode is skipped when a
    plan found is as fast as the mode's :func:`~placement.perf.free_split.free_bound` and as lean as its floor.
    """
    if cost is None:
        cost = _layer_cost(model, cluster, shape, params, Links.of(cluster, params))
    if ends is None:
        ends = _ends_seconds(model, cluster, shape, params, cost)
    lowest = free_bound(model, cluster, shape, params, ends)  # (without recomputation: below every mode's)
    if stair.dominated(lowest, floor):
        return
    per_layer = (layer_activation_bytes(model, shape, Recompute.NONE),
                 layer_activation_bytes(model, shape, Recompute.FULL))  # fmt: skip
    for mode in space.recompute:
        sized = _mode_of(shape, mode)  # (unvalidated: the template's numbers without building it)
        least = max(floor, free_split_floor(model, sized, params, per_layer))
        if stair.dominated(lowest, least):
            continue
        bound = lowest
        if mode is not Recompute.NONE:
            bound = free_bound(model, cluster, sized, params, ends, cost)
            if stair.dominated(bound, least):
                continue
        solver = FreeSplits(model, cluster, free_template(shape, mode), params, cost)  # (numbers shared across caps)
        _walk(solver, model, cluster, params, capacity, bound, least, stair, found, price)
    if space.partial_recompute and Recompute.FULL in space.recompute:
        _partial_front(model, cluster, shape, params, capacity, floor, stair, found, price, cost, ends, per_layer)


def _walk(
    solver: FreeSplits | PartialSplits, model: TransformerSpec, cluster: Cluster, params: PerfParams,
    capacity: float, bound: float, least: float, stair: _Staircase, found: list[Plan], price: float | None,
) -> None:  # fmt: skip
    """The walk of :func:`_free_front` down the memory caps for one solver (one template), from the leanest plan
    found at least as fast as ``bound`` (the template's time bound) to ``least`` (its memory floor)."""
    cap = min(capacity, math.nextafter(stair.leanest(bound), -math.inf))
    while cap >= least:
        # no split is leaner than the floor: one slower than the fastest plan found within the floor is dominated
        plans = []
        for layout in solver.best(cap, stair.fastest(least)):
            prediction = predict(model, cluster, layout, params, check=False, with_band=False)
            plans.append(Plan(layout, prediction, cluster.gpus, price))
        if not plans:
            break
        fastest = min(p.iteration_seconds for p in plans)
        ties = [p for p in plans if p.iteration_seconds <= fastest * (1 + TIE_RTOL)]
        best = min(ties, key=lambda p: (p.memory_bytes, p.iteration_seconds))
        for plan in sorted(plans, key=lambda p: (p.iteration_seconds, p.memory_bytes)):
            if stair.add(plan.iteration_seconds, plan.memory_bytes):
                found.append(plan)
        # the staircase now holds a point at least as fast as ``best`` and as lean: below it is what is left
        # (and below the cap itself: the caps fall strictly whatever the numbers, so the walk ends)
        cap = math.nextafter(min(cap, best.memory_bytes, stair.leanest(best.iteration_seconds)), -math.inf)


def _partial_front(
    model: TransformerSpec, cluster: Cluster, shape: Layout, params: PerfParams, capacity: float, floor: float,
    stair: _Staircase, found: list[Plan], price: float | None, cost: _LayerCost, ends: tuple[float, ...],
    per_layer: tuple[float, float],
) -> None:  # fmt: skip
    """:func:`_free_front` for the free splits with block recomputation of k layers per chunk, each k below the
    largest chunk (:mod:`placement.perf.partial_split`): a k is skipped when a plan found is as fast as its
    bound (:func:`~placement.perf.partial_split.partial_bound`, a running maximum over the k before) and as lean
    as its floor (the larger of the shape's ``floor`` and :func:`~placement.perf.memory.free_split_floor` of its template); else its own walk
    down the memory caps. The bound never falls as k grows: once a plan found is as fast as it and as lean as the
    shape's floor, every later k is skipped too."""
    from .chains import _variant

    p, v = shape.pipeline, shape.virtual_stages
    bound = -math.inf
    statics: dict[tuple[int, int], float] = {}  # (the ranks' static bytes: the same for every k)
    for k in range(1, model.layers // v - (p - 1)):
        bound = max(bound, partial_bound(model, cluster, shape, params, k, ends, cost))
        if stair.dominated(bound, floor):
            break
        sized = _variant(shape, recompute=Recompute.FULL, recompute_method=RecomputeMethod.BLOCK, recompute_layers=k)
        least = max(floor, free_split_floor(model, sized, params, per_layer))  # (unvalidated: its numbers only)
        if least > capacity or stair.dominated(bound, least):
            continue  # (memory falls as k grows: a later k may still join)
        # (the walk descends through tied splits itself: the solver's search for the leanest tie is left out)
        solver = PartialSplits(model, cluster, partial_template(shape, k), params, cost, False, statics)
        _walk(solver, model, cluster, params, capacity, bound, least, stair, found, price)


def _recompute_bound(
    model: TransformerSpec, layout: Layout, cost: _LayerCost, fastest: float, params: PerfParams
) -> float:
    """A lower bound of the predicted time of a recompute variant from its split's time without recomputation.

    In :func:`placement.perf.predict.iteration_time` recomputation adds ``dR_i`` per micro-batch to rank i
    (full, block, k layers per chunk: ``min(n_i, k v)`` layer forwards with their exposed communication;
    selective: ``n_i`` times what the per-layer selective policy recomputes). The critical step grows by at least ``min_i dR_i`` (times
    ``m (1 + jitter sqrt(2 ln p))`` with the synchronisation term), the bubble does not shrink, and the exposed
    data-parallel reduction (and ZeRO-3 gathering, weight offload fetches) can hide at most ``dR`` of the
    heaviest rank per micro-batch (``m`` of them with ZeRO 3 or offloaded weights). The bound keeps a margin
    of 1e-6 of the increment and 1e-12 of the time for rounding.
    """
    counts = stage_layers(model, layout)
    p, v, m = layout.pipeline, layout.virtual_stages, layout.microbatches
    if layout.recompute is Recompute.SELECTIVE:
        per = [n * cost.selective for n in counts]
    elif layout.recompute is Recompute.FULL and layout.recompute_method is RecomputeMethod.BLOCK:
        k = layout.recompute_layers if layout.recompute_layers is not None else max(counts)
        layer = cost.fwd + cost.tp_fwd + cost.cp_fwd + cost.ep_fwd
        per = [min(n, k * v) * layer for n in counts]
    else:
        return fastest
    hiding = max(per) * (m + 1 if layout.zero_stage == 3 or layout.offload_params else 1)
    grow = m * (1 + params.stage_jitter * math.sqrt(2 * math.log(p))) * min(per) - hiding
    return fastest + max(0.0, grow) * (1 - 1e-6) - 1e-12 * fastest


def _final_front(found: list[Plan]) -> list[Plan]:
    """The plans of ``found`` no other beats on (time, memory, GPUs), sorted by time, memory, GPUs.

    GPU counts in increasing order: a plan stays if no plan of fewer GPUs (the staircase of the counts
    before) nor an earlier plan of its own count in (time, memory) order is as fast and as lean. Cost per
    iteration (GPUs x price x time, one price) is then no smaller either, so it adds no dimension.
    """
    before = _Staircase()
    out: list[Plan] = []
    for n in sorted({p.gpus for p in found}):
        group = sorted((p for p in found if p.gpus == n), key=lambda p: (p.iteration_seconds, p.memory_bytes))
        own = _Staircase()
        kept = [p for p in group if not before.dominated(p.iteration_seconds, p.memory_bytes)
                and own.add(p.iteration_seconds, p.memory_bytes)]  # fmt: skip
        for p in kept:
            before.add(p.iteration_seconds, p.memory_bytes)
        out.extend(kept)
    return sorted(out, key=lambda p: (p.iteration_seconds, p.memory_bytes, p.gpus))


def pareto_front(
    model: TransformerSpec,
    cluster: Cluster,
    global_batch: int,
    space: SearchSpace | str = "megatron",
    counts: Sequence[int] | None = None,
    *,
    dtype: Dtype | str | None = None,
    params: PerfParams = DEFAULT_PARAMS,
) -> list[Plan]:
    """Plans no other plan beats on time, memory per GPU and GPU count (and cost with a price).

    The layer splits on the front are the even, the first/last and (``space.free_layouts``, p >= 3) the free
    per-rank ones (:func:`_free_front`: each shape's free splits of recompute none, selective and full of every
    layer, walked down its own time-memory front; times within :data:`TIE_RTOL` of each other tie there, as in
    :func:`placement.perf.search.search`, and the leaner split is the one kept).

    Each GPU count of ``counts`` (default :func:`gpu_counts`) is a cluster of the same nodes, taken in
    increasing order; shapes best-first by :func:`time_bound`. A variant is not predicted when it cannot
    join the front: an earlier (faster) variant of its recompute chain fits with no more memory, or a plan
    already found has no more GPUs, no more memory and a time no larger than the variant's bound (then it
    also costs no more).
    """
    space = get_space(space) if isinstance(space, str) else space
    price = cluster.accelerator.price_per_hour
    dt = None if dtype is None else Dtype(dtype)
    stair = _Staircase()
    found: list[Plan] = []
    for n in sorted(counts or gpu_counts(cluster)):
        sub = cluster.with_changes(gpus=int(n))
        capacity = _capacity(sub)
        counters = dict.fromkeys(_COUNTERS, 0)
        floors: dict[tuple[object, ...], float] = {}
        for bound, _, spec in sorted(_candidates(space, model, sub, global_batch, dt, params, capacity, counters)):
            shape = _checked(model, sub, spec)
            if shape is None:
                continue
            key = tuple(spec[k] for k in _FLOOR_KEY)
            if key not in floors:
                floors[key] = memory_floor(model, shape, params, space.uneven)
            if stair.dominated(bound, floors[key]):
                continue  # no split or variant of the shape can join the front
            cost, ends = _front_of_shape(
                space, model, sub, shape, bound, params, capacity, floors[key], stair, found, price
            )
            if (
                space.free_layouts and shape.pipeline >= 3 and _splits_allowed(space, shape.pipeline, shape.schedule)
                and not stair.dominated(bound, floors[key])  # (the shape's bound holds for its free splits too)
            ):  # fmt: skip
                _free_front(space, model, sub, shape, params, capacity, floors[key], stair, found, price, cost, ends)
    return _final_front(found)
