"""Playwright helpers shared by the browser tests (Streamlit-specific waits and lookups)."""

from __future__ import annotations

import re
import time


def wait_idle(page, settle: float = 0.3) -> None:
    """Wait until Streamlit has finished the current script run."""
    time.sleep(settle)
    page.wait_for_function(
        "() => !document.querySelector('[data-testid=\"stStatusWidget\"]')"
        " || !document.querySelector('[data-testid=\"stStatusWidget\"]').innerText.match(/Running|Stop/)",
        timeout=60_000,
    )
    page.wait_for_selector('[data-testid="stApp"][data-test-script-state="notRunning"]', timeout=60_000)


def go(page, name: str) -> None:
    """Navigate with the sidebar (keeps the session, unlike loading a URL)."""
    page.locator('[data-testid="stSidebarNav"]').get_by_role("link", name=name, exact=True).click()
    path = name.replace(" ", "_")  # "Parallel plan" -> /Parallel_plan
    page.wait_for_url(re.compile(rf"/{path}(\?.*)?$"))  # the query carries the scenario
    page.get_by_role("heading", name=re.compile(name)).first.wait_for()
    wait_idle(page)


def metric(page, label: str):
    """The value element of the first metric whose label contains ``label``."""
    return page.locator('[data-testid="stMetric"]', has_text=label).first.locator('[data-testid="stMetricValue"]')


def wait_for_text(locator, text: str, timeout: float = 30.0) -> float:
    """Poll until ``locator`` shows ``text``; return the seconds it took."""
    started = time.perf_counter()
    while True:
        try:
            current = locator.inner_text(timeout=1000).strip()
        except Exception:  # noqa: BLE001 - element re-rendering
            current = None
        if current == text:
            return time.perf_counter() - started
        if time.perf_counter() - started > timeout:
            raise AssertionError(f"expected {text!r}, still {current!r} after {timeout} s")
        time.sleep(0.02)


def engine_time(problem) -> str:
    """The time per sample as the pages format it (6 significant digits and the unit), from solve_dp + evaluate."""
    from placement import evaluate, solve_dp

    result = solve_dp(problem)
    assert result.status == "optimal"
    return f"{evaluate(problem, result.placement).max_load:.6g} ms"
