"""Meeting summary in a real browser: the GPT training scenario of issue 26, same numbers as Devices, nothing clipped.

A GPT 24x2048 training graph (model builder) on 8 A100 + 4 V100 (priced) is uploaded as a graph
file; the training memory model is picked on the Devices page; the Meeting summary then shows the
Devices page's numbers, and no headline number is cut at 1024x768 or 1400x900 (screenshots in
test-artifacts/).
"""

from __future__ import annotations

import re

import pytest

from placement import MemoryModel, evaluate, solve
from placement.io import problem_to_json
from placement.pipeline.schedule import simulate
from placement.viz import format_bytes

from ..test_meeting_summary_page import scenario
from .helpers import go, graph_charts, metric, rerun_after, set_number, upload_file, wait_for_text, wait_idle

pytestmark = pytest.mark.browser

HEADLINES = ("Time per sample", "Time per batch", "Throughput", "Cost per 1M samples")

# Metric values (and their inner elements) whose text is wider than their box: clipped or ellipsised.
_CLIPPED = """() => {
  const out = [];
  for (const value of document.querySelectorAll('[data-testid="stMetricValue"]')) {
    for (const el of [value, ...value.querySelectorAll('*')]) {
      if (el.scrollWidth > el.clientWidth + 1) { out.push(value.innerText); break; }
    }
  }
  return out;
}"""


def test_meeting_summary_shows_the_devices_numbers_unclipped(page, app_url, artifacts_dir, tmp_path):
    problem = scenario()
    path = tmp_path / "gpt24_training.json"
    path.write_text(problem_to_json(problem))
    method, options = MemoryModel(training=True).method_for("dp")
    result = solve(problem, method, **options)
    expected = f"{evaluate(problem, result.placement).max_load:.6g} ms"
    peak = format_bytes(max(b.peak for b in MemoryModel(training=True).breakdown(problem, result.placement)))

    page.goto(f"{app_url}/Graph")
    page.get_by_role("heading", name="Graph").first.wait_for()
    wait_idle(page)
    uploader = page.locator('[data-testid="stFileUploader"]', has_text="upload a graph")
    upload_file(page, uploader.locator('input[type="file"]'), path)
    go(page, "Devices")
    with rerun_after(page):
        page.get_by_text(re.compile("^Training: weights")).click()
    wait_for_text(metric(page, "Time per sample"), expected, timeout=60)
    on_devices = {label: metric(page, label).inner_text().strip() for label in HEADLINES}

    # Sidebar link by its path (the title alone may name more than one page).
    page.locator('[data-testid="stSidebarNav"] a[href$="/Meeting_summary"]').click()
    page.wait_for_url(re.compile(r"/Meeting_summary(\?.*)?$"))
    page.get_by_role("heading", name="Meeting summary").first.wait_for()
    wait_idle(page)
    wait_for_text(metric(page, "Time per sample"), expected, timeout=60)
    page.get_by_role("button", name="Download summary (Markdown)").wait_for()
    graph_charts(page).nth(1).wait_for(timeout=30_000)
    for label in HEADLINES:
        assert metric(page, label).inner_text().strip() == on_devices[label], label
    assert metric(page, "Peak memory").inner_text().strip() == peak
    assert page.get_by_text("see the Parallel plan page").count()  # 2 V100 sit idle
    # Tokens per sample: the builder's (batch x sequence, 8 x 1024) from the file, then one typed by the user.
    settings = page.get_by_text("Settings: run size, tokens per sample, cards to compare")
    settings.click()
    tokens = page.get_by_role("spinbutton", name="Tokens per sample")
    assert tokens.input_value() == str(problem.graph.extra["tokensPerSample"]) == "8192"
    batch = simulate(problem, result.placement, 8, "1f1b").makespan
    wait_for_text(metric(page, "Tokens/s"), f"{8192 * 8 * 1000 / batch:,.0f}")
    set_number(page, tokens, "4096")
    wait_for_text(metric(page, "Tokens/s"), f"{4096 * 8 * 1000 / batch:,.0f}")
    settings.click()  # closed again for the screenshots
    for width, height in ((1400, 900), (1024, 768)):
        page.set_viewport_size({"width": width, "height": height})
        wait_idle(page)
        assert page.evaluate(_CLIPPED) == [], f"clipped at {width}x{height}"
        page.screenshot(path=artifacts_dir / f"meeting_summary_{width}x{height}.png")
    for width in (1400, 1024):  # the whole page (Streamlit scrolls inside its own container: a tall viewport)
        page.set_viewport_size({"width": width, "height": 3000})
        wait_idle(page)
        assert page.evaluate(_CLIPPED) == [], f"clipped at {width} px"
        page.screenshot(path=artifacts_dir / f"meeting_summary_{width}_whole.png")
