"""Heterogeneous pipeline plans (placement/perf/hetero.py)."""

from __future__ import annotations

import json

import pytest

from placement.cli import main
from placement.errors import PlacementError
from placement.perf.hardware import ACCELERATORS, Cluster, Dtype
from placement.perf.hetero import _evaluate, _Evaluator, parse_kinds, search_hetero
from placement.perf.layout import Layout, Recompute
from placement.perf.params import DEFAULT_PARAMS
from placement.perf.predict import predict
from placement.perf.transformer import MODELS, TransformerSpec

LLAMA8 = MODELS["llama3-8b"].with_changes(seq_length=4096)
SMALL = TransformerSpec(layers=8, hidden=2048, heads=16, seq_length=2048, vocab=32000, tied_embeddings=False)


@pytest.mark.parametrize(
    ("t", "p", "d", "b", "rec"),
    [(2, 4, 2, 1, Recompute.NONE), (1, 2, 8, 2, Recompute.FULL), (4, 1, 4, 1, Recompute.NONE)],
)
def test_one_kind_even_split_equals_predict(t, p, d, b, rec):
    """The heterogeneous composition is the performance model's own on a homogeneous, even plan."""
    cluster = Cluster(ACCELERATORS["A100"], 16, 8)
    ev = _Evaluator(LLAMA8, [cluster], 64, Dtype.BF16, DEFAULT_PARAMS)
    plan = _evaluate(ev, [(0, t, p)], [LLAMA8.layers], [rec], p, d, b, 64, Dtype.BF16, True)
    layout = Layout(tensor=t, pipeline=p, data=d, micro_batch=b, global_batch=64, sequence_parallel=t > 1,
                    zero_stage=1, recompute=rec, overlap_grad_reduce=d > 1, overlap_param_gather=d > 1)  # fmt: skip
    assert plan.iteration_seconds == pytest.approx(predict(LLAMA8, cluster, layout).iteration_seconds, rel=1e-12)


def test_a100_plus_v100():
    kinds = parse_kinds("A100:8,V100:4")
    result = search_hetero(SMALL, kinds, 32)
    assert str(result.status) == "optimal"
    uni, free = result.uniform, result.per_kind
    assert uni.launchable and "Megatron-Core" in uni.launcher and len({s.tensor for s in uni.stages}) == 1
    assert free.iteration_seconds <= uni.iteration_seconds
    for plan in (uni, free):
        assert sum(s.layers for s in plan.stages) == SMALL.layers
        assert all(s.memory_bytes <= s.capacity for s in plan.stages)
        assert plan.dtype == "fp16"  # the V100 has no bf16 (when it is used)
        assert plan.megatron_layout.startswith("E") and plan.megatron_layout.endswith("L")
    if len({s.tensor for s in free.stages}) > 1:
        assert not free.launchable and free.launcher.startswith("not launchable")


def test_parse_kinds_errors():
    with pytest.raises(PlacementError, match="NAME:COUNT"):
        parse_kinds("A100:x")
    with pytest.raises(PlacementError, match="each kind once"):
        parse_kinds("A100:8,A100:8")


def test_cli_hetero_json(capsys):
    code = main(["plan", "--model", "llama3-8b", "--seq-length", "2048", "--gpu", "A100:8,V100:4",
                 "--global-batch", "16", "--json"])  # fmt: skip
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out["status"] == "optimal" and out["uniform_tensor"]["launchable"]
