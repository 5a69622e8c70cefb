"""Real-browser test of the linked plan views (issue 15 item 2): clicking a point of the curve
updates the partitioned graph, the load bars, the Gantt chart and memory over time together;
clicking a bar highlights that device.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from placement import Problem, evaluate, load_problem, solve_dp

from .helpers import metric, wait_for_text, wait_idle

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
DEFAULT = ROOT / "sample_graphs" / "throughput" / "layer" / "bert24_inference.json"


def svg_texts(chart, selector: str) -> list[str]:
    return [text.strip() for text in chart.locator(selector).evaluate_all("els => els.map(e => e.textContent)")]


def legend_entries(chart) -> set[str]:
    return set(svg_texts(chart, "g.legend text.legendtext"))


def test_a_clicked_point_updates_all_linked_views(page, app_url, artifacts_dir):
    base = load_problem(DEFAULT)
    page.goto(f"{app_url}/Plan_view")
    page.get_by_role("heading", name="Plan view").first.wait_for()
    wait_idle(page)
    charts = page.locator('[data-testid="stPlotlyChart"]')
    charts.nth(4).wait_for(timeout=60_000)  # curve, graph, load, memory, Gantt
    page.screenshot(path=artifacts_dir / "plan_view_01_before.png", full_page=True)

    # Click the curve's point for 3 accelerators (the third point of the first trace).
    charts.first.locator("g.trace.scatter").first.locator("path.point").nth(2).click(force=True)
    wait_idle(page, settle=0.8)
    three = Problem(base.graph, base.devices.with_kind("accelerator", count=3))
    plan = solve_dp(three).placement
    wait_for_text(metric(page, "Time per sample"), f"{evaluate(three, plan).max_load:.6g} ms")  # format_time
    used = {str(stage.device) for stage in plan.stages}
    graph, load, memory, gantt = (charts.nth(i) for i in (1, 2, 3, 4))
    assert used <= legend_entries(graph) and not (legend_entries(graph) - used - {"edges"})
    assert {t.split(" (")[0] for t in svg_texts(gantt, "g.ytick text")} == used
    assert used <= legend_entries(memory)
    page.get_by_text("3 x accelerator from the Plan view curve").first.wait_for(timeout=30_000)
    page.screenshot(path=artifacts_dir / "plan_view_02_clicked_point.png", full_page=True)

    # Click the second device's bar: the device is highlighted everywhere.
    device = str(plan.stages[1].device)
    load.locator("g.trace.bars").first.locator("g.point path").nth(1).click(force=True)
    wait_idle(page, settle=0.8)
    page.locator('[data-testid="stMetric"]', has_text=f"Load of {device}").wait_for(timeout=30_000)
    faded = graph.locator("g.trace.scatter").evaluate_all("els => els.map(e => e.style.opacity)")
    assert "0.2" in faded  # the other devices' nodes are faded
    assert not page.locator('[data-testid="stException"]').count()
    page.screenshot(path=artifacts_dir / "plan_view_03_clicked_device.png", full_page=True)
