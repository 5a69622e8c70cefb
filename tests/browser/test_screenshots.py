"""Screenshots of every page at 1024x768 and 1400x900, and no headline number clipped (issue 26 item 11).

Every page of ``ui.navigation.PAGES`` (in sidebar order, by its URL path: pages are renumbered) is
opened from the sidebar on a shared link with meeting-like numbers (BERT-24 training, 16 GB cards
at 2.5 EUR per hour, the training memory model) and photographed into ``tmp_path``, and also into
``$SCREENSHOT_DIR`` when that is set (e.g. ``artifacts/screenshots``; there also each whole page, from
a window 2400 px tall). Every metric value and label
must show whole: its text fits its box (scrollWidth <= clientWidth, no ellipsis), as in
``test_browser_widths.py``.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from urllib.parse import quote

import pytest

from placement import load_problem
from placement.scenario import Scenario, scenario_to_query
from ui.navigation import PAGES

from .conftest import ROOT
from .helpers import CLIPPED_METRICS_JS, wait_idle

pytestmark = pytest.mark.browser


def _link() -> str:
    problem = load_problem(ROOT / "sample_graphs" / "throughput" / "layer" / "bert24_training.json")
    kind = problem.devices.accelerators[0]
    devices = problem.devices.with_kind(kind.name, memory=16e9, price_per_hour=2.5)
    query = scenario_to_query(
        Scenario(
            "sample:throughput/layer/bert24_training",
            devices,
            settings={"mm_training": True, "mm_schedule": "1f1b", "mm_microbatches": 8, "currency": "EUR"},
        )
    )
    return "&".join(f"{key}={quote(str(value))}" for key, value in query.items())


def _directories(tmp_path: Path) -> list[Path]:
    out = [tmp_path]
    if os.environ.get("SCREENSHOT_DIR"):
        out.append(Path(os.environ["SCREENSHOT_DIR"]))
    for directory in out:
        directory.mkdir(parents=True, exist_ok=True)
    return out


@pytest.mark.parametrize("width, height", [(1024, 768), (1400, 900)])
def test_every_page_photographed_and_no_metric_clipped(browser, app_url, tmp_path, width, height):
    directories = _directories(tmp_path)
    context = browser.new_context(viewport={"width": width, "height": height})
    page = context.new_page()
    page.set_default_timeout(60_000)
    cut = []
    try:
        page.goto(f"{app_url}/?{_link()}")
        wait_idle(page, settle=1.0)
        for position, (_, title, _, url, _) in enumerate(PAGES):
            if position:  # the first page is open already
                page.locator(f'[data-testid="stSidebarNav"] a[href$="/{url}"]').click()
                page.wait_for_url(re.compile(rf"/{re.escape(url)}(\?.*)?$"))
            page.locator("h1").first.wait_for()
            wait_idle(page, settle=1.0)
            cut += [(title, text) for text in page.evaluate(CLIPPED_METRICS_JS)]
            name = f"{position + 1:02d}_{url.lower()}_{width}x{height}.png"
            for directory in directories:
                page.screenshot(path=directory / name)
            if len(directories) > 1:  # asked for screenshots to look at: the whole page too (a tall window)
                page.set_viewport_size({"width": width, "height": 2400})
                wait_idle(page, settle=0.5)
                cut += [(title, text) for text in page.evaluate(CLIPPED_METRICS_JS)]
                page.screenshot(path=directories[1] / name.replace(".png", "_whole.png"))
                page.set_viewport_size({"width": width, "height": height})
    finally:
        context.close()
    assert not cut, f"metric values cut at {width}x{height} (page, text): {cut}"
