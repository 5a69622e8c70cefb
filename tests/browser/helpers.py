"""Playwright helpers shared by the browser tests (Streamlit-specific waits and lookups)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import time
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit

from google.protobuf.message import DecodeError
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

# True once the app has been idle for ``quiet`` ms on end: no script run, and no change of
# stApp's data-test-script-state for that long (a MutationObserver, installed on the first
# poll, stamps every change). One idle-looking moment is not enough: the last elements of a
# long page could still be missing right after the state read "notRunning" (the scenario
# card's button and uploader, seen in CI and locally), and a run cut short by a rerun also
# reads "notRunning" for a moment before the next one starts.
_IDLE_FOR = """(quiet) => {
  const app = document.querySelector('[data-testid="stApp"]');
  if (!app) return false;
  if (window.__stIdleApp !== app) {
    if (window.__stIdleWatch) window.__stIdleWatch.disconnect();
    window.__stIdleApp = app;
    window.__stIdleSince = performance.now();
    window.__stIdleWatch = new MutationObserver(() => { window.__stIdleSince = performance.now(); });
    window.__stIdleWatch.observe(app, {attributes: true, attributeFilter: ['data-test-script-state']});
  }
  const status = document.querySelector('[data-testid="stStatusWidget"]');
  if (status && status.innerText.match(/Running|Stop/)) { window.__stIdleSince = performance.now(); return false; }
  if (app.getAttribute('data-test-script-state') !== 'notRunning') return false;
  return performance.now() - window.__stIdleSince >= quiet;
}"""


def wait_idle(page, settle: float = 0.3, timeout: float = 60.0) -> None:
    """Wait until Streamlit has finished the current script run and stayed idle ``settle`` seconds (``timeout`` at most).

    The quiet time counts from this call at the earliest (a run an action causes may not have
    started yet) and restarts at every change of the app's run state.
    """
    page.evaluate("() => { window.__stIdleSince = performance.now(); }")
    page.wait_for_function(_IDLE_FOR, arg=settle * 1000, timeout=timeout * 1000, polling=50)


# Counts the script runs that end after it is installed: every change of stApp's
# data-test-script-state away from "running". The frontend sets "running" only when the
# server says a run started (a widget change does not set it on sending), so after a widget
# action the state reads "notRunning" until the server has picked the change up.
_WATCH_RUNS = """() => {
  const app = document.querySelector('[data-testid="stApp"]');
  if (window.__stRunWatch) window.__stRunWatch.disconnect();
  window.__stRunsEnded = 0;
  window.__stRunChanges = 0;
  window.__stRunWatch = new MutationObserver((records) => {
    window.__stRunChanges += records.length;
    for (const record of records) if (record.oldValue === 'running') window.__stRunsEnded += 1;
  });
  window.__stRunWatch.observe(app, {attributes: true, attributeOldValue: true,
                                    attributeFilter: ['data-test-script-state']});
}"""


def message_kind(payload, message_class) -> str:
    """The kind of a Streamlit websocket frame: the name of its protobuf's ``type`` field (``new_session``...)."""
    if isinstance(payload, str):
        return "text"
    message = message_class()
    try:
        message.ParseFromString(payload)
    except DecodeError:
        return "undecoded"
    return message.WhichOneof("type") or "untyped"


class SocketLog:
    """The page's websocket frames by kind, as the server sent them: a second witness of the app's script runs.

    The page's run state (stApp's ``data-test-script-state``) can miss a run: when the browser is slow, React
    renders a quick run's start and end together and the attribute never reads "running" (seen in a full suite
    on 2026-11-26, and made 2 times in 30 with Chromium's CPU throttled 20x: a ``new_session``, 26 more
    frames and a ``script_finished`` came, the attribute did not change). The server's own messages say it:
    a run started with ``new_session`` and ended with ``script_finished``. :func:`_wait_for_run` takes either
    witness, and its failures say what went over the wire since the action (:meth:`mark`).
    """

    def __init__(self) -> None:
        self.events: list[tuple[float, str, str]] = []  # (time.monotonic(), "sent"/"received"/"socket", kind)
        self.marked = time.monotonic()

    def attach(self, page) -> None:
        page.on("websocket", self._opened)

    def _opened(self, socket) -> None:
        self.add("socket", "opened")
        socket.on("framesent", lambda payload: self.add("sent", message_kind(payload, BackMsg)))
        socket.on("framereceived", lambda payload: self.add("received", message_kind(payload, ForwardMsg)))
        socket.on("close", lambda _socket: self.add("socket", "closed"))
        socket.on("socketerror", lambda error: self.add("socket", f"error {error}"))

    def add(self, direction: str, kind: str) -> None:
        self.events.append((time.monotonic(), direction, kind))

    def mark(self) -> None:
        self.marked = time.monotonic()

    def _since_mark(self, direction: str) -> list[tuple[float, str]]:
        return [(at - self.marked, kind) for at, way, kind in self.events if way == direction and at >= self.marked]

    def run_seen(self, stage: str) -> bool:
        """Whether, since :meth:`mark`, the server started a run (``stage`` "started") or started and ended one."""
        received = [kind for _, kind in self._since_mark("received")]
        if "new_session" not in received:
            return False
        return stage == "started" or "script_finished" in received[received.index("new_session") :]

    def since_mark(self) -> str:
        """One line: what was sent and received since :meth:`mark` (the kinds that matter, with their times)."""
        parts = []
        for direction in ("sent", "received"):
            frames = self._since_mark(direction)
            named = [f"{kind} at {at:.1f} s" for at, kind in frames if kind not in ("delta", "text")]
            others = len(frames) - len(named)
            listed = ", ".join(named[:6] + ([f"{others} delta/text"] if others else []))
            parts.append(f"{direction} {len(frames)}" + (f" ({listed})" if listed else ""))
        sockets = [f"{kind} at {at:.1f} s" for at, kind in self._since_mark("socket")]
        return "websocket since the action: " + "; ".join(parts) + "; " + (", ".join(sockets) or "socket unchanged")


def open_page(context):
    """A new page in ``context`` with a :class:`SocketLog` (``page.socket_log``), the run waits' second witness."""
    page = context.new_page()
    page.socket_log = SocketLog()
    page.socket_log.attach(page)
    return page


def _arm(page) -> None:
    """Install :data:`_WATCH_RUNS` and mark the page's :class:`SocketLog` (if it has one): an action follows."""
    page.evaluate(_WATCH_RUNS)
    log = getattr(page, "socket_log", None)
    if log is not None:
        log.mark()


@contextmanager
def rerun_after(page, timeout: float = 60.0) -> Iterator[None]:
    """Wait, after the ``with`` block's action, for the script run that action causes to end.

    :func:`wait_idle` alone can return before that run has even started (the app still reads
    "notRunning" while the change travels to the server), so an action right after it can land
    on a page whose previous change is not applied yet. Here a run must start and end after the
    action (seen by a MutationObserver installed before it), then the app must be idle.
    """
    _arm(page)
    yield
    _wait_for_run(page, "ended", timeout)
    wait_idle(page, timeout=max(60.0, timeout))


#: What the page's run-state observer (:data:`_WATCH_RUNS`) counts for each stage of a run.
_DOM_SEEN = {"started": "window.__stRunChanges > 0", "ended": "window.__stRunsEnded > 0"}


def _wait_for_run(page, stage: str, timeout: float) -> None:
    """Wait until a script run has ``stage`` ("started", or "ended") since the action; an ``AssertionError`` if not.

    Either witness will do: the page's run state (:data:`_WATCH_RUNS`) or the server's frames (:class:`SocketLog`).
    """
    log = getattr(page, "socket_log", None)
    deadline = time.monotonic() + timeout
    while not page.evaluate(f"() => {_DOM_SEEN[stage]}"):  # Playwright delivers the frames during the call
        if log is not None and log.run_seen(stage):
            return
        if time.monotonic() > deadline:
            state = page.evaluate(
                "() => [document.querySelector('[data-testid=\"stApp\"]')?.getAttribute('data-test-script-state'),"
                " document.querySelector('[data-testid=\"stStatusWidget\"]')?.innerText]"
            )
            wire = f"; {log.since_mark()}" if log is not None else ""
            raise AssertionError(
                f"no script run {stage} within {timeout} s of the action (run state, status: {state}){wire}"
            )
        page.wait_for_timeout(50)


#: Seconds a widget change has to start a script run before it is made once more.
REACH_S = 20.0


def _change_once_more_if_missed(page, change, undo, missed_text) -> None:
    """Make ``change()`` and wait until its script run starts; once more if none starts within :data:`REACH_S`.

    The retry is for a change that never reaches the server (made on purpose in ``test_browser_helpers.py``; a
    run the page's run state missed is seen by :class:`SocketLog` and needs none). Before it, ``undo()`` brings
    the field back where needed, so that the change is sent again (the same value again sends nothing), and a
    warning says ``missed_text()`` and what went over the wire. A second miss fails the test.
    """
    for attempt in (1, 2):
        _arm(page)
        change()
        try:
            _wait_for_run(page, "started", REACH_S)
            return
        except AssertionError as missed:
            if attempt == 2:
                raise
            warnings.warn(f"{missed_text()}: {missed}", stacklevel=3)
            undo()


def set_number(page, field, value: str, timeout: float = 60.0) -> None:
    """Type ``value`` into a number field, commit it (Enter) and wait for the run it causes.

    ``field``: the field's label (exact), or a locator of the field. The field must not show ``value`` already.
    If no run starts within :data:`REACH_S`, the field gets its old value back (and that value's run, if any),
    then ``value`` once more, with a warning (:func:`_change_once_more_if_missed`). ``timeout``: seconds the run
    may take once it has started.
    """
    box = page.get_by_label(field, exact=True) if isinstance(field, str) else field
    before = box.input_value()
    _change_once_more_if_missed(
        page,
        lambda: _type_and_commit(box, value),
        lambda: _act_and_settle(page, lambda: _type_and_commit(box, before)),
        lambda: f"{field} = {value} typed again (it shows {box.input_value()!r})",
    )
    _wait_for_run(page, "ended", timeout)
    wait_idle(page, timeout=max(60.0, timeout))


def _type_and_commit(box, text: str) -> None:
    box.fill(text)
    box.press("Enter")


def _act_and_settle(page, action, reach: float = 5.0) -> None:
    """Do ``action()``; if a script run follows within ``reach`` s, wait for it to end; then wait until idle.

    For the first half of a retry, whose change the page may or may not send (see :func:`set_number`).
    """
    _arm(page)
    action()
    try:
        _wait_for_run(page, "started", reach)
    except AssertionError:
        pass  # the page held no other value: nothing was sent
    else:
        _wait_for_run(page, "ended", 60.0)
    wait_idle(page)


def slider_thumb(page, label: str):
    """The range input of the first slider whose label contains ``label``."""
    return page.locator('[data-testid="stSlider"]', has_text=label).locator('input[type="range"]').first


def step_slider(page, label: str, target: int, on_step=None, steps: int = 40) -> None:
    """Press an arrow key on the slider labelled ``label`` until it shows ``target``, one press per script run.

    Each press waits for the run it causes to end and the app to be idle (like a slow drag; a press while the
    previous run is still on its way had once left a count at 0). ``on_step(shown)``, if given, is called after
    each press's run with the value the slider shows.

    If no run starts within :data:`REACH_S` of a press, the step is made once more, with a warning that says
    what the slider showed (:func:`_change_once_more_if_missed`): the same key if the slider did not move, or
    the opposite key and then the key if it moved but its value did not reach the server.
    """
    for _ in range(steps):
        value = int(slider_thumb(page, label).input_value())
        if value == target:
            return
        _step_slider_once(page, label, value, "ArrowRight" if value < target else "ArrowLeft")
        if on_step is not None:
            on_step(int(slider_thumb(page, label).input_value()))
    raise AssertionError(f"{label}: could not reach {target} in {steps} presses")


def _step_slider_once(page, label: str, value: int, key: str) -> None:
    """One press of ``key`` on the slider showing ``value``, and its script run (see :func:`step_slider`)."""
    thumb = slider_thumb(page, label)
    back = "ArrowLeft" if key == "ArrowRight" else "ArrowRight"

    def press(which: str) -> None:
        thumb.focus()
        thumb.press(which)

    def undo() -> None:
        if int(thumb.input_value()) != value:  # moved on screen, not on the server: back (sent or not)
            _act_and_settle(page, lambda: press(back))

    _change_once_more_if_missed(
        page,
        lambda: press(key),
        undo,
        lambda: f"{label} {value}: pressed {key} again (the slider showed {thumb.input_value()})",
    )
    _wait_for_run(page, "ended", 60.0)
    wait_idle(page)


def upload_file(page, file_input, path, timeout: float = 60.0) -> None:
    """Give ``file_input`` the file at ``path`` and wait for the run the upload causes.

    In about one run in ten, after other tests on the same server, the browser dropped the
    selection: no upload and no run followed in 60 s. The selection is then made once more
    (with a warning that says so); a second miss fails the test.
    """
    try:
        with rerun_after(page, timeout=min(timeout, 20.0)):
            file_input.set_input_files(str(path))
    except AssertionError as first:
        warnings.warn(f"upload of {Path(path).name} made again: {first}", stacklevel=2)
        with rerun_after(page, timeout=timeout):
            file_input.set_input_files(str(path))


def choose_typed(page, label: str, option: str) -> None:
    """Pick ``option`` (its shown text contains it) in the selectbox labelled ``label``."""
    box = page.locator('[data-testid="stSelectbox"]', has_text=label).first
    box.click()
    page.keyboard.type(option)  # filters the (virtualised) list down to the option
    page.get_by_role("option").filter(has_text=option).first.click()


def go(page, name: str, timeout: float = 60.0) -> None:
    """Navigate with the sidebar (keeps the session, unlike loading a URL)."""
    page.locator('[data-testid="stSidebarNav"]').get_by_role("link", name=name, exact=True).click()
    path = name.replace(" ", "_")  # "Parallel plan" -> /Parallel_plan
    page.wait_for_url(re.compile(rf"/{path}(\?.*)?$"))  # the query carries the scenario
    page.get_by_role("heading", name=re.compile(name)).first.wait_for()
    wait_idle(page, timeout=timeout)


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


#: The probe loop, run in a process of its own: one line per answer, ``latency<TAB>failure or empty``.
_PROBE_SCRIPT = """
import sys, time, urllib.request
url, period, timeout = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
while True:
    started = time.perf_counter()
    failure = ""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            body = response.read().decode().strip()
        if body != "ok":
            failure = body[:80]
    except OSError as exc:
        failure = str(exc)[:80]
    took = time.perf_counter() - started
    print(f"{took!r}\t{failure.replace(chr(9), ' ').replace(chr(10), ' ')}", flush=True)
    time.sleep(max(0.0, period - took))
"""


class HealthProbe:
    """Probes ``/_stcore/health`` every ``period_s`` and records each answer's latency (and failures).

    The probes run in a child process: a thread of the test process would share its GIL with
    Playwright's driver (a 40 MB ``set_input_files`` holds it), and that delay is not the server's.
    Same use as a thread: ``start()``, ``stop.set()``, ``join()``, then ``latencies`` and ``failures``.
    """

    def __init__(self, url: str, period_s: float, timeout_s: float) -> None:
        self.args = [f"{url}/_stcore/health", str(period_s), str(timeout_s)]
        self.latencies: list[float] = []
        self.failures: list[str] = []
        self.stop = threading.Event()
        self._process: subprocess.Popen | None = None

    def start(self) -> None:
        self._process = subprocess.Popen(
            [sys.executable, "-c", _PROBE_SCRIPT, *self.args], stdout=subprocess.PIPE, text=True
        )

    def join(self, timeout: float | None = None) -> None:
        """Stop the child (once ``stop`` is set, or now) and read its answers."""
        if self._process is None:
            return
        self._process.terminate()
        out, _ = self._process.communicate(timeout=timeout)
        self._process = None
        for line in out.splitlines():
            took, _, failure = line.partition("\t")
            self.latencies.append(float(took))
            if failure:
                self.failures.append(failure)

    def p99(self) -> float:
        ordered = sorted(self.latencies)
        return ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))]


#: A switch Chromium ignores, given to the Chromium that stands for a remote user's machine: it tells
#: :func:`cpu_seconds` that browser's processes from the others (in ``/proc/<pid>/cmdline``).
REMOTE_CLIENT_FLAG = "--placement-remote-client"
LOCAL_CLIENT_FLAG = "--placement-local-client"


def _descendants(port: int | None = None) -> dict[int, tuple[str, list[str]]]:
    """Each descendant of this process, with its kind (see :func:`cpu_seconds`) and ``/proc/<pid>/stat``'s fields
    after the command's name (field 3 of proc(5) first). Linux; empty without ``/proc``."""
    watched = "" if port is None else f"--server.port={port}"

    def server(pid: int) -> bool:
        return "streamlit" in names.get(pid, "") and "run" in names.get(pid, "")

    parents: dict[int, int] = {}
    stats: dict[int, list[str]] = {}
    names: dict[int, str] = {}
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            names[int(entry.name)] = (entry / "cmdline").read_bytes().decode(errors="replace")
        except (OSError, IndexError, ValueError):
            continue  # ended meanwhile
        parents[int(entry.name)] = int(fields[1])
        stats[int(entry.name)] = fields

    def ancestors(pid: int) -> list[int]:
        line = []
        while pid in parents and pid > 1:
            pid = parents[pid]
            line.append(pid)
        return line

    me = os.getpid()
    seen: dict[int, tuple[str, list[str]]] = {}
    for pid, fields in stats.items():
        line = ancestors(pid)
        if me not in line:
            continue
        servers = [up for up in (pid, *line) if server(up)]
        if servers:
            ours = watched in names[servers[0]]
            kind = ("server" if servers[0] == pid else "workers") if ours else "other servers"
        elif any(REMOTE_CLIENT_FLAG in names.get(up, "") for up in (pid, *line)):
            kind = "remote browser"
        elif any(LOCAL_CLIENT_FLAG in names.get(up, "") for up in (pid, *line)):
            kind = "browser"
        elif any("chrom" in names.get(up, "") for up in (pid, *line)):
            # by its ancestors too: a closed page's renderer, a zombie until reaped, has an empty cmdline
            kind = "other browsers"
        else:
            kind = "other"
        seen[pid] = kind, fields
    return seen


def cpu_seconds(port: int | None = None) -> dict[int, tuple[str, float, float]]:
    """CPU seconds used so far by each descendant of this process: its kind, its own, its reaped children's.

    Kinds: ``server`` (the ``streamlit run`` process serving ``port``; any, if ``None``), ``workers`` (its
    descendants: both pools' worker processes), ``other servers`` (any other ``streamlit run`` and its
    descendants: the suite's shared server), ``remote browser`` (a Chromium started with
    :data:`REMOTE_CLIENT_FLAG`, its launcher and their descendants: the monitored test's session A), ``browser``
    (the same with :data:`LOCAL_CLIENT_FLAG`: session B), ``other browsers`` (every other Chromium process: the
    suite's shared one), ``other`` (Playwright's driver, probes). Linux; empty without ``/proc``. See
    :func:`cpu_used`.
    """
    tick = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    # fields 14 and 15 (utime, stime), 16 and 17 (cutime, cstime: the children it has waited for)
    return {
        pid: (kind, (int(f[11]) + int(f[12])) / tick, (int(f[13]) + int(f[14])) / tick)
        for pid, (kind, f) in _descendants(port).items()
    }


def wait_workers_quiet(app_url: str, quiet: float = 1.0, timeout: float = 120.0) -> float:
    """Wait until the app's worker processes (both pools) have used no CPU for ``quiet`` s; the seconds it took.

    For work the app does in the background, out of the page's sight (the live table's build, a new worker's
    warm-up): it is done when its worker stops using CPU. Linux (``/proc``); without it, returns after ``quiet`` s.
    """
    port = urlsplit(app_url).port
    started = time.monotonic()
    used, still_since = -1.0, started
    while True:
        now = time.monotonic()
        total = sum(own + reaped for kind, own, reaped in cpu_seconds(port).values() if kind == "workers")
        if total != used:
            used, still_since = total, now
        elif now - still_since >= quiet:
            return now - started
        if now - started > timeout:
            raise AssertionError(f"the app's workers were still busy after {timeout} s ({used:.1f} CPU s so far)")
        time.sleep(0.1)


def scheduling(port: int | None = None) -> dict[str, dict[str, list]]:
    """Per kind of descendant (see :func:`cpu_seconds`): the processes' nice values, CPUs and autogroups (Linux).

    ``cpus``: the distinct CPU sets the processes may run on (their affinity). ``autogroups``: the distinct lines
    of ``/proc/<pid>/autogroup`` (``/autogroup-<id> nice <n>``); empty where autogroups are not compiled in.
    """
    found: dict[str, dict[str, set]] = {}
    for pid, (kind, fields) in _descendants(port).items():
        row = found.setdefault(kind, {"processes": set(), "nice": set(), "cpus": set(), "autogroups": set()})
        row["processes"].add(pid)
        row["nice"].add(int(fields[16]))  # field 19
        try:
            row["cpus"].add(tuple(sorted(os.sched_getaffinity(pid))))
        except OSError:
            pass  # ended meanwhile
        try:
            row["autogroups"].add(Path(f"/proc/{pid}/autogroup").read_text().strip())
        except OSError:
            pass
    return {
        kind: {
            "processes": len(row["processes"]),
            "nice": sorted(row["nice"]),
            "cpus": [list(cpus) for cpus in sorted(row["cpus"])],
            "autogroups": sorted(row["autogroups"]),
        }
        for kind, row in found.items()
    }


def cpu_used(
    before: dict[int, tuple[str, float, float]], after: dict[int, tuple[str, float, float]]
) -> dict[str, float]:
    """CPU seconds per kind between two :func:`cpu_seconds` calls.

    Per kind, the sum over the processes at ``after`` minus the sum at ``before``, each process counted with the
    children it has reaped: a process that ended meanwhile (B's renderer, one per page) moved its seconds to its
    parent's, of its own kind (a server's children are its workers). Seconds of a process whose parent is not
    watched (or has not reaped it yet) are lost.
    """
    kinds = ("remote browser", "browser", "other browsers", "server", "workers", "other servers", "other")
    totals = dict.fromkeys(kinds, 0.0)
    for sign, snapshot in ((-1, before), (1, after)):
        for kind, own, children in snapshot.values():
            totals[kind] += sign * own
            totals["workers" if kind == "server" else kind] += sign * children
    return {kind: round(seconds, 2) for kind, seconds in totals.items()}


#: JavaScript: the text of every metric value and label (and each element inside a value) cut by its box.
CLIPPED_METRICS_JS = """() => Array.from(document.querySelectorAll(
    '[data-testid="stMetricValue"], [data-testid="stMetricValue"] *, [data-testid="stMetricLabel"] p'))
  .filter((el) => el.scrollWidth > el.clientWidth + 1 || getComputedStyle(el).textOverflow === 'ellipsis')
  .map((el) => el.innerText)"""


#: The graph scenario's charts: every Plotly chart outside the transformer scenario's section
#: (``ui.transformer_view.SECTION_KEY``), in page order.
GRAPH_CHARTS = '[data-testid="stPlotlyChart"]:not(.st-key-transformer_scenario [data-testid="stPlotlyChart"])'


def graph_charts(page):
    """The page's charts of the graph scenario (the transformer scenario's section, drawn first, left out)."""
    return page.locator(GRAPH_CHARTS)
