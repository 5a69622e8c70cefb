"""A closed tab never leaves a solve worker busy (issue 27.1): the session's solve is killed, the pool stays whole.

A fresh ``streamlit run app.py``; a session opens a link to the Devices page with the Inception-like sample on
16 accelerators (an exact DP solve of seconds, in a worker of ``ui/solve_pool.py``) and closes its tab as soon
as the solve's progress bar shows. Within a few seconds the solving worker must be gone (killed), every worker
from before idle (no CPU time between two looks 3 s apart), and the pool at its full size again (the killed
worker replaced by a fresh one, which warms up).
"""

from __future__ import annotations

import re
import time
from pathlib import Path
from urllib.parse import urlencode

import pytest

from placement import load_problem
from placement.scenario import Scenario, scenario_to_query
from ui import solve_pool

from .conftest import streamlit_server
from .helpers import wait_idle

pytestmark = [pytest.mark.browser, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = "ours/inception_wide_inference"
#: CPU ticks (1/100 s) in 3 s above which a worker counts as busy: a tenth of a core; an idle one used 1 once.
BUSY_TICKS = 30


def _processes() -> dict[int, tuple[int, int, int, str]]:
    """pid -> (parent pid, niceness, CPU ticks, command line), read from /proc."""
    out = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:  # ended meanwhile
            continue
        out[int(entry.name)] = (int(fields[1]), int(fields[16]), int(fields[11]) + int(fields[12]), command)
    return out


def _solvers(port: str) -> dict[int, int]:
    """pid -> CPU ticks of the solve workers (niced :data:`ui.solve_pool.SOLVE_NICE`) of the server on ``port``."""
    processes = _processes()
    servers = {pid for pid, (_, _, _, command) in processes.items() if f"--server.port={port}" in command}
    return {
        pid: ticks
        for pid, (parent, nice, ticks, command) in processes.items()
        if parent in servers and nice == solve_pool.SOLVE_NICE and "spawn_main" in command
    }


def test_a_closed_tab_kills_its_solve(browser, artifacts_dir):
    inception = load_problem(ROOT / "sample_graphs" / f"{SAMPLE}.json")
    query = scenario_to_query(Scenario(f"sample:{SAMPLE}", inception.devices.with_kind("accelerator", count=16)))
    with streamlit_server(artifacts_dir / "streamlit-solve-stop.log") as url:
        port = url.rsplit(":", 1)[1]
        page = browser.new_page()
        page.set_default_timeout(300_000)
        page.goto(url)
        page.get_by_role("heading", name="Device placement explorer").first.wait_for()
        wait_idle(page)
        size = solve_pool.solver_count()
        deadline = time.monotonic() + 120
        while len(_solvers(port)) < size and time.monotonic() < deadline:
            time.sleep(0.5)
        before = _solvers(port)
        assert len(before) == size, before
        page.goto(f"{url}/Devices?{urlencode(query)}")
        page.get_by_text(re.compile(r"Exact DP.*: [0-9,]+ of [0-9,]+ ideals")).first.wait_for(
            timeout=120_000
        )  # the progress bar: the solve runs in a worker
        page.close()
        time.sleep(2)
        first = _solvers(port)
        time.sleep(3)
        second = _solvers(port)
        # the workers that were there before (a replacement warming up is not a job left running)
        # and a job left running takes most of a core (about 300 ticks in 3 s); an idle worker once took 1 tick
        busy = {
            p: second[p] - first[p] for p in second if p in first and p in before and second[p] - first[p] > BUSY_TICKS
        }
        assert not busy, f"solve workers still busy after the tab closed: {busy} (CPU ticks in 3 s)"
        assert len(second) == size, second  # the pool is whole again
        replaced = set(before) - set(second)
        (artifacts_dir / "solve_stop.txt").write_text(f"before {before}\nafter {second}\nkilled {replaced}\n")
        assert replaced, "the solving worker was not killed (did the solve end before the tab closed?)"
