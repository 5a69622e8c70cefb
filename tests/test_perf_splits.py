"""Uneven layer splits (placement/perf/splits.py): the best-first stream against the plain enumeration."""

from __future__ import annotations

import pytest

from placement.perf.hardware import ACCELERATORS, Cluster
from placement.perf.layout import Layout, check_layout, stage_layers
from placement.perf.params import DEFAULT_PARAMS
from placement.perf.predict import predict
from placement.perf.splits import all_splits, default_split, split_bounds, splits_best_first, with_split
from placement.perf.transformer import TransformerSpec

TWELVE = TransformerSpec(layers=12, hidden=1024, heads=16, seq_length=2048, vocab=128256, name="twelve")


@pytest.mark.parametrize(("p", "v", "m"), [(2, 1, 4), (3, 1, 6), (4, 1, 8), (2, 2, 4), (3, 2, 6), (2, 3, 4), (4, 3, 8)])
def test_stream_is_every_split_best_first_with_valid_bounds(p, v, m):
    cluster = Cluster(ACCELERATORS["H100"], p, 8)
    shape = Layout(pipeline=p, virtual_stages=v, global_batch=m)
    stream = list(splits_best_first(TWELVE, cluster, shape, DEFAULT_PARAMS))
    tuples = list(split_bounds(TWELVE, cluster, shape, DEFAULT_PARAMS))
    assert [(b, with_split(shape, TWELVE.layers, s)) for b, s in tuples] == stream
    expected = {with_split(shape, TWELVE.layers, s) for s in all_splits(TWELVE.layers, p, v)}
    assert {lay for _, lay in stream} == expected and len(stream) == len(expected)
    bounds = [b for b, _ in stream]
    assert bounds == sorted(bounds)
    for bound, lay in stream:
        check_layout(TWELVE, cluster, lay)  # every split is one Megatron-Core accepts (multiples of v)
        assert all(n % v == 0 for n in stage_layers(TWELVE, lay))
        assert bound <= predict(TWELVE, cluster, lay).iteration_seconds


def test_all_splits_respects_virtual_stages_and_default_split_is_valid():
    assert list(all_splits(9, 2, 3)) == [(3, 0, 6), (6, 0, 3)]
    assert list(all_splits(10, 2, 3)) == []
    for layers in range(4, 20):
        for p in (2, 3, 4):
            for v in (1, 2, 3):
                if layers % v or layers // v < p:
                    continue
                first, last = default_split(layers, p, v)
                lay = Layout(pipeline=p, virtual_stages=v, global_batch=p, first_stage_layers=first,
                             last_stage_layers=last)  # fmt: skip
                spec = TransformerSpec(layers=layers, hidden=256, heads=4, seq_length=128, vocab=1000)
                assert sum(stage_layers(spec, lay)) == layers
