"""Real-browser check of the Tradeoffs page: the curve is drawn, clicking a point picks its plan.

Opens Tradeoffs on the default graph (BERT-24 inference, layer granularity), clicks the
4-accelerator point of the time-per-sample curve with the mouse, checks the picked plan's
time per sample against the engine, follows it to the Placement page, and saves
screenshots under test-artifacts/.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from placement import Problem, load_problem, solve_dp

from .helpers import graph_charts, wait_idle

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
DEFAULT = ROOT / "sample_graphs" / "throughput" / "layer" / "bert24_inference.json"


def test_tradeoffs_curve_click_picks_the_plan(page, app_url, artifacts_dir):
    base = load_problem(DEFAULT)
    count = 4
    expected = solve_dp(Problem(base.graph, base.devices.with_kind("accelerator", count=count))).objective

    page.goto(app_url)
    page.get_by_role("heading", name="Device placement explorer").wait_for()
    wait_idle(page)
    page.locator('[data-testid="stSidebarNav"]').get_by_role("link", name="Tradeoffs", exact=True).click()
    page.wait_for_url(re.compile(r"/Tradeoffs(\?.*)?$"))
    page.get_by_role("heading", name="Tradeoffs").first.wait_for()
    wait_idle(page)

    chart = graph_charts(page).first
    chart.wait_for()
    points = chart.locator(".scatterlayer .trace").first.locator("path.point")
    points.nth(count - 1).wait_for()
    assert points.count() == 16  # 1..16 accelerators, all feasible
    page.screenshot(path=artifacts_dir / "tradeoffs_01_curve.png", full_page=True)

    box = points.nth(count - 1).bounding_box()
    x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
    page.mouse.move(x, y)
    time.sleep(0.3)
    page.mouse.click(x, y)
    selected = page.locator('[data-testid="stAlertContentSuccess"]', has_text="Selected")
    selected.wait_for(timeout=30_000)
    wait_idle(page)
    text = selected.inner_text()
    assert f"accelerators = {count}," in text, text
    shown = float(re.search(r"time per sample ([0-9]+(?:\.[0-9]+)?(?:e[+-]?[0-9]+)?)", text).group(1))
    assert shown == pytest.approx(expected, rel=1e-5)
    page.screenshot(path=artifacts_dir / "tradeoffs_02_clicked.png", full_page=True)

    page.get_by_role("tab", name="Pareto frontier").click()
    pareto = page.locator('[data-testid="stPlotlyChart"]', has_text="Pareto frontier").first
    pareto.wait_for()
    assert pareto.locator(".scatterlayer .trace").nth(1).locator("path.point").count() >= 3
    page.screenshot(path=artifacts_dir / "tradeoffs_03_pareto.png", full_page=True)

    page.get_by_role("button", name="Show on Placement page").click()
    page.wait_for_url(re.compile(r"/Placement(\?.*)?$"))
    page.get_by_text("Showing a picked plan").first.wait_for()
    wait_idle(page)
    assert f"accelerators = {count}," in page.get_by_text("Showing a picked plan").first.inner_text()
    page.screenshot(path=artifacts_dir / "tradeoffs_04_placement.png", full_page=True)
