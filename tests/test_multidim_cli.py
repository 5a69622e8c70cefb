"""CLI: ``solve --method multidim`` on a Piper file (table, JSON, overrides, bad input -> exit 2)."""

import json
from pathlib import Path

import pytest

from placement.cli import main
from placement.multidim.dp import solve_multidim
from placement.multidim.io import read_piper

BERT = Path(__file__).resolve().parent.parent / "sample_graphs" / "piper" / "bert32a100.json"


def test_cli_multidim_json_matches_the_engine(capsys):
    assert (
        main(
            [
                "solve",
                str(BERT),
                "--method",
                "multidim",
                "--devices",
                "16",
                "--memory",
                str(8 * 2**30),
                "--microbatches",
                "960",
                "--json",
            ]
        )
        == 0
    )
    out = json.loads(capsys.readouterr().out)
    problem = read_piper(BERT).with_devices(16)
    from dataclasses import replace

    problem = replace(problem, kinds=(replace(problem.kinds[0], memory=8 * 2**30),), microbatches=960)
    expected = solve_multidim(problem)
    assert out["status"] == "optimal"
    assert out["time_per_sample_ms"] == pytest.approx(expected.time_per_sample, rel=1e-12)
    assert sum(s["d"] * s["t"] for s in out["stages"]) <= 16
    assert all(s["memory_bytes"] <= s["memory_cap_bytes"] for s in out["stages"])


def test_cli_multidim_table(capsys):
    assert main(["solve", str(BERT), "--method", "multidim", "--devices", "4"]) == 0
    text = capsys.readouterr().out
    assert "status: optimal" in text and "d x t" in text and "time per sample:" in text
    problem = read_piper(BERT).with_devices(4)
    expected = solve_multidim(problem)
    assert f"time per sample: {expected.time_per_sample:.6g} ms" in text and "ms/sample" in text  # units said


def test_cli_multidim_bad_file_exit_2(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text(
        '{"maxDevices": 4, "maxMemoryPerDevice": 1, "bandwidth": 1, "mbsInBatch": 2, "nodes": [{"id": 0}], "edges": []}'
    )
    assert main(["solve", str(bad), "--method", "multidim"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"error: {bad}: node 0: missing field 'TMPCs'"


def test_cli_multidim_paper_graph_matches_options_from_graph(capsys):
    from placement.io import load_problem
    from placement.multidim.convert import options_from_graph

    tiny = BERT.parent.parent / "ours" / "tiny_training.json"
    # 1 GB per device: with the default optimizer state (Adam) the file's own 64 MB cap holds no plan
    memory = "1000000000"
    args = ["solve", str(tiny), "--method", "multidim", "--devices", "4", "--microbatches", "4", "--memory", memory]
    assert main([*args, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    expected = solve_multidim(options_from_graph(load_problem(tiny), devices=4, memory=1e9, microbatches=4))
    assert out["status"] == "optimal"
    assert out["time_per_sample_ms"] == pytest.approx(expected.time_per_sample, rel=1e-12)
    assert all(s["t"] == 1 for s in out["stages"])  # paper format: t = 1 only


def test_cli_multidim_builder_graph_gets_tensor_parallel_options(tmp_path, capsys):
    from placement.io import problem_to_json
    from placement.modelling.builders import build_transformer
    from placement.multidim.convert import options_from_graph
    from placement.perf.transformer import TransformerSpec

    built = build_transformer(TransformerSpec(layers=2, hidden=1024, heads=8, seq_length=512, vocab=1000))
    path = tmp_path / "gpt.json"
    path.write_text(problem_to_json(built))
    args = ["solve", str(path), "--method", "multidim", "--devices", "8", "--memory", str(2**30)]
    assert main([*args, "--microbatches", "8", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    # the saved JSON keeps the operator data (ops, bytes written): the same options as the graph itself
    expected = solve_multidim(options_from_graph(built, devices=8, memory=2**30, microbatches=8))
    assert out["status"] == "optimal"
    assert out["time_per_sample_ms"] == pytest.approx(expected.time_per_sample, rel=1e-12)
    assert max(s["t"] for s in out["stages"]) > 1  # 1 GiB per device: the layers must be split


def test_cli_multidim_bad_paper_graph_exit_2(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    node = '{"id": 0, "supportedOnFpga": 1, "cpuLatency": 1, "fpgaLatency": -1, "isBackwardNode": 0, "size": 0}'
    bad.write_text('{"maxFPGAs": 1, "maxCPUs": 0, "maxSizePerFPGA": 10, "nodes": [' + node + '], "edges": []}')
    assert main(["solve", str(bad), "--method", "multidim"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"error: {bad}: node 0") and "fpgaLatency" in err and "\n" not in err


def test_cli_multidim_onnx_model(tmp_path, capsys):
    from placement.modelling.onnx import import_onnx
    from placement.multidim.convert import options_from_graph

    from .test_onnx_import import mlp_bytes

    path = tmp_path / "mlp.onnx"
    path.write_bytes(mlp_bytes())
    assert main(["solve", str(path), "--method", "multidim", "--devices", "2", "--microbatches", "2", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    problem = options_from_graph(import_onnx(mlp_bytes(), str(path)).graph, devices=2, microbatches=2)
    assert [t for t, _ in problem.nodes[0].options] == [1, 2, 4, 8]  # the MatMul splits
    expected = solve_multidim(problem)
    assert out["status"] == "optimal"
    assert out["time_per_sample_ms"] == pytest.approx(expected.time_per_sample, rel=1e-12)
