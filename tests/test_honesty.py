"""Issue 10 items 2, 3 and 5 and issue 11.4: clean errors, strict method options from one registry,
honest status text, and the vocabulary enums.
"""

from __future__ import annotations

import ast
import inspect
import json
import math
import re
import subprocess
import sys
from pathlib import Path

import pytest

from placement import (
    METHODS,
    Devices,
    Edge,
    Graph,
    InvalidGraphError,
    MemoryModel,
    Node,
    PlacementError,
    Problem,
    Status,
    load_problem,
    parse_problem,
    solve,
)
from placement.explore.compare import compare, run_method
from placement.explore.sweep import sensitivity
from placement.model import Objective, Result, ScheduleKind, make_result

from .cli_helper import cli

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "sample_graphs"
INFERENCE = SAMPLES / "throughput" / "layer" / "bert24_inference.json"
TRAINING = SAMPLES / "throughput" / "layer" / "bert24_training.json"
NINES = "9" * 400


def chain(latencies=(1.0, 1.0), cost=1.0, accelerators=2, cpus=0, memory=math.inf) -> Problem:
    nodes = tuple(Node(i, cpu_latency=10 * t, accelerator_latency=t, size=1.0) for i, t in enumerate(latencies))
    edges = tuple(Edge(i, i + 1, cost) for i in range(len(latencies) - 1))
    return Problem(Graph(nodes, edges), Devices.paper(accelerators, cpus, memory))


# ----------------------------------------------------------------------------- 10.2 clean errors
def _graph_text(path: Path, where: str, key: str, literal: str) -> str:
    """The graph file's text with ``key`` of the top level / first node / first edge set to a raw literal."""
    data = json.loads(path.read_text())
    target = {"top": data, "node": data["nodes"][0], "edge": data["edges"][0]}[where]
    target[key] = "@@LITERAL@@"
    return json.dumps(data).replace('"@@LITERAL@@"', literal)


@pytest.mark.parametrize(
    "where,key",
    [
        ("node", "cpuLatency"),
        ("node", "fpgaLatency"),
        ("node", "size"),
        ("edge", "cost"),
        ("edge", "size"),
        ("top", "maxFPGAs"),
        ("top", "maxCPUs"),
        ("top", "maxSizePerFPGA"),
        ("top", "bandwidthFactor"),
        ("top", "cpuBandwidth"),
        ("top", "cpuPricePerHour"),
        ("node", "id"),
        ("node", "colorClass"),
    ],
)
def test_integer_too_large_for_a_float_is_a_one_line_error(where, key):
    text = _graph_text(INFERENCE, where, key, NINES)
    with pytest.raises(InvalidGraphError) as caught:
        parse_problem(text, "big.json")
    message = str(caught.value)
    assert message.startswith("big.json: ") and "\n" not in message
    if key != "id":
        assert f"'{key}'" in message and "too large" in message


def test_too_large_integers_elsewhere_are_one_line_errors():
    data = json.loads(INFERENCE.read_text())
    data["deviceKinds"] = [{"name": "a", "count": 2, "memory": "@@M@@", "speed": 1}]
    text = json.dumps(data).replace('"@@M@@"', NINES)
    with pytest.raises(InvalidGraphError, match=r"deviceKinds\[0\]: field 'memory' is too large"):
        parse_problem(text, "kinds.json")
    data = json.loads(INFERENCE.read_text())
    data["nodes"][0]["latencies"] = {"accelerator": "@@L@@"}
    with pytest.raises(InvalidGraphError, match=r"'latencies.accelerator' is too large"):
        parse_problem(json.dumps(data).replace('"@@L@@"', NINES), "lat.json")
    with pytest.raises(InvalidGraphError, match="not valid JSON"):  # past Python's 4300-digit limit
        parse_problem(_graph_text(INFERENCE, "node", "size", "9" * 5000), "huge.json")


def test_cli_overflow_exits_2_with_one_line(tmp_path):
    path = tmp_path / "big.json"
    path.write_text(_graph_text(INFERENCE, "node", "cpuLatency", NINES))
    for command in (
        ("solve", path),
        ("evaluate", path, SAMPLES / "expert-splits/bert24_inference_expert.json"),
        ("compare", path),
    ):
        out = cli(*command)
        assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr
        lines = out.stderr.strip().splitlines()
        assert len(lines) == 1 and str(path) in lines[0] and "'cpuLatency'" in lines[0]


def test_loads_that_overflow_are_reported_as_overflow_not_as_memory():
    nodes = (Node(1, 1.0, 1e308), Node(2, 1.0, 1e308))
    with pytest.raises(InvalidGraphError, match="sum to more than .* overflow"):
        Problem(Graph(nodes, (Edge(1, 2, 1.0),)), Devices.paper(1, 0))
    # Speed below 1 scales latencies up: the check is per accelerator kind.
    slow = Devices.paper(1, 0).with_kind("accelerator", speed=0.5)
    with pytest.raises(InvalidGraphError, match="accelerator kind 'accelerator'"):
        Problem(Graph((Node(1, 1.0, 1e308),), ()), slow)
    with pytest.raises(InvalidGraphError, match="transfer costs"):
        Problem(
            Graph((Node(1, 1.0, 1.0), Node(2, 1.0, 1.0)), (Edge(1, 2, 1e308),)),
            Devices.paper(1, 0).with_changes(bandwidth=0.5),
        )


def test_evaluate_json_is_strict_json_with_null_and_reason(tmp_path):
    # A split naming a device kind the inventory lacks: infinite load, infinite latency.
    split = tmp_path / "split.json"
    split.write_text(
        json.dumps(
            {
                "accelerators": [
                    {"kind": "ghost", "nodes": [n["id"] for n in json.loads(INFERENCE.read_text())["nodes"]]}
                ],
                "cpus": [],
            }
        )
    )
    out = cli("evaluate", INFERENCE, split, "--json")
    assert out.returncode == 0, out.stderr
    assert "Infinity" not in out.stdout and "NaN" not in out.stdout
    data = json.loads(out.stdout, parse_constant=lambda name: pytest.fail(f"non-JSON constant {name}"))
    assert data["max_load"] is None and data["max_load_reason"]
    assert data["latency"] is None and data["latency_reason"]


def test_training_latency_is_explained_not_infinite(tmp_path):
    """Forward a->b over two devices, backward b'->a' back: the two calls wait on each other."""
    graph = {
        "maxFPGAs": 2,
        "maxCPUs": 0,
        "nodes": [
            {
                "id": i,
                "supportedOnFpga": 1,
                "cpuLatency": 1,
                "fpgaLatency": 1,
                "isBackwardNode": int(i > 2),
                "colorClass": 1 + (i in (2, 3)),
            }
            for i in (1, 2, 3, 4)
        ],
        "edges": [
            {"sourceId": 1, "destId": 2, "cost": 1},
            {"sourceId": 2, "destId": 3, "cost": 1},
            {"sourceId": 3, "destId": 4, "cost": 1},
        ],
    }
    (tmp_path / "g.json").write_text(json.dumps(graph))
    (tmp_path / "s.json").write_text(json.dumps({"fpgas": [{"nodes": [1, 4]}, {"nodes": [2, 3]}], "cpus": []}))
    out = cli("evaluate", tmp_path / "g.json", tmp_path / "s.json", "--json")
    data = json.loads(out.stdout)
    assert data["latency"] is None and "inference graphs only" in data["latency_reason"]
    out = cli("evaluate", tmp_path / "g.json", tmp_path / "s.json")
    line = next(line for line in out.stdout.splitlines() if line.startswith("latency:"))
    assert line.startswith("latency: not defined (latency is defined for inference graphs only")
    assert not re.search(r"\binf\b", line)


@pytest.mark.parametrize(
    "command",
    [
        ("solve", INFERENCE, "--json"),
        ("solve", INFERENCE),
        ("evaluate", INFERENCE, SAMPLES / "expert-splits/bert24_inference_expert.json"),
        pytest.param(("compare", INFERENCE, "--time-limit", "5"), marks=pytest.mark.slow),  # over 5 s
    ],
)
def test_closed_pipe_ends_quietly(command):
    """``... | head -c 1``: no BrokenPipe traceback, for every subcommand."""
    process = subprocess.Popen(
        [sys.executable, "-m", "placement", *map(str, command)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=ROOT,
    )
    process.stdout.read(1)
    process.stdout.close()  # the reader goes away before the command has written everything
    stderr = process.stderr.read().decode()
    process.wait(timeout=300)
    assert "Traceback" not in stderr and "BrokenPipe" not in stderr, stderr
    assert process.returncode == 0


# ----------------------------------------------------------------------------- 10.3 one registry, strict options
def test_every_method_is_described_once_and_matches_its_function():
    for name, spec in METHODS.items():
        assert spec.name == name and spec.title and spec.objective in ("throughput", "latency")
        parameters = inspect.signature(spec.load()).parameters
        for option in spec.options:
            assert option.name in parameters, (name, option.name)
            assert parameters[option.name].default == option.default, (name, option.name)
        assert spec.has_time_limit == ("time_limit" in parameters)


@pytest.mark.parametrize(
    "method,options,words",
    [
        ("dp", {"time_limit": 1}, ["'dp'", "'time_limit'"]),
        ("local-search", {"time_limt": 1}, ["'time_limt'"]),
        ("pipedream", {"seed": 1}, ["'pipedream'", "'seed'"]),
        ("one-accelerator", {"gap": 0.1}, ["'gap'"]),
        ("greedy-latency", {"order": "random"}, ["'order'", "paper"]),
        ("ip", {"time_limit": -1}, ["'time_limit'", "> 0"]),
        ("ip", {"solver": "gurobi"}, ["'solver'", "highs"]),
        ("memory-aware", {"microbatches": 0}, ["'microbatches'", ">= 1"]),
        ("memory-aware", {"recompute": "yes"}, ["'recompute'", "per-stage"]),
        ("memory-aware-ip", {"recompute": "per-stage"}, ["'memory-aware-ip'", "recompute='per-stage'", "memory-aware"]),
        ("local-search", {"seed": 1.5}, ["'seed'", "integer"]),
    ],
)
def test_unknown_or_bad_options_are_placement_errors_naming_them(method, options, words):
    problem = chain()
    with pytest.raises(PlacementError) as caught:
        solve(problem, method, **options)
    assert all(word in str(caught.value) for word in words), str(caught.value)


def test_cli_flags_come_from_the_registry_and_inapplicable_ones_exit_2():
    out = cli("solve", "--help")
    for spec in METHODS.values():
        for option in spec.options:
            if option.cli:
                assert option.flag in out.stdout, option.flag
    out = cli("solve", INFERENCE, "--time-limit", "5")
    assert out.returncode == 2 and "--time-limit" in out.stderr and "dp" in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1
    out = cli(
        "solve", INFERENCE, "--method", "local-search", "--seed", "3", "--restarts", "2", "--time-limit", "5", "--json"
    )
    assert out.returncode == 0 and json.loads(out.stdout)["status"] == "feasible"


def test_compare_passes_each_method_only_its_options_and_rejects_unknown_ones():
    problem = chain()
    rows = compare(problem, "throughput", ["dp", "local-search"], time_limit=5, seed=2)
    assert [r.status for r in rows] == ["optimal", "feasible"]
    with pytest.raises(PlacementError, match="'sead'"):
        compare(problem, "throughput", ["dp"], sead=2)


def test_one_optimizer_multiplier_default_for_every_memory_aware_method():
    """The memory-aware DP and IP share the registry's default, so they plan the same problem.

    Issue 26 changed the default from a fixed 2 (fp32 Adam) to None: Adam with mixed precision for the graph's
    weight dtype (6 x fp16 weights, 2 x fp32 weights, as before for every paper file)."""
    defaults = {
        name: spec.defaults()["optimizer_multiplier"]
        for name, spec in METHODS.items()
        if "optimizer_multiplier" in spec.option_names
    }
    assert set(defaults) == {"memory-aware", "memory-aware-ip"} and set(defaults.values()) == {None}
    assert MemoryModel(training=True).optimizer_multiplier is None


def test_cli_memory_flags_reach_the_memory_aware_dp():
    graph = SAMPLES / "ours" / "tiny_training.json"
    base = json.loads(cli("solve", graph, "--method", "memory-aware", "--json").stdout)
    assert base["stats"]["optimizer_multiplier"] == 2.0 and base["stats"]["schedule"] == "1f1b"
    out = cli(
        "solve",
        graph,
        "--method",
        "memory-aware",
        "--schedule",
        "gpipe",
        "--microbatches",
        "3",
        "--optimizer-multiplier",
        "1",
        "--recompute",
        "--json",
    )
    stats = json.loads(out.stdout)["stats"]
    assert (stats["schedule"], stats["microbatches"], stats["optimizer_multiplier"], stats["recompute"]) == (
        "gpipe",
        3,
        1.0,
        "always",
    )
    assert "gpipe, 3 microbatches" in json.loads(out.stdout)["memory_model"].lower()


def test_memory_model_maps_methods_and_rejects_those_without_a_variant():
    model = MemoryModel(training=True, schedule="gpipe", microbatches=4)
    assert model.method_for("ip")[0] == "memory-aware-ip"
    assert model.method_for("dp") == (
        "memory-aware",
        {"schedule": "gpipe", "microbatches": 4, "optimizer_multiplier": None, "recompute": "none"},
    )
    assert MemoryModel().method_for("pipedream") == ("pipedream", {})
    with pytest.raises(PlacementError, match="pipedream"):
        model.method_for("pipedream")
    with pytest.raises(PlacementError, match="'microbatches'"):
        MemoryModel(training=True, microbatches=0)


# ----------------------------------------------------------------------------- 11.4 enums and one builder
def test_status_objective_schedule_are_string_enums():
    result = solve(chain(), "dp")
    assert result.status is Status.OPTIMAL and result.status == "optimal" and f"{result.status}" == "optimal"
    assert result.objective_kind is Objective.THROUGHPUT and json.dumps(result.status) == '"optimal"'
    assert [s.value for s in ScheduleKind] == ["inference", "gpipe", "1f1b", "interleaved", "zbh1"]
    assert METHODS["latency-ip"].objective is Objective.LATENCY
    built = make_result("x", "no solution", started=0.0, stats={"a": 1})
    assert built.status is Status.NO_SOLUTION and built.stat("a") == 1 and built.seconds > 0
    with pytest.raises(ValueError):
        Result("bogus", "x", None, None, 0.0)
    stored = make_result("dp", "error", seconds=1.5, reason="r")
    assert stored == Result("error", "dp", None, None, 1.5, reason="r")
    with pytest.raises(TypeError):
        make_result("dp", "error", started=0.0, seconds=1.5)


def test_every_result_is_built_by_make_result():
    """No module of the package, the app or its pages calls ``Result(...)`` except ``model.make_result``."""
    callers = []
    files = [*(ROOT / "placement").rglob("*.py"), *(ROOT / "ui").glob("*.py"), *(ROOT / "app_pages").glob("*.py")]
    for path in files:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                name = getattr(node.func, "id", None) or getattr(node.func, "attr", None)
                if name == "Result":
                    callers.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert len(callers) == 1 and callers[0].startswith("placement/model.py:"), callers


# ----------------------------------------------------------------------------- 10.5 honest status text
def test_compare_explains_latency_of_training_graphs():
    problem = load_problem(SAMPLES / "ours" / "tiny_training.json")
    rows = compare(problem, "latency", ["dp", "greedy-latency"])
    assert all(r.status == "not applicable" and "inference graphs only" in r.reason for r in rows)
    assert all(r.status != "infeasible" for r in rows)


def test_dp_in_a_latency_table_is_feasible_not_infeasible():
    problem = load_problem(SAMPLES / "latency" / "layer" / "bert24_inference.json")
    row = run_method(problem, "dp", "latency")
    assert row.status == "feasible" and math.isfinite(row.objective)


def test_compare_under_the_training_memory_model_flags_plans_that_run_out():
    problem = load_problem(TRAINING)
    problem = Problem(problem.graph, problem.devices.with_kind("accelerator", memory=1.5e9))
    rows = compare(problem, "throughput", ["dp", "pipedream"], memory_model=MemoryModel(training=True))
    by = {r.method: r for r in rows}
    assert by["memory-aware"].status == "optimal"  # the DP planned with the training memory
    assert by["pipedream"].status == "infeasible" and "runs out of memory" in by["pipedream"].reason


def test_not_optimal_note_is_true_for_the_method():
    from ui.state import not_optimal_note

    dp = make_result(
        "dp",
        "feasible",
        started=0.0,
        objective=2.0,
        bound=1.5,
        gap=0.25,
        reason="memory binds on merged nodes and the unreduced lattice is too large",
    )
    assert "limit" not in not_optimal_note(dp).replace("lattice is too large", "")
    assert "memory binds" in not_optimal_note(dp)
    ip = make_result("ip", "feasible", started=0.0, objective=2.0, bound=1.5, gap=0.25)
    assert "stopped at its time limit" in not_optimal_note(ip) and "25.00%" in not_optimal_note(ip)
    heuristic = make_result("local-search", "feasible", started=0.0, objective=2.0)
    assert "heuristic" in not_optimal_note(heuristic)
    latency = make_result(
        "latency-ip", "feasible", seconds=60.2, objective=2.0, bound=1.9, gap=0.05, stats={"bound_source": "relaxation"}
    )
    note = not_optimal_note(latency)
    assert "60.2 s" in note and "5.00%" in note and "lower bound 1.9 (device-choice relaxation)" in note
    picked = make_result(
        "dp", "feasible", started=0.0, objective=2.0, reason="dp optimises throughput, this plan is scored on latency"
    )
    assert "limit" not in not_optimal_note(picked)


def test_sensitivity_reports_a_tie_not_a_flip():
    """Splitting is faster by 1.5e-8 relative only: a tie at 2 accelerators, not a 'different plan is faster'."""
    problem = chain(cost=1 - 3e-8, accelerators=1)
    result = sensitivity(problem, "accelerators", max_count=4)
    assert result.up is None, result.sentence
    assert result.tie is not None and "ties" in result.sentence
    clear = sensitivity(chain(cost=0.5, accelerators=1), "accelerators", max_count=4)
    assert clear.up is not None and clear.up.value == 2 and clear.tie is None
