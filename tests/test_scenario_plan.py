"""A picked plan travels in links and cards (issue 26 item 7): the package's encoding, and the app's round trip.

The receiver's numbers come from the split itself (the evaluator), never from what the link claims.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from placement import InvalidScenarioError, Problem, evaluate, load_problem, solve
from placement.scenario import Scenario, parse_scenario, scenario_from_query, scenario_to_json, scenario_to_query
from placement.scenario_plan import PickedPlan, plan_from_result, plan_result
from ui.navigation import PAGES

from .apptest_helpers import goto, metrics, start

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = "throughput/layer/bert24_inference"


def page(title: str) -> str:
    """The page file titled ``title`` (pages are renumbered: never a hard-coded path)."""
    return next(path for path, name, *_ in PAGES if name == title)


def problem() -> Problem:
    return load_problem(ROOT / "sample_graphs" / f"{SAMPLE}.json")


def test_a_plan_round_trips_through_the_link_and_the_card():
    prob = problem()
    fewer = prob.devices.with_kind("accelerator", count=3)
    small = Problem(prob.graph, fewer)
    result = solve(small, "dp")
    plan = plan_from_result(result, "Tradeoffs (devices): 3 x accelerator", fewer)
    scenario = Scenario(f"sample:{SAMPLE}", prob.devices, plan=plan)
    back = scenario_from_query(scenario_to_query(scenario))
    assert back.plan == plan
    assert parse_scenario(scenario_to_json(scenario)).plan == plan
    shown = plan_result(back.plan, Problem(prob.graph, back.plan.devices))
    assert shown.placement == result.placement
    assert shown.objective == evaluate(small, result.placement).max_load  # recomputed, the evaluator's
    assert shown.status == "optimal" and shown.bound == pytest.approx(result.bound)


def test_the_value_is_recomputed_not_taken_from_the_link():
    prob = problem()
    plan = plan_from_result(solve(prob, "pipedream"), "a chain split", None)
    data = json.loads(scenario_to_query(Scenario(f"sample:{SAMPLE}", prob.devices, plan=plan))["plan"])
    data["bound"] = 1e9  # a claimed bound above the value is cut to the value
    back = scenario_from_query(
        {
            "graph": f"sample:{SAMPLE}",
            "devices": scenario_to_query(Scenario(f"sample:{SAMPLE}", prob.devices))["devices"],
            "plan": json.dumps(data),
        }
    )
    shown = plan_result(back.plan, prob)
    assert shown.objective == evaluate(prob, shown.placement).max_load and shown.bound == shown.objective


@pytest.mark.parametrize(
    "change, needle",
    [
        (lambda d: d.pop("stages"), "missing field 'stages'"),
        (lambda d: d.update(stages=[]), "field 'stages' must be a list"),
        (lambda d: d.update(stages=[["accelerator", -1, [0]]]), "device index"),
        (lambda d: d.update(stages=[["accelerator", 0, ["x"]]]), "node ids"),
        (lambda d: d.update(status="proven"), "field 'status'"),
        (lambda d: d.update(bound="inf"), "field 'bound'"),
        (lambda d: d.update(extra=1), "unknown field 'extra'"),
        (lambda d: d.update(recompute=[99]), "field 'recompute'"),
    ],
)
def test_bad_plans_give_one_line_errors(change, needle):
    prob = problem()
    plan = plan_from_result(solve(prob, "pipedream"), "a chain split", None)
    card = json.loads(scenario_to_json(Scenario(f"sample:{SAMPLE}", prob.devices, plan=plan)))
    change(card["plan"])
    with pytest.raises(InvalidScenarioError, match=needle) as caught:
        parse_scenario(json.dumps(card), "card.json")
    assert "\n" not in str(caught.value) and str(caught.value).startswith("card.json: plan")


def test_a_plan_that_does_not_fit_the_graph_is_refused():
    prob = problem()
    plan = plan_from_result(solve(prob, "pipedream"), "a chain split", None)
    kind, index, nodes, calls = plan.stages[0]
    broken = PickedPlan(plan.label, plan.method, ((kind, index, nodes[1:], calls),) + plan.stages[1:])
    with pytest.raises(InvalidScenarioError, match="link: the picked plan does not fit"):
        plan_result(broken, prob, "link")


# ----------------------------------------------------------------------------- the app (AppTest)
@pytest.mark.usefixtures("clear_streamlit_caches")
def test_the_link_and_the_card_carry_the_picked_plan():
    """A plan picked on Compare (one accelerator, not the live optimum) opens on Placement from the link and the card."""
    at = start(page("Compare"))
    at.multiselect(key="cmp_methods").set_value(["dp", "one-accelerator"]).run()
    at.button(key="cmp_run").click().run()
    cells = at.dataframe[0].value.astype(str).to_numpy().ravel().tolist()
    assert not {"None", "nan", "NaN"} & set(cells), cells  # empty cells stay empty (one-accelerator has no bound)
    at.selectbox(key="cmp_pick").set_value("one-accelerator").run()
    at.button(key="cmp_show").click().run()
    assert not at.exception
    goto(at, page("Placement"))
    sent = metrics(at)
    query = dict(at.query_params)
    assert json.loads(query["plan"])["method"] == "one-accelerator"
    prob = problem()
    chain = evaluate(prob, solve(prob, "one-accelerator").placement).max_load
    assert chain > solve(prob, "dp").objective  # the picked plan differs from the live solve
    assert sent["Time per sample"] == f"{chain:.6g} ms"

    other = _fresh(query)
    goto(other, page("Placement"))
    assert metrics(other)["Time per sample"] == sent["Time per sample"]
    assert any("picked plan" in i.value for i in other.info)

    card = scenario_to_json(scenario_from_query(query))
    again = _fresh(None)
    goto(again, page("Graph"))
    again.file_uploader(key="scenario_upload").set_value(("card.json", card.encode(), "application/json")).run()
    assert any("Scenario card card.json applied" in s.value for s in again.success)
    goto(again, page("Placement"))
    assert metrics(again)["Time per sample"] == sent["Time per sample"]


def _fresh(query: dict[str, str] | None):
    """A new session (a new browser tab) opened on ``query``."""
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=90)
    for key, value in (query or {}).items():
        at.query_params[key] = value
    at.run()
    assert not at.exception, at.exception
    return at
