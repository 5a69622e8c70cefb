"""How long ``/_stcore/health`` takes while one session does the heaviest things the app allows (issue 27.1).

Starts ``streamlit run app.py`` (headless, its own port) and headless Chromium, then, for each
action below, probes the health endpoint every 0.5 s from another thread while one browser
session runs the action, and prints a table of the probe latencies (p50, p99, max, probes over
0.5 s) and the action's duration. An idle row (no action, 10 s) is the baseline.

Actions:

* ``upload``: the Graph page's uploader gets a graph of N nodes whose names are 10,000 characters
  (about 20 MB with the default N = 2,000): JSON parse, validation, digest, statistics.
* ``rules``: a link to the Devices page on that uploaded graph (``upload:<digest>``) with latency
  multipliers built to be expensive (patterns of stars and classes, names of 10,000 characters).
* ``solve``: a link to the Devices page with the Inception-like sample on 16 accelerators (an
  exact DP solve of seconds).

Usage: ``python scripts/bench_health.py [--nodes 2000] [--rules 3]`` (needs /usr/bin/chromium and
Playwright, like the browser tests).

``--gil`` (no server, no browser): runs, in this process, the steps a server would run for the solve and
the upload (the Inception-like DP solve, first and second; the upload's parse, pickling to and from a
worker, the Graph page's ideal count, layout, figure and node table) while a probe thread sleeps 5 ms in
a loop, and prints each step's seconds and the probe's longest stall: what the step would cost the
server's event loop if it ran in the server process (a stall is the GIL held, or the CPU busy).

``--sessions`` (no server, no browser): why a niced worker slowed the browser (Linux autogroups). Times a
single-thread loop of this process alone and beside two busy-looping background processes (one per core,
like the solve kernel's threads) started three ways: niced 10 in this session (what the server sees of its
workers), niced 10 in a session of their own (what the browser, which Playwright starts in a session of its
own, saw of the workers before 2026-11-26), and in a session of their own through
:func:`ui.processes.background` (its group niced 10 too: the workers now). Prints the median of 5 rounds.

``--demotion`` (no server, no browser): what :func:`ui.processes.demoted_after` buys a short job. Two worker
processes as the pools start them (:func:`ui.processes.background` at ``ui.worker.BACKGROUND_NICE``), both on
one CPU: one runs a long job (a busy loop), the other times the single-thread loop above (a short job, like the
Graph page's layout that a second session's page load waits for). Rows: the short job alone; beside the long
job at the pool's niceness (before 2026-11-26); beside the long job under ``demoted_after`` (past
``LONG_JOB_S`` its group is niced ``LONG_JOB_NICE``). Prints the median of 5 rounds.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from urllib.parse import urlencode

from playwright.sync_api import sync_playwright

from placement import load_problem, parse_problem
from placement.scenario import Scenario, scenario_to_query
from tests.browser.conftest import CHROMIUM, streamlit_server
from tests.browser.helpers import metric, upload_file, wait_idle

ROOT = Path(__file__).resolve().parent.parent
PERIOD_S = 0.5
LIMIT_S = 0.5


class Probe(threading.Thread):
    """Polls the health endpoint every PERIOD_S and records each answer's latency."""

    def __init__(self, url: str) -> None:
        super().__init__(daemon=True)
        self.url = f"{url}/_stcore/health"
        self.latencies: list[float] = []
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.is_set():
            started = time.perf_counter()
            try:
                with urllib.request.urlopen(self.url, timeout=60) as response:
                    response.read()
            except OSError:
                pass
            took = time.perf_counter() - started
            self.latencies.append(took)
            self.stop.wait(max(0.0, PERIOD_S - took))


def big_graph(nodes: int) -> str:
    names = [f"{'attention' if i % 3 else 'mlp'}_{i}_" + "x" * 10_000 for i in range(nodes)]
    data = {
        "maxFPGAs": 4,
        "maxCPUs": 1,
        "maxSizePerFPGA": 1e12,
        "nodes": [
            {
                "id": i,
                "name": names[i],
                "supportedOnFpga": 1,
                "cpuLatency": 2.0,
                "fpgaLatency": 1.0,
                "isBackwardNode": 0,
            }
            for i in range(nodes)
        ],
        "edges": [{"sourceId": i, "destId": i + 1, "cost": 0.1} for i in range(nodes - 1)],
    }
    return json.dumps(data)


def measure(url: str, action) -> tuple[float, list[float]]:
    probe = Probe(url)
    probe.start()
    started = time.perf_counter()
    action()
    seconds = time.perf_counter() - started
    probe.stop.set()
    probe.join(timeout=120)
    return seconds, probe.latencies


def row(name: str, seconds: float, latencies: list[float]) -> str:
    ordered = sorted(latencies)
    p99 = ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))]
    slow = sum(value > LIMIT_S for value in ordered)
    return (
        f"| {name} | {seconds:.1f} | {len(ordered)} | {statistics.median(ordered) * 1000:.0f} | "
        f"{p99 * 1000:.0f} | {ordered[-1] * 1000:.0f} | {slow} |"
    )


class GilProbe(threading.Thread):
    """Sleeps 5 ms in a loop and records how much later than that it woke (the GIL or the CPU held it)."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.stalls: list[float] = [0.0]
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.is_set():
            started = time.perf_counter()
            time.sleep(0.005)
            self.stalls.append(time.perf_counter() - started - 0.005)


def gil_step(name: str, fn):
    """Run ``fn()`` under a :class:`GilProbe`; print a table row; return its value."""
    probe = GilProbe()
    probe.start()
    started = time.perf_counter()
    value = fn()
    seconds = time.perf_counter() - started
    probe.stop.set()
    probe.join()
    stalled = sum(s for s in probe.stalls if s > 0.1)
    print(f"| {name} | {seconds:.2f} | {max(probe.stalls) * 1000:.0f} | {stalled:.2f} |", flush=True)
    return value


def gil_table(nodes: int) -> None:
    """The ``--gil`` table: the solve's and the upload's steps in this process, with the probe's stalls."""
    import pickle  # noqa: PLC0415
    from dataclasses import replace  # noqa: PLC0415

    import pandas as pd  # noqa: PLC0415

    import placement  # noqa: PLC0415
    from placement import viz  # noqa: PLC0415
    from placement.exact.ideals import contract, ideal_bounds  # noqa: PLC0415

    print("| step | seconds | longest stall ms | stalled > 100 ms, s |")
    print("|---|---|---|---|")
    inception = load_problem(ROOT / "sample_graphs" / "ours" / "inception_wide_inference.json")
    problem = replace(inception, devices=inception.devices.with_kind("accelerator", count=16))
    for run in ("first", "second"):
        result = gil_step(f"solve: Inception-like, 16 accelerators ({run})", lambda: placement.solve(problem, "dp"))
    gil_step("evaluate + load figure", lambda: viz.load_figure(placement.evaluate(problem, result.placement)))
    text = big_graph(nodes).encode()
    parsed = gil_step(f"upload: parse {len(text) / 1e6:.0f} MB", lambda: parse_problem(text, "big.json"))
    _ = parsed.graph.digest
    blob = gil_step("upload: pickle the problem (worker side)", lambda: pickle.dumps(parsed))
    graph = gil_step("upload: unpickle it (server side)", lambda: pickle.loads(blob)).graph
    gil_step("Graph page: ideal count", lambda: placement.count_ideals(graph, 1_000_000))
    gil_step("Graph page: ideal bounds", lambda: ideal_bounds(contract(graph)))
    layout = gil_step("Graph page: layout", lambda: viz.dag_layout(graph))
    figure = gil_step("Graph page: figure + JSON", lambda: viz.graph_figure(graph, layout=layout).to_json())
    print(f"(figure JSON: {len(figure) / 1e6:.1f} MB)")
    gil_step("Graph page: node table", lambda: pd.DataFrame(viz.node_rows(graph)))


#: ``--sessions``: how each background process starts (Python run with ``-c``, then a busy loop).
SESSION_SETUPS = {
    "alone (no background)": None,
    "nice 10, this session": "os.nice(10)",
    "nice 10, a session of its own": "os.setsid(); os.nice(10)",
    "ui.processes.background(10)": "from ui.processes import background; background(10)",
}


def _loop_seconds() -> float:
    """Seconds of a fixed single-thread Python loop (the best of two)."""
    best = float("inf")
    for _ in range(2):
        started = time.perf_counter()
        total = 0
        for i in range(6_000_000):
            total += i
        best = min(best, time.perf_counter() - started)
    return best


def sessions_table(rounds: int = 5) -> None:
    """The ``--sessions`` table: the loop's seconds beside two busy background processes, per way of starting them."""
    seconds: dict[str, list[float]] = {name: [] for name in SESSION_SETUPS}
    load = os.getloadavg()[0]
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    for _ in range(rounds):  # interleaved: other work on the machine affects every way alike
        for name, setup in SESSION_SETUPS.items():
            busy = [
                subprocess.Popen([sys.executable, "-c", f"import os\n{setup}\nwhile True: pass"], cwd=ROOT, env=env)
                for _ in range(2 if setup else 0)
            ]
            try:
                time.sleep(0.5)
                seconds[name].append(_loop_seconds())
            finally:
                for process in busy:
                    process.kill()
                    process.wait()
    print(f"load average before: {load:.2f}; {rounds} rounds")
    _print_rounds("background", seconds, "alone (no background)")


def _print_rounds(heading: str, seconds: dict[str, list[float]], alone: str) -> None:
    """A markdown table: per row, the median loop seconds, that over row ``alone``'s, every round's."""
    reference = statistics.median(seconds[alone])
    print(f"| {heading} | loop s (median) | x alone | every round, s |")
    print("|---|---|---|---|")
    for name, values in seconds.items():
        middle = statistics.median(values)
        print(f"| {name} | {middle:.3f} | {middle / reference:.2f} | {', '.join(f'{v:.3f}' for v in values)} |")


_DEMOTION_SCRIPT = """
import os, sys, time
os.sched_setaffinity(0, {CPU})
from ui.processes import background, demoted_after
background({NICE})
if sys.argv[1] == "plain":
    while True:
        pass
with demoted_after({NICE}):
    while True:
        pass
"""

_SHORT_JOB_SCRIPT = """
import os, time
os.sched_setaffinity(0, {CPU})
from ui.processes import background
background({NICE})
time.sleep(1.0)  # the long job's first LONG_JOB_S pass
best = []
for _ in range(3):
    started = time.perf_counter()
    total = 0
    for i in range(6_000_000):
        total += i
    best.append(time.perf_counter() - started)
print(min(best))
"""


def demotion_table(rounds: int = 5) -> None:
    """The ``--demotion`` table: a short job's seconds beside another worker's long job, on one CPU."""
    from ui.worker import BACKGROUND_NICE  # noqa: PLC0415 - imports Streamlit; only this table needs it

    cpu = max(os.sched_getaffinity(0))
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    setups = {
        "alone": None,
        "beside a long job at the pool's niceness": "plain",
        "beside a long job, demoted": "demoted",
    }
    seconds: dict[str, list[float]] = {name: [] for name in setups}
    load = os.getloadavg()[0]
    for _ in range(rounds):  # interleaved: other work on the machine affects every row alike
        for name, mode in setups.items():
            code = _DEMOTION_SCRIPT.replace("{CPU}", f"{{{cpu}}}").replace("{NICE}", str(BACKGROUND_NICE))
            long_job = None if mode is None else subprocess.Popen([sys.executable, "-c", code, mode], cwd=ROOT, env=env)
            try:
                short = _SHORT_JOB_SCRIPT.replace("{CPU}", f"{{{cpu}}}").replace("{NICE}", str(BACKGROUND_NICE))
                out = subprocess.run([sys.executable, "-c", short], cwd=ROOT, env=env, capture_output=True, text=True)
                seconds[name].append(float(out.stdout))
            finally:
                if long_job is not None:
                    long_job.kill()
                    long_job.wait()
    print(f"load average before: {load:.2f}; {rounds} rounds; both workers on CPU {cpu}, niced {BACKGROUND_NICE}")
    _print_rounds("short job", seconds, "alone")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=2000, help="nodes of the uploaded graph (names of 10 kB)")
    parser.add_argument("--rules", type=int, default=3, help="expensive latency multipliers in the link")
    parser.add_argument("--gil", action="store_true", help="the in-process stall table only (no server)")
    parser.add_argument("--sessions", action="store_true", help="the autogroup table only (no server)")
    parser.add_argument("--demotion", action="store_true", help="the long-job demotion table only (no server)")
    args = parser.parse_args()
    if args.demotion:
        demotion_table()
        return
    if args.gil:
        gil_table(args.nodes)
        return
    if args.sessions:
        sessions_table()
        return
    rows = []
    with tempfile.TemporaryDirectory() as tmp, streamlit_server(Path(tmp) / "server.log") as url:
        graph_file = Path(tmp) / "big.json"
        text = big_graph(args.nodes)
        graph_file.write_text(text)
        digest = parse_problem(text, "big.json").graph.digest
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(
                executable_path=CHROMIUM, headless=True, args=["--no-sandbox", "--disable-dev-shm-usage"]
            )
            page = browser.new_context(viewport={"width": 1400, "height": 2200}).new_page()
            page.set_default_timeout(600_000)
            page.goto(f"{url}/Graph")
            page.get_by_role("heading", name="Graph").first.wait_for()
            wait_idle(page)
            rows.append(row("idle (10 s)", *measure(url, lambda: time.sleep(10))))

            def upload() -> None:
                uploader = page.locator('[data-testid="stFileUploader"]', has_text="upload a graph")
                upload_file(page, uploader.locator('input[type="file"]'), graph_file, 600)

            rows.append(
                row(f"upload: {args.nodes} nodes, 10 kB names ({len(text) / 1e6:.0f} MB)", *measure(url, upload))
            )

            problem = parse_problem(text, "big.json")
            rules = [["*a*t?e*n[t-z]i*o*n*" + "[0-9]*" * 20, 0.5 + k / 10] for k in range(args.rules)]
            query = scenario_to_query(
                Scenario(f"upload:{digest}", problem.devices, latency_rules=tuple(map(tuple, rules)))
            )

            def rule_link() -> None:
                page.goto(f"{url}/Devices?{urlencode(query)}")
                metric(page, "Time per sample").wait_for()
                wait_idle(page, settle=1.0)

            rows.append(row(f"rules: {args.rules} expensive patterns on that graph", *measure(url, rule_link)))

            sample = "ours/inception_wide_inference"
            inception = load_problem(ROOT / "sample_graphs" / f"{sample}.json")
            devices = inception.devices.with_kind("accelerator", count=16)
            solve_query = scenario_to_query(Scenario(f"sample:{sample}", devices))

            def solve_link() -> None:
                page.goto(f"{url}/Devices?{urlencode(solve_query)}")
                metric(page, "Time per sample").wait_for()
                wait_idle(page, settle=1.0)

            rows.append(row("solve: Inception-like, 16 accelerators (DP)", *measure(url, solve_link)))
            browser.close()
    print("| action | seconds | probes | p50 ms | p99 ms | max ms | probes > 0.5 s |")
    print("|---|---|---|---|---|---|---|")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
