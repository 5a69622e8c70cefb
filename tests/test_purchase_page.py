"""AppTest of the Plan a purchase page: every answer recomputed with placement.explore.purchase / solve_dp."""

import pytest

from placement import AcceleratorKind, Devices, Problem, load_problem, solve_dp
from placement.explore.purchase import cheapest_under, fastest_within, price_frontier, purchase_options
from ui.navigation import page_file

from .apptest_helpers import ROOT, goto, start

pytestmark = pytest.mark.usefixtures("clear_streamlit_caches")
PAGE = page_file("Plan a purchase")
DEFAULT = ROOT / "sample_graphs" / "throughput" / "layer" / "bert24_inference.json"


def devices():
    memory = load_problem(DEFAULT).devices.accelerators[0].memory
    return Devices(
        (
            AcceleratorKind("fast", 1, memory, speed=2.0, price_per_hour=3.0),
            AcceleratorKind("slow", 2, memory, price_per_hour=1.0),
        ),
        cpus=1,
    )


def open_page():
    at = start()
    at.session_state["_ui_devices"] = devices()
    goto(at, PAGE)
    return at


def tables(at):
    """The page's result tables: [frontier, every candidate]."""
    return [d.value for d in at.dataframe if "inventory" in d.value.columns]


def catalogue_key(at):
    return f"pu_catalogue_{at.session_state['_pu_catalogue_source'][0]}"


def test_purchase_answers_are_the_exact_optima():
    at = open_page()
    assert any("Solve every candidate" in i.value for i in at.info)
    at.button(key="pu_run").click().run()
    assert not at.exception, at.exception
    problem = Problem(load_problem(DEFAULT).graph, devices())
    options = purchase_options(problem, {"fast": 2, "slow": 2}, {"fast": 3.0, "slow": 1.0})
    # Cheapest under a target: the page's answer is the brute-force cheapest.
    target = sorted(o.time_per_sample for o in options if o.ok)[len(options) // 2]
    at.number_input(key="pu_target").set_value(target).run()
    answer = cheapest_under(options, target)
    success = [s.value for s in at.success]
    assert success and success[0].startswith(f"**{answer.label}**") and f"{answer.time_per_sample:.6g} ms" in success[0]
    # Fastest within a budget.
    at.radio(key="pu_mode").set_value("budget").run()
    at.number_input(key="pu_budget").set_value(5.0).run()
    answer = fastest_within(options, 5.0)
    assert at.success[0].value.startswith(f"**{answer.label}**")
    # What 2 more slow cards are worth: the difference of two exact solves.
    at.selectbox(key="pu_worth_kind").set_value("slow").run()
    at.number_input(key="pu_worth_n").set_value(2).run()
    before = solve_dp(problem).objective
    after = solve_dp(Problem(problem.graph, devices().with_kind("slow", count=4))).objective
    sentence = next(i.value for i in at.info if "more cards of kind slow" in i.value)
    assert f"{after:.6g} ms" in sentence or "change nothing" in sentence
    if after < before * (1 - 1e-12):
        assert f"{before:.6g} to {after:.6g} ms" in sentence
    # The frontier table holds exactly the frontier.
    front = price_frontier(options)
    table = tables(at)[0]
    assert list(table["inventory"]) == [o.label for o in front]


def test_changing_what_may_be_bought_changes_the_candidates():
    at = open_page()
    at.session_state[catalogue_key(at)] = {
        "edited_rows": {0: {"most to buy": 0}, 1: {"most to buy": 1}},
        "added_rows": [],
        "deleted_rows": [],
    }
    at.run()
    at.button(key="pu_run").click().run()
    assert not at.exception, at.exception
    table = tables(at)[1]
    assert len(table) == 2 * 4 - 0  # fast 0..1, slow 0..3 (all-zero kept: there is a CPU core)
    assert any("8 candidate inventories" in c.value for c in at.caption)


def test_cost_per_sample_sits_next_to_time_per_sample_on_placement_and_devices():
    """Devices, Placement and Plan a purchase show one cost: every card held, idle ones included (issue 26)."""
    at = start()
    at.session_state["_ui_devices"] = devices()
    problem = Problem(load_problem(DEFAULT).graph, devices())
    result = solve_dp(problem)
    used = {s.device.kind for s in result.placement.stages if s.nodes}
    held = 1 * 3.0 + 2 * 1.0  # the whole inventory (CPU cores unpriced), used or idle
    expected = held * result.objective / 3_600_000 * 1e6
    shown_costs = []
    for page in (page_file("Placement"), page_file("Devices")):
        goto(at, page)
        shown = {m.label: m.value for m in at.metric}
        assert "Time per sample" in shown and used
        value, currency = shown["Cost per 1M samples"].split()
        assert currency == "USD" and float(value.replace(",", "")) == pytest.approx(expected, rel=1e-3)
        shown_costs.append(shown["Cost per 1M samples"])
    # The currency is one setting of every page.
    at.text_input(key="dev_currency").set_value("EUR").run()
    goto(at, PAGE)
    at.button(key="pu_run").click().run()
    today_line = next(c.value for c in at.caption if c.value.startswith("Today ("))
    assert f"{shown_costs[0].split()[0]} EUR per million samples" in today_line
    # The default target is today's time: today's setup is among the answers, never excluded by rounding.
    assert at.number_input(key="pu_target").value == pytest.approx(float(f"{result.objective:.6g}"))
    assert at.success and f"{result.objective:.6g} ms" in at.success[0].value
