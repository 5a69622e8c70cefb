"""Real-browser tests of the helpers that wait for a widget change's script run, and of their retries.

Twice in full suites a widget change seemed to cause no script run for 60 s (a typed number on the Uncertainty
page, a slider step on the Devices page). The websocket log of the second showed why: the server had run (28
frames came back), but the page's run state never read "running". On a page whose CPU is throttled 20x that
happens to several quick runs in 20; :class:`helpers.SocketLog` sees them all by the server's frames.

A change that really never reaches the server is made here on purpose: the browser's websocket to the app
drops the next message the page sends. The helper must notice within its reach time, warn (saying what went
over the wire), make the change once more, and leave the app in the state asked for.
"""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import pytest
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

from placement import Problem, load_problem, solve_dp
from placement.explore.uncertainty import monte_carlo

from .helpers import (
    SocketLog,
    engine_time,
    message_kind,
    metric,
    set_number,
    slider_thumb,
    step_slider,
    wait_for_text,
    wait_idle,
)

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
        self.log.add("sent", message_kind(message, BackMsg))
        if self.armed:
            self.armed = False
            self.dropped += 1
            return
        server.send(message)

    def _to_page(self, ws, message) -> None:
        self.log.add("received", message_kind(message, ForwardMsg))
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
    assert re.search(r"sent 1 \(rerun_script at [\d.]+ s\); received 0;", str(record[0].message))
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
    assert re.search(r"sent 1 \(rerun_script at [\d.]+ s\); received 0;", str(record[0].message))
    set_number(page, "Latency error bar (± %)", "20")
    set_number(page, "Seed", "5")
    page.get_by_role("button", name="Run Monte Carlo").click()  # the server's draws decide the quantiles
    problem = load_problem(DEFAULT_SAMPLE)
    expected = monte_carlo(problem, solve_dp(problem).placement, 0.2, samples=60, seed=5)
    wait_for_text(metric(page, "P50 time per sample"), f"{expected.plan_quantiles[1]:.5g} ms", timeout=120)


def _frame(kind: str) -> bytes:
    message = ForwardMsg()
    if kind == "script_finished":
        message.script_finished = ForwardMsg.FINISHED_SUCCESSFULLY
    else:
        getattr(message, kind).SetInParent()
    return message.SerializeToString()


def test_the_socket_log_sees_a_run_by_the_servers_frames():
    log = SocketLog()
    log.add("received", message_kind(_frame("script_finished"), ForwardMsg))  # the end of a run before the action
    log.mark()
    assert not log.run_seen("started") and not log.run_seen("ended")
    log.add("sent", message_kind(b"", BackMsg))
    log.add("received", message_kind(_frame("new_session"), ForwardMsg))
    assert log.run_seen("started") and not log.run_seen("ended")
    log.add("received", message_kind(_frame("delta"), ForwardMsg))
    log.add("received", message_kind(_frame("script_finished"), ForwardMsg))
    assert log.run_seen("ended")
    assert re.fullmatch(
        r"websocket since the action: sent 1 \(untyped at [\d.]+ s\); received 3 \(new_session at [\d.]+ s, "
        r"script_finished at [\d.]+ s, 1 delta/text\); socket unchanged",
        log.since_mark(),
    ), log.since_mark()
    assert message_kind(b"\xff\xff", ForwardMsg) == "undecoded" and message_kind("{}", ForwardMsg) == "text"


#: Chromium's CPU throttling for the next test: at 20x, 2 of 30 quick runs never changed the page's run state.
THROTTLE = 20
CHANGES = 20


@pytest.mark.slow
def test_every_quick_run_is_seen_on_a_throttled_page(page, app_url):
    """With the page's main thread slowed 20x, every change's run is seen at once (no retry, no warning)."""
    page.goto(f"{app_url}/Uncertainty")
    page.get_by_role("heading", name="Uncertainty").first.wait_for()
    wait_idle(page)
    page.context.new_cdp_session(page).send("Emulation.setCPUThrottlingRate", {"rate": THROTTLE})
    unseen_by_the_page = 0
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a retry's warning fails the test
        for seed in range(1, CHANGES + 1):
            set_number(page, "Seed", str(seed))
            unseen_by_the_page += page.evaluate("() => window.__stRunsEnded") == 0
    assert page.get_by_label("Seed", exact=True).input_value() == str(CHANGES)
    print(f"\nthrottled {THROTTLE}x: {unseen_by_the_page} of {CHANGES} runs never showed in the page's run state")
