"""No session slows another down (issue 27.1): health and a second session's page load, monitored.

A fresh ``streamlit run app.py``; session A runs, one after the other, the three heaviest actions the app
allows:

* ``upload``: the Graph page's uploader gets a 40 MB graph (the limit is 50 MiB; nodes with 10 kB names);
* ``rules``: a link to the Devices page on a 500-node graph (uploaded first) with latency multipliers built to
  be expensive (patterns of stars and classes over the 10 kB names);
* ``solve``: a link to the Devices page with the Inception-like sample on 16 accelerators (exact DP).

Meanwhile a monitor process probes ``/_stcore/health`` every :data:`PERIOD_S` (``helpers.HealthProbe``) and
session B loads the Graph page, again while the action runs, :data:`LOADED_LOADS` times at most (their median is
the action's load). A load ends once the page shows its heading and its graph's chart and has settled
(:func:`page_load`). B's idle reference is the median of ten loads with A idle, interleaved with the actions (two
at the start, five under an idle monitor, one before the rules, one before and one after the solve). Asserted
per action: health p99 under :data:`HEALTH_P99_S` and B's load within :data:`LOAD_RATIO` x its idle median. The
numbers of every action are written to ``test-artifacts/health_monitor.json``: the CPU
seconds that A's browser (``remote browser``), B's browser (``browser``), the server, its workers, the suite's
shared server and Chromium (``other servers``, ``other browsers``) and the rest used during the whole action and
during each of B's loads (``loads_cpu``), and the niceness, CPUs and autogroups of each kind of process
(``scheduling``).

In the world each session's browser runs on its user's machine; only the server and its workers are shared.
On the 2-core test box:

* **A's browser runs at the lowest priority**: through :data:`CLIENT_LAUNCHER`, in a session of its own whose
  autogroup is niced :data:`REMOTE_NICE` (Linux shares the CPUs between autogroups first; Chromium sets its own
  processes' niceness, which counts only within the group). It gets a CPU only when nothing else wants one, so
  A's page waits up to :data:`REMOTE_WAIT_S` to settle, and B's first load starts only once A's action has
  reached the server (A's script runs), or A's starved browser would send its 40 MB only once B is idle.
* **B's browser shares the 2 cores with the server.** B's page load is CPU-bound in B's own browser (its
  Chromium busy for the whole load, 2.5 to 5 CPU s), so the ratio also measures B's browser against the
  server's work. Pinning the server and B's Chromium to a core each was tried (2026-11-26): B's loads
  on one core varied 2.6 to 12 s with nothing else running, so it was not kept. Raising B's Chromium's group
  to nice -10 kept the ratios but brought health's p99 to 0.49 s (B's browser then took the server's CPU),
  so it was not kept either.

The last measured runs are in ``docs/benchmarks/app-health.md``.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urlsplit

import pytest

from placement import load_problem, parse_problem
from placement.scenario import Scenario, scenario_to_query

from .conftest import CHROMIUM, streamlit_server
from .helpers import (
    LOCAL_CLIENT_FLAG,
    REMOTE_CLIENT_FLAG,
    HealthProbe,
    cpu_seconds,
    cpu_used,
    go,
    metric,
    scheduling,
    upload_file,
    wait_idle,
)

pytestmark = [pytest.mark.browser, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
#: Seconds between two health probes: 0.1 (0.5 until 2026-11-26). An action lasts 10 to 25 s, so at 0.5 s its
#: 20 to 50 probes made the "p99" their maximum, one slow probe (508 ms once, in a full suite). At 0.1 s it is
#: a 99th percentile of 100 to 250 probes; the maximum is recorded too (``max`` in the JSON).
PERIOD_S = 0.1
HEALTH_P99_S = 0.5
LOAD_RATIO = 1.5
NAME_CHARS = 10_000
#: Size of the monitored upload: near the 50 MiB limit. A 48 MiB file never started a script run in
#: Chromium here (the uploader stayed silent, no error: reported in the hostile note); 40 MB does.
UPLOAD_BYTES = 40_000_000
RULE_NODES = 500  # nodes of the graph the expensive rules run on (5 MB)
SAMPLE = "ours/inception_wide_inference"
#: B's page loads during one action at most (the action's load is their median).
LOADED_LOADS = 5
#: Seconds session A's page may take to settle: its browser runs at the lowest priority (on a busy machine it
#: waits for every other program).
REMOTE_WAIT_S = 300.0
#: Niceness of session A's Chromium: its session's autogroup and each of its processes (see the module's doc).
REMOTE_NICE = 19
#: Both sessions' Chromiums start through this Python script (:func:`launch_client`): with ``NICE`` set, in a
#: session of its own, its group and itself niced ``NICE``; then Chromium in its place. Playwright already
#: starts every browser as a session leader (``detached``); the launcher never nices a group it did not check
#: is its own session's (the test's session is the server's).
CLIENT_LAUNCHER = """
import errno, os, sys, time
if NICE is not None:
    try:
        os.setsid()
    except OSError:
        pass  # already a session leader
    if os.getsid(0) == os.getpid():
        for _ in range(40):
            try:
                with open("/proc/self/autogroup", "w") as handle:
                    handle.write(str(NICE))
                break
            except OSError as exc:  # EAGAIN: one change per 0.1 s machine-wide without CAP_SYS_ADMIN
                if exc.errno != errno.EAGAIN:
                    break  # no autogroups here
                time.sleep(0.05)
    try:
        os.nice(NICE - os.nice(0))
    except OSError:
        pass
os.execv(CHROMIUM, [CHROMIUM, *sys.argv[1:]])
"""


def big_graph(target_bytes: int) -> str:
    """A chain graph whose 10 kB names bring the file to about ``target_bytes``."""
    count = max(2, target_bytes // (NAME_CHARS + 200))
    nodes = [
        {
            "id": i,
            "name": f"{'attention' if i % 3 else 'mlp'}_{i}_" + "x" * NAME_CHARS,
            "supportedOnFpga": 1,
            "cpuLatency": 2.0,
            "fpgaLatency": 1.0,
            "isBackwardNode": 0,
        }
        for i in range(count)
    ]
    edges = [{"sourceId": i, "destId": i + 1, "cost": 0.1} for i in range(count - 1)]
    return json.dumps({"maxFPGAs": 4, "maxCPUs": 1, "maxSizePerFPGA": 1e12, "nodes": nodes, "edges": edges})


#: The Graph page's chart of the graph, once Plotly has drawn it.
CHART_DRAWN = '[data-testid="stPlotlyChart"] .main-svg'


def page_load(context, url: str) -> float:
    """Seconds until the Graph page of a new session shows its heading and its graph's chart, and settles.

    The chart is waited for (:data:`CHART_DRAWN`; since 2026-11-26): Plotly draws it in one 0.6 s task of the
    browser's main thread after the script run has ended, and the settling alone (``wait_idle``) ended before
    or after that task by chance. B's loads were then two-valued (about 1.3 and 1.9 s), so a median of three
    loads could be 1.5 x a median of ten with nothing slowing B down; with the chart, 2.5 to 3.1 s.
    """
    page = context.new_page()
    page.set_default_timeout(300_000)
    try:
        started = time.perf_counter()
        page.goto(f"{url}/Graph")
        page.get_by_role("heading", name="Graph").first.wait_for()
        page.locator(CHART_DRAWN).first.wait_for()
        wait_idle(page)
        return time.perf_counter() - started
    finally:
        page.close()


def script_state(page) -> str | None:
    """Session A's script state now (``running``, ``notRunning``, ...; no waiting)."""
    return page.evaluate(
        "() => document.querySelector('[data-testid=\"stApp\"]')?.getAttribute('data-test-script-state')"
    )


def not_running(page) -> bool:
    """Whether session A's script is not running now (no waiting)."""
    return script_state(page) == "notRunning"


def begun(page, finished):
    """A look (no waiting) at whether A's action has reached the server: A's script runs, or it is finished."""
    return lambda: script_state(page) == "running" or finished()


def monitored(url: str, second, start, begun, finished, finish) -> dict:
    """Run an action in session A (``start``, then ``finish`` waits for its end) while B loads pages; the numbers.

    B loads the Graph page once ``begun()`` (A's request has reached the server: see the module's doc), then
    again while ``finished()`` (looks at A's page, no waiting) is false, :data:`LOADED_LOADS` times at most;
    the action's load is the median. ``cpu``: CPU seconds per kind of process (:func:`helpers.cpu_used`)
    during the action, ``loads_cpu`` during each of B's loads; ``begun_s``: seconds from ``start`` to ``begun``.
    """
    monitor = HealthProbe(url, period_s=PERIOD_S, timeout_s=60)
    monitor.start()
    port = urlsplit(url).port
    before = cpu_seconds(port)
    started = time.perf_counter()
    start()
    while not begun():
        if time.perf_counter() - started > REMOTE_WAIT_S:
            raise AssertionError(f"session A's action did not reach the server in {REMOTE_WAIT_S} s")
        time.sleep(0.05)
    begun_s = time.perf_counter() - started
    loads: list[float] = []
    loads_cpu: list[dict[str, float]] = []
    while not loads or (len(loads) < LOADED_LOADS and not finished()):
        ahead = cpu_seconds(port)
        loads.append(page_load(second, url))
        loads_cpu.append(cpu_used(ahead, cpu_seconds(port)))
    finish()
    seconds = time.perf_counter() - started
    after = cpu_seconds(port)
    monitor.stop.set()
    monitor.join(timeout=120)
    return {
        "seconds": seconds,
        "begun_s": begun_s,
        "probes": len(monitor.latencies),
        "p50": statistics.median(monitor.latencies),
        "p99": monitor.p99(),
        "max": max(monitor.latencies),
        "failures": monitor.failures[:5],
        "load": statistics.median(loads),
        "loads": loads,
        "cpu": cpu_used(before, after),
        "loads_cpu": loads_cpu,
    }


ACTIONS = ("idle", "rules", "upload", "solve")


def launch_client(browser, tmp_path_factory, name: str, nice: int | None, flags=()):
    """A Chromium started through :data:`CLIENT_LAUNCHER` (niced ``nice``; as is if ``None``), with ``flags``."""
    launcher = tmp_path_factory.mktemp(name) / "chromium"
    launcher.write_text(f"#!{sys.executable}\nCHROMIUM = {CHROMIUM!r}\nNICE = {nice!r}\n{CLIENT_LAUNCHER}")
    launcher.chmod(0o755)
    return browser.browser_type.launch(
        executable_path=str(launcher),
        headless=True,
        args=["--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu", *flags],
    )


@pytest.fixture(scope="module")
def remote_browser(browser, tmp_path_factory):
    """Session A's Chromium: a remote user's machine, run at the lowest priority (:data:`CLIENT_LAUNCHER`)."""
    remote = launch_client(browser, tmp_path_factory, "remote-client", REMOTE_NICE, [REMOTE_CLIENT_FLAG])
    yield remote
    remote.close()


@pytest.fixture(scope="module")
def local_browser(browser, tmp_path_factory):
    """Session B's Chromium: as the suite's, marked so that its CPU seconds are told apart (``browser``)."""
    local = launch_client(browser, tmp_path_factory, "local-client", None, [LOCAL_CLIENT_FLAG])
    yield local
    local.close()


@pytest.fixture(scope="module")
def measured(local_browser, remote_browser, artifacts_dir, tmp_path_factory) -> dict:
    """One fresh server; session A runs the three actions in turn; the monitor's numbers per action."""
    tmp_path = tmp_path_factory.mktemp("health-monitor")
    with streamlit_server(artifacts_dir / "streamlit-health-monitor.log") as url:
        rows = _measure(remote_browser, local_browser, url, tmp_path)
    idle = statistics.median(rows["idle_loads"])
    for action in ACTIONS[1:]:
        rows[action]["ratio"] = rows[action]["load"] / idle  # B's load / its idle median
    (artifacts_dir / "health_monitor.json").write_text(json.dumps(rows, indent=1))
    return rows


def _measure(remote_browser, browser, url: str, tmp_path: Path) -> dict:
    first = remote_browser.new_context(viewport={"width": 1400, "height": 2200})
    second = browser.new_context(viewport={"width": 1400, "height": 2200})
    page = first.new_page()
    page.set_default_timeout(600_000)
    rows: dict[str, Any] = {}
    try:
        page.goto(url)
        page.get_by_role("heading", name="Device placement explorer").first.wait_for()
        wait_idle(page, timeout=REMOTE_WAIT_S)
        go(page, "Devices", timeout=REMOTE_WAIT_S)  # the kernels compile once per server: not part of any action
        metric(page, "Time per sample").wait_for()
        wait_idle(page, timeout=REMOTE_WAIT_S)
        rows["scheduling"] = scheduling(urlsplit(url).port)  # A's browser niced in a group of its own, B's not
        # B's idle loads, interleaved with the actions (other work on the machine drifts): two now, those
        # under the idle monitor, one before the rules and the solve, one after the solve; their median is
        # the reference of every action
        idle_loads = [page_load(second, url) for _ in range(2)]
        rows["idle"] = monitored(url, second, lambda: None, lambda: True, lambda: False, lambda: None)
        idle_loads += rows["idle"]["loads"]

        text = big_graph(UPLOAD_BYTES)
        graph_file = tmp_path / "big.json"
        graph_file.write_text(text)
        page.goto(f"{url}/Graph")
        page.get_by_role("heading", name="Graph").first.wait_for()
        wait_idle(page, timeout=REMOTE_WAIT_S)
        uploader = page.locator('[data-testid="stFileUploader"]', has_text="upload a graph")
        loaded = page.locator('[data-testid="stCaptionContainer"]', has_text="Loaded now").filter(has_text="big.json")

        def upload_done() -> None:
            loaded.first.wait_for()
            wait_idle(page, settle=1.0, timeout=REMOTE_WAIT_S)

        def upload_finished() -> bool:
            return loaded.first.is_visible() and not_running(page)

        rows["upload"] = monitored(
            url,
            second,
            lambda: uploader.locator('input[type="file"]').set_input_files(str(graph_file)),
            begun(page, upload_finished),
            upload_finished,
            upload_done,
        )
        rows["upload"]["bytes"] = len(text)

        # The rules run on a graph of RULE_NODES nodes with 10 kB names (matching is linear in the names'
        # length; the 48 MB graph would take many minutes on 2 cores): uploaded first, not monitored.
        small = big_graph(RULE_NODES * (NAME_CHARS + 200))
        small_file = tmp_path / "rules.json"
        small_file.write_text(small)
        page.goto(f"{url}/Graph")
        page.get_by_role("heading", name="Graph").first.wait_for()
        wait_idle(page, timeout=REMOTE_WAIT_S)
        upload_file(page, uploader.locator('input[type="file"]'), small_file, 300)
        problem = parse_problem(small, "rules.json")
        rules = tuple(("*a*t?e*n[t-z]i*o*n*" + "[0-9]*" * 20, 0.5 + k / 10) for k in range(3))
        query = scenario_to_query(Scenario(f"upload:{problem.graph.digest}", problem.devices, latency_rules=rules))

        def devices_done() -> None:
            metric(page, "Time per sample").wait_for()
            wait_idle(page, settle=1.0, timeout=REMOTE_WAIT_S)

        def devices_finished() -> bool:
            return metric(page, "Time per sample").is_visible() and not_running(page)

        idle_loads.append(page_load(second, url))
        rows["rules"] = monitored(
            url,
            second,
            lambda: page.goto(f"{url}/Devices?{urlencode(query)}"),
            begun(page, devices_finished),
            devices_finished,
            devices_done,
        )
        inception = load_problem(ROOT / "sample_graphs" / f"{SAMPLE}.json")
        devices = inception.devices.with_kind("accelerator", count=16)
        solve_query = scenario_to_query(Scenario(f"sample:{SAMPLE}", devices))
        idle_loads.append(page_load(second, url))
        rows["solve"] = monitored(
            url,
            second,
            lambda: page.goto(f"{url}/Devices?{urlencode(solve_query)}"),
            begun(page, devices_finished),
            devices_finished,
            devices_done,
        )
        idle_loads.append(page_load(second, url))
        rows["idle_loads"] = idle_loads
    finally:
        first.close()
        second.close()
    return rows


@pytest.mark.parametrize("action", ACTIONS)
def test_health_p99_while_one_session_works(measured, action):
    row = measured[action]
    assert not row["failures"], row
    assert row["p99"] < HEALTH_P99_S, f"{action}: health p99 {row['p99']:.2f} s ({row})"


@pytest.mark.parametrize("action", ACTIONS[1:])
def test_second_session_loads_a_page_in_time(measured, action):
    # the idle reference: the median of B's loads with A idle, interleaved with the actions (ten)
    idle = statistics.median(measured["idle_loads"])
    row = measured[action]
    shown = f"{action}: second page load {row['load']:.2f} s = {row['load'] / idle:.2f} x idle {idle:.2f} s"
    assert row["load"] <= LOAD_RATIO * idle, f"{shown} ({row})"
