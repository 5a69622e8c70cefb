"""Real-browser check (issue 26): a shared link shows the sender's numbers in a fresh browser context.

The sender switches the memory model to training on the Devices page (clicks), opens Placement,
and copies the address; a fresh context (no shared session) opens it. Every headline number
(metric) on Placement must equal the sender's, the memory model and its peak included.
"""

from __future__ import annotations

import pytest

from .helpers import go, wait_idle

pytestmark = pytest.mark.browser


def _metrics(page) -> dict[str, str]:
    page.locator('[data-testid="stMetricValue"]').first.wait_for(timeout=60_000)
    wait_idle(page, settle=1.0)
    labels = page.locator('[data-testid="stMetricLabel"]').all_inner_texts()
    values = page.locator('[data-testid="stMetricValue"]').all_inner_texts()
    return {label.strip(): value.strip() for label, value in zip(labels, values)}


def test_a_shared_link_shows_every_headline_number_of_the_sender(browser, app_url, artifacts_dir):
    sender = browser.new_context(viewport={"width": 1400, "height": 900})
    page = sender.new_page()
    page.goto(app_url)
    page.get_by_role("heading", name="Device placement explorer").wait_for()
    wait_idle(page)
    go(page, "Devices")
    page.get_by_text("Training: weights + optimizer state + activations in flight").click()
    wait_idle(page, settle=1.0)
    go(page, "Placement")
    sent = _metrics(page)
    assert "Peak memory (memory model)" in sent and "Time per batch" in sent
    link = page.url
    page.screenshot(path=artifacts_dir / "share_01_sender.png")
    receiver = browser.new_context(viewport={"width": 1400, "height": 900})
    other = receiver.new_page()
    other.goto(link)
    received = _metrics(other)
    other.screenshot(path=artifacts_dir / "share_02_receiver.png")
    assert received == sent
    assert other.get_by_text("Memory model: training").first.is_visible()
    sender.close()
    receiver.close()
