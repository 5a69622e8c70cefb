"""Free pipeline splits (placement/perf/free_split.py) against brute force over every composition of the layers,
and the model's pricing of a free split (placement/perf/layout.py, predict.py, memory.py)."""

from __future__ import annotations

import itertools
from dataclasses import replace

import pytest

from placement.errors import InvalidLayoutError
from placement.perf.free_split import TIE_RTOL, best_free_split, free_bound, free_template, with_counts
from placement.perf.hardware import ACCELERATORS, Cluster
from placement.perf.layout import Layout, Recompute, check_layout, stage_layers
from placement.perf.memory import memory_breakdown, rank_bytes
from placement.perf.params import DEFAULT_PARAMS
from placement.perf.predict import predict, stage_seconds
from placement.perf.transformer import TransformerSpec

GIB = 2**30
MODEL = TransformerSpec(layers=12, hidden=2048, heads=16, seq_length=4096, vocab=128256, name="twelve")


def _cluster(gpus: int, memory_gib: float, per_node: int = 2) -> Cluster:
    return Cluster(replace(ACCELERATORS["A100"], memory_bytes=memory_gib * GIB), gpus, per_node)


def _compositions(layers: int, p: int, v: int):  # noqa: ANN202
    units = layers // v
    for cuts in itertools.combinations(range(1, units), p - 1):
        yield tuple(v * (b - a) for a, b in zip((0, *cuts), (*cuts, units), strict=True))


SHAPES = [
    dict(tensor=1, pipeline=4, data=2, micro_batch=1, global_batch=64, zero_stage=1, overlap_grad_reduce=True),
    dict(tensor=1, pipeline=6, data=2, micro_batch=1, global_batch=64, zero_stage=0),
    dict(tensor=1, pipeline=4, data=2, virtual_stages=2, micro_batch=1, global_batch=64, zero_stage=1),
]


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("mode", [Recompute.NONE, Recompute.SELECTIVE, Recompute.FULL])
@pytest.mark.parametrize("memory_gib", [12.0, 10.5, 9.8, 9.0])
def test_best_free_split_equals_brute_force(shape, mode, memory_gib):
    """Least time over every composition that fits, then least memory among the ties (times within TIE_RTOL)."""
    lay = Layout(**shape)
    cluster = _cluster(lay.gpus, memory_gib)
    template = free_template(lay, mode)
    fitting = []
    for counts in _compositions(MODEL.layers, lay.pipeline, lay.virtual_stages):
        candidate = with_counts(template, counts)
        check_layout(MODEL, cluster, candidate)
        pred = predict(MODEL, cluster, candidate, with_band=False)
        if pred.fits:
            fitting.append((pred.iteration_seconds, pred.memory.total))
    got = best_free_split(MODEL, cluster, template, DEFAULT_PARAMS, cluster.accelerator.memory_bytes)
    if not fitting:
        assert got == []
        return
    fastest = min(t for t, _ in fitting)
    leanest = min(m for t, m in fitting if t <= fastest * (1 + TIE_RTOL))
    preds = [predict(MODEL, cluster, g, with_band=False) for g in got]
    best = min(preds, key=lambda p: (p.iteration_seconds, p.memory.total))
    assert best.fits and best.iteration_seconds <= fastest * (1 + TIE_RTOL)
    assert best.memory.total == pytest.approx(leanest, rel=1e-12)
    # the bound the search prunes with is below every split's time
    assert free_bound(MODEL, cluster, template, DEFAULT_PARAMS) <= fastest


def test_cases_are_memory_tight():
    """The memory values above leave more and more compositions out, the last all (so the comparison bites)."""
    lay = Layout(**SHAPES[0])
    fits = {
        gib: sum(
            predict(MODEL, _cluster(8, gib), with_counts(free_template(lay, Recompute.NONE), c), with_band=False).fits
            for c in _compositions(12, 4, 1)
        )
        for gib in (12.0, 10.5, 9.8, 9.0)
    }
    assert fits[12.0] > fits[10.5] > fits[9.8] > 0 == fits[9.0]


def test_free_split_priced_rank_by_rank():
    cluster = _cluster(8, 80.0)
    lay = Layout(tensor=1, pipeline=4, data=2, micro_batch=1, global_batch=16, pipeline_layers=(2, 3, 4, 3))
    assert lay.free_split and lay.uneven and stage_layers(MODEL, lay) == (2, 3, 4, 3)
    mem = memory_breakdown(MODEL, lay)
    ranks = [rank_bytes(MODEL, lay, r, n) for r, n in enumerate((2, 3, 4, 3))]
    assert mem.total == max(ranks) and mem.stage == ranks.index(max(ranks))
    steps = [f + b for f, b in stage_seconds(MODEL, cluster, lay)]
    assert steps[2] > steps[1]  # rank 2 holds the most layers (and no embedding or output layer)


def test_tuples_the_flags_express_are_stored_as_them():
    base = dict(tensor=1, pipeline=4, data=2, micro_batch=1, global_batch=16)
    first_last = Layout(**base, pipeline_layers=(2, 4, 4, 2))
    assert first_last.pipeline_layers is None and (first_last.first_stage_layers, first_last.last_stage_layers) == (
        2,
        2,
    )
    even = Layout(**base, pipeline_layers=(3, 3, 3, 3))
    assert even.pipeline_layers is None and not even.uneven


@pytest.mark.parametrize(
    ("changes", "needle"),
    [
        (dict(pipeline_layers=(2, 3, 4)), "3 ranks' layer counts for pipeline size 4"),
        (dict(pipeline_layers=(2, 3, 0, 7)), "positive multiple"),
        (dict(pipeline_layers=(2, 3, 4, 3), first_stage_layers=2), "cannot be set with"),
        (dict(pipeline_layers=(2, 3, 5, 2), virtual_stages=2), "multiple of the 2 virtual stages"),
    ],
)
def test_bad_free_splits_are_one_line(changes, needle):
    with pytest.raises(InvalidLayoutError, match=needle) as info:
        Layout(tensor=1, pipeline=4, data=2, micro_batch=1, global_batch=16, **changes)
    assert "\n" not in str(info.value)


def test_free_split_must_sum_to_the_layers():
    lay = Layout(tensor=1, pipeline=4, data=2, micro_batch=1, global_batch=16, pipeline_layers=(2, 3, 4, 4))
    with pytest.raises(InvalidLayoutError, match="13 decoder layers"):
        check_layout(MODEL, _cluster(8, 80.0), lay)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("mode", [Recompute.NONE, Recompute.FULL])
def test_free_splits_under_falling_caps_equal_fresh_solves(shape, mode):
    """FreeSplits (one template, successive capacities, the model's numbers shared) gives what a fresh
    best_free_split gives at each capacity, down to none fitting."""
    from placement.perf.free_split import FreeSplits

    lay = Layout(**shape)
    cluster = _cluster(lay.gpus, 80.0)
    template = free_template(lay, mode)
    solver = FreeSplits(MODEL, cluster, template, DEFAULT_PARAMS)
    seen = 0
    for memory_gib in (12.0, 10.5, 9.8, 9.4, 9.0, 8.0, 4.0):
        cap = memory_gib * GIB
        got = solver.best(cap)
        assert got == best_free_split(MODEL, cluster, template, DEFAULT_PARAMS, cap)
        seen += bool(got)
    assert 0 < seen < 7  # some caps fit, the last does not
