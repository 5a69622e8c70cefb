"""The Pareto front of launchable layouts (placement/perf/pareto.py) against brute force.

The brute force is ``tests.test_search.brute_force`` (nested loops over every knob, no bounds, no chains),
run at every GPU count; its 3-D front (time, memory per GPU, GPUs) is taken by the definition (pairwise
comparison) and must equal the planner's front key for key, floats bit for bit. The brute force includes the
free per-rank splits of the megatron space (``--pipeline-model-parallel-layout``, every composition of the layers).
"""

from __future__ import annotations

import itertools
import random

import pytest

from placement.perf.layout import stage_layers
from placement.perf.memory import RecomputeMemory, memory_breakdown
from placement.perf.params import DEFAULT_PARAMS
from placement.perf.pareto import _final_front, _Leanest, _Staircase, pareto_front
from placement.perf.search import Plan, _chains, shape_splits, shapes, variants
from placement.perf.spaces import get_space
from tests.test_search import MID, NINE, ODD, SMALL, SMALL_GQA, SMALL_MOE, WIDE, _cluster, brute_force


def _definition_front(keys: set[tuple[float, float, int]]) -> set[tuple[float, float, int]]:
    return {k for k in keys if not any(o != k and all(a <= b for a, b in zip(o, k, strict=True)) for o in keys)}


# (space, model, GPU counts, GiB per GPU, GPUs per node, global batch)
FRONT_CASES = [
    ("megatron", SMALL, (2, 4, 8), 6.0, 4, 16),
    ("megatron", ODD, (2, 4), 9.0, 1, 8),  # uneven splits (7 layers)
    ("megatron", NINE, (4, 8), 6.0, 2, 4),  # uneven splits with interleaving (v = 3)
    ("megatron", SMALL_MOE, (4, 8), 4.5, 4, 16),
    ("megatron", WIDE, (2, 4), 12.0, 1, 16),  # free splits on the front (three of its six plans)
    ("megatron", WIDE, (4,), 16.0, 1, 8),
    ("megatron", WIDE, (4,), 11.875, 1, 8),  # a free split with partial recomputation on the front
    ("torchtitan", MID, (4, 8), 6.5, 4, 16),
    ("deepspeed", SMALL, (2, 4), 3.5, 4, 8),
]


@pytest.mark.slow
@pytest.mark.parametrize(("space", "model", "counts", "memory_gib", "per_node", "batch"), FRONT_CASES)
def test_front_equals_brute_force(space, model, counts, memory_gib, per_node, batch):
    keys: set[tuple[float, float, int]] = set()
    for n in counts:
        _, fitting = brute_force(space, model, _cluster(n, memory_gib, per_node), batch)
        keys |= {(pred.iteration_seconds, pred.memory.total, n) for _, pred in fitting}
    front = pareto_front(model, _cluster(max(counts), memory_gib, per_node), batch, space, counts=counts)
    got = [(p.iteration_seconds, p.memory_bytes, p.gpus) for p in front]
    assert len(got) == len(set(got))  # one plan per point
    assert set(got) == _definition_front(keys)
    assert got == sorted(got)


def test_front_small_case_is_quick_enough_to_run_always():
    """One GPU count (the fast member of the brute-force comparison, not marked slow)."""
    cluster = _cluster(4, 6.0)
    _, fitting = brute_force("megatron", SMALL_GQA, cluster, 8)
    keys = {(pred.iteration_seconds, pred.memory.total, 4) for _, pred in fitting}
    front = pareto_front(SMALL_GQA, cluster, 8, "megatron", counts=[4])
    assert {(p.iteration_seconds, p.memory_bytes, p.gpus) for p in front} == _definition_front(keys)
    assert len(front) > 1  # a trade-off, not a single point


def test_free_splits_join_the_front():
    """12 wide layers on 4 GPUs of 12 GiB: memory forces p = 4, and the free splits (1F1B's 4 / 3 / 2 / 1
    micro-batches in flight) are faster than every first/last split at their memory: they are on the front, which
    equals the brute force's (free splits included), and the front without them differs."""
    from dataclasses import replace

    cluster = _cluster(4, 12.0, 1)
    _, fitting = brute_force("megatron", WIDE, cluster, 8)
    keys = {(pred.iteration_seconds, pred.memory.total, 4) for _, pred in fitting}
    front = pareto_front(WIDE, cluster, 8, "megatron", counts=[4])
    assert {(p.iteration_seconds, p.memory_bytes, p.gpus) for p in front} == _definition_front(keys)
    free = [p for p in front if p.layout.free_split]
    assert free and all(p.layout.pipeline_layers is not None for p in free)
    without = pareto_front(WIDE, cluster, 8, replace(get_space("megatron"), free_layouts=False), counts=[4])
    assert not any(p.layout.free_split for p in without)
    # the free plans are points no even or first/last split reaches, and they dominate some of those
    assert {(p.iteration_seconds, p.memory_bytes) for p in free}.isdisjoint(
        {(p.iteration_seconds, p.memory_bytes) for p in without}
    )
    assert len({(p.iteration_seconds, p.memory_bytes) for p in without} - {(p.iteration_seconds, p.memory_bytes)
                                                                          for p in front}) > 0  # fmt: skip


def test_free_floor_is_below_every_free_split():
    """free_split_floor (what the front's free walk skips a mode by) never exceeds the memory of a free split of the
    mode, over every composition of the layers; it is the same from the unvalidated variant the walk sizes."""
    from placement.perf.free_split import free_template, with_counts
    from placement.perf.layout import Recompute
    from placement.perf.memory import free_split_floor, layer_activation_bytes
    from placement.perf.search import _mode_of
    from tests.test_search import _compositions

    sp = get_space("megatron")
    cluster = _cluster(4, 80.0, 1)
    checked = 0
    for shape in shapes(sp, WIDE, cluster, 8):
        if shape.pipeline < 3 or WIDE.layers % shape.virtual_stages:
            continue
        per_layer = (layer_activation_bytes(WIDE, shape, Recompute.NONE),
                     layer_activation_bytes(WIDE, shape, Recompute.FULL))  # fmt: skip
        for mode in sp.recompute:
            template = free_template(shape, mode)
            floor = free_split_floor(WIDE, template, DEFAULT_PARAMS, per_layer)
            assert floor == free_split_floor(WIDE, _mode_of(shape, mode), DEFAULT_PARAMS, per_layer)
            v = shape.virtual_stages
            for counts in _compositions(WIDE.layers, shape.pipeline):
                if any(c % v for c in counts):
                    continue
                assert floor <= memory_breakdown(WIDE, with_counts(template, counts)).total
                checked += 1
    assert checked > 100


def test_staircase_against_definition():
    rng = random.Random(7)
    for _ in range(50):
        stair, points = _Staircase(), []
        for _ in range(40):
            t, m = rng.randint(0, 12), rng.randint(0, 12)
            q_t, q_m = rng.randint(0, 12), rng.randint(0, 12)
            assert stair.dominated(q_t, q_m) == any(a <= q_t and b <= q_m for a, b in points)
            assert stair.fastest(q_m) == min((a for a, b in points if b <= q_m), default=float("inf"))
            dominated = any(a <= t and b <= m for a, b in points)
            assert stair.add(t, m) == (not dominated)
            points.append((t, m))
            front = {p for p in points if not any(o != p and o[0] <= p[0] and o[1] <= p[1] for o in points)}
            assert set(zip(stair.times, stair.mems, strict=True)) == front


class _Fake:
    """A Plan stand-in for the final filter (only its three keys are read)."""

    def __init__(self, t: float, m: float, g: int) -> None:
        self.iteration_seconds, self.memory_bytes, self.gpus = t, m, g


def test_final_front_against_definition():
    rng = random.Random(11)
    for _ in range(30):
        plans = [_Fake(rng.randint(0, 6), rng.randint(0, 6), rng.choice((2, 4, 8))) for _ in range(30)]
        keys = {(p.iteration_seconds, p.memory_bytes, p.gpus) for p in plans}
        got = [(p.iteration_seconds, p.memory_bytes, p.gpus) for p in _final_front(plans)]  # type: ignore[arg-type]
        assert set(got) == _definition_front(keys) and len(got) == len(set(got))


@pytest.mark.parametrize(
    ("space", "model", "gpus", "batch"),
    [("megatron", ODD, 4, 8), ("megatron", MID, 8, 32), ("torchtitan", MID, 8, 16), ("deepspeed", SMALL, 4, 8)],
)
def test_lazy_chains_and_fast_memory_equal_the_reference(space, model, gpus, batch):
    """The front's chains are :func:`variants` (same layouts) and their memory is memory_breakdown's, bit for bit."""
    sp = get_space(space)
    cluster = _cluster(gpus, 80.0, 4)
    checked = 0
    for shape in itertools.islice(shapes(sp, model, cluster, batch), 0, None, 3):
        for split in shape_splits(sp, model, shape):
            reference = variants(sp, model, split)
            lazy = _chains(sp, model, DEFAULT_PARAMS, split)
            assert [len(c) for c in lazy] == [len(c) for c in reference]
            sizer = RecomputeMemory(model, split)
            for chain, ref in zip(lazy, reference, strict=True):
                for i, layout in enumerate(ref):
                    assert chain.layout(i) == layout
                    assert chain.memory(i) == memory_breakdown(model, layout).total == sizer.total(layout)
                    checked += 1
            # the leanest variant sized from the counts alone, before the split's layout exists
            counts = stage_layers(model, split)
            triple = (counts[0], counts[1] if len(counts) > 2 else 0, counts[-1])
            leanest = _Leanest(sp, model, shape, DEFAULT_PARAMS).leanest(triple if split.uneven else None)
            assert leanest == min(memory_breakdown(model, ref[-1]).total for ref in reference)
    assert checked > 50


def test_plan_numbers_are_predicts():
    """Every front plan carries predict's own numbers for its layout."""
    from placement.perf.predict import predict

    cluster = _cluster(8, 6.0)
    for plan in pareto_front(SMALL, cluster, 16, "megatron", counts=[8]):
        assert isinstance(plan, Plan)
        again = predict(SMALL, cluster, plan.layout)
        assert (again.iteration_seconds, again.memory.total) == (plan.iteration_seconds, plan.memory_bytes)


@pytest.mark.parametrize(
    ("space", "model", "gpus", "batch"),
    [
        ("megatron", ODD, 4, 8),
        ("megatron", NINE, 8, 4),
        ("megatron", SMALL_MOE, 8, 16),
        ("torchtitan", MID, 8, 16),
        ("deepspeed", SMALL, 4, 8),
    ],  # fmt: skip
)
def test_recompute_bound_is_below_the_prediction(space, model, gpus, batch):
    """_recompute_bound (a split's time without recomputation plus the least the recomputation must add) never
    exceeds predict's time of the variant (ZeRO 3 and offloaded weights included)."""
    from placement.perf.collectives import Links
    from placement.perf.pareto import _recompute_bound
    from placement.perf.predict import _layer_cost, iteration_time

    sp = get_space(space)
    cluster = _cluster(gpus, 80.0, 4)
    checked = raised = 0
    for shape in shapes(sp, model, cluster, batch):
        cost = _layer_cost(model, cluster, shape, DEFAULT_PARAMS, Links.of(cluster, DEFAULT_PARAMS))
        for split in shape_splits(sp, model, shape)[:4]:
            fastest = iteration_time(model, cluster, split).total
            for chain in variants(sp, model, split):
                for layout in chain:
                    bound = _recompute_bound(model, layout, cost, fastest, DEFAULT_PARAMS)
                    assert bound <= iteration_time(model, cluster, layout).total
                    checked += 1
                    raised += bound > fastest
    assert checked > 100
    if space == "megatron":  # (with ZeRO 3 or offloaded weights the hiding term usually cancels it)
        assert raised > checked // 4  # the bound does more than restate the split's time
