"""A fresh app's scenario (issue 39 items 5 and 6): Llama 3 8B training on 8 H100 + 4 A100 + 32 CPU cores, priced.

The other app tests open the paper's BERT-24 (``tests/conftest.py`` sets :data:`ui.samples.DEFAULT_SAMPLE_ENV`);
these remove the variable and check what a new user sees: a GPU kind, a cost in a currency, tokens/s, and the
model that produced the times; then the Devices page re-prices the graph for the kinds it picks.
"""

from __future__ import annotations

import pytest

from placement import Problem, evaluate, load_problem, solve_dp
from placement.explore.cost import format_money, plan_cost
from placement.explore.meeting import format_rate
from placement.modelling.pricing import cost_source, devices_for, price_graph
from placement.pipeline.schedule import simulate
from ui.navigation import page_file
from ui.samples import DEFAULT_SAMPLE, DEFAULT_SAMPLE_ENV, PAPER_SAMPLE, default_sample

from .apptest_helpers import goto, metrics, start

pytestmark = pytest.mark.usefixtures("clear_streamlit_caches")


@pytest.fixture
def shipped_default(monkeypatch):
    """The app as shipped: no default chosen by the environment."""
    monkeypatch.delenv(DEFAULT_SAMPLE_ENV, raising=False)


def test_the_default_sample_is_a_priced_transformer_on_catalogue_gpus(shipped_default, monkeypatch):
    assert default_sample() == DEFAULT_SAMPLE
    problem = load_problem(DEFAULT_SAMPLE)
    assert [(k.name, k.count) for k in problem.devices.accelerators] == [("H100", 8), ("A100", 4)]
    assert problem.devices.cpus == 32 and all(k.price_per_hour > 0 for k in problem.devices.accelerators)
    assert problem.graph.is_training and problem.graph.extra["tokensPerSample"] == 4096
    assert cost_source(problem.graph).startswith("perf model (kernel physics) on H100;")
    assert "H100: extrapolated" in cost_source(problem.graph)
    # The file is what the script writes: priced on the same kinds again, nothing changes.
    repriced = price_graph(problem.graph, ["H100", "A100"])
    assert [n.accelerator_latency for n in repriced.nodes] == pytest.approx(
        [n.accelerator_latency for n in problem.graph.nodes], rel=1e-12
    )
    monkeypatch.setenv(DEFAULT_SAMPLE_ENV, "throughput/layer/bert24_inference")
    assert default_sample() == PAPER_SAMPLE
    monkeypatch.setenv(DEFAULT_SAMPLE_ENV, "no/such/sample")
    assert default_sample() == DEFAULT_SAMPLE


def test_a_fresh_meeting_summary_shows_a_gpu_kind_a_cost_and_tokens_per_second(shipped_default):
    at = start(page_file("Meeting summary"), timeout=300)
    assert not at.error, [e.value for e in at.error]
    # the graph scenario's headline (the transformer scenario's section comes first on the page)
    headline = next(m.value for m in at.markdown if "CPU cores" in m.value)
    assert "8 x H100" in headline and "4 x A100" in headline and "32 CPU cores" in headline
    problem = load_problem(DEFAULT_SAMPLE)
    result = solve_dp(problem)
    shown = metrics(at)
    assert shown["Time per sample"] == f"{evaluate(problem, result.placement).max_load:.6g} ms"
    devices = problem.devices
    price = sum(k.count * k.price_per_hour for k in devices.accelerators) + devices.cpus * devices.cpu_price_per_hour
    assert price > 0 and shown["Price per hour"] == format_money(price, "USD")
    assert shown["Cost per run"].endswith(" USD") and shown["Cost per 1M samples"].endswith(" USD")
    # Tokens per sample x samples per second of a batch of 8 microbatches of 1F1B, fill and drain included.
    run = simulate(problem, result.placement, 8, "1f1b", recompute=())
    assert shown["Tokens/s"] == format_rate(4096 * 8 / run.makespan * 1000)
    assert any("perf model" in c.value and "on H100" in c.value for c in at.caption)


def test_the_devices_page_reprices_the_graph_for_the_kinds_it_picks(shipped_default):
    at = start(page_file("Devices"), timeout=300)
    file_problem = load_problem(DEFAULT_SAMPLE)
    assert metrics(at)["Time per sample"] == f"{solve_dp(file_problem).objective:.6g} ms"
    at.selectbox(key="dev_cat_kind").set_value("A100")
    at.number_input(key="dev_cat_count").set_value(12)
    at.button(key="dev_cat_only").click().run()
    assert not at.exception and not at.error
    devices = devices_for({"A100": 12}, cpus=32)
    expected = solve_dp(Problem(price_graph(file_problem.graph, ["A100"]), devices))
    assert metrics(at)["Time per sample"] == f"{expected.objective:.6g} ms"
    assert "12 x A100" in at.markdown[0].value
    assert any("perf model (kernel physics) on A100; error: calibrated" in c.value for c in at.caption)
    # The speed factor is a what-if on top of the A100's priced times.
    at.slider(key="dev_speed").set_value(2.0).run()
    faster = solve_dp(Problem(price_graph(file_problem.graph, ["A100"]), devices.with_kind("A100", speed=2.0)))
    assert metrics(at)["Time per sample"] == f"{faster.objective:.6g} ms"


def test_the_cpu_price_is_editable_and_counts_in_the_cost(shipped_default):
    at = start(page_file("Devices"), timeout=300)
    problem = load_problem(DEFAULT_SAMPLE)
    assert "32 CPU cores (0.05 USD/h each)" in at.markdown[0].value
    [field] = [n for n in at.number_input if n.key.startswith("dev_cpu_price_")]
    assert field.value == problem.devices.cpu_price_per_hour
    field.set_value(0.25).run()
    assert not at.exception and not at.error
    devices = problem.devices.with_changes(cpu_price_per_hour=0.25)
    result = solve_dp(Problem(problem.graph, devices))
    cost = plan_cost(devices, result.placement, result.objective)
    assert metrics(at)["Cost per 1M samples"] == format_money(cost.cost_per_million, "USD")
    assert "32 CPU cores (0.25 USD/h each)" in at.markdown[0].value


def test_the_papers_graphs_say_their_times_are_profiled():
    at = start(page_file("Devices"))
    assert any("profiled" in c.value for c in at.caption)
    goto(at, page_file("Placement"))
    assert any("profiled" in c.value for c in at.caption)


def test_costs_edited_by_hand_stay_while_the_inventory_keeps_its_kinds():
    from placement.modelling.cost_table import apply_cost_rows
    from ui import worker

    graph = load_problem(DEFAULT_SAMPLE).graph
    node = graph.nodes[5]
    edited = apply_cost_rows(graph, [{"id": node.id, "accelerator ms": 1.0}])
    assert worker.priced_graph(edited, ("H100", "A100")).nodes[5].accelerator_latency == 1.0
    assert worker.priced_graph(edited, ("H100",)).nodes[5].accelerator_latency == 1.0  # priced for it already
    repriced = worker.priced_graph(edited, ("A100",))  # other kinds: the perf model prices every node again
    assert repriced.nodes[5].accelerator_latency == price_graph(graph, ["A100"]).nodes[5].accelerator_latency != 1.0
    assert "edited by hand" not in cost_source(repriced)
