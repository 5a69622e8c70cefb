"""Real-browser check (issue 26): no headline number is cut at 1024x768 or 1400x900.

Opens the headline pages on BERT-24 training with the training memory model (the meeting
scenario's kind of numbers: long times, GiB, costs) through a shared link, at both window sizes,
and checks that every metric value is shown whole (its text fits its box: scrollWidth <=
clientWidth, no ellipsis). Saves a screenshot of each page and size under test-artifacts/.
"""

from __future__ import annotations

import pytest

from placement import load_problem
from placement.scenario import Scenario, scenario_to_query

from .conftest import ROOT
from .helpers import CLIPPED_METRICS_JS, wait_idle

pytestmark = pytest.mark.browser

SIZES = ((1024, 768), (1400, 900))
PAGES = ("Devices", "Placement", "Timeline", "Parallel_plan", "Meeting_summary")


def test_no_headline_number_is_cut_at_1024_and_1400(browser, app_url, artifacts_dir):
    problem = load_problem(ROOT / "sample_graphs" / "throughput" / "layer" / "bert24_training.json")
    kind = problem.devices.accelerators[0]
    devices = problem.devices.with_kind(kind.name, memory=1.5e9, price_per_hour=2.5)
    query = scenario_to_query(
        Scenario(
            "sample:throughput/layer/bert24_training",
            devices,
            settings={"mm_training": True, "mm_schedule": "1f1b", "mm_microbatches": 8, "currency": "EUR"},
        )
    )
    from urllib.parse import quote

    link = "&".join(f"{key}={quote(str(value))}" for key, value in query.items())
    cut = []
    for width, height in SIZES:
        context = browser.new_context(viewport={"width": width, "height": height})
        page = context.new_page()
        try:
            for name in PAGES:
                page.goto(f"{app_url}/{name}?{link}")
                page.locator('[data-testid="stMetricValue"]').first.wait_for(timeout=60_000)
                wait_idle(page, settle=1.0)
                cut += [(name, width, text) for text in page.evaluate(CLIPPED_METRICS_JS)]
                page.screenshot(path=artifacts_dir / f"widths_{width}_{name.lower()}.png")
        finally:
            context.close()
    assert not cut, f"metric values cut (page, window width, text): {cut}"
