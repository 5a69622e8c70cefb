"""Pareto front of launchable layouts: iteration time vs memory per GPU vs GPU count (and cost with a price).

:func:`pareto_front` enumerates every shape of a space (:mod:`placement.perf.search`) best-first by its time bound,
GPU counts in increasing order, and skips what cannot join the front: a whole shape when a plan already found
(no more GPUs) is as fast as the shape's bound and as lean as its memory floor (:func:`memory_floor`), the rest of a
shape's layer splits once that holds for their (growing) bounds, a split whose heaviest rank's floor or leanest
variant is so dominated, and a recompute variant that an earlier one of its chain or a found plan dominates.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence

from .hardware import Cluster, Dtype
from .layout import Layout, Recompute, RecomputeMethod, stage_layers
from .memory import layer_activation_bytes, memory_breakdown, static_parts
from .params import DEFAULT_PARAMS, PerfParams
from .predict import predict
from .search import _COUNTERS, Plan, _candidates, _capacity, _checked, static_memory_bound, variants
from .spaces import SearchSpace, divisors, get_space
from .splits import splits_best_first
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


def memory_floor(model: TransformerSpec, shape: Layout, params: PerfParams, any_split: bool) -> float:
    """Bytes below which no split or recompute variant of ``shape`` gets: the static bound plus the rank of at
    least ``ceil(L / p)`` layers holding one micro-batch of layer inputs (full recomputation keeps the least)."""
    most = -(-model.layers // shape.pipeline)
    checkpoint = layer_activation_bytes(model, shape, Recompute.FULL)
    return static_memory_bound(model, shape, params, any_split) + most * checkpoint


def _dominated(plans: list[Plan], seconds: float, memory: float) -> bool:
    """Some plan found (no more GPUs) is at least as fast as ``seconds`` and as lean as ``memory``."""
    return any(p.iteration_seconds <= seconds and p.memory_bytes <= memory for p in plans)


def _leanest(space: SearchSpace, model: TransformerSpec, shape: Layout) -> list[Layout]:
    """The last variant of each recompute chain of ``shape`` (:func:`variants` without building the chains)."""
    out = []
    for mode in space.recompute:
        if mode is Recompute.FULL:
            most = max(stage_layers(model, shape)) // shape.virtual_stages
            out.append(
                shape.with_changes(recompute=mode, recompute_method=RecomputeMethod.BLOCK, recompute_layers=most)
            )
        else:
            out.append(shape if mode is Recompute.NONE else shape.with_changes(recompute=mode))
    return out


def _front_of_shape(
    space: SearchSpace, model: TransformerSpec, cluster: Cluster, shape: Layout, bound: float, params: PerfParams,
    capacity: float, plans: list[Plan], price: float | None,
) -> list[Plan]:  # fmt: skip
    """``plans`` with the variants of ``shape`` (every split) that no plan found so far dominates."""
    if not space.uneven or shape.pipeline == 1 or shape.virtual_stages > 1:
        split_bounds: Iterator[tuple[float, Layout]] = iter([(bound, shape)])
    else:
        split_bounds = splits_best_first(model, cluster, shape, params)
    floor = memory_floor(model, shape, params, space.uneven)
    checkpoint = layer_activation_bytes(model, shape, Recompute.FULL)
    for split_bound, split in split_bounds:
        if _dominated(plans, split_bound, floor):
            break  # bounds only grow along the stream: every later split is dominated too
        most = max(stage_layers(model, split))
        split_floor = sum(static_parts(model, split, None, most)) + params.reserve_bytes + most * checkpoint
        if split_floor > capacity or _dominated(plans, split_bound, split_floor):
            continue
        # memory never grows along a chain: the chains' last variants bound the split's memory
        leanest = min(memory_breakdown(model, lay, params).total for lay in _leanest(space, model, split))
        if leanest > capacity or _dominated(plans, split_bound, leanest):
            continue
        # the split without recomputation is at least as fast as each of its variants (tested chain order)
        fastest = predict(model, cluster, split, params, check=False, with_band=False).iteration_seconds
        split_bound = max(split_bound, fastest)
        for chain in variants(space, model, split):
            # variants leaner than every plan at least as fast as the bound form a suffix of the chain
            # (memory never grows along it): find its start by bisection
            limit = min([p.memory_bytes for p in plans if p.iteration_seconds <= split_bound] + [math.inf])
            lo, hi = 0, len(chain)
            while lo < hi:
                mid = (lo + hi) // 2
                mem = memory_breakdown(model, chain[mid], params).total
                if mem < limit and mem <= capacity:
                    hi = mid
                else:
                    lo = mid + 1
            lowest = math.inf
            for layout in chain[lo:]:
                mem = memory_breakdown(model, layout, params).total
                if mem > capacity or mem >= lowest:
                    continue
                lowest = mem
                if _dominated(plans, split_bound, mem):
                    continue  # every plan kept has no more GPUs than this one
                prediction = predict(model, cluster, layout, params, check=False, with_band=False)
                plans.append(Plan(layout, prediction, cluster.gpus, price))
                if len(plans) > 64:
                    plans = _pareto_filter(plans, price is not None)
    return plans


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

    Each GPU count of ``counts`` (default :func:`gpu_counts`) is a cluster of the same nodes, taken in
    increasing order; shapes best-first by :func:`time_bound`. A variant is not predicted when it cannot
    join the front: an earlier (faster) variant of its recompute chain fits with no more memory, or a plan
    already found has no more GPUs, no more memory and a time no larger than the variant's bound (then it
    also costs no more).
    """
    space = get_space(space) if isinstance(space, str) else space
    price = cluster.accelerator.price_per_hour
    dt = None if dtype is None else Dtype(dtype)
    plans: list[Plan] = []
    for n in sorted(counts or gpu_counts(cluster)):
        sub = cluster.with_changes(gpus=int(n))
        capacity = _capacity(sub)
        counters = dict.fromkeys(_COUNTERS, 0)
        for bound, _, spec in sorted(_candidates(space, model, sub, global_batch, dt, params, capacity, counters)):
            shape = _checked(model, sub, spec)
            if shape is None:
                continue
            floor = memory_floor(model, shape, params, space.uneven)
            if any(p.iteration_seconds <= bound and p.memory_bytes <= floor for p in plans):
                continue  # no split or variant of the shape can join the front
            plans = _front_of_shape(space, model, sub, shape, bound, params, capacity, plans, price)
    return _pareto_filter(plans, price is not None)
