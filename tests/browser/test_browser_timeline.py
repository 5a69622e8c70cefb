"""Real-browser check of the Timeline page: switch schedules, see the Gantt and the memory chart.

The numbers waited for are recomputed with the engine (solve_dp + simulate + memory_profile).
Screenshots go to test-artifacts/timeline_*.png.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from placement import load_problem, solve_dp
from placement.pipeline.memory import memory_profile
from placement.pipeline.schedule import simulate
from placement.viz import format_bytes

from .helpers import go, graph_charts, wait_idle

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = "throughput/layer/bert24_training"


def metric_text(page, label: str) -> str:
    locator = page.locator('[data-testid="stMetric"]', has_text=label).first.locator('[data-testid="stMetricValue"]')
    return locator.inner_text(timeout=5000).strip()


def wait_for_metric(page, label: str, text: str, timeout: float = 30.0) -> None:
    started = time.perf_counter()
    current = None
    while time.perf_counter() - started < timeout:
        try:
            current = metric_text(page, label)
        except Exception:  # noqa: BLE001 - element re-rendering
            current = None
        if current == text:
            return
        time.sleep(0.05)
    raise AssertionError(f"{label}: expected {text!r}, still {current!r}")


def choose(page, label: str, option: str) -> None:
    page.locator('[data-testid="stSelectbox"]', has_text=label).first.click()
    page.get_by_role("option", name=option).click()
    wait_idle(page)


def test_switch_schedule_and_see_the_memory_chart(page, app_url, artifacts_dir):
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
    # Training graph: 1F1B with 8 microbatches by default.
    one_f_one_b = simulate(problem, placement, 8, "1f1b")
    wait_for_metric(page, "Makespan", f"{one_f_one_b.makespan:.6g} ms", timeout=60)
    assert metric_text(page, "Period (steady state)") == f"{one_f_one_b.period:.6g} ms"
    page.get_by_role("heading", name="Memory over time").wait_for()
    graph_charts(page).nth(1).wait_for(timeout=30_000)  # at least two charts
    page.screenshot(path=artifacts_dir / "timeline_1f1b.png", full_page=True)

    # Switch to GPipe: new makespan, the memory chart is redrawn with GPipe's higher peak.
    choose(page, "Schedule", "GPipe (all forwards, then all backwards)")
    gpipe = simulate(problem, placement, 8, "gpipe")
    wait_for_metric(page, "Makespan", f"{gpipe.makespan:.6g} ms")
    profile = memory_profile(problem, gpipe, 2.0)
    top = max(profile.devices, key=lambda d: d.peak)
    message = page.locator('[data-testid="stAlert"]', has_text="Highest peak").first
    message.wait_for()
    assert f"{format_bytes(top.peak)} on {top.device}" in message.inner_text()
    chart = graph_charts(page).nth(1)
    chart.scroll_into_view_if_needed()
    chart.locator(".main-svg").first.wait_for()
    assert chart.locator("text", has_text="memory over time (gpipe").count() >= 1
    assert not page.locator('[data-testid="stException"]').count()
    page.screenshot(path=artifacts_dir / "timeline_gpipe.png", full_page=True)
