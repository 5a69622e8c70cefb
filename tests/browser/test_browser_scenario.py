"""Real-browser test of the shareable scenario (issue 15 item 3, issue 17): a link copied from the
address bar opens the same view in a fresh browser context (no shared session or cookies), and a
reload keeps the settings.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from placement import MAX_FILE_BYTES, Problem, load_problem

from .helpers import engine_time, go, metric, step_slider, wait_for_text, wait_idle

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = "throughput/layer/gnmt_inference"


def wait_for_url(page, needle: str, timeout: float = 20.0) -> str:
    started = time.monotonic()
    while needle not in page.url:
        if time.monotonic() - started > timeout:
            raise AssertionError(f"{needle!r} not in the address {page.url!r}")
        time.sleep(0.1)
    return page.url


def test_a_shared_link_reproduces_the_view_in_a_fresh_browser(browser, page, app_url, artifacts_dir):
    problem = load_problem(ROOT / "sample_graphs" / f"{SAMPLE}.json")
    page.goto(f"{app_url}/Graph")
    page.get_by_role("heading", name="Graph").first.wait_for()
    wait_idle(page)
    page.locator('[data-testid="stSelectbox"]').first.click()
    page.get_by_role("option").filter(has_text=f"— {SAMPLE}").click()
    wait_idle(page)
    wait_for_text(metric(page, "Nodes"), str(len(problem.graph.nodes)))

    go(page, "Devices")
    step_slider(page, "Number of accelerators", problem.devices.accelerator_count - 3)
    devices = problem.devices.with_kind("accelerator", count=problem.devices.accelerator_count - 3)
    expected = engine_time(Problem(problem.graph, devices))
    wait_for_text(metric(page, "Time per sample"), expected)
    link = wait_for_url(page, f"%22maxFPGAs%22%3A{devices.accelerator_count}")
    assert "gnmt_inference" in link
    page.screenshot(path=artifacts_dir / "scenario_01_original.png", full_page=True)

    # A fresh context: nothing shared with the first one but the link.
    context = browser.new_context(viewport={"width": 1400, "height": 2200})
    try:
        other = context.new_page()
        other.goto(link)
        other.get_by_role("heading", name="Devices").first.wait_for()
        wait_idle(other)
        other.screenshot(path=artifacts_dir / "scenario_02_opened.png", full_page=True)
        wait_for_text(metric(other, "Time per sample"), expected)
        assert other.locator('[data-testid="stSlider"]', has_text="Number of accelerators").locator(
            'input[type="range"]'
        ).input_value() == str(devices.accelerator_count)
        assert SAMPLE in other.locator('[data-testid="stMarkdown"]', has_text=" on ").first.inner_text()
        other.screenshot(path=artifacts_dir / "scenario_02_shared.png", full_page=True)

        # A reload keeps the settings (a new session opened on the same address).
        other.reload()
        other.get_by_role("heading", name="Devices").first.wait_for()
        wait_idle(other)
        wait_for_text(metric(other, "Time per sample"), expected)

        # The Graph page offers the link and the card.
        go(other, "Graph")
        exceptions = other.locator('[data-testid="stException"]')
        assert not exceptions.count(), exceptions.first.inner_text()
        other.get_by_role("button", name="Download scenario card").wait_for(state="visible", timeout=30_000)
        # The card's dropzone states the cap the code enforces, not Streamlit's server-wide 200 MB.
        card_upload = other.locator('[data-testid="stFileUploader"]', has_text="scenario card")
        assert f"{-(-MAX_FILE_BYTES // 2**20)}MB per file" in card_upload.inner_text()
        assert "gnmt_inference" in other.locator('[data-testid="stCode"]').first.inner_text()
        other.screenshot(path=artifacts_dir / "scenario_03_share_section.png", full_page=True)
        assert not other.locator('[data-testid="stException"]').count()
    finally:
        context.close()
