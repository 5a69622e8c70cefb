"""placement.deadline's CPU-time limits (issue 45.1): the same work whatever the machine's load."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import placement
from placement.deadline import WorkClock, cpu_time_limits, limit_clock
from placement.errors import PlacementError
from placement.ip.common import Deadline

ROOT = Path(__file__).resolve().parent.parent


def _spin(seconds: float) -> None:
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass


def test_wall_clock_outside_the_context():
    assert limit_clock() is None
    deadline = Deadline.after(5.0)
    assert not deadline.cpu and deadline.guard == float("inf")


def test_waiting_costs_no_cpu_time_but_work_does():
    with cpu_time_limits(WorkClock(4.0, 60.0)):
        deadline = Deadline.after(1.0)
    assert deadline.cpu
    time.sleep(0.3)  # a process waiting for a busy core spends no CPU time
    assert deadline.left() > 0.9
    _spin(0.4)
    assert deadline.left() < 0.65
    share = deadline.share(0.5)
    assert share.cpu and share.guard == deadline.guard and share.at <= deadline.at


def test_the_wall_clock_guard_stops_a_starved_deadline():
    with cpu_time_limits(WorkClock(1.0, 0.0)):
        deadline = Deadline.after(0.2)
    time.sleep(0.25)
    assert deadline.passed and deadline.left() == 0.0
    with pytest.raises(PlacementError, match="factor >= 1"):
        WorkClock(0.5, 0.0)


def test_the_context_is_restored():
    with cpu_time_limits():
        assert limit_clock() == WorkClock()
    assert limit_clock() is None


def test_a_cpu_limit_stops_highs():
    problem = placement.load_problem(ROOT / "sample_graphs/throughput/layer/bert24_training.json")
    with cpu_time_limits():
        started = time.process_time()
        result = placement.solve(problem, "ip", time_limit=0.05, warm_start=True)
        spent = time.process_time() - started
    assert result.status in ("feasible", "no solution") and spent < 5.0


# A child solves the same IP twice, stopped (SIGSTOP) for STOPPED_S right after it says "go": a stand-in for
# a niced worker waiting for a core. A 2 s wall-clock limit runs out while it waits; a 2 s CPU limit does not.
STOPPED_S = 3.0
CHILD = """
import json, sys, placement
from placement.deadline import cpu_time_limits
problem = placement.load_problem(sys.argv[1])
placement.solve(problem, "ip", time_limit=60)  # loads what a first solve loads
for cpu in (False, True):
    print("go", flush=True)
    sys.stdin.readline()
    if cpu:
        with cpu_time_limits():
            result = placement.solve(problem, "ip", time_limit=2.0)
    else:
        result = placement.solve(problem, "ip", time_limit=2.0)
    print(json.dumps([cpu, str(result.status)]), flush=True)
"""


@pytest.mark.skipif(not hasattr(signal, "SIGSTOP"), reason="POSIX signals")
def test_a_stopped_process_still_proves_under_a_cpu_limit():
    graph = ROOT / "sample_graphs/throughput/layer/bert24_training.json"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(graph)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env
    )
    assert child.stdin is not None and child.stdout is not None
    statuses = {}
    try:
        for _ in range(2):
            assert child.stdout.readline().strip() == "go"
            child.stdin.write("\n")
            child.stdin.flush()
            time.sleep(0.05)
            child.send_signal(signal.SIGSTOP)
            time.sleep(STOPPED_S)
            child.send_signal(signal.SIGCONT)
            cpu, status = json.loads(child.stdout.readline())
            statuses[cpu] = status
    finally:
        child.kill()
        child.wait()
    assert statuses[True] == "optimal"
    assert statuses[False] != "optimal"  # the wall clock ran out while the process waited
