"""The shapes of a search space: every candidate layout without recomputation, and its recompute variants.

A *shape* fixes t, p, d, cp, ep, v, schedule, micro-batch, sequence parallel, sharding and offloading
(:func:`shapes`, cheaply as keyword arguments by :func:`shape_specs`); its recompute chains are
:func:`variants` and its uneven layer splits :func:`shape_splits`. The search (:mod:`placement.perf.search`)
and the Pareto front (:mod:`placement.perf.pareto`) enumerate spaces through these.
"""

from __future__ import annotations

from collections.abc import Iterator

from ..errors import PlacementError
from .hardware import Cluster, Dtype
from .layout import Layout, Recompute, RecomputeMethod, Schedule, check_layout, stage_layers
from .spaces import SearchSpace, divisors
from .splits import all_splits, default_split, with_split
from .transformer import TransformerSpec


def _tensor_sizes(space: SearchSpace, model: TransformerSpec, cluster: Cluster) -> list[int]:
    limit = cluster.gpus_per_node if space.tensor_within_node else cluster.gpus
    return [
        t
        for t in divisors(cluster.gpus)
        if t <= limit and model.heads % t == 0 and model.groups % t == 0 and model.ffn % t == 0
    ]


def _schedules(space: SearchSpace, model: TransformerSpec, p: int, m: int) -> Iterator[tuple[Schedule, int]]:
    """(schedule, virtual stages) pairs for pipeline size p with m micro-batches."""
    if p == 1:
        yield Schedule.ONE_F_ONE_B, 1
        return
    for name in space.schedules:
        if Schedule(name) is Schedule.ZBV:
            if model.layers % (2 * p) == 0:
                yield Schedule.ZBV, 2
        else:
            yield Schedule(name), 1
    if space.virtual:
        # even split: v divides L / p; uneven (Megatron-Core): every rank's count a multiple of v, so v
        # divides L and each rank gets at least v layers
        candidates = (
            divisors(model.layers) if space.uneven else divisors(model.layers // p) if model.layers % p == 0 else []
        )
        for v in candidates:
            if v > 1 and model.layers // v >= p:
                yield Schedule.INTERLEAVED, v


def shape_specs(
    space: SearchSpace, model: TransformerSpec, cluster: Cluster, global_batch: int, dtype: Dtype | str | None = None
) -> Iterator[dict[str, object]]:
    """The keyword arguments of every candidate shape (:class:`Layout` fields), cheap to enumerate.

    Each still has to pass :func:`check_layout` (:func:`shapes` builds and checks them).
    """
    n = cluster.gpus
    dt = space_dtype(cluster) if dtype is None else Dtype(dtype)
    experts = divisors(model.num_experts) if (space.expert and model.moe) else [1]
    for t in _tensor_sizes(space, model, cluster):
        contexts = [c for c in divisors(n // t) if model.seq_length % (2 * c) == 0] if space.context else [1]
        for cp in contexts:
            for p in divisors(n // (t * cp)):
                if model.layers % p and not (space.uneven and p <= model.layers):
                    continue
                d = n // (t * cp * p)
                if global_batch % d:
                    continue
                for b in divisors(global_batch // d):
                    if b > space.max_micro_batch:
                        break
                    m = global_batch // (d * b)
                    yield from _shape_knobs(space, model, t, p, d, cp, b, m, global_batch, experts, dt, cluster)


def _shape_knobs(space, model, t, p, d, cp, b, m, global_batch, experts, dtype, cluster) -> Iterator[dict[str, object]]:  # noqa: ANN001
    sps = space.sequence_parallel if t > 1 else (False,)
    shardings = [z for z in space.shardings if not (p > 1 and space.name == "deepspeed" and z > 1)]
    for schedule, v in _schedules(space, model, p, m):
        first, last = default_split(model.layers, p, v) if _splits_allowed(space, p, schedule) else (None, None)
        if model.layers % (p * v) and first is None:
            continue
        for ep in experts:
            if (d * cp) % ep:
                continue
            for sp in sps:
                for z, off, r in _shardings(space, p, d, ep, shardings, (t * cp, cluster.gpus_per_node)):
                    yield {
                        "tensor": t,
                        "pipeline": p,
                        "data": d,
                        "context": cp,
                        "expert": ep,
                        "virtual_stages": v,
                        "micro_batch": b,
                        "global_batch": global_batch,
                        "sequence_parallel": sp,
                        "zero_stage": z,
                        "replicate": r,
                        "dtype": dtype,
                        "attention": space.attention,
                        "kernels": space.kernels,
                        "tp_async_backward": space.tp_async,
                        "overlap_grad_reduce": space.overlap and d * cp > 1,
                        "overlap_param_gather": space.overlap and z >= 1 and d * cp > 1,
                        "schedule": schedule,
                        "first_stage_layers": first,
                        "last_stage_layers": last,
                        "offload_optimizer": off != "none",
                        "offload_params": off == "optimizer+params",
                    }


def _shardings(
    space: SearchSpace, p: int, d: int, ep: int, shardings: list[int], node: tuple[int, int]
) -> Iterator[tuple[int, str, int]]:
    """(ZeRO stage, offload choice, HSDP replicas).

    With ``space.replicas`` and ZeRO 3 (no expert parallelism): FSDP over the whole data-parallel group first,
    then HSDP with shard groups of 1, 2, 4 and 8 whole nodes where that leaves r > 1 replicas (``node`` = (GPUs of
    one data-parallel rank, t * cp; GPUs per node)). Whole nodes because HSDP's point is to keep the gathers inside
    the NVLink domain (or a few nodes where one node's shard does not fit); a ring's time across nodes barely
    depends on their count.
    """
    rank_gpus, per_node = node
    for z, off in _offloads(space, p, shardings):
        yield z, off, 1
        if not (space.replicas and z == 3 and ep == 1) or per_node % rank_gpus:
            continue
        for nodes in (1, 2, 4, 8):
            shard = nodes * per_node // rank_gpus
            if shard >= 2 and d % shard == 0 and d // shard > 1:
                yield z, off, d // shard


def _offloads(space: SearchSpace, p: int, shardings: list[int]) -> Iterator[tuple[int, str]]:
    """(ZeRO stage, offload choice) pairs: optimizer offload with ZeRO >= 1, weights too with ZeRO 3, p = 1."""
    for z in shardings:
        for off in space.offload:
            if off == "none" or (p == 1 and z >= 1 and (off == "optimizer" or z == 3)):
                yield z, off


def _checked(model: TransformerSpec, cluster: Cluster, spec: dict[str, object]) -> Layout | None:
    try:
        layout = Layout(**spec)  # type: ignore[arg-type]
        check_layout(model, cluster, layout)
    except PlacementError:
        return None
    return layout


def shapes(
    space: SearchSpace, model: TransformerSpec, cluster: Cluster, global_batch: int, dtype: Dtype | str | None = None
) -> Iterator[Layout]:
    """Every valid shape of the space: its layout without recomputation, in a fixed order.

    A shape fixes t, p, d, cp, ep, v, schedule, micro-batch, sequence parallel and sharding; its
    recompute variants are :func:`variants`.
    """
    for spec in shape_specs(space, model, cluster, global_batch, dtype):
        layout = _checked(model, cluster, spec)
        if layout is not None:
            yield layout


def space_dtype(cluster: Cluster) -> Dtype:
    """bf16 where the GPU has it, else fp16 (V100)."""
    return Dtype.BF16 if cluster.accelerator.peak_flops(Dtype.BF16) > 0 else Dtype.FP16


def variants(space: SearchSpace, model: TransformerSpec, shape: Layout) -> list[list[Layout]]:
    """The recompute chains of a shape, each ordered fastest first (the shape itself heads the first).

    ``[[none], [selective], [full k=1, k=2, ..., k=layers per chunk]]`` as far as the space has them.
    """
    chains: list[list[Layout]] = []
    for mode in space.recompute:
        if mode is Recompute.NONE:
            chains.append([shape])
        elif mode is Recompute.SELECTIVE:
            chains.append([shape.with_changes(recompute=Recompute.SELECTIVE)])
        else:
            chunk = max(stage_layers(model, shape)) // shape.virtual_stages
            ks = range(1, chunk + 1) if space.partial_recompute else (chunk,)
            chains.append(
                [
                    shape.with_changes(
                        recompute=Recompute.FULL, recompute_method=RecomputeMethod.BLOCK, recompute_layers=k
                    )
                    for k in ks
                ]
            )
    return chains


def _splits_allowed(space: SearchSpace, p: int, schedule: Schedule) -> bool:
    """Uneven first/last counts: Megatron-Core spaces, p > 1, 1F1B or interleaved (not the V's chunk order)."""
    return space.uneven and p > 1 and schedule in (Schedule.ONE_F_ONE_B, Schedule.INTERLEAVED)


def shape_splits(space: SearchSpace, model: TransformerSpec, shape: Layout) -> list[Layout]:
    """The shape with every layer split the space allows (itself alone without uneven splits)."""
    if not _splits_allowed(space, shape.pipeline, shape.schedule):
        return [shape]
    splits = all_splits(model.layers, shape.pipeline, shape.virtual_stages)
    return [with_split(shape, model.layers, s) for s in splits]
