"""Real-browser walk through the app (Playwright, headless Chromium).

Picks a sample graph, changes the accelerator count, checks that the time per sample shown
becomes the engine's value, and opens Placement, Timeline, Tradeoffs and Compare; a
screenshot of each step goes to test-artifacts/.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from placement import Problem, load_problem

from .helpers import engine_time, go, metric, upload_file, wait_for_text, wait_idle

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = "throughput/layer/resnet50_inference"
PAGES = ROOT / "app_pages"


def test_pick_graph_change_devices_and_visit_every_page(page, app_url, artifacts_dir):
    problem = load_problem(ROOT / "sample_graphs" / f"{SAMPLE}.json")
    page.goto(app_url)
    page.get_by_role("heading", name="Device placement explorer").wait_for()
    wait_idle(page)
    page.screenshot(path=artifacts_dir / "01_home.png", full_page=True)

    # Graph page: choose the sample.
    go(page, "Graph")
    page.locator('[data-testid="stSelectbox"]').first.click()
    page.get_by_role("option").filter(has_text=f"— {SAMPLE}").click()
    wait_idle(page)
    wait_for_text(metric(page, "Nodes"), str(len(problem.graph.nodes)))
    assert metric(page, "Edges").inner_text().strip() == str(len(problem.graph.edges))
    page.locator('[data-testid="stPlotlyChart"]').first.wait_for()
    page.screenshot(path=artifacts_dir / "02_graph.png", full_page=True)

    # Devices page: the time per sample is the engine's, before and after moving the slider.
    go(page, "Devices")
    wait_for_text(metric(page, "Time per sample"), engine_time(problem))
    slider = page.locator('[data-testid="stSlider"]', has_text="Number of accelerators").locator('input[type="range"]')
    count = problem.devices.accelerator_count
    timings = []
    for target in (count - 1, count - 2, count - 3):
        slider.focus()
        started = time.perf_counter()
        slider.press("ArrowLeft")
        expected = engine_time(Problem(problem.graph, problem.devices.with_kind("accelerator", count=target)))
        wait_for_text(metric(page, "Time per sample"), expected)
        timings.append(time.perf_counter() - started)
        wait_idle(page, settle=0.1)
        assert slider.input_value() == str(target)
    print(f"\nbrowser: slider change -> time per sample shown, seconds: {[round(t, 3) for t in timings]}")
    assert max(timings) < 3.0  # generous in a shared CI machine; bench_live.py measures the server side
    target = count - 3
    expected = engine_time(Problem(problem.graph, problem.devices.with_kind("accelerator", count=target)))
    page.screenshot(path=artifacts_dir / "03_devices.png", full_page=True)

    # Placement page: same number, charts drawn, downloads offered.
    go(page, "Placement")
    wait_for_text(metric(page, "Time per sample"), expected)
    page.locator('[data-testid="stPlotlyChart"]').nth(2).wait_for(timeout=30_000)  # at least three charts
    page.get_by_role("button", name="Placement (paper JSON)").wait_for(state="visible", timeout=30_000)
    page.screenshot(path=artifacts_dir / "04_placement.png", full_page=True)

    # Timeline and Tradeoffs (pages of other helpers): they open and draw their charts.
    for number, name in (("05", "Timeline"), ("06", "Tradeoffs")):
        if not any(PAGES.glob(f"*_{name}.py")):
            print(f"{name} page missing: skipped")
            continue
        go(page, name)
        page.locator('[data-testid="stPlotlyChart"]').first.wait_for(timeout=60_000)
        wait_idle(page)
        assert not page.locator('[data-testid="stException"]').count()
        page.screenshot(path=artifacts_dir / f"{number}_{name.lower()}.png", full_page=True)

    # Compare page.
    go(page, "Compare")
    assert not page.locator('[data-testid="stException"]').count()
    button = page.get_by_role("button", name="Run comparison")
    if button.count():
        button.click()
        wait_idle(page)
        page.locator('[data-testid="stPlotlyChart"]').first.wait_for(timeout=120_000)
    page.screenshot(path=artifacts_dir / "07_compare.png", full_page=True)


def test_bad_upload_shows_an_error_and_keeps_the_graph(page, app_url, artifacts_dir, tmp_path):
    page.goto(f"{app_url}/Graph")
    page.get_by_role("heading", name="Graph").first.wait_for()
    wait_idle(page)
    before = metric(page, "Nodes").inner_text()
    bad = tmp_path / "broken.json"
    bad.write_text('{"nodes": [1, 2], "edges": []')
    graph_uploader = page.locator('[data-testid="stFileUploader"]', has_text="upload a graph")
    upload_file(page, graph_uploader.locator('input[type="file"]'), bad)  # not the scenario card's uploader
    error = page.locator('[data-testid="stAlertContentError"]').first
    error.wait_for(timeout=30_000)
    assert "broken.json: not valid JSON" in error.inner_text()
    wait_idle(page)
    assert metric(page, "Nodes").inner_text() == before
    page.screenshot(path=artifacts_dir / "08_bad_upload.png", full_page=True)
