"""Every solve in a pre-warmed worker process of its own (issue 27.1): the server process never solves.

A solve's Python parts (the lattice's contraction and enumeration, the kernel inputs, the floors, the
traceback) hold the GIL, and the first solve in a process loads (or compiles) numba kernels: a thread
sleeping 5 ms beside an Inception-like first solve waited up to 1.35 s at once in one run and 0.11 s in
another (the probe of ``scripts/bench_health.py --gil``, 2026-11-25). In the server process that is the event loop
(``/_stcore/health``) and every other session waiting. So the pages' solves go to a
dedicated pool of worker processes, separate from :mod:`ui.worker`'s quick-jobs pool, so that a long solve
never queues another session's rule matching or upload parsing.

* **Pre-warmed.** Each worker imports :mod:`placement` and runs a small solve of each kind the pages start
  with (:func:`warm`) as soon as it starts, so that the first real solve pays neither the imports nor
  numba's cache loading. The pool starts with the server's first script run (:func:`start`).
* **Niced, in a session of their own.** Workers run :data:`SOLVE_NICE` below the server and, in a session of
  their own whose scheduling group is niced as much (:func:`ui.processes.background`), below the browser and
  every other program too (the quick-jobs pool: :data:`ui.worker.BACKGROUND_NICE`): on a busy machine the
  others are scheduled first; on an idle one the kernel uses every CPU (no affinity is set).
* **One job per session.** The session's lock serialises its solves; a worker serves one job at a time.
* **Stop, rerun, closed tab.** While it waits the session's thread passes Streamlit's yield point every
  :data:`ui.worker.POLL_S`; when Streamlit stops or reruns the script there (the user pressed Stop, moved a
  widget, closed the tab), the worker is killed at once and a fresh one starts (warming up in the
  background): no worker stays busy with a job nobody waits for, and the pool keeps its size.
* **Progress** is sent back over the worker's pipe (at most every ``POLL_S``) and given to the page's
  ``progress(done, total)`` in the session's thread.
* **Errors.** What the solve raised is raised again here (a :class:`placement.PlacementError` is one
  line); a worker that dies raises :class:`ui.worker.WorkerError` (one line) and is replaced.
* **Memory given back** (issue 45.2). A worker keeps what its largest job allocated (Python's and the
  allocator's arenas are seldom returned): one held 3.2 GB 13 minutes after a large upload. A worker whose
  resident memory is over :data:`RECYCLE_RSS_BYTES` after a job is replaced at once; one idle for
  :data:`IDLE_RECYCLE_S` seconds and over :data:`IDLE_RSS_BYTES` is replaced by the pool's janitor thread. After
  each job a worker gives its free heap pages back (:func:`ui.processes.trim_heap`), and the janitor does the same
  for the server process every :data:`IDLE_RECYCLE_S` seconds.
"""

from __future__ import annotations

import multiprocessing
import os
import threading
import time
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Any

import placement
from placement.errors import PlacementError
from ui.processes import WorkerError, background, demoted_after, plain_main, rss_bytes, trim_heap

#: Environment variable: number of solve worker processes (default :func:`solver_count`).
SOLVERS_ENV = "PLACEMENT_SOLVE_WORKERS"

#: Niceness added to the solve workers: 10 (a tenth of a nice-0 thread's CPU share when both want a core), more
#: than the quick jobs' :data:`ui.worker.BACKGROUND_NICE`: a solve's kernel keeps every core busy for seconds
#: to minutes, and a second session's page load (server and browser) must not wait behind it.
SOLVE_NICE = 10

#: Seconds between two looks at a running solve (progress, Streamlit's stop requests).
POLL_S = 0.1

#: Resident memory past which a worker is replaced after its job: about three warm workers (a warm worker,
#: placement imported and the kernels loaded, measured 213 MB on 2026-12-04).
RECYCLE_RSS_BYTES = 640 << 20
#: Resident memory past which an idle worker is replaced: a warm worker (213 to 220 MB) and a 20 % margin, so that
#: what a solve left behind is given back (measured: workers at 276 to 295 MB after BERT-24 solves, 2026-12-05).
IDLE_RSS_BYTES = 256 << 20
#: Seconds a worker stays idle before the janitor looks at its memory; and between two looks.
IDLE_RECYCLE_S = 30.0
JANITOR_S = 5.0


def solver_count() -> int:
    """Solve workers: :data:`SOLVERS_ENV`, else half the CPUs, at least two (two sessions solve at once) and at most four."""
    text = os.environ.get(SOLVERS_ENV, "")
    if text.strip().isdigit() and int(text) > 0:
        return int(text)
    return max(2, min(4, (os.cpu_count() or 2) // 2))


# ----------------------------------------------------------------------------- in the worker process
def warm() -> None:
    """Load what a first solve would: :mod:`placement` and the DP kernels' cached code (small solves).

    The same kinds as ``scripts/warm_kernels.py``'s first runs: the plain DP with and without the
    tie-break, the memory-aware DP (1F1B) and the compiled ideal walk that lattices past 20,000 ideals use.
    A failure here is not fatal: the worker then loads what it needs with its first solve.
    """
    from pathlib import Path  # noqa: PLC0415

    from placement.exact import ideal_enum, ideals  # noqa: PLC0415

    samples = Path(__file__).resolve().parent.parent / "sample_graphs"
    try:
        inference = placement.load_problem(samples / "throughput" / "layer" / "bert24_inference.json")
        placement.solve(inference, "dp")
        placement.solve(inference, "dp", tie_break=False)
        groups = ideals.contract(inference.graph)
        ideal_enum.compiled(groups.count, groups.order_edges, ideals.DEFAULT_MAX_IDEALS, 1 << 30, 1)
        training = placement.load_problem(samples / "ours" / "tiny_training.json")
        placement.solve(training, "dp")
    except Exception:  # noqa: BLE001 - only a head start
        pass


class _PipeProgress:
    """``progress(done, total)`` in the worker: sends ``("progress", done, total)`` at most every ``POLL_S``."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn
        self.last = 0.0

    def __call__(self, done: int, total: int, *_: Any) -> None:
        now = time.monotonic()
        if now - self.last >= POLL_S or done >= total:
            self.last = now
            self.conn.send(("progress", done, total))


def _serve(conn: Connection, nice: int, warm_up: bool) -> None:
    """The worker's loop: warm up, then run each ``(fn, args, kwargs, progress)`` job received, answer it."""
    background(nice)  # a session of its own, niced: the browser and other programs come first too
    if warm_up:
        warm()
    conn.send(("ready", os.getpid()))
    while True:
        try:
            job = conn.recv()
        except (EOFError, OSError):  # the server went away
            return
        if job is None:
            return
        fn, args, kwargs, wants_progress = job
        if wants_progress:
            kwargs = dict(kwargs, progress=_PipeProgress(conn))
        try:
            with demoted_after(nice):  # past it, every shorter job comes first
                answer: tuple = ("done", fn(*args, **kwargs))
        except Exception as exc:  # noqa: BLE001 - raised again in the server
            answer = ("raised", exc)
        try:
            conn.send(answer)
        except Exception as exc:  # noqa: BLE001 - an answer that does not pickle
            conn.send(("raised", PlacementError(f"the solve's answer could not be sent back: {type(exc).__name__}")))
        del job, fn, args, kwargs, answer  # the job's objects gone, its free pages go back to the system
        trim_heap()


# ----------------------------------------------------------------------------- in the server process
class _Solver:
    """One worker process and the server's end of its pipe; ``idle_since`` is a ``time.monotonic`` reading."""

    def __init__(self, warm_up: bool = True) -> None:
        context = multiprocessing.get_context("spawn")
        self.conn, child = context.Pipe()
        self.process = context.Process(
            target=_serve, args=(child, SOLVE_NICE, warm_up), name="placement-solver", daemon=True
        )
        with plain_main():  # spawn must not re-run the page script that is __main__ in the server
            self.process.start()
        child.close()
        self.idle_since = time.monotonic()

    def rss(self) -> int:
        """Resident bytes of the worker (0 where unknown)."""
        pid = self.process.pid
        return (rss_bytes(pid) or 0) if pid is not None else 0

    def kill(self) -> None:
        self.process.kill()
        self.process.join(timeout=5)
        self.conn.close()


class SolvePool:
    """A fixed number of solve workers; :meth:`call` runs one job on an idle one (waiting for one if none is).

    Workers over ``recycle_rss`` bytes after a job, or over ``idle_rss`` after ``idle_s`` seconds idle, are
    replaced by fresh ones (the defaults: :data:`RECYCLE_RSS_BYTES`, :data:`IDLE_RSS_BYTES`,
    :data:`IDLE_RECYCLE_S`); a daemon thread looks at the idle ones every ``janitor_s`` seconds.
    """

    def __init__(
        self,
        size: int,
        warm_up: bool = True,
        recycle_rss: int = RECYCLE_RSS_BYTES,
        idle_rss: int = IDLE_RSS_BYTES,
        idle_s: float = IDLE_RECYCLE_S,
        janitor_s: float = JANITOR_S,
    ) -> None:
        self.size = size
        self.warm_up = warm_up
        self.recycle_rss, self.idle_rss, self.idle_s = recycle_rss, idle_rss, idle_s
        self.recycled = 0  # workers replaced for their memory (tests, benchmarks)
        self.idle = [_Solver(warm_up) for _ in range(size)]
        self.cond = threading.Condition()
        self.closed = threading.Event()
        janitor = threading.Thread(target=self._janitor, args=(janitor_s,), name="placement-solve-janitor", daemon=True)
        janitor.start()

    def _acquire(self, yield_check: Callable[[], None]) -> _Solver:
        with self.cond:
            while not self.idle:
                self.cond.wait(POLL_S)
                yield_check()  # a stopped session stops waiting
            return self.idle.pop()

    def _release(self, solver: _Solver, healthy: bool) -> None:
        if not healthy:  # killed (stopped session) or dead: a fresh one takes its place
            solver.kill()
            solver = _Solver(self.warm_up)
        elif solver.rss() > self.recycle_rss:  # a large job's memory: given back at once
            solver.kill()
            solver = _Solver(self.warm_up)
            self.recycled += 1
        solver.idle_since = time.monotonic()
        with self.cond:
            self.idle.append(solver)
            self.cond.notify()

    def _janitor(self, every: float) -> None:
        """Replace the workers idle for ``idle_s`` and over ``idle_rss`` bytes, until :meth:`close`.

        Every ``idle_s`` it also gives this process's free heap pages back (:func:`ui.processes.trim_heap`): in a
        server, what the sessions' threads freed (a large upload's buffers) stays resident otherwise.
        """
        trimmed = time.monotonic()
        while not self.closed.wait(every):
            now = time.monotonic()
            if now - trimmed >= self.idle_s:
                trim_heap()
                trimmed = now
            with self.cond:
                stale = [s for s in self.idle if now - s.idle_since >= self.idle_s and s.rss() > self.idle_rss]
                for solver in stale:
                    self.idle.remove(solver)
            for solver in stale:  # outside the lock: a kill waits for the process
                solver.kill()
                fresh = _Solver(self.warm_up)
                with self.cond:
                    self.idle.append(fresh)
                    self.recycled += 1
                    self.cond.notify()

    def call(
        self,
        fn: Callable[..., Any],
        args: tuple,
        kwargs: dict[str, Any],
        progress: Callable[[int, int], Any] | None = None,
        yield_check: Callable[[], None] = lambda: None,
    ) -> Any:
        """``fn(*args, **kwargs)`` in a worker; ``progress`` gets its reports; ``yield_check`` runs every ``POLL_S``.

        Whatever ``yield_check`` or ``progress`` raises (Streamlit's stop or rerun) kills the worker first.
        """
        solver = self._acquire(yield_check)
        answer: tuple | None = None
        try:
            solver.conn.send((fn, args, kwargs, progress is not None))
            while answer is None:
                if solver.conn.poll(POLL_S):
                    answer = self._drain(solver.conn, progress)
                elif not solver.process.is_alive():
                    raise EOFError
                if answer is None:
                    yield_check()
        except (EOFError, OSError):
            answer = None
            raise WorkerError("the solve's worker process ended without an answer (out of memory or killed)") from None
        finally:
            self._release(solver, healthy=answer is not None)
        kind, value = answer
        if kind == "raised":
            raise value
        return value

    @staticmethod
    def _drain(conn: Connection, progress: Callable[[int, int], Any] | None) -> tuple | None:
        """Read every message waiting; the answer (``("done", value)`` or ``("raised", exc)``) or None."""
        latest = None
        answer = None
        while answer is None and conn.poll():
            message = conn.recv()
            if message[0] == "progress":
                latest = message[1:]
            elif message[0] in ("done", "raised"):
                answer = message[0], message[1]
        if latest is not None and progress is not None:
            progress(*latest)
        return answer

    def close(self) -> None:
        """Stop every idle worker and the janitor (tests)."""
        self.closed.set()
        with self.cond:
            for solver in self.idle:
                solver.kill()
            self.idle = []
