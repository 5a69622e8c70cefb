"""Real-browser check of the Uncertainty page: a seeded Monte Carlo run shows the engine's quantiles.

Opens the page on the default graph, sets ±20 % and 60 draws, runs the Monte Carlo, compares
the P50 shown with placement.explore.uncertainty for the same seed, and saves a screenshot.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from placement import load_problem, solve_dp
from placement.explore.uncertainty import monte_carlo

from .helpers import metric, set_number, wait_for_text, wait_idle

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
DEFAULT = ROOT / "sample_graphs" / "throughput" / "layer" / "bert24_inference.json"


def test_monte_carlo_run_in_the_browser(page, app_url, artifacts_dir):
    problem = load_problem(DEFAULT)
    expected = monte_carlo(problem, solve_dp(problem).placement, 0.2, samples=60, seed=5)
    page.goto(app_url)
    page.get_by_role("heading", name="Device placement explorer").wait_for()
    wait_idle(page)
    page.locator('[data-testid="stSidebarNav"]').get_by_role("link", name="Uncertainty", exact=True).click()
    page.wait_for_url(re.compile(r"/Uncertainty(\?.*)?$"))
    page.get_by_role("heading", name="Uncertainty").first.wait_for()
    wait_idle(page)
    set_number(page, "Latency error bar (± %)", "20")
    set_number(page, "Draws", "60")
    set_number(page, "Seed", "5")
    page.get_by_role("button", name="Run Monte Carlo").click()
    wait_for_text(metric(page, "P50 time per sample"), f"{expected.plan_quantiles[1]:.5g} ms", timeout=120)
    wait_idle(page)
    assert metric(page, "P90 time per sample").inner_text().strip() == f"{expected.plan_quantiles[2]:.5g} ms"
    assert metric(page, "Re-optimised P50").inner_text().strip() == f"{expected.reopt_quantiles[1]:.5g} ms"
    page.locator('[data-testid="stPlotlyChart"]').nth(1).wait_for()
    page.screenshot(path=artifacts_dir / "uncertainty_01_run.png", full_page=True)
