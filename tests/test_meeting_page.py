"""AppTest of the Meeting summary page: one screen, the same numbers as Devices, Placement, Timeline and the CLI."""

from __future__ import annotations

import pytest

from placement import AcceleratorKind, Devices, Problem, load_problem, solve_dp
from placement.explore.cost import plan_cost
from placement.explore.purchase import worth_of_more
from placement.pipeline.schedule import simulate

from .apptest_helpers import ROOT, goto, metrics, start

pytestmark = pytest.mark.usefixtures("clear_streamlit_caches")
PAGE = "app_pages/9_Meeting.py"
GRAPH = ROOT / "sample_graphs" / "throughput" / "layer" / "bert24_training.json"


def inventory() -> Devices:
    memory = load_problem(GRAPH).devices.accelerators[0].memory
    return Devices(
        (
            AcceleratorKind("A100", 3, memory, speed=2.0, price_per_hour=3.0),
            AcceleratorKind("V100", 2, memory, price_per_hour=1.0),
        ),
        cpus=1,
    )


def test_meeting_numbers_equal_the_other_pages_and_the_engine():
    at = start("app_pages/1_Graph.py")
    label = next(o for o in at.selectbox(key="graph_sample").options if "throughput/layer/bert24_training" in o)
    at.selectbox(key="graph_sample").set_value(label).run()
    at.session_state["_ui_devices"] = inventory()
    problem = Problem(load_problem(GRAPH).graph, inventory())
    result = solve_dp(problem)
    batch = simulate(problem, result.placement, 8, "1f1b")
    cost = plan_cost(problem.devices, result.placement, result.objective)
    shown = metrics(goto(at, PAGE))
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert shown["Time per sample"] == f"{result.objective:.6g} ms"
    assert shown["Time per batch"] == f"{batch.makespan:.6g} ms"
    assert shown["Cost per 1M samples"] == f"{cost.cost_per_million:,.4g} USD"
    assert shown["Cost per hour"] == f"{cost.price_per_hour:,.4g} USD"
    assert shown["Samples/s"] == f"{8000 / batch.makespan:,.4g}"
    at.number_input(key="mt_tokens").set_value(2048).run()
    assert metrics(at)["Tokens/s"] == f"{8000 / batch.makespan * 2048:,.4g}"
    for page in ("app_pages/2_Devices.py", "app_pages/3_Placement.py"):
        other = metrics(goto(at, page))
        for label in ("Time per sample", "Time per batch", "Cost per 1M samples"):
            assert other[label] == shown[label], (page, label)
    # What more cards are worth, side by side: two exact solves per kind.
    goto(at, PAGE)
    at.number_input(key="mt_more_A100").set_value(2).run()
    at.number_input(key="mt_more_V100").set_value(4).run()
    at.button(key="mt_worth").click().run()
    assert not at.exception
    sentences = [c.value for c in at.caption]
    for kind, n in (("A100", 2), ("V100", 4)):
        worth = worth_of_more(problem, kind, n)
        assert worth.sentence in sentences
