"""Fixtures for real-browser tests: a Streamlit server on a free port and headless Chromium.

Outside CI the tests are skipped (with the reason) when /usr/bin/chromium or Playwright is
missing; with ``CI=true`` they run and fail loudly instead.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from .helpers import open_page

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"
ARTIFACTS = ROOT / "test-artifacts"
IN_CI = os.environ.get("CI", "").lower() == "true"


def _require(condition: bool, reason: str) -> None:
    if condition:
        return
    if IN_CI:
        pytest.fail(f"browser test prerequisites missing in CI: {reason}")
    pytest.skip(reason)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="session")
def artifacts_dir() -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS


@contextlib.contextmanager
def streamlit_server(log_path: Path):
    """Run ``streamlit run app.py`` headless on a free port until healthy; yield its URL; stop it afterwards."""
    port = _free_port()
    with open(log_path, "w") as log:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "streamlit",
                "run",
                "app.py",
                "--server.headless=true",
                f"--server.port={port}",
                "--server.address=127.0.0.1",
                "--browser.gatherUsageStats=false",
                "--server.fileWatcherType=none",
            ],
            cwd=ROOT,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:
            url = f"http://127.0.0.1:{port}"
            deadline = time.monotonic() + 60
            while True:
                if process.poll() is not None:
                    pytest.fail(f"streamlit exited with code {process.returncode}: {log_path.read_text()[-2000:]}")
                try:
                    with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as response:
                        if response.read().decode().strip() == "ok":
                            break
                except OSError:
                    pass
                if time.monotonic() > deadline:
                    pytest.fail(f"streamlit did not become healthy in 60 s: {log_path.read_text()[-2000:]}")
                time.sleep(0.25)
            yield url
        finally:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


@pytest.fixture(scope="session")
def app_url(artifacts_dir):
    """The app served once for the whole browser session."""
    with streamlit_server(artifacts_dir / "streamlit-server.log") as url:
        yield url


@pytest.fixture(scope="session")
def browser():
    _require(Path(CHROMIUM).exists(), f"{CHROMIUM} not found (apt-get install -y chromium)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError as exc:  # pragma: no cover - depends on the environment
        _require(False, f"playwright is not installed ({exc})")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM,
            headless=True,
            args=["--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"],
        )
        yield browser
        browser.close()


@pytest.fixture
def page(browser, app_url):
    context = browser.new_context(viewport={"width": 1400, "height": 2200})
    page = open_page(context)  # with its websocket log, for the helpers' run waits
    page.set_default_timeout(30_000)
    yield page
    context.close()
