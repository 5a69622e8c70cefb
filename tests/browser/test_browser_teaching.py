"""Real-browser test of teaching mode (issues 15 and 26): step forward and back through the DP on the
default branched sample (a residual block); the lattice's title names the pair being tried, the graph is
drawn beside it, the last step shows solve_dp's answer; at 1024x768 and 1400x900, in the normal and the
presentation mode, Back/Forward and the metric values are shown whole. Screenshots go to test-artifacts/.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from placement import load_problem, solve_dp
from placement.explore.teaching import trace_dp

from .helpers import wait_idle

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
RESIDUAL = ROOT / "sample_graphs" / "ours" / "teach_residual_inference.json"
SIZES = ((1024, 768), (1400, 900))

# Buttons and metric values whose text does not fit their box.
_CLIPPED = """() => Array.from(document.querySelectorAll(
    '[data-testid="stMain"] button p, [data-testid="stMetricValue"], [data-testid="stMetricValue"] *'))
  .filter((el) => el.offsetParent !== null)
  .filter((el) => el.scrollWidth > el.clientWidth + 1 || getComputedStyle(el).textOverflow === 'ellipsis')
  .map((el) => el.innerText)"""


def wait_charts(page) -> None:
    """Wait until every Plotly chart on the visible tab has drawn its SVG."""
    wait_idle(page, settle=0.3)
    page.wait_for_function(
        """() => Array.from(document.querySelectorAll('[data-testid="stPlotlyChart"]'))
             .filter((el) => el.offsetParent !== null)
             .every((el) => el.querySelector('.main-svg'))"""
    )
    page.wait_for_timeout(300)


def lattice_title(page) -> str:
    """The lattice chart's title (Streamlit may draw a chart title outside the SVG: search the chart's text)."""
    chart = page.locator('[data-testid="stPlotlyChart"]').first
    title = chart.get_by_text("Finishing J =").first
    title.wait_for()
    return title.text_content()


def label(trace, ideal: int) -> str:
    groups = trace.groups_of(ideal)
    return "{" + ",".join(str(g) for g in groups) + "}" if groups else "∅"


def test_one_teaching_step_through(page, app_url, artifacts_dir):
    problem = load_problem(RESIDUAL)
    trace = trace_dp(problem)
    page.goto(f"{app_url}/Teaching")
    page.get_by_role("heading", name="Teaching mode").first.wait_for()
    wait_idle(page)
    first = trace.steps[0]
    assert f"J = {label(trace, first.ideal)}" in lattice_title(page)
    assert page.locator('[data-testid="stPlotlyChart"]').nth(1).get_by_text("input/decode").count()
    page.get_by_text(f"Step 1 of {len(trace.steps)}").first.wait_for()

    forward = page.get_by_role("button", name="Forward ▶")
    for index in range(1, 4):
        forward.click()
        wait_idle(page, settle=0.5)
        step = trace.steps[index]
        title = lattice_title(page)
        assert f"J = {label(trace, step.ideal)}, I = {label(trace, step.previous)}" in title, title
    page.get_by_text(f"Step 4 of {len(trace.steps)}").first.wait_for()
    page.get_by_role("button", name="◀ Back").click()
    wait_idle(page, settle=0.5)
    assert f"I = {label(trace, trace.steps[2].previous)}" in lattice_title(page)

    # To the last step with the slider's End key: the answer equals solve_dp's.
    page.get_by_role("slider").first.focus()
    page.keyboard.press("End")
    wait_idle(page, settle=0.5)
    expected = f"{solve_dp(problem).objective:.6g} ms"
    done = page.locator('[data-testid="stAlertContentSuccess"]', has_text="solve_dp")
    done.wait_for(timeout=30_000)
    assert expected in done.inner_text()
    assert not page.locator('[data-testid="stException"]').count()


def test_teaching_fits_1024_and_1400_also_on_a_projector(browser, app_url, artifacts_dir):
    trace = trace_dp(load_problem(RESIDUAL))
    blocked = next(k for k, step in enumerate(trace.steps) if any(step.reasons))
    cut = []
    for width, height in SIZES:
        context = browser.new_context(viewport={"width": width, "height": height})
        page = context.new_page()
        page.set_default_timeout(30_000)
        try:
            page.goto(f"{app_url}/Teaching")
            page.get_by_role("heading", name="Teaching mode").first.wait_for()
            wait_idle(page)
            forward = page.get_by_role("button", name="Forward ▶")
            for _ in range(blocked):  # to a step with a "not allowed" and its reason
                forward.click()
                wait_idle(page, settle=0.3)
            page.get_by_text("not allowed").first.wait_for()
            cut += [("normal", width, text) for text in page.evaluate(_CLIPPED)]
            page.screenshot(path=artifacts_dir / f"teaching_{width}.png")
            page.set_viewport_size({"width": width, "height": 1900})  # the same width, the whole page
            wait_charts(page)
            page.screenshot(path=artifacts_dir / f"teaching_{width}_full.png")
            page.get_by_text("Presentation mode").first.click()
            wait_idle(page, settle=0.5)
            cut += [("presentation", width, text) for text in page.evaluate(_CLIPPED)]
            wait_charts(page)
            page.screenshot(path=artifacts_dir / f"teaching_{width}_presentation.png")
            page.get_by_role("tab", name="Why is this optimal").click()
            wait_idle(page, settle=0.3)
            cut += [("why", width, text) for text in page.evaluate(_CLIPPED)]
            wait_charts(page)
            page.screenshot(path=artifacts_dir / f"teaching_{width}_why.png")
            page.get_by_role("tab", name="Beat the solver").click()
            wait_idle(page, settle=0.3)
            cut += [("beat", width, text) for text in page.evaluate(_CLIPPED)]
            wait_charts(page)
            page.screenshot(path=artifacts_dir / f"teaching_{width}_beat.png")
        finally:
            context.close()
    assert not cut, f"text cut (mode, window width, text): {cut}"
