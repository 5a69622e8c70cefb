"""AppTest helpers shared by the page tests."""

from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parent.parent


def start(page: str | None = None, timeout: float = 90) -> AppTest:
    """Run the app's home script, then switch to ``page`` if given; fail on any exception."""
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=timeout)
    at.run()
    assert not at.exception, at.exception
    if page:
        goto(at, page)
    return at


def goto(at: AppTest, page: str) -> AppTest:
    """Switch page like the sidebar does (session state kept) and run it."""
    at.switch_page(page)
    at.run()
    assert not at.exception, at.exception
    return at


def metrics(at: AppTest) -> dict[str, str]:
    """Metric label -> shown value."""
    return {m.label: m.value for m in at.metric}
