"""Free pipeline splits with partial recomputation (placement/perf/partial_split.py) against brute force over every
composition of the layers and every k, and the properties of the model the solver relies on."""

from __future__ import annotations

import itertools
import math
import random
from dataclasses import replace

import pytest

from placement.perf.free_split import TIE_RTOL, _Problem
from placement.perf.hardware import ACCELERATORS, Cluster
from placement.perf.layout import Layout, Recompute, Schedule, check_layout, stage_layers
from placement.perf.params import DEFAULT_PARAMS
from placement.perf.partial_split import (
    PartialSplits,
    best_partial_split,
    partial_bound,
    partial_counts,
    partial_template,
)
from placement.perf.predict import predict
from placement.perf.transformer import TransformerSpec

GIB = 2**30


def _compositions(layers: int, p: int, v: int):  # noqa: ANN202
    units = layers // v
    for cuts in itertools.combinations(range(1, units), p - 1):
        yield tuple(v * (b - a) for a, b in zip((0, *cuts), (*cuts, units), strict=True))


def _model(layers: int, seq: int = 2048, vocab: int = 32000) -> TransformerSpec:
    return TransformerSpec(layers=layers, hidden=2048, heads=16, seq_length=seq, vocab=vocab, name=f"m{layers}")


def _cluster(gpus: int, memory: float) -> Cluster:
    return Cluster(replace(ACCELERATORS["A100"], memory_bytes=memory), gpus, 2)


# (layers, sequence, vocabulary, layout, what the optima show: m = memory decides some, f = some are free splits,
# t = some tie with other splits in time): p = 3..5, v = 1..2, 1F1B and interleaved, ZeRO 0/1, m = p and 2p
SHAPES = [
    (10, 4096, 32000, dict(pipeline=5, data=2, micro_batch=1, global_batch=10, zero_stage=1), "mft"),
    (10, 4096, 32000, dict(pipeline=4, data=2, micro_batch=1, global_batch=8, zero_stage=0), "mft"),
    (16, 4096, 128256, dict(pipeline=4, data=2, micro_batch=1, global_batch=16, zero_stage=0), "mf"),
    (16, 2048, 128256, dict(pipeline=3, data=2, micro_batch=1, global_batch=6, zero_stage=0), "m"),
    (16, 4096, 128256, dict(pipeline=4, data=2, virtual_stages=2, schedule=Schedule.INTERLEAVED, micro_batch=1,
                            global_batch=8, zero_stage=1), "mf"),
    (16, 4096, 32000, dict(pipeline=3, data=2, virtual_stages=2, schedule=Schedule.INTERLEAVED, micro_batch=1,
                           global_batch=6, zero_stage=0), "m"),
    (10, 2048, 128256, dict(pipeline=4, data=2, virtual_stages=2, schedule=Schedule.INTERLEAVED, micro_batch=1,
                            global_batch=16, zero_stage=0), "ft"),
]  # fmt: skip


def _brute(model: TransformerSpec, shape: Layout, k: int) -> list[tuple[float, float, tuple[int, ...]]]:
    """(seconds, bytes, counts) of every composition with block recomputation of k layers per chunk (k lowered to
    the largest chunk where every chunk is shorter: Megatron's rule), priced by ``predict``."""
    cluster = _cluster(shape.gpus, 80 * GIB)
    out = []
    for counts in _compositions(model.layers, shape.pipeline, shape.virtual_stages):
        lay = Layout(**{**_fields(shape), "pipeline_layers": counts, "recompute": Recompute.FULL,
                        "recompute_method": "block", "recompute_layers": min(k, max(counts) // shape.virtual_stages)})  # fmt: skip
        check_layout(model, cluster, lay)
        pred = predict(model, cluster, lay, with_band=False)
        out.append((pred.iteration_seconds, pred.memory.total, counts))
    return out


def _caps(rows: list[tuple[float, float, tuple[int, ...]]]) -> list[float]:
    """Memory capacities where the optimum changes: each (time, memory) front point's bytes and just below them
    (then the next, leaner point is the optimum), at most 8, the leanest last (below it nothing fits)."""
    front: list[float] = []
    for _, mem, _ in sorted(rows):
        if not front or mem < front[-1]:
            front.append(mem)
    picks = front[:: max(1, len(front) // 4)] + [front[-1]]
    return sorted({q for f in picks for q in (f, math.nextafter(f, 0))}, reverse=True)


def _fields(layout: Layout) -> dict[str, object]:
    return {k: getattr(layout, k) for k in layout.__dataclass_fields__}


def _compare(model: TransformerSpec, shape: Layout) -> tuple[int, int, int]:
    """For every k and the capacities of :func:`_caps`: the solver's split is as fast as the fastest fitting
    composition (within TIE_RTOL) and as lean as the leanest of those tied with it; none when none fits. Returns
    how many optima memory decided, how many are free splits, how many tie with another split in time."""
    size = model.layers // shape.virtual_stages - (shape.pipeline - 1)
    memory_bound = free = ties = 0
    for k in range(1, size):
        brute = _brute(model, shape, k)
        assert partial_bound(model, _cluster(shape.gpus, 80 * GIB), shape, DEFAULT_PARAMS, k) <= min(brute)[0]
        solver = PartialSplits(model, _cluster(shape.gpus, 80 * GIB), partial_template(shape, k), DEFAULT_PARAMS)
        for cap in _caps(brute):
            cluster = _cluster(shape.gpus, cap)
            got = best_partial_split(model, cluster, partial_template(shape, k), DEFAULT_PARAMS, cap)
            assert solver.best(cap) == got  # the shared-numbers solver under successive caps: the same
            fitting = [r for r in brute if r[1] <= cap]
            if not fitting:
                assert got == []
                continue
            fastest = min(t for t, _, _ in fitting)
            tied = [r for r in fitting if r[0] <= fastest * (1 + TIE_RTOL)]
            leanest = min(m for _, m, _ in tied)
            assert len(got) == 1
            pred = predict(model, cluster, got[0])
            assert pred.fits and pred.iteration_seconds <= fastest * (1 + TIE_RTOL)
            assert pred.memory.total == pytest.approx(leanest, rel=1e-12)
            memory_bound += min(fitting)[2] != min(brute)[2]
            free += len(set(stage_layers(model, got[0])[1:-1])) > 1
            ties += len(tied) > 1
    return memory_bound, free, ties


@pytest.mark.parametrize("case", range(len(SHAPES)))
def test_partial_split_equals_brute_force(case):
    layers, seq, vocab, knobs, shows = SHAPES[case]
    memory_bound, free, ties = _compare(_model(layers, seq, vocab), Layout(tensor=1, **knobs))
    # the comparison bites: memory decides some optima, some are free splits, some tie with other splits
    assert ("m" in shows, "f" in shows, "t" in shows) == (memory_bound > 0, free > 0, ties > 0)


@pytest.mark.parametrize("seed", range(8))
def test_random_shapes_equal_brute_force(seed):
    """Random small shapes: 8..12 layers, p = 3..5, v = 1..2, sequence, vocabulary, micro-batches, ZeRO, overlap."""
    rng = random.Random(seed)
    v = rng.choice((1, 2))
    p = rng.choice((3, 4, 5) if v == 1 else (3, 4))
    layers = rng.choice([n for n in (8, 10, 12) if n % v == 0 and n // v > p])
    interleaved = dict(virtual_stages=v, schedule=Schedule.INTERLEAVED) if v > 1 else {}
    shape = Layout(tensor=1, pipeline=p, data=2, micro_batch=1, global_batch=2 * rng.choice((p - 1, p, 2 * p)),
                   zero_stage=rng.choice((0, 1)), overlap_grad_reduce=rng.choice((False, True)), **interleaved)  # fmt: skip
    _compare(_model(layers, rng.choice((2048, 4096)), rng.choice((32000, 128256))), shape)


def test_steps_are_a_common_concave_function_plus_the_ends():
    """What the greedy relies on: S_first(c) - S_mid(c) and S_last(c) - S_mid(c) do not depend on c, and S_mid's
    increments never grow (they fall once a rank holds k v layers)."""
    for layers, seq, vocab, knobs, _ in SHAPES:
        model, shape = _model(layers, seq, vocab), Layout(tensor=1, **knobs)
        for k in (1, 2):
            pb = _Problem(model, _cluster(shape.gpus, 80 * GIB), partial_template(shape, k), DEFAULT_PARAMS, math.inf)
            mid = [pb.middle.step(c) for c in range(pb.size)]
            for kind in (pb.first, pb.last):
                gaps = [kind.step(c) - mid[c] for c in range(pb.size)]
                assert max(gaps) - min(gaps) <= 1e-12 * max(mid)
            rises = [b - a for a, b in itertools.pairwise(mid)]
            assert all(b <= a * (1 + 1e-12) for a, b in itertools.pairwise(rises))
            # concave, not linear, where a rank can hold more than k v layers (no recomputation beyond them)
            assert k == 1 or k >= pb.size or rises[0] > rises[-1] * (1 + 1e-6)


def test_partial_counts_lowers_k_to_the_largest_chunk():
    """k above every chunk is written as the largest chunk (the same numbers; Megatron refuses k > a chunk)."""
    model, shape = _model(12), Layout(tensor=1, pipeline=4, data=2, micro_batch=1, global_batch=16)
    cluster = _cluster(8, 80 * GIB)
    assert partial_counts(partial_template(shape, 3), (2, 3, 4, 3)).recompute_layers == 3
    lowered = partial_counts(partial_template(shape, 5), (2, 3, 4, 3))
    assert lowered.recompute_layers == 4
    check_layout(model, cluster, lowered)
    again = Layout(**{**_fields(lowered), "recompute_layers": 5})
    with pytest.raises(Exception, match="exceeds the 4 layers"):
        check_layout(model, cluster, again)


def test_bytes_shared_across_k_equal_rank_bytes():
    """The ranks' static bytes cached across the ks of a shape give every rank's total bit for bit as rank_bytes."""
    from placement.perf.memory import rank_bytes

    for layers, seq, vocab, knobs, _ in SHAPES:
        model, shape = _model(layers, seq, vocab), Layout(tensor=1, **knobs)
        statics: dict[tuple[int, int], float] = {}
        for k in (2, 1, 3):
            template = partial_template(shape, k)
            pb = PartialSplits(model, _cluster(shape.gpus, 80 * GIB), template, DEFAULT_PARAMS, statics=statics)
            pb = pb.problem(math.inf)
            for r in range(shape.pipeline):
                for c in range(pb.size):
                    n = (c + 1) * shape.virtual_stages
                    assert pb.bytes_of(r, c) == rank_bytes(model, template, r, n, DEFAULT_PARAMS, pb.per_layer)
        assert statics
