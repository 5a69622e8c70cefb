"""ui/processes.py: a worker's low priority (a session of its own, its group and itself niced)."""

from __future__ import annotations

import multiprocessing
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ui import processes


def _priority(nice: int) -> tuple[bool, int, str]:
    """In a fresh process: :func:`processes.background`, then (session leader?, niceness, autogroup line)."""
    processes.background(nice)
    group = Path(processes.AUTOGROUP_FILE)
    return os.getsid(0) == os.getpid(), os.nice(0), group.read_text().strip() if group.exists() else ""


@pytest.mark.skipif(not hasattr(os, "setsid"), reason="POSIX sessions")
def test_background_moves_the_process_to_a_niced_session_of_its_own():
    context = multiprocessing.get_context("spawn")
    with context.Pool(1) as pool:
        leader, nice, group = pool.apply(_priority, (7,))
    assert leader  # its own session: under Linux's autogroups its own scheduling group
    assert nice >= os.nice(0) + 7
    if group:  # a kernel with autogroups: the group's niceness, "/autogroup-<n> nice <k>"
        assert group.endswith(f"nice {7}"), group


def test_background_where_nothing_is_allowed_does_not_raise(monkeypatch, tmp_path):
    def refused(*_):
        raise PermissionError("not allowed")

    monkeypatch.setattr(os, "setsid", refused)
    monkeypatch.setattr(os, "nice", refused)
    monkeypatch.setattr(processes, "AUTOGROUP_FILE", str(tmp_path / "missing" / "autogroup"))
    processes.background(5)  # each step skipped


def test_autogroup_write_retries_while_the_kernel_says_again(monkeypatch, tmp_path):
    target = tmp_path / "autogroup"
    calls = []
    real_open = open

    def flaky_open(path, mode="r", *args, **kwargs):
        if str(path) == str(target):
            calls.append(mode)
            if len(calls) < 3:
                raise BlockingIOError(11, "Resource temporarily unavailable")  # EAGAIN
        return real_open(path, mode, *args, **kwargs)

    monkeypatch.setattr(processes, "AUTOGROUP_FILE", str(target))
    monkeypatch.setattr("builtins.open", flaky_open)
    monkeypatch.setattr(os, "getsid", lambda _: os.getpid())  # as in a worker: a session leader
    processes._nice_autogroup(9)
    assert len(calls) == 3 and target.read_text() == "9"


_ORPHAN_SCRIPT = """
import multiprocessing, sys, time
from pathlib import Path

def child(ready):
    from ui import processes
    processes.background(0)
    Path(ready).write_text("ready")
    time.sleep(600)

if __name__ == "__main__":
    process = multiprocessing.get_context("spawn").Process(target=child, args=(sys.argv[1],))
    process.start()
    print(process.pid, flush=True)
    time.sleep(600)
"""


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.skipif(not Path("/proc/self/stat").exists() or not hasattr(os, "setsid"), reason="Linux /proc")
def test_a_worker_whose_parent_died_exits(tmp_path):
    """Out of the server's session a worker gets no hang-up: it ends itself once its parent has gone."""
    script = tmp_path / "parent.py"
    script.write_text(_ORPHAN_SCRIPT)
    ready = tmp_path / "ready"
    root = Path(__file__).resolve().parents[1]
    parent = subprocess.Popen(
        [sys.executable, str(script), str(ready)],
        cwd=root,
        env=dict(os.environ, PYTHONPATH=str(root)),
        stdout=subprocess.PIPE,
        text=True,
    )
    child = 0
    try:
        child = int(parent.stdout.readline())
        deadline = time.monotonic() + 120
        while not ready.exists():
            assert time.monotonic() < deadline and parent.poll() is None, "the worker never started"
            time.sleep(0.1)
        assert _alive(child)
        parent.kill()
        parent.wait()
        deadline = time.monotonic() + 10 * processes.PARENT_CHECK_S
        while _alive(child) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not _alive(child), "the orphaned worker kept running"
    finally:
        parent.kill()
        if child and _alive(child):
            os.kill(child, signal.SIGKILL)


def _demotions(nice: int, job_s: float, after_s: float) -> tuple[str, str, str]:
    """In a fresh worker (:func:`processes.background` ``nice``): the autogroup line before a job of ``job_s``
    seconds under :func:`processes.demoted_after` (``after_s``), near its end, and after it."""
    processes.background(nice)
    group = Path(processes.AUTOGROUP_FILE)
    if not group.exists():
        return "", "", ""
    before = group.read_text().strip()
    with processes.demoted_after(nice, seconds=after_s):
        time.sleep(job_s)
        during = group.read_text().strip()
    return before, during, group.read_text().strip()


@pytest.mark.skipif(not hasattr(os, "setsid"), reason="POSIX sessions")
@pytest.mark.parametrize(("job_s", "demoted"), [(0.05, False), (0.6, True)])
def test_a_long_job_gives_way_and_its_worker_gets_its_niceness_back(job_s, demoted):
    context = multiprocessing.get_context("spawn")
    with context.Pool(1) as pool:
        before, during, after = pool.apply(_demotions, (7, job_s, 0.2))
    if not before:
        pytest.skip("no autogroups on this kernel")
    assert before.endswith("nice 7") and after.endswith("nice 7"), (before, after)
    assert during.endswith(f"nice {processes.LONG_JOB_NICE}" if demoted else "nice 7"), during


def test_demotion_where_autogroups_are_missing_does_not_raise(monkeypatch, tmp_path):
    monkeypatch.setattr(processes, "AUTOGROUP_FILE", str(tmp_path / "missing" / "autogroup"))
    with processes.demoted_after(9, seconds=0.0):
        time.sleep(0.05)


def test_a_process_that_leads_no_session_never_nices_its_group(monkeypatch, tmp_path):
    """The group of a process that is not its session's leader is its parent's (the server's): left alone."""
    target = tmp_path / "autogroup"
    monkeypatch.setattr(processes, "AUTOGROUP_FILE", str(target))
    monkeypatch.setattr(os, "getsid", lambda _: os.getpid() + 1)
    processes._nice_autogroup(19)
    with processes.demoted_after(9, seconds=0.0):
        time.sleep(0.05)
    assert not target.exists()


def _fragmented_then_trimmed() -> tuple[bool, int, int]:
    """In a fresh process: free 200 MB of small buffers but every 500th, then trim; (trimmed?, rss before, after)."""
    buffers = [bytes(1000) for _ in range(200_000)]
    kept = buffers[::500]  # one in 500 kept: the heap's top cannot shrink, its free pages stay resident
    del buffers
    before = processes.rss_bytes(os.getpid()) or 0
    trimmed = processes.trim_heap()
    after = processes.rss_bytes(os.getpid()) or 0
    assert kept
    return trimmed, before, after


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc_trim, /proc")
def test_trim_heap_gives_the_free_pages_of_a_fragmented_heap_back():
    """Issue 45.2: what a job freed stays resident in the C heap until it is trimmed."""
    context = multiprocessing.get_context("spawn")
    with context.Pool(1) as pool:
        trimmed, before, after = pool.apply(_fragmented_then_trimmed)
    if not trimmed:
        pytest.skip("no malloc_trim in this C library")
    assert before - after > 150 << 20, (before >> 20, after >> 20)


def test_trim_heap_elsewhere_is_false(monkeypatch):
    monkeypatch.setattr(sys, "platform", "darwin")
    assert processes.trim_heap() is False
