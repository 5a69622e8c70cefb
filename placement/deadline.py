"""A wall-clock deadline for a whole command (issue 27.2: the CLI's ``--deadline``).

:func:`deadline` bounds a command's wall clock: past it the code running in the main thread gets a
:class:`DeadlineError` (one line, exit 2 in the CLI); :func:`remaining` gives what is left, for methods that
take a time limit (they then return their best feasible result instead); :func:`process_age` counts from the
process start, so a command line's imports count too. Re-exported by :mod:`placement.budget`.

:func:`cpu_time_limits` makes the solvers' ``time_limit`` count this process's CPU seconds instead of wall
seconds, the same work whatever the machine's load (the app's solve workers run under it: a niced worker
waiting for a busy core no longer runs out of time), with a wall-clock guard (:class:`WorkClock`) beside it.
"""

from __future__ import annotations

import math
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from .errors import PlacementError


class DeadlineError(PlacementError):
    """The command ran past its ``--deadline`` (one line)."""


def process_age() -> float:
    """Wall-clock seconds since this process started (Linux ``/proc``; 0.0 where unknown).

    A command-line ``--deadline`` counts from the process start, so the interpreter's imports count too.
    """
    try:
        with open("/proc/self/stat") as handle:
            started_ticks = int(handle.read().rsplit(")", 1)[1].split()[19])
        with open("/proc/uptime") as handle:
            uptime = float(handle.read().split()[0])
        return max(0.0, uptime - started_ticks / os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError):
        return 0.0


def remaining(deadline_at: float | None) -> float:
    """Seconds left before ``deadline_at`` (a :func:`time.monotonic` value); inf without a deadline."""
    return math.inf if deadline_at is None else max(0.0, deadline_at - time.monotonic())


#: Seconds between two deadline errors once the deadline has passed.
REPEAT_S = 0.25

#: Seconds past a hard deadline before the process is ended (the main thread may be in a long C call).
HARD_GRACE = 1.0


@contextmanager
def deadline(seconds: float | None, what: str = "the command", hard: bool = False) -> Iterator[float | None]:
    """Raise :class:`DeadlineError` in the main thread once ``seconds`` of wall clock have passed.

    Yields the :func:`time.monotonic` value of the deadline (None without one). Uses ``SIGALRM``, so it
    only arms in the main thread (elsewhere it only yields the deadline, for :func:`remaining`); code
    inside a long C call sees the error when the call returns. With ``hard`` (a command-line process
    only: it ends the interpreter), a timer thread writes the line to stderr and exits with status 2
    :data:`HARD_GRACE` seconds past the deadline if the main thread has not stopped by then.
    """
    if seconds is None or not math.isfinite(seconds):  # an infinite deadline is none
        yield None
        return
    at = time.monotonic() + seconds
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "setitimer"):
        yield at
        return

    message = f"{what} ran past its deadline of {seconds:g} s (--deadline) and was stopped"

    def expired(signum: int, frame: Any) -> None:
        raise DeadlineError(message)

    def end_process() -> None:
        sys.stderr.write(f"error: {message}\n")
        sys.stderr.flush()
        os._exit(2)

    timer = threading.Timer(seconds + HARD_GRACE, end_process) if hard else None
    if timer is not None:
        timer.daemon = True
        timer.start()
    previous = signal.signal(signal.SIGALRM, expired)
    # fires again every REPEAT_S past the deadline: code that catches PlacementError (e.g. compare, which
    # records a failed method and goes on) cannot swallow the deadline
    signal.setitimer(signal.ITIMER_REAL, max(seconds, 1e-3), REPEAT_S)
    try:
        yield at
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        if timer is not None:
            timer.cancel()


@dataclass(frozen=True)
class WorkClock:
    """Time limits in CPU seconds of this process, each with a wall-clock guard of ``factor * limit + extra``.

    Under :func:`cpu_time_limits` a solve's ``time_limit`` of ``T`` seconds stops once the process has spent
    ``T`` CPU seconds (every thread counted), or once ``factor * T + extra`` wall seconds have passed, which
    only a starved process reaches: the answer is then "feasible" with its gap, as with any limit.

    Examples
    --------
    >>> WorkClock(4.0, 60.0).guard(30.0)
    180.0
    """

    factor: float = 4.0
    extra: float = 60.0

    def __post_init__(self) -> None:
        if not (math.isfinite(self.factor) and self.factor >= 1 and math.isfinite(self.extra) and self.extra >= 0):
            raise PlacementError(
                f"a wall-clock guard needs factor >= 1 and extra >= 0 (got {self.factor}, {self.extra})"
            )

    def guard(self, seconds: float) -> float:
        """Wall-clock seconds allowed to a limit of ``seconds`` CPU seconds."""
        return self.factor * seconds + self.extra


#: The clock of the solvers' time limits in the current context: None (wall clock) or a :class:`WorkClock`.
_LIMIT_CLOCK: ContextVar[WorkClock | None] = ContextVar("placement_limit_clock", default=None)


def limit_clock() -> WorkClock | None:
    """The :class:`WorkClock` of :func:`cpu_time_limits` in force here, or None (limits are wall clock)."""
    return _LIMIT_CLOCK.get()


@contextmanager
def cpu_time_limits(clock: WorkClock | None = None) -> Iterator[WorkClock]:
    """Inside, solvers' time limits count this process's CPU time, with ``clock``'s wall-clock guard.

    Meant for a process that runs one solve at a time (the app's solve workers, a command line): the CPU
    time of every thread of the process counts, so a solve's own threads (HiGHS, the DP kernel) count too.
    """
    clock = clock or WorkClock()
    token = _LIMIT_CLOCK.set(clock)
    try:
        yield clock
    finally:
        _LIMIT_CLOCK.reset(token)
