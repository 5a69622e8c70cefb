"""The Compare page's table and handed-over plan (ui.compare_table) as plain functions, without Streamlit."""

import pytest

from placement import evaluate, load_problem
from placement.explore.compare import DEFAULT_METHODS, CompareRow, run_method, with_ratios
from placement.model import Status
from ui import compare_table as ct

from .conftest import SAMPLES

BERT = SAMPLES / "throughput" / "layer" / "bert24_inference.json"


@pytest.fixture(scope="module")
def rows():
    problem = load_problem(BERT)
    failed = CompareRow("ip", None, None, Status.ERROR, None, None, 0.0, reason="solver crashed")
    return problem, with_ratios([run_method(problem, m, "throughput", 10.0) for m in ("dp", "pipedream")] + [failed])


def test_default_methods():
    installed = ["dp", "pipedream", "ip"]
    expected = [m for m in DEFAULT_METHODS["throughput"] if m in installed] or installed
    assert ct.default_methods("throughput", installed) == expected
    assert ct.default_methods("nonsense", installed) == installed


def test_compare_frame_names_units_and_blanks(rows):
    _, compared = rows
    table = ct.compare_frame(compared, "throughput", "ms", str.upper)
    assert list(table.columns) == [
        "method",
        "time per sample (ms)",
        "ratio to best",
        "status",
        "gap",
        "seconds",
        "lower bound (ms)",
        "reason",
    ]
    assert list(table["method"]) == ["DP", "PIPEDREAM", "IP"]
    assert "None" not in table.astype(str).to_numpy().ravel().tolist()
    error = table[table["method"] == "IP"].iloc[0]
    assert error["status"] == Status.ERROR and error["time per sample (ms)"] == "" and error["reason"]
    best = table[table["method"] == "DP"].iloc[0]
    assert float(best["ratio to best"]) == 1.0
    assert ct.compare_frame(compared, "latency", "s", str).columns[1] == "latency (s)"


def test_rows_with_plans_and_row_result(rows):
    problem, compared = rows
    with_plans = ct.rows_with_plans(compared)
    assert [r.method for r in with_plans] == ["dp", "pipedream"]
    result = ct.row_result(with_plans[0])
    assert result.ok and result.method == "dp" and result.reason is None
    assert evaluate(problem, result.placement).max_load == pytest.approx(with_plans[0].objective)


def test_row_result_says_when_scored_on_another_objective():
    problem = load_problem(SAMPLES / "latency" / "layer" / "bert24_inference.json")
    row = run_method(problem, "dp", "latency", 10.0)  # the DP optimises throughput
    assert row.status == Status.FEASIBLE
    assert ct.row_result(row).reason == "dp optimises throughput, this plan is scored on latency"
