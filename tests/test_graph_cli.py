"""``python -m placement graph``: the priced graph file, its errors, and the acceptance checks of issue 39 (the
graph's nodes sum to ``predict``'s compute; the DP's bottleneck equals ``predict``'s stage of the same split)."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

import pytest

from placement import load_problem, solve_dp
from placement.cli import main
from placement.modelling.graph_cli import parse_gpus
from placement.modelling.pricing import cost_source
from placement.perf import ACCELERATORS, MODELS, Cluster, Layout, megatron_args
from placement.perf.predict import stage_seconds

CASES = [("llama3-8b", "H100", 4096, 4), ("gpt3-175b", "A100", 2048, 16)]


def write_graph(tmp_path: Path, name: str, gpu: str, seq: int, *extra: str) -> Path:
    path = tmp_path / f"{name}.json"
    argv = ["graph", "--model", name, "--gpu", gpu, "--seq-length", str(seq), "--training", "--micro-batch", "1"]
    assert main([*argv, *extra, "-o", str(path)]) == 0
    return path


def predict_json(capsys, name: str, gpu: str, seq: int) -> dict:
    """``predict --gpus 1 --json`` with the preset's Megatron flags, micro-batch 1, global batch 1."""
    model = MODELS[name].with_changes(seq_length=seq)
    flags = megatron_args(model, Layout(micro_batch=1, global_batch=1))
    capsys.readouterr()
    assert main(["predict", "--gpu", gpu, "--gpus", "1", "--json", "--", *flags]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("name, gpu, seq, p", CASES)
def test_graph_nodes_sum_to_predicts_compute(tmp_path, capsys, name, gpu, seq, p):
    graph = load_problem(write_graph(tmp_path, name, gpu, seq)).graph
    total_ms = sum(n.accelerator_latency for n in graph.nodes)
    compute_ms = predict_json(capsys, name, gpu, seq)["time"]["compute"] * 1000
    assert total_ms == pytest.approx(compute_ms, rel=0.03)
    assert abs(total_ms / compute_ms - 1) < 1e-6  # the same kernels: equal, not just within 3 %
    assert cost_source(graph).startswith("perf model (kernel physics") and f"on {gpu};" in cost_source(graph)


@pytest.mark.parametrize("name, gpu, seq, p", CASES)
def test_dp_bottleneck_equals_predicts_stage_of_the_same_split(tmp_path, name, gpu, seq, p):
    problem = load_problem(write_graph(tmp_path, name, gpu + f":{p}", seq))
    result = solve_dp(problem)
    assert result.status == "optimal"
    names = {n.id: n.name for n in problem.graph.nodes}
    counts = []
    for stage in sorted(result.placement.stages, key=lambda s: min(s.nodes)):
        counts.append(sum(1 for i in stage.nodes if names[i].startswith("layer") and "(grad)" not in names[i]))
    assert len(counts) == p and sum(counts) == MODELS[name].layers
    model = MODELS[name].with_changes(seq_length=seq)
    even = len(set(counts)) == 1
    layout = Layout(pipeline=p) if even else Layout(pipeline=p, pipeline_layers=tuple(counts))
    ranks = stage_seconds(model, Cluster(ACCELERATORS[gpu], p), layout)
    bottleneck_ms = max(f + b for f, b in ranks) * 1000
    assert result.objective == pytest.approx(bottleneck_ms, rel=0.03)


def test_mixed_inventory_file_has_a_latency_per_kind(tmp_path):
    problem = load_problem(write_graph(tmp_path, "llama3-8b", "H100:8,A100:4", 1024, "--granularity", "operator"))
    kinds = problem.devices.accelerators
    assert [(k.name, k.count) for k in kinds] == [("H100", 8), ("A100", 4)]
    assert kinds[0].price_per_hour == ACCELERATORS["H100"].usd_per_hour
    node = next(n for n in problem.graph.nodes if n.name == "layer0/qkv")
    assert dict(node.kind_latency)["A100"] > node.accelerator_latency > 0
    assert problem.graph.extra["pricedKinds"] == ["H100", "A100"]


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--model", "llama9", "--gpu", "H100"], "neither a preset"),
        (["--model", "llama3-8b", "--gpu", "TPU9"], "unknown accelerator"),
        (["--model", "llama3-8b", "--gpu", "H100:two"], "must be an integer"),
        (["--model", "llama3-8b", "--gpu", "H100,H100"], "named twice"),
        (["--model", "llama3-8b", "--gpu", "H100", "--seq-length", "0"], "from 1 to"),
    ],
)
def test_errors_are_one_line_and_exit_2(tmp_path, capsys, argv, message):
    with pytest.raises(SystemExit) if "--seq-length" in argv else contextlib.nullcontext():  # argparse: exit 2
        status = main(["graph", *argv, "-o", str(tmp_path / "g.json")])
        assert status == 2
    err = capsys.readouterr().err.strip()
    assert message in err and "\n" not in err.strip().splitlines()[-1] and "Traceback" not in err
    assert not (tmp_path / "g.json").exists()


def test_parse_gpus():
    assert parse_gpus("h100-sxm:8, a100:4,L4") == {"H100": 8, "A100": 4, "L4": 1}
