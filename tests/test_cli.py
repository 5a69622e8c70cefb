"""The CLI as other tools use it: JSON on stdout, one-line errors with status 2.

Run in process (:mod:`tests.cli_helper`); one smoke test runs ``python -m placement`` as a subprocess.
"""

import json
import subprocess
import sys

import pytest

from placement import evaluate, load_problem, parse_placement

from .cli_helper import cli
from .golden import OPTIMAL_MAX_LOAD


def smoke(*args):
    """``python -m placement ARGS`` as a separate process (the entry point as installed tools call it)."""
    return subprocess.run(
        [sys.executable, "-m", "placement", *map(str, args)], capture_output=True, text=True, timeout=300
    )


def test_solve_json_has_the_stable_shape(samples_dir):
    graph = samples_dir / "throughput/layer/bert24_training.json"
    out = smoke("solve", graph, "--json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["status"] == "optimal" and data["method"] == "dp"
    assert data["objective"] == pytest.approx(OPTIMAL_MAX_LOAD["throughput/layer/bert24_training.json"], rel=1e-6)
    assert len(data["accelerators"]) == 6 and len(data["cpus"]) == 1
    assert isinstance(data["seconds"], float)
    assert max(d["load"] for d in data["accelerators"] + data["cpus"]) == pytest.approx(data["objective"])
    # The reported split, read back as a split file, evaluates to the objective.
    problem = load_problem(graph)
    placement = parse_placement(
        json.dumps({"fpgas": data["accelerators"], "cpus": data["cpus"]}), problem.graph, problem.devices
    )
    assert evaluate(problem, placement).max_load == pytest.approx(data["objective"])


def test_options_override_the_file(samples_dir):
    graph = samples_dir / "throughput/layer/bert24_inference.json"
    data = json.loads(cli("solve", graph, "--json", "--accelerators", 2, "--cpus", 0).stdout)
    assert len(data["accelerators"]) == 2 and data["cpus"] == []
    infeasible = json.loads(cli("solve", graph, "--json", "--memory", 1000, "--cpus", 0).stdout)
    assert infeasible["status"] == "infeasible" and infeasible["objective"] is None and infeasible["reason"]


def test_readable_table_without_json(samples_dir):
    out = cli("solve", samples_dir / "throughput/layer/resnet50_inference.json")
    assert out.returncode == 0
    assert "time per sample" in out.stdout and "accelerator 0" in out.stdout


def test_evaluate_expert_split(samples_dir):
    out = cli(
        "evaluate",
        samples_dir / "throughput/layer/bert24_inference.json",
        samples_dir / "expert-splits/bert24_inference_expert.json",
        "--json",
    )
    data = json.loads(out.stdout)
    assert data["max_load"] == pytest.approx(20.084, rel=5e-5) and data["feasible"]


@pytest.mark.parametrize(
    "content,message",
    [
        ("{", "not valid JSON"),
        ('{"nodes": [{"id": 1}], "edges": []}', "node 1: missing field"),
        (
            '{"nodes": [{"id": 1, "supportedOnFpga": 1, "cpuLatency": -2, "fpgaLatency": 1, "isBackwardNode": 0}], "edges": []}',
            "must be non-negative",
        ),
    ],
)
def test_bad_input_exits_2_with_one_line(tmp_path, content, message):
    path = tmp_path / "bad.json"
    path.write_text(content)
    out = cli("solve", path, "--json")
    assert out.returncode == 2
    assert out.stdout == ""
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and str(path) in lines[0] and message in lines[0]
    assert "Traceback" not in out.stderr


def test_missing_file_and_bad_option(tmp_path):
    out = cli("solve", tmp_path / "nope.json")
    assert out.returncode == 2 and "no such file" in out.stderr and len(out.stderr.strip().splitlines()) == 1
    out = cli("solve", tmp_path / "nope.json", "--accelerators", "-3")
    assert out.returncode == 2 and "Traceback" not in out.stderr


@pytest.mark.slow  # over 5 s
def test_compare_json_lists_every_method_with_ratios(samples_dir):
    out = cli("compare", samples_dir / "throughput/layer/bert24_inference.json", "--json", "--time-limit", 5)
    assert out.returncode == 0, out.stderr
    rows = {row["method"]: row for row in json.loads(out.stdout)["rows"]}
    assert {"dp", "ip", "pipedream", "one-accelerator"} <= set(rows)
    assert rows["dp"]["status"] == "optimal"
    assert rows["dp"]["objective"] == pytest.approx(OPTIMAL_MAX_LOAD["throughput/layer/bert24_inference.json"])
    best = min(row["objective"] for row in rows.values() if row["objective"] is not None)
    assert rows["dp"]["ratio_to_best"] == pytest.approx(rows["dp"]["objective"] / best)


def test_integer_program_through_the_cli_agrees_with_the_dp(samples_dir):
    out = cli(
        "solve", samples_dir / "throughput/layer/bert24_training.json", "--method", "ip", "--time-limit", 60, "--json"
    )
    data = json.loads(out.stdout)
    assert data["method"] == "ip" and data["status"] == "optimal"
    assert data["objective"] == pytest.approx(OPTIMAL_MAX_LOAD["throughput/layer/bert24_training.json"], rel=1e-6)
