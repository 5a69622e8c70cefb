"""The DP's tie-break pass past its work limit, in a real browser: Inception-v3 on the Placement page.

The pass would search about 253 M pairs (limit 20 M), so the page shows the optimal time per sample at
once, says in a caption that the tie-break was skipped, and offers the button that makes it (not
clicked here: the pass takes about a minute; ``tests/test_dp_tie_break_limit.py`` clicks it in AppTest
with a small limit).
"""

from __future__ import annotations

import re

import pytest

from placement import load_problem
from placement.exact.dp import solve_dp

from .conftest import ROOT
from .helpers import choose_typed, go, metric, open_page, rerun_after, wait_for_text, wait_idle

pytestmark = pytest.mark.browser

SAMPLE = "ours/inception_v3_inference"


def test_inception_is_answered_at_once_and_the_skipped_tie_break_is_said(browser, app_url, artifacts_dir):
    problem = load_problem(ROOT / "sample_graphs" / f"{SAMPLE}.json")
    expected = solve_dp(problem)  # the limit's decision is deterministic: the page gets the same split
    assert expected.stat("tie_break") == "skipped"
    context = browser.new_context(viewport={"width": 1024, "height": 768})
    try:
        page = open_page(context)
        page.set_default_timeout(60_000)
        page.goto(f"{app_url}/Graph")
        page.get_by_role("heading", name="Graph").first.wait_for()
        wait_idle(page)
        with rerun_after(page):
            choose_typed(page, "Sample graph", SAMPLE)
        go(page, "Placement")
        wait_for_text(metric(page, "Time per sample"), f"{expected.objective:.6g} ms", timeout=60)
        caption = page.get_by_text(re.compile("^Tie-break skipped")).first
        caption.wait_for()
        assert "M ideal pairs" in caption.inner_text()
        assert page.get_by_role("button", name="Run the tie-break").is_visible()
        page.screenshot(path=artifacts_dir / "placement_tie_break_skipped.png", full_page=True)
    finally:
        context.close()
