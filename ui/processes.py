"""What both worker pools share (:mod:`ui.worker`, :mod:`ui.solve_pool`): the one-line error, a bare ``__main__``,
the workers' low priority (:func:`background`), a long job's lower one (:func:`demoted_after`) and the heap given
back to the system after a job (:func:`trim_heap`)."""

from __future__ import annotations

import ctypes
import errno
import os
import sys
import threading
import time
import types
from collections.abc import Iterator
from contextlib import contextmanager

from placement.errors import PlacementError


def rss_bytes(pid: int) -> int | None:
    """Resident memory of process ``pid`` in bytes (Linux ``/proc``; None where unknown or gone)."""
    try:
        with open(f"/proc/{pid}/statm") as handle:
            return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None


def trim_heap() -> bool:
    """Give the C heap's free pages back to the system (glibc's ``malloc_trim(0)``); False where there is none.

    Freed memory stays resident in glibc's arenas: a large upload (tens of MB read, decoded and parsed) raises
    the allocator's mmap threshold, so the next large buffers come from the heap, and what they leave behind is
    kept by the process after every Python object is gone (measured: the server 255 -> 314 MB, the quick-jobs
    workers 66 -> 88 MB, 60 s after a 42.7 MB refused upload, 2026-12-05). ``malloc_trim`` returns every free
    page of every arena (``MADV_DONTNEED`` inside the heap too, glibc 2.8 and later); it takes milliseconds.
    Called by the workers after each job and by the server when its pools are idle.
    """
    if not sys.platform.startswith("linux"):
        return False
    try:
        trim = ctypes.CDLL(None).malloc_trim  # the process's own symbols: the C library it runs on
    except (OSError, AttributeError):  # not glibc (musl has no malloc_trim)
        return False
    trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int
    trim(0)
    return True


class WorkerError(PlacementError):
    """A worker process ended without an answer (one line)."""


@contextmanager
def plain_main() -> Iterator[None]:
    """A bare ``__main__`` while worker processes start.

    ``spawn`` re-runs the parent's ``__main__`` file in each child; in a Streamlit server ``__main__`` is
    the page script being run, which a worker must never execute. The swap lasts while ``submit`` or the
    manager starts a process (the page scripts of other sessions do not read ``sys.modules``).
    """
    saved = sys.modules.get("__main__")
    sys.modules["__main__"] = types.ModuleType("__main__")
    try:
        yield
    finally:
        if saved is not None:
            sys.modules["__main__"] = saved


#: Seconds between two looks of a worker at its parent (:func:`background`): a worker whose server died exits.
PARENT_CHECK_S = 1.0

#: Seconds a job runs at its worker's niceness; past them it gives way to every shorter job (:func:`demoted_after`).
LONG_JOB_S = 0.5

#: Niceness of a worker's scheduling group while its job runs past :data:`LONG_JOB_S`: the lowest.
LONG_JOB_NICE = 19

#: Linux's autogroup file of the calling process: its scheduling group's niceness (one group per session).
AUTOGROUP_FILE = "/proc/self/autogroup"


def background(nice: int) -> None:
    """Schedule the calling worker process ``nice`` below every other session's work, not only the server's.

    Linux's autogroup scheduling (on by default; in effect for processes of the root CPU cgroup) shares the
    CPUs first between sessions, one scheduling group each, and a process's niceness ranks it only within its
    own session. A worker spawned by the server shares the server's session, so its niceness put it behind
    the server but level with the browser (Playwright starts Chromium in a session of its own), another
    user's shell, every other program: a second session's page load, rendered by the browser, took 1.7 to
    1.9 x its idle time while a nice-10 solve ran (issue 27). Measured with two busy-looping nice-10
    processes beside a single-thread loop of another session (``scripts/bench_health.py --sessions``):
    1.6 to 2.0 x its time alone; the same two processes in a session of their own whose group is niced (10,
    once 19): 0.9 to 1.1 x (2026-11-26, three runs on a shared 2-core machine).

    So the worker starts a session of its own (``os.setsid``: it also no longer gets the terminal's Ctrl-C;
    the server ends its daemonic workers itself), nices that session's group (:data:`AUTOGROUP_FILE`) and
    itself (where autogroups are not in effect the process's niceness is what counts). Each step is skipped
    where the system does not allow it. An idle machine still gives the worker every CPU.

    Out of the server's session, a worker no longer gets the hang-up that ends the server when its terminal
    closes, and a quick-jobs worker waits on a queue that never ends: a thread of the worker looks at its
    parent every :data:`PARENT_CHECK_S` and ends the process once the parent has gone.
    """
    try:
        os.setsid()
    except (AttributeError, OSError):  # not POSIX, or already a session leader
        pass
    else:
        watch = threading.Thread(target=_exit_with_parent, args=(os.getppid(),), name="placement-parent", daemon=True)
        watch.start()
    _nice_autogroup(nice)
    try:
        os.nice(nice)
    except (AttributeError, OSError):
        pass


def _exit_with_parent(parent: int) -> None:
    """End this process (at once, no clean-up: it only computes) once its parent is no longer ``parent``."""
    while os.getppid() == parent:
        time.sleep(PARENT_CHECK_S)
    os._exit(1)


def _nice_autogroup(nice: int) -> None:
    """Write ``nice`` to :data:`AUTOGROUP_FILE` (retried: without CAP_SYS_ADMIN one change per 0.1 s machine-wide).

    Only in a session leader: the group is then this process's session's own, never the server's.
    """
    if not hasattr(os, "getsid") or os.getsid(0) != os.getpid():
        return
    for _ in range(20):
        try:
            with open(AUTOGROUP_FILE, "w") as handle:
                handle.write(str(nice))
            return
        except OSError as exc:  # EAGAIN: another process changed a group's niceness in the last 0.1 s
            if exc.errno != errno.EAGAIN:
                return  # no autogroups here (not Linux, or compiled without), or not allowed
            time.sleep(0.05)


@contextmanager
def demoted_after(restore: int, seconds: float = LONG_JOB_S, nice: int = LONG_JOB_NICE) -> Iterator[None]:
    """Run the body; once it has run ``seconds``, nice the worker's scheduling group ``nice``; back to ``restore`` after.

    Short work before long work, whoever asked for it: both pools' workers run at one niceness, so one
    session's long job (rule matching over 20 MB of names, a solve of minutes) took as much of a core as
    another session's quick one (a new graph's parsing and layout, which that user's page waits for). A job
    that runs past ``seconds`` is taken to be long and gives way to every worker still at its pool's niceness;
    at its end the group gets ``restore`` back, for the worker's next job. The group is the worker's own
    (:func:`background` put it in a session of its own): setting its niceness to 0 or more, up or down, needs
    no privilege (``sched(7)``). Where autogroups are not in effect nothing changes. ``scripts/bench_health.py
    --demotion``: a short job beside a long one on one CPU took 1.98 x its time alone, 1.14 x with this.
    """
    finished = threading.Event()
    demoted = threading.Event()

    def demote() -> None:
        if not finished.wait(seconds):
            _nice_autogroup(nice)
            demoted.set()

    timer = threading.Thread(target=demote, name="placement-demote", daemon=True)
    timer.start()
    try:
        yield
    finally:
        finished.set()
        timer.join()
        if demoted.is_set():
            _nice_autogroup(restore)
