"""The launchable-layout search (placement/perf/search.py) against brute force over whole spaces.

The brute force here enumerates every integer combination of the knobs (t, p, cp, d, ep, v, micro-batch,
sequence parallel, ZeRO stage, recomputation) by nested loops over ranges, keeps those the space admits
(its own rules restated here) and :func:`check_layout` accepts, predicts each and takes the minimum of
(time, memory) over those that fit: no bounds, no chains, no bisection.
"""

from __future__ import annotations

import itertools
from dataclasses import replace

import pytest

from placement.errors import PlacementError
from placement.perf.free_split import TIE_RTOL
from placement.perf.hardware import ACCELERATORS, Cluster, Dtype
from placement.perf.layout import Layout, Recompute, RecomputeMethod, Schedule, check_layout
from placement.perf.memory import memory_breakdown
from placement.perf.pareto import pareto_front
from placement.perf.predict import predict
from placement.perf.search import search, shapes, static_memory_bound, variants
from placement.perf.spaces import SPACES, get_space
from placement.perf.transformer import TransformerSpec

GIB = 2**30

SMALL = TransformerSpec(layers=8, hidden=1024, heads=16, seq_length=2048, vocab=32000, name="small")
SMALL_GQA = TransformerSpec(
    layers=6, hidden=768, heads=12, query_groups=4, seq_length=1024, vocab=32000, swiglu=True, ffn_hidden=2048,
    name="small-gqa",
)  # fmt: skip
SMALL_MOE = TransformerSpec(
    layers=4, hidden=1024, heads=8, seq_length=2048, vocab=32000, num_experts=4, moe_topk=2, name="small-moe"
)


def _cluster(gpus: int, memory_gib: float, per_node: int = 4, kind: str = "A100") -> Cluster:
    acc = replace(ACCELERATORS[kind], memory_bytes=memory_gib * GIB)
    return Cluster(acc, gpus, per_node)


def _space_admits(space, model, cluster, t, p, cp, ep, v, b, sp, z, rec, k, off=False, d=1, r=1) -> bool:  # noqa: ANN001
    if t > cluster.gpus_per_node and space.tensor_within_node:
        return False
    if r > 1:  # HSDP: the space's shard groups are 1, 2, 4 or 8 whole nodes (ZeRO 3, no experts)
        shard_gpus = d // r * t * cp
        if not space.replicas or z != 3 or ep > 1 or shard_gpus % cluster.gpus_per_node:
            return False
        if shard_gpus // cluster.gpus_per_node not in (1, 2, 4, 8) or cluster.gpus_per_node % (t * cp):
            return False
    if cp > 1 and not space.context or ep > 1 and not (space.expert and model.moe) or v > 1 and not space.virtual:
        return False
    if b > space.max_micro_batch or z not in space.shardings or rec not in space.recompute:
        return False
    if (sp and t == 1) or (t > 1 and sp not in space.sequence_parallel):
        return False
    if space.name == "deepspeed" and p > 1 and (z > 1 or off):
        return False
    if rec is Recompute.FULL and not space.partial_recompute and k != model.layers // (p * v):
        return False  # (spaces without partial recomputation have no uneven splits)
    return True


def _compositions(layers: int, p: int) -> list[tuple[int, ...]]:
    """Every tuple of p positive counts summing to ``layers`` (check_layout judges the multiples of v)."""
    cuts = itertools.combinations(range(1, layers), p - 1)
    return [tuple(b - a for a, b in zip((0, *c), (*c, layers), strict=True)) for c in cuts]


def _may_split(rest: int, p: int) -> bool:
    return rest == 0 if p == 2 else rest >= p - 2 and rest % (p - 2) == 0


def brute_force(space_name: str, model: TransformerSpec, cluster: Cluster, global_batch: int, with_free: bool = True):
    """Min (time, memory) over every admitted, valid, fitting layout; also every fitting layout.

    ``with_free``: with the space's free per-rank splits (every composition of the layers for p >= 3).
    """
    space = get_space(space_name)
    n = cluster.gpus
    fitting: list = []
    dtype = Dtype.BF16
    rng = range(1, n + 1)
    for t, p, cp in itertools.product(rng, rng, rng):
        if n % (t * p * cp):
            continue
        d = n // (t * p * cp)
        offloads = [(False, False), (True, False), (True, True)] if space.name == "deepspeed" else [(False, False)]
        replicas = [r for r in range(1, d + 1) if d % r == 0]
        for ep, v, b, sp, z, (off_opt, off_par), r in itertools.product(
            range(1, max(model.num_experts, 1) + 1), range(1, model.layers + 1), range(1, 17), (False, True),
            (0, 1, 2, 3), offloads, replicas,
        ):  # fmt: skip
            # cheap necessary conditions first (check_layout below is the judge)
            uneven = space.uneven and p > 1  # (with v > 1 check_layout demands multiples of v)
            if global_batch % (b * d) or (model.layers % (p * v) and not uneven) or model.num_experts % ep:
                continue
            # layers of the first and the last rank: the even split, or any pair (check_layout rejects those
            # that leave the middle ranks an uneven or empty share)
            ends: list[tuple[int | None, int | None] | tuple[int, ...]] = [(None, None)]
            if uneven:  # (a necessary condition first, to save time)
                pairs = itertools.product(range(1, model.layers + 1), repeat=2)
                ends += [(f, la) for f, la in pairs if _may_split(model.layers - f - la, p)]
            if space.free_layouts and with_free and p >= 3:  # every count per rank the first/last flags cannot express
                ends += [c for c in _compositions(model.layers, p) if len(set(c[1:-1])) > 1]
            scheds = [Schedule.INTERLEAVED] if v > 1 else [Schedule.ONE_F_ONE_B]
            if v == 2 and "zbv" in space.schedules:
                scheds.append(Schedule.ZBV)
            recs = (Recompute.NONE, Recompute.SELECTIVE, Recompute.FULL)
            for split, rec, sched in itertools.product(ends, recs, scheds):
                free = split if len(split) > 2 else None
                first, last = (None, None) if free else split
                if (first is not None or free) and sched is Schedule.ZBV:
                    continue  # the space's rule: uneven counts with 1F1B or interleaving only
                most = model.layers // (p * v) if first is None else max(first, last, model.layers - first - last)
                ks = range(1, most + 1) if rec is Recompute.FULL else (None,)
                if free:  # free splits: recompute none, selective or full of k layers per chunk (the space's k)
                    ks = range(1, max(free) // v + 1) if rec is Recompute.FULL else (None,)
                for k in ks:
                    if not _space_admits(space, model, cluster, t, p, cp, ep, v, b, sp, z, rec, k, off_opt, d, r):
                        continue
                    try:
                        layout = Layout(
                            tensor=t, pipeline=p, data=d, context=cp, expert=ep, virtual_stages=v, micro_batch=b,
                            global_batch=global_batch, sequence_parallel=sp, zero_stage=z, recompute=rec,
                            recompute_method=RecomputeMethod.BLOCK if k else RecomputeMethod.UNIFORM,
                            recompute_layers=k, dtype=dtype, attention=space.attention, tp_async_backward=space.tp_async,
                            kernels=space.kernels,
                            overlap_grad_reduce=space.overlap and d * cp > 1,
                            overlap_param_gather=space.overlap and z >= 1 and d * cp > 1,
                            schedule=sched, first_stage_layers=first, last_stage_layers=last,
                            offload_optimizer=off_opt, offload_params=off_par, pipeline_layers=free, replicate=r,
                        )  # fmt: skip
                        check_layout(model, cluster, layout)
                    except PlacementError:
                        continue
                    pred = predict(model, cluster, layout)
                    if not pred.fits:
                        continue
                    fitting.append((layout, pred))
    if not fitting:
        return None, fitting
    return optimum(fitting), fitting


def optimum(fitting):  # noqa: ANN001, ANN201
    """((time, memory), layout): the least time, then among times within TIE_RTOL of it the least memory."""
    fastest = min(pred.iteration_seconds for _, pred in fitting)
    ties = [(pred.memory.total, pred.iteration_seconds, i) for i, (_, pred) in enumerate(fitting)
            if pred.iteration_seconds <= fastest * (1 + TIE_RTOL)]  # fmt: skip
    memory, seconds, i = min(ties)
    return (seconds, memory), fitting[i][0]


def same_optimum(plan, best) -> bool:  # noqa: ANN001
    """The search's plan is as fast as the brute force's (within TIE_RTOL) and as lean."""
    (seconds, memory), _ = best
    fastest_tie = plan.iteration_seconds <= seconds * (1 + TIE_RTOL) and seconds <= plan.iteration_seconds * (
        1 + TIE_RTOL
    )
    return fastest_tie and plan.memory_bytes == memory


MID = TransformerSpec(layers=8, hidden=2048, heads=16, seq_length=4096, vocab=32000, name="mid")
# 7 layers and a large vocabulary: no even split over 2 or 4 ranks, and the output layer weighs on the last one
ODD = TransformerSpec(layers=7, hidden=2048, heads=16, seq_length=2048, vocab=128256, name="odd")
# 9 layers: interleaving over 2 ranks needs an uneven split in multiples of v = 3 (6 + 3)
NINE = TransformerSpec(layers=9, hidden=2048, heads=16, seq_length=2048, vocab=32000, name="nine")

# 12 wide layers on 4 GPUs of 12 GiB (one per node): the weights force p = 4, and 1F1B's in-flight micro-batches
# (4, 3, 2, 1 from rank 0) leave room for 2, 3, 4, 3 layers without recomputation: a free split, faster than
# every first/last split (which needs recomputation)
WIDE = TransformerSpec(layers=12, hidden=3072, heads=32, seq_length=2048, vocab=32000, name="wide")

# (space, model, GPUs, GiB per GPU, GPUs per node, global batch); the optima of the tight cases use
# t > 1, p > 1, cp > 1, ep > 1 and partial full recomputation (see test_cases_exercise_the_space)
# The megatron cases over MID take 3-20 s each (the brute force enumerates every split): marked slow.
CASES = [
    pytest.param("megatron", SMALL, 8, 8.0, 4, 16, marks=pytest.mark.slow),
    ("megatron", SMALL_GQA, 8, 4.0, 4, 8),
    ("megatron", SMALL_MOE, 8, 4.5, 4, 16),
    pytest.param("megatron", MID, 8, 4.5, 4, 32, marks=pytest.mark.slow),
    pytest.param("megatron", MID, 8, 5.0, 2, 32, marks=pytest.mark.slow),
    ("megatron", SMALL_GQA, 4, 3.0, 4, 8),  # infeasible (3.2 GiB fits)
    ("megatron", ODD, 8, 7.0, 1, 16),
    ("megatron", ODD, 4, 9.0, 1, 8),
    ("megatron", NINE, 8, 6.0, 2, 4),  # uneven split with v = 3 virtual stages
    ("megatron", WIDE, 4, 12.0, 1, 8),  # a free split (--pipeline-model-parallel-layout)
    ("megatron", WIDE, 4, 11.875, 1, 8),  # a free split with partial recomputation (2 / 3 / 4 / 3, k = 1)
    ("megatron-2021", MID, 8, 6.0, 4, 32),
    ("torchtitan", SMALL, 8, 5.0, 4, 16),
    ("torchtitan", MID, 8, 6.5, 4, 16),
    ("torchtitan", MID, 8, 5.0, 2, 32),  # zero-bubble V
    ("torchtitan", SMALL, 8, 6.0, 2, 8),  # HSDP: 2 replicas of t = 2 x 4 shards (2 nodes each)
    ("torchtitan", MID, 8, 8.0, 2, 8),  # HSDP: 2 replicas of 4 shards
    ("deepspeed", SMALL_GQA, 4, 3.6, 4, 8),
    ("deepspeed", MID, 8, 5.5, 4, 32),
    ("deepspeed", SMALL, 2, 3.5, 4, 8),  # optimizer and weights offloaded
    ("deepspeed", SMALL, 4, 3.4, 4, 8),  # optimizer offloaded
]


@pytest.mark.parametrize(("space", "model", "gpus", "memory_gib", "per_node", "batch"), CASES)
def test_search_equals_brute_force(space, model, gpus, memory_gib, per_node, batch):
    cluster = _cluster(gpus, memory_gib, per_node)
    best, _ = brute_force(space, model, cluster, batch)
    result = search(model, cluster, batch, space)
    if best is None:
        assert str(result.status) == "infeasible" and result.plan is None
        return
    assert str(result.status) == "optimal"
    assert same_optimum(result.plan, best), (result.plan.layout, best)
    again = predict(model, cluster, result.plan.layout)
    assert again.iteration_seconds == result.plan.iteration_seconds and again.fits


def test_cases_exercise_the_space():
    """The optima of the cases above use every kind of knob (so the brute-force comparison means something)."""
    cases = [c.values if hasattr(c, "values") else c for c in CASES]
    plans = [search(m, _cluster(g, mem, per), b, s).plan for s, m, g, mem, per, b in cases]
    lays = [p.layout for p in plans if p is not None]
    assert any(p is None for p in plans)  # one proven infeasible
    assert any(lay.tensor > 1 for lay in lays) and any(lay.pipeline > 1 for lay in lays)
    assert any(lay.context > 1 for lay in lays) and any(lay.expert > 1 for lay in lays)
    assert any(lay.recompute is Recompute.FULL and lay.recompute_layers < 8 for lay in lays)
    assert {lay.zero_stage for lay in lays} >= {0, 1, 2, 3}
    assert any(lay.uneven for lay in lays)
    assert any(lay.uneven and lay.virtual_stages > 1 for lay in lays)
    assert any(lay.free_split for lay in lays)
    assert any(lay.free_split and (lay.recompute_layers or 99) < max(lay.pipeline_layers) for lay in lays)  # (v = 1)
    assert any(lay.offload_params for lay in lays)
    assert any(lay.schedule is Schedule.ZBV for lay in lays)
    assert any(lay.replicate > 1 for lay in lays)
    assert any(
        lay.offload_optimizer and not lay.offload_params for lay in lays
    )  # an uneven layer split (7 layers over 2 ranks)


def test_free_split_beats_every_first_last_split():
    """Memory forces the free split: the space without it is strictly slower (the brute force above checks it is
    the optimum of the whole space)."""
    cluster = _cluster(4, 12.0, 1)
    plan = search(WIDE, cluster, 8, "megatron").plan
    first_last = search(WIDE, cluster, 8, replace(get_space("megatron"), free_layouts=False)).plan
    assert plan.layout.pipeline_layers == (2, 3, 4, 3) and plan.layout.recompute is Recompute.NONE
    assert plan.iteration_seconds < first_last.iteration_seconds * 0.95 and not first_last.layout.free_split


def test_free_split_with_partial_recomputation_beats_the_rest():
    """Between the memory of the free split without recomputation (12 GiB) and of the even split with one layer
    recomputed, the free split 2 / 3 / 4 / 3 with one recomputed layer per chunk wins (the brute force above checks
    it is the optimum of the whole space); first/last splits alone give the even split with k = 1, slower."""
    cluster = _cluster(4, 11.875, 1)
    plan = search(WIDE, cluster, 8, "megatron").plan
    lay = plan.layout
    assert lay.pipeline_layers == (2, 3, 4, 3) and lay.recompute is Recompute.FULL and lay.recompute_layers == 1
    first_last = search(WIDE, cluster, 8, replace(get_space("megatron"), free_layouts=False)).plan
    assert not first_last.layout.uneven and first_last.layout.recompute_layers == 1
    assert plan.iteration_seconds < first_last.iteration_seconds


def test_memory_decides_in_small_cases():
    """The cases above are not trivial: memory rules out the unconstrained optimum in some of them."""
    cluster = _cluster(8, 5.0)
    roomy = _cluster(8, 80.0)
    tight = search(SMALL, cluster, 32).plan
    free = search(SMALL, roomy, 32).plan
    assert tight.iteration_seconds > free.iteration_seconds


def test_infeasible_is_a_status():
    result = search(SMALL, _cluster(8, 0.5), 16)
    assert str(result.status) == "infeasible" and "fits" in result.reason


def test_chains_are_ordered_as_the_search_assumes():
    """Along a recompute chain time never falls and (for bisection) memory never grows."""
    cluster = _cluster(8, 80.0)
    space = get_space("megatron")
    for shape in itertools.islice(shapes(space, SMALL, cluster, 32), 0, None, 7):
        none = predict(SMALL, cluster, shape).iteration_seconds
        for chain in variants(space, SMALL, shape):
            times = [predict(SMALL, cluster, lay).iteration_seconds for lay in chain]
            mems = [memory_breakdown(SMALL, lay).total for lay in chain]
            assert all(none <= x for x in times)
            assert times == sorted(times)
            assert all(a >= b for a, b in zip(mems, mems[1:], strict=False))
        assert static_memory_bound(SMALL, shape) <= memory_breakdown(SMALL, shape).total


@pytest.mark.slow
def test_pareto_over_gpu_counts_and_cost():
    acc = replace(ACCELERATORS["A100"], price_per_hour=2.0)
    cluster = Cluster(acc, 16, 4)
    front = pareto_front(SMALL, cluster, 32, "megatron")
    assert {p.gpus for p in front} >= {16} and all(p.cost_per_iteration is not None for p in front)
    fewest = min(front, key=lambda p: p.gpus)
    assert fewest.cost_per_iteration == pytest.approx(fewest.gpus * 2.0 * fewest.iteration_seconds / 3600)


def test_spaces_registry():
    assert set(SPACES) == {"megatron", "torchtitan", "deepspeed", "megatron-2021"}
    with pytest.raises(PlacementError, match="unknown search space"):
        get_space("colossal")
    result = search(SMALL, _cluster(8, 80.0), 16, "torchtitan")
    assert "torchtitan" in result.space_title and result.plan.layout.zero_stage == 3
