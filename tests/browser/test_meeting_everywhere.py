"""The meeting scenario of issue 26 in a real browser: the same time, memory peak and cost on every page, and the CLI's.

GPT 24x2048 training (model builder) on 8 A100 + 4 V100 (3 and 1.5 per hour), uploaded as a graph
file; the training memory model picked on the Devices page with a click. Then Devices, Placement,
Meeting summary, Timeline, Plan a purchase and Tradeoffs are walked through the sidebar, and each
number they show for today's setup must be the same text; the CLI (``placement solve --method
memory-aware --json``, in process) must give the same time per sample and peak. Pages are found
through ``ui.navigation.PAGES`` by title.
"""

from __future__ import annotations

import json
import re

import pytest

from placement import MemoryModel, evaluate, solve
from placement.io import problem_to_json
from placement.viz import format_bytes
from ui.navigation import PAGES

from ..cli_helper import cli
from ..test_meeting_summary_page import scenario
from .helpers import metric, rerun_after, upload_file, wait_for_text, wait_idle

pytestmark = pytest.mark.browser

PRICE_PER_HOUR = 8 * 3.0 + 4 * 1.5  # every card held, idle ones included


def visit(page, title: str) -> None:
    """Open the page titled ``title`` from the sidebar (its URL path from ui.navigation.PAGES)."""
    path = next(url for _, name, _, url, _ in PAGES if name == title)
    page.locator(f'[data-testid="stSidebarNav"] a[href$="/{path}"]').click()
    page.wait_for_url(re.compile(rf"/{path}(\?.*)?$"))
    wait_idle(page, settle=0.5)


def value(page, label: str) -> str:
    return metric(page, label).inner_text().strip()


def test_every_page_and_the_cli_show_the_same_time_peak_and_cost(page, app_url, artifacts_dir, tmp_path):
    problem = scenario()
    path = tmp_path / "gpt24_training.json"
    path.write_text(problem_to_json(problem))
    model = MemoryModel(training=True)
    method, options = model.method_for("dp")
    result = solve(problem, method, **options)
    time_ms = evaluate(problem, result.placement).max_load
    time_text = f"{time_ms:.6g} ms"
    peak_text = format_bytes(max(b.peak for b in model.breakdown(problem, result.placement)))
    cost_number = f"{PRICE_PER_HOUR * time_ms / 3.6e6 * 1e6:,.4g}"

    # The CLI, in process: same time per sample and peak.
    run = cli("solve", path, "--method", "memory-aware", "--json")
    assert run.returncode == 0, run.stderr
    out = json.loads(run.stdout)
    assert f"{out['max_load']:.6g} ms" == time_text
    assert format_bytes(max(d["bytes"] for d in out["peak_memory"])) == peak_text

    page.set_viewport_size({"width": 1400, "height": 1600})
    page.goto(f"{app_url}/Graph")
    page.get_by_role("heading", name="Graph").first.wait_for()
    wait_idle(page)
    uploader = page.locator('[data-testid="stFileUploader"]', has_text="upload a graph")
    upload_file(page, uploader.locator('input[type="file"]'), path)
    visit(page, "Devices")
    with rerun_after(page):
        page.get_by_text(re.compile("^Training: weights")).click()
    wait_for_text(metric(page, "Time per sample"), time_text, timeout=60)
    devices = {label: value(page, label) for label in ("Time per sample", "Time per batch", "Cost per 1M samples")}
    assert devices["Cost per 1M samples"].startswith(cost_number), devices

    visit(page, "Placement")
    wait_for_text(metric(page, "Time per sample"), time_text, timeout=60)
    for label in devices:
        assert value(page, label) == devices[label], ("Placement", label)
    assert value(page, "Peak memory") == peak_text

    visit(page, "Meeting summary")
    wait_for_text(metric(page, "Time per sample"), time_text, timeout=60)
    for label in devices:
        assert value(page, label) == devices[label], ("Meeting summary", label)
    assert value(page, "Peak memory") == peak_text
    assert value(page, "Price per hour").startswith(f"{PRICE_PER_HOUR:,.4g}")

    visit(page, "Timeline")
    wait_for_text(metric(page, "Period (steady state)"), time_text, timeout=60)
    assert value(page, "Makespan") == devices["Time per batch"]
    assert page.get_by_text(f"Highest peak: {peak_text}").count() == 1

    visit(page, "Plan a purchase")
    with rerun_after(page, timeout=60):
        page.get_by_role("button", name="Solve every candidate").click()
    today = page.get_by_text(re.compile(r"^Today \(")).first
    today.wait_for(timeout=60_000)
    text = today.inner_text()
    assert f"{time_text} per sample" in text, text
    assert f"{devices['Cost per 1M samples']} per million samples" in text, text

    visit(page, "Tradeoffs")
    # The sweeps' charts: a point of the device-count sweep is today's setup (8 A100, the V100s kept).
    page.locator(".js-plotly-plot").first.wait_for(timeout=60_000)
    wait_idle(page, settle=1.0)
    page.screenshot(path=artifacts_dir / "meeting_everywhere_tradeoffs.png")
    ys = page.evaluate(_PLOTTED_Y)
    assert any(abs(y - time_ms) <= 1e-9 * time_ms for y in ys), sorted(ys)[:20]


# Every y value of every trace of every Plotly chart on the page (numbers only).
_PLOTTED_Y = """() => Array.from(document.querySelectorAll('.js-plotly-plot'))
  .flatMap((el) => (el.data || []).flatMap((trace) => Array.from(trace.y || [])))
  .filter((y) => typeof y === 'number')"""
