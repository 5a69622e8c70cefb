"""Real-browser checks: the schedule comparison on the Timeline page and the export buttons on the Placement page.

Numbers waited for are recomputed with the engine. Screenshots: test-artifacts/schedules_*.png,
test-artifacts/export_*.png.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from placement import load_problem, solve_dp
from placement.pipeline.export import export_plan
from placement.pipeline.schedule import simulate

from .helpers import go, graph_charts, metric, wait_for_text, wait_idle

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = "throughput/layer/bert24_training"


def choose(page, label: str, option: str) -> None:
    page.locator('[data-testid="stSelectbox"]', has_text=label).first.click()
    page.get_by_role("option", name=option).click()
    wait_idle(page)


def test_zbh1_and_the_schedules_side_by_side(page, app_url, artifacts_dir):
    problem = load_problem(ROOT / "sample_graphs" / f"{SAMPLE}.json")
    placement = solve_dp(problem).placement
    page.goto(app_url)
    page.get_by_role("heading", name="Device placement explorer").wait_for()
    wait_idle(page)
    go(page, "Graph")
    page.locator('[data-testid="stSelectbox"]').first.click()
    page.get_by_role("option").filter(has_text=f"— {SAMPLE}").click()
    wait_idle(page)
    go(page, "Timeline")
    choose(page, "Schedule", "zero bubble ZB-H1 (split backward)")
    zb = simulate(problem, placement, 8, "zbh1")
    wait_for_text(metric(page, "Makespan"), f"{zb.makespan:.6g} ms", timeout=60)
    assert metric(page, "Bubble").inner_text().strip() == f"{zb.bubble_fraction:.1%}"
    gantt = graph_charts(page).first
    gantt.locator(".main-svg").first.wait_for()
    assert gantt.locator("text", has_text="weight gradient").count() >= 1  # the legend of the W units
    page.screenshot(path=artifacts_dir / "schedules_zbh1.png", full_page=True)

    heading = page.get_by_role("heading", name="Schedules side by side")
    heading.scroll_into_view_if_needed()
    one = simulate(problem, placement, 8, "1f1b")
    table = page.locator('[data-testid="stDataFrame"]').nth(2)
    table.wait_for()
    comparison = page.locator('[data-testid="stPlotlyChart"]').filter(has_text="schedules side by side").first
    comparison.locator(".main-svg").first.wait_for()
    for value in (f"{zb.bubble_fraction * 100:.1f}%", f"{one.bubble_fraction * 100:.1f}%"):
        assert comparison.locator("text", has_text=value).count() >= 1, value
    page.get_by_text("Show every schedule's Gantt chart").click()
    wait_idle(page)
    page.locator('[data-testid="stPlotlyChart"]').filter(has_text="GPipe: makespan").first.wait_for()
    assert not page.locator('[data-testid="stException"]').count()
    heading.scroll_into_view_if_needed()
    page.screenshot(path=artifacts_dir / "schedules_side_by_side.png", full_page=True)


def test_export_buttons_download_the_configs(page, app_url, artifacts_dir):
    problem = load_problem(ROOT / "sample_graphs" / "throughput" / "layer" / "bert24_inference.json")
    placement = solve_dp(problem).placement
    page.goto(app_url)
    page.get_by_role("heading", name="Device placement explorer").wait_for()
    wait_idle(page)
    go(page, "Placement")
    heading = page.get_by_role("heading", name="Export to a training framework")
    heading.scroll_into_view_if_needed()
    page.get_by_text("Cannot export: module node").first.wait_for()
    with page.expect_download() as info:
        page.get_by_role("button", name="torch / torchtitan config (JSON)").click()
    download = json.loads(Path(info.value.path()).read_text())
    expected = export_plan(problem, placement, "torch").as_dict()
    assert download["target"] == "torch" and download["split_points"] == expected["split_points"]
    with page.expect_download() as info:
        page.get_by_role("button", name="DeepSpeed config (JSON)").click()
    assert json.loads(Path(info.value.path()).read_text())["parts"] == list(
        export_plan(problem, placement, "deepspeed").as_dict()["parts"]
    )
    assert not page.locator('[data-testid="stException"]').count()
    heading.scroll_into_view_if_needed()
    page.screenshot(path=artifacts_dir / "export_buttons.png", full_page=True)
