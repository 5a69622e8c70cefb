"""ui/processes.py: a worker's low priority (a session of its own, its group and itself niced)."""

from __future__ import annotations

import multiprocessing
import os
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
    processes._nice_autogroup(9)
    assert len(calls) == 3 and target.read_text() == "9"
