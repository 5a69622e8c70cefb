"""Real-browser test of teaching mode (issue 15 item 4): step forward and back through the DP on the
tiny sample; the lattice's title names the pair being tried, and the last step shows solve_dp's answer.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from placement import load_problem, solve_dp
from placement.explore.teaching import trace_dp

from .helpers import wait_idle

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
TINY = ROOT / "sample_graphs" / "ours" / "tiny_training.json"


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
    problem = load_problem(TINY)
    trace = trace_dp(problem)
    page.goto(f"{app_url}/Teaching")
    page.get_by_role("heading", name="Teaching mode").first.wait_for()
    wait_idle(page)
    first = trace.steps[0]
    assert f"J = {label(trace, first.ideal)}" in lattice_title(page)
    page.screenshot(path=artifacts_dir / "teaching_01_step0.png", full_page=True)

    forward = page.get_by_role("button", name="Forward ▶")
    for index in range(1, 4):
        forward.click()
        wait_idle(page, settle=0.5)
        step = trace.steps[index]
        title = lattice_title(page)
        assert f"J = {label(trace, step.ideal)}" in title and f"I = {label(trace, step.previous)}" in title, title
    page.screenshot(path=artifacts_dir / "teaching_02_step3.png", full_page=True)
    page.get_by_role("button", name="◀ Back").click()
    wait_idle(page, settle=0.5)
    assert f"I = {label(trace, trace.steps[2].previous)}" in lattice_title(page)

    # Forward to the end: the answer equals solve_dp's.
    for _ in range(len(trace.steps) - 3):
        forward.click()
        wait_idle(page, settle=0.3)
    expected = f"{solve_dp(problem).objective:.6g}"
    done = page.locator('[data-testid="stAlertContentSuccess"]', has_text="solve_dp")
    done.wait_for(timeout=30_000)
    assert expected in done.inner_text()
    assert not page.locator('[data-testid="stException"]').count()
    page.screenshot(path=artifacts_dir / "teaching_03_done.png", full_page=True)
