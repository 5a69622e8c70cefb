"""Real-browser tests of the helpers' retries: a change that never reaches the server is made again.

Twice in full suites a widget change caused no script run for 60 s (a typed number on the Uncertainty
page, a slider step on the Devices page). Here the browser's websocket to the app drops the next message
the page sends after a widget change, which is that failure made on purpose; the helper must notice
within its reach time, warn, make the change once more, and leave the app in the state asked for. The
warning also says what went over the wire since the action (:class:`helpers.SocketLog`): here one frame
sent and none received, which a real loss in CI would now show too.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from placement import Problem, load_problem, solve_dp
from placement.explore.uncertainty import monte_carlo

from .helpers import SocketLog, engine_time, metric, set_number, slider_thumb, step_slider, wait_for_text, wait_idle

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_SAMPLE = ROOT / "sample_graphs" / "throughput" / "layer" / "bert24_inference.json"


class DropOne:
    """Route the app's websocket through Playwright and drop the first page-to-server message once armed.

    A routed socket's frames do not reach the page's ``websocket`` event, so the route writes them into
    ``log`` itself (the dropped one counts as sent: the page sent it).
    """

    def __init__(self, log: SocketLog) -> None:
        self.log = log
        self.armed = False
        self.dropped = 0

    def __call__(self, ws) -> None:
        server = ws.connect_to_server()
        ws.on_message(lambda message: self._to_server(server, message))
        server.on_message(lambda message: self._to_page(ws, message))

    def _to_server(self, server, message) -> None:
        self.log.add("sent")
        if self.armed:
            self.armed = False
            self.dropped += 1
            return
        server.send(message)

    def _to_page(self, ws, message) -> None:
        self.log.add("received")
        ws.send(message)


@pytest.fixture
def dropping_page(browser, app_url):
    context = browser.new_context(viewport={"width": 1400, "height": 2200})
    log = SocketLog()
    drop = DropOne(log)
    context.route_web_socket(re.compile(r".*/_stcore/stream$"), drop)
    page = context.new_page()
    page.socket_log = log
    page.set_default_timeout(30_000)
    yield page, drop
    context.close()


def test_a_slider_step_that_never_reached_the_server_is_made_again(dropping_page, app_url):
    page, drop = dropping_page
    problem = load_problem(DEFAULT_SAMPLE)
    page.goto(f"{app_url}/Devices")
    page.get_by_role("heading", name="Devices").first.wait_for()
    wait_idle(page)
    wait_for_text(metric(page, "Time per sample"), engine_time(problem))
    drop.armed = True
    with pytest.warns(UserWarning, match=r"pressed ArrowLeft again \(the slider showed 5\)") as record:
        step_slider(page, "Number of accelerators", 5)
    assert drop.dropped == 1
    assert re.search(r"1 frame\(s\) sent, the first at [\d.]+ s, 0 received", str(record[0].message))
    assert slider_thumb(page, "Number of accelerators").input_value() == "5"
    fewer = Problem(problem.graph, problem.devices.with_kind("accelerator", count=5))
    wait_for_text(metric(page, "Time per sample"), engine_time(fewer))  # the server has 5, not 4 or 6


def test_a_typed_number_that_never_reached_the_server_is_typed_again(dropping_page, app_url):
    page, drop = dropping_page
    page.goto(f"{app_url}/Uncertainty")
    page.get_by_role("heading", name="Uncertainty").first.wait_for()
    wait_idle(page)
    drop.armed = True
    with pytest.warns(UserWarning, match=r"Draws = 60 typed again") as record:
        set_number(page, "Draws", "60")
    assert drop.dropped == 1
    assert re.search(r"1 frame\(s\) sent, the first at [\d.]+ s, 0 received", str(record[0].message))
    set_number(page, "Latency error bar (± %)", "20")
    set_number(page, "Seed", "5")
    page.get_by_role("button", name="Run Monte Carlo").click()  # the server's draws decide the quantiles
    problem = load_problem(DEFAULT_SAMPLE)
    expected = monte_carlo(problem, solve_dp(problem).placement, 0.2, samples=60, seed=5)
    wait_for_text(metric(page, "P50 time per sample"), f"{expected.plan_quantiles[1]:.5g} ms", timeout=120)
