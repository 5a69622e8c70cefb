"""Side-by-side comparison: rows, ratios, statuses, the DataFrame helper."""

from __future__ import annotations

import math
import pickle

import pytest

from placement import Devices, Edge, Graph, Node, Problem, evaluate, load_problem
from placement.errors import PlacementError
from placement.explore.compare import CompareRow, compare, rows_to_frame, rows_to_records, run_method, with_ratios


def test_throughput_table(random_problem):
    problem = random_problem(5, training=True)
    rows = compare(problem, "throughput", time_limit=20)
    assert [r.method for r in rows] == ["dp", "ip", "ip-noncontiguous", "pipedream", "local-search", "one-accelerator"]
    valid = [r for r in rows if r.status in ("optimal", "feasible")]
    assert valid
    best = min(r.objective for r in valid)
    for row in valid:
        assert row.objective == pytest.approx(evaluate(problem, row.placement).max_load)
        assert row.ratio_to_best == pytest.approx(row.objective / best)
        assert row.ratio_to_best >= 1 - 1e-9
    by = {r.method: r for r in rows}
    assert by["dp"].objective == pytest.approx(by["ip"].objective, rel=1e-6)
    assert by["ip-noncontiguous"].objective <= by["ip"].objective * (1 + 1e-6)
    assert min(r.ratio_to_best for r in valid) == pytest.approx(1.0)
    pickle.dumps(rows)


def test_latency_table_reports_dp_as_feasible(random_problem):
    problem = random_problem(4)
    rows = compare(problem, "latency", time_limit=20)
    by = {r.method: r for r in rows}
    assert set(by) == {"latency-ip", "greedy-latency", "dp"}
    assert by["dp"].status in ("feasible", "infeasible")  # the DP optimises throughput: nothing claimed
    assert by["dp"].bound is None
    assert by["latency-ip"].status == "optimal"
    assert by["latency-ip"].ratio_to_best == pytest.approx(1.0)
    for row in rows:
        if row.status in ("optimal", "feasible"):
            assert row.objective == pytest.approx(evaluate(problem, row.placement).latency)
            assert row.objective >= by["latency-ip"].objective * (1 - 1e-6)


def test_infeasible_and_error_rows():
    nodes = (Node(0, 1, 1, size=5), Node(1, 1, 1, size=5))
    problem = Problem(Graph(nodes, (Edge(0, 1, 1),)), Devices.paper(2, 0, memory=6))
    rows = compare(problem, methods=["one-accelerator", "dp", "ip"], time_limit=5)
    by = {r.method: r for r in rows}
    assert by["one-accelerator"].status == "infeasible" and by["one-accelerator"].reason
    assert by["one-accelerator"].ratio_to_best is None or by["one-accelerator"].objective is not None
    assert by["dp"].status == "optimal" and by["dp"].ratio_to_best == pytest.approx(1.0)
    error = run_method(problem, "latency-ip", "latency", subgraphs_per_accelerator=0)
    assert error.status == "error" and "subgraphs" in error.reason
    with pytest.raises(PlacementError):
        compare(problem, methods=["nope"])
    with pytest.raises(PlacementError):
        compare(problem, objective="cost")


def test_ratios_by_hand():
    rows = [
        CompareRow("a", 2.0, None, "feasible", None, None, 0.1),
        CompareRow("b", 4.0, None, "optimal", 4.0, 0.0, 0.1),
        CompareRow("c", 1.0, None, "infeasible", None, None, 0.1),
        CompareRow("d", None, None, "no solution", None, None, 0.1),
    ]
    out = with_ratios(rows)
    assert [r.ratio_to_best for r in out] == [1.0, 2.0, 0.5, None]


def test_frame_and_records(samples_dir):
    problem = load_problem(samples_dir / "throughput/layer/bert24_inference.json")
    rows = compare(problem, methods=["dp", "pipedream", "one-accelerator"], time_limit=5)
    frame = rows_to_frame(rows)
    assert list(frame["method"]) == ["dp", "pipedream", "one-accelerator"]
    assert {"objective", "ratio_to_best", "status", "bound", "gap", "seconds"} <= set(frame.columns)
    assert frame.loc[frame["method"] == "one-accelerator", "objective"].item() == pytest.approx(92.406, abs=5e-4)
    records = rows_to_records(rows)
    assert all("placement" not in r for r in records)
    assert records[0]["ratio_to_best"] == pytest.approx(1.0)
    assert not math.isnan(records[0]["seconds"])


def test_method_options_filters_by_signature():
    from placement.explore.compare import method_options

    options = {"time_limit": 5, "gap": 0.01, "subgraphs_per_accelerator": 2, "seed": 1}
    assert method_options("dp", options) == {}
    assert method_options("latency-ip", options) == {"time_limit": 5, "gap": 0.01, "subgraphs_per_accelerator": 2}
    assert method_options("local-search", options) == {"time_limit": 5, "seed": 1}


def test_the_non_contiguous_ip_says_the_training_memory_model_does_not_apply(random_problem):
    """Under the training memory model a method without a memory-aware variant says so (never silently)."""
    from placement import MemoryModel
    from placement.explore.compare import WEIGHTS_ONLY_NOTE

    base = random_problem(5, training=True)
    kind = base.devices.accelerators[0].name
    problem = Problem(base.graph, base.devices.with_kind(kind, memory=1e12))  # every plan fits
    model = MemoryModel(training=True)
    rows = compare(problem, methods=["dp", "ip-noncontiguous"], time_limit=20, memory_model=model)
    by = {r.method: r for r in rows}
    assert set(by) == {"memory-aware", "ip-noncontiguous"}  # the DP plans with the model
    free = by["ip-noncontiguous"]
    assert free.status in ("optimal", "feasible"), free.reason
    assert free.reason == WEIGHTS_ONLY_NOTE
    assert not model.violations(problem, free.placement)
    assert by["memory-aware"].reason != WEIGHTS_ONLY_NOTE
    weights_only = compare(problem, methods=["ip-noncontiguous"], time_limit=20)[0]
    assert weights_only.reason != WEIGHTS_ONLY_NOTE
