"""Heavy work off the server's event loop (issue 27.1): worker processes, one job per session.

Streamlit runs each session's script in a thread of the server process. Pure-Python work there (rule
matching over 20 MB of names, parsing and validating a large upload, the Python parts of a solve) holds
the GIL, and the server's event loop, which answers ``/_stcore/health`` and every other session, stalls
until it lets go. :func:`run` sends such work to a small pool of worker processes (``spawn`` context,
shared by the server through ``st.cache_resource``) and waits for it with the GIL released.

* **One job per session.** A session's jobs run one at a time: its last job is kept in its session
  state, and a new request first cancels it when it is still queued, or waits for it when it is
  running (Streamlit stopped the run that asked for it; its result is dropped), so one user never holds
  more than one worker.
* **Pool size.** :data:`WORKERS_ENV` (default: one per CPU, at least two) worker processes, so that one
  session's long job never holds every worker; past that, jobs of different sessions queue in the pool.
* **Progress.** A ``progress(done, total)`` callback given to :func:`run` is relayed from the worker
  through a manager queue and called in the session's thread (a Streamlit progress bar updates there).
* **Errors.** A :class:`placement.PlacementError` raised in the worker is raised again here (one line); a
  worker that dies (killed, out of memory) raises :class:`WorkerError` with one line.
* **Solves go to a pool of their own** (:mod:`ui.solve_pool`, through :func:`run_solve`): pre-warmed worker
  processes, separate from this pool so that a long solve never queues another session's quick job; a
  stopped or rerun session's solve is killed at once (its worker replaced). Measured before the move: a
  solve's Python parts and numba's loading held a thread beside it up to 1.35 s at once (one run; 0.11 s in
  another).
* **Off switch.** With ``PLACEMENT_WORKERS=0`` (or outside a Streamlit server, e.g. ``AppTest`` and the
  unit tests), work runs inline in the calling thread (a solve in a server: in a thread that leaves a CPU to
  the server, :func:`run_yielding`).

The task functions below (:func:`parse_upload`, :func:`scaled_graph`, :func:`solve`) are plain
module-level functions of picklable arguments and results, so they can be sent to a process.
"""

from __future__ import annotations

import copy
import multiprocessing
import os
import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any, TypeVar

import streamlit as st

import placement
from placement.deadline import WorkClock, cpu_time_limits
from ui.processes import WorkerError, background, demoted_after, plain_main, rss_bytes, trim_heap
from ui.solve_pool import IDLE_RECYCLE_S, JANITOR_S, RECYCLE_RSS_BYTES, SolvePool, solver_count

_T = TypeVar("_T")

#: Environment variable: number of worker processes (0: run every job inline).
WORKERS_ENV = "PLACEMENT_WORKERS"

#: Resident memory past which the idle quick-jobs workers are replaced (on average): a fresh worker (65 MB,
#: measured 2026-12-05: placement imported, no job yet) and a 20 % margin. Their jobs (parsing, scaling, layouts)
#: import and cache more as they run (89 MB each after the load benchmark's rounds and a refused 42.7 MB upload).
QUICK_IDLE_RSS_BYTES = 80 << 20

#: Session-state keys of the session's lock and of its last job (a Future).
_LOCK, _JOB = "_worker_lock", "_worker_job"

#: Seconds between two looks at a running job (progress relay, Streamlit's stop requests).
POLL_S = 0.1

#: The pages' solve limits: CPU seconds of the solve worker, with a wall-clock guard of 10 x the limit + 120 s
#: (420 s for a 30 s limit). With 4 x + 60 s (180 s), on a shared 2-core machine at a load of 21, two of five
#: sessions of ``scripts/bench_load.py`` came back "feasible" (answers after up to 312 s) for IPs that take
#: 0.2-1.1 CPU s, proven optimal alone (2026-12-04): the guard, not the CPU limit, most likely stopped them.
SOLVE_CLOCK = WorkClock(factor=10.0, extra=120.0)


#: Niceness added to the worker processes (and to their scheduling groups, ``ui.processes.background``): the
#: server and other sessions' browsers are scheduled first when the cores are busy. 9 since 2026-11-26 (was 5),
#: just above the solves (``ui.solve_pool.SOLVE_NICE``, 10; the solve-stop test tells the pools apart by it): a
#: second session's page load is CPU-bound in its browser (4-5 CPU s per 2-s load on 2 cores), and at 5 the rules
#: job (10.8 CPU s in 18 s) still took a quarter of the cores from it (B's load 1.67x idle in a full-suite run).
#: Three monitored runs at 10, alternated with 5: rules 1.19 / 1.01 / 0.98x against 1.56 / 0.74 / 1.24x.
BACKGROUND_NICE = 9


def yield_cpu() -> None:
    """Make the calling thread leave one CPU to the server (Linux; elsewhere nothing).

    Its affinity drops one of its CPUs (when it has two or more): the DP kernel's thread count
    (``placement.exact.kernel.default_workers``, the CPUs the calling thread may run on) follows, and the
    threads it starts inherit the affinity. Its niceness stays: the thread's Python parts hold the GIL,
    and a thread descheduled while holding it would stall the event loop longer (priority inversion; a
    niced solve thread measured worse page loads of a second session, 2026-11-25). The worker processes,
    which share no GIL with the server, are niced instead (:data:`BACKGROUND_NICE`).
    """
    try:
        cpus = sorted(os.sched_getaffinity(0))
        if len(cpus) > 1:
            os.sched_setaffinity(0, cpus[1:])
    except (AttributeError, OSError):  # not Linux, or not allowed: run as is
        pass


def _nice_process() -> None:
    """Initializer of the worker processes: :data:`BACKGROUND_NICE` below the server and other sessions' work."""
    background(BACKGROUND_NICE)


def _long_jobs_last(fn: Callable[..., _T], /, *args: Any, **kwargs: Any) -> _T:
    """``fn(*args, **kwargs)`` in a worker; past ``ui.processes.LONG_JOB_S`` it gives way to shorter jobs (``demoted_after``).

    Once ``fn`` has returned, the pages its work freed go back to the system (:func:`ui.processes.trim_heap`).
    """
    try:
        with demoted_after(BACKGROUND_NICE):
            return fn(*args, **kwargs)
    finally:
        trim_heap()


def run_yielding(fn: Callable[..., _T], *args: Any, **kwargs: Any) -> _T:
    """``fn(*args, **kwargs)`` in a new thread of this process that calls :func:`yield_cpu` first; waits for it.

    In a Streamlit server only (elsewhere: inline). The thread shares the session's script context, so a
    progress bar updated from ``fn`` works, and Streamlit's stop or rerun raised there is raised again here.
    """
    if not _in_server():
        return fn(*args, **kwargs)
    from streamlit.runtime.scriptrunner import add_script_run_ctx, get_script_run_ctx  # noqa: PLC0415

    outcome: dict[str, Any] = {}

    def body() -> None:
        yield_cpu()
        try:
            outcome["value"] = fn(*args, **kwargs)
        except BaseException as exc:  # noqa: BLE001 - raised again in the caller's thread
            outcome["raised"] = exc

    thread = threading.Thread(target=body, name="placement-solve", daemon=True)
    add_script_run_ctx(thread, get_script_run_ctx())
    thread.start()
    thread.join()
    if "raised" in outcome:
        raise outcome["raised"]
    return outcome["value"]


def worker_count() -> int:
    """Worker processes of the pool: :data:`WORKERS_ENV`, else one per CPU and at least two.

    At least two, so that one session's long solve never queues every other session's quick ones (the
    server's event loop is another process's concern: the workers run outside it, the OS shares the cores).
    """
    text = os.environ.get(WORKERS_ENV, "")
    if text.strip().isdigit():
        return int(text)
    return max(2, os.cpu_count() or 2)


def _in_server() -> bool:
    """Whether this runs in a Streamlit server (not ``AppTest``, whose runtime is a mock; not a bare import)."""
    from streamlit.runtime import Runtime  # noqa: PLC0415
    from streamlit.runtime.scriptrunner import get_script_run_ctx  # noqa: PLC0415

    if not Runtime.exists() or type(Runtime.instance()) is not Runtime:  # AppTest: a MagicMock(spec=Runtime)
        return False
    return get_script_run_ctx(suppress_warning=True) is not None


class _Pool:
    """The server's worker processes and the manager that relays progress (created once, on first use).

    Memory given back (issue 45.2): when no job is in flight and the workers hold more than
    :data:`ui.solve_pool.RECYCLE_RSS_BYTES` each on average (after a large job), or more than
    :data:`QUICK_IDLE_RSS_BYTES` after :data:`ui.solve_pool.IDLE_RECYCLE_S` seconds without a job, the executor
    is shut down and a fresh one started (:meth:`start_workers`). The first job starts every worker too, so the
    pool's size does not grow under load after the first use.
    """

    def __init__(self, workers: int) -> None:
        self.workers = workers
        self.executor: ProcessPoolExecutor | None = None
        with plain_main():
            self.manager = multiprocessing.get_context("spawn").Manager()
        self.lock = threading.Lock()
        self.in_flight = 0
        self.last_done = time.monotonic()
        self.recycled = 0
        self.jobs = 0  # jobs since the executor started (its no-op start-up jobs not counted)
        janitor = threading.Thread(target=self._janitor, name="placement-jobs-janitor", daemon=True)
        janitor.start()

    def _executor(self) -> ProcessPoolExecutor:
        context = multiprocessing.get_context("spawn")
        return ProcessPoolExecutor(max_workers=self.workers, mp_context=context, initializer=_nice_process)

    def submit(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Future:
        return self._submit(True, fn, *args, **kwargs)

    def _submit(self, counted: bool, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Future:
        with self.lock, plain_main():  # submit starts the worker processes it needs
            if self.executor is None:
                self.executor, self.jobs = self._executor(), 0
            try:
                future = self.executor.submit(fn, *args, **kwargs)
            except BrokenProcessPool:  # a worker died earlier: start a fresh pool
                self.executor, self.jobs = self._executor(), 0
                future = self.executor.submit(fn, *args, **kwargs)
            self.in_flight += 1
            self.jobs += counted
        future.add_done_callback(self._done)
        return future

    def _rss(self) -> list[int]:
        """Resident bytes of each worker process of the executor (none without one)."""
        processes = getattr(self.executor, "_processes", None) or {}
        return [rss_bytes(pid) or 0 for pid in list(processes)]

    def _recycle_if(self, per_worker: int) -> None:
        """With the lock held: shut the idle executor down when its workers average over ``per_worker`` bytes
        (only after a real job: fresh workers over the threshold are not replaced again and again)."""
        sizes = self._rss()
        if self.jobs == 0:
            return
        if self.in_flight == 0 and self.executor is not None and sizes and sum(sizes) > per_worker * len(sizes):
            self.executor.shutdown(wait=False)
            self.executor = None
            self.recycled += 1

    def _done(self, _: Future) -> None:
        with self.lock:
            self.in_flight -= 1
            self.last_done = time.monotonic()

    def _janitor(self) -> None:
        """Every :data:`JANITOR_S`: recycle the idle executor after a large job, or when idle and grown; a recycled
        executor's workers are started again at once (the next job finds them ready)."""
        while True:
            time.sleep(JANITOR_S)
            with self.lock:
                idle = time.monotonic() - self.last_done >= IDLE_RECYCLE_S
                recycled = self.recycled
                self._recycle_if(QUICK_IDLE_RSS_BYTES if idle else RECYCLE_RSS_BYTES)
                fresh = self.recycled != recycled
            if fresh:
                self.start_workers()

    def start_workers(self) -> None:
        """Start every worker process now (a no-op job each) instead of at the jobs that need them."""
        for _ in range(self.workers):
            self._submit(False, os.getpid)


@st.cache_resource(show_spinner=False)
def _pool(workers: int) -> _Pool:
    pool = _Pool(workers)
    pool.start_workers()  # all of them at once: the pool's size does not change under load
    return pool


class _Relay:
    """A picklable ``progress(done, total)`` that forwards to a manager queue (at most every 0.1 s)."""

    def __init__(self, channel: Any) -> None:
        self.channel = channel
        self.last = 0.0

    def __call__(self, done: int, total: int, *_: Any) -> None:
        now = time.monotonic()
        if now - self.last >= POLL_S or done >= total:
            self.last = now
            self.channel.put((done, total))


def _session_lock() -> threading.Lock:
    lock = st.session_state.get(_LOCK)
    if lock is None:
        lock = st.session_state[_LOCK] = threading.Lock()
    return lock


def run(fn: Callable[..., _T], *args: Any, progress: Callable[[int, int], Any] | None = None, **kwargs: Any) -> _T:
    """``fn(*args, **kwargs)`` in a worker process (inline outside a server or with no workers).

    Parameters
    ----------
    fn : callable
        A module-level function (picklable by reference) of picklable arguments and result.
    progress : callable, optional
        ``progress(done, total)``, called in this thread with what ``fn`` reports through its own
        ``progress`` keyword (passed to ``fn`` only when given here).

    Raises
    ------
    PlacementError
        What ``fn`` raised (one line); :class:`WorkerError` when the worker died.
    """
    workers = worker_count()
    if workers <= 0 or not _in_server():
        return fn(*args, **kwargs, **({"progress": progress} if progress is not None else {}))
    pool = _pool(workers)
    args = tuple(light(a) for a in args)
    lock = _session_lock()
    while not lock.acquire(timeout=POLL_S):  # another thread of this session is submitting or waiting
        pass
    try:
        previous = st.session_state.get(_JOB)
        # A stopped run leaves its job behind: a queued one is cancelled, a running one waited for.
        if previous is not None and not previous.cancel():
            while not previous.done():
                time.sleep(POLL_S)
        channel = pool.manager.Queue() if progress is not None else None
        extra = {"progress": _Relay(channel)} if channel is not None else {}
        future = st.session_state[_JOB] = pool.submit(_long_jobs_last, fn, *args, **kwargs, **extra)
        while True:
            try:
                result = future.result(timeout=POLL_S)
                break
            except TimeoutError:
                pass
            finally:
                _drain(channel, progress)
        _drain(channel, progress)
        return result
    except BrokenProcessPool:
        raise WorkerError("the worker process ended without an answer (out of memory or killed)") from None
    finally:
        lock.release()


@st.cache_resource(show_spinner=False)
def _solvers(size: int) -> SolvePool:
    return SolvePool(size)


def start_solvers() -> None:
    """Start the solve pool (its workers warm up in the background) with a server's first script run.

    Nothing outside a server or with ``PLACEMENT_WORKERS=0``; later calls only look the pool up.
    """
    solvers()


def solvers() -> SolvePool | None:
    """The solve pool of this server (None outside a server or with ``PLACEMENT_WORKERS=0``: solve inline).

    Call it in a script run; the pool it returns may then be used from any thread of the session.
    """
    if worker_count() <= 0 or not _in_server():
        return None
    return _solvers(solver_count())


def _yield_check() -> Callable[[], None]:
    """Streamlit's yield point of this script run: raises its stop or rerun request (else does nothing)."""
    try:
        from streamlit.runtime.scriptrunner_utils.script_run_context import get_run_yield_check  # noqa: PLC0415

        check = get_run_yield_check()
    except ImportError:  # another Streamlit: reading the session state passes the same yield point
        check = None
    return check if check is not None else lambda: st.session_state.get(_LOCK)


def run_solve(
    fn: Callable[..., _T], *args: Any, progress: Callable[[int, int], Any] | None = None, **kwargs: Any
) -> _T:
    """``fn(*args, **kwargs)`` (a solve) in a worker of the solve pool; inline outside a server or with no workers.

    ``progress(done, total)``, when given, is passed to ``fn`` as its ``progress`` keyword (in the worker:
    relayed and called in this thread). A stop or rerun of this session's script kills the worker.

    Raises
    ------
    PlacementError
        What ``fn`` raised (one line); :class:`WorkerError` when the worker died.
    """
    pool = solvers()
    if pool is None:
        return run_yielding(fn, *args, **kwargs, **({"progress": progress} if progress is not None else {}))
    check = _yield_check()
    lock = _session_lock()
    while not lock.acquire(timeout=POLL_S):  # another thread of this session is running a job
        check()
    try:
        return pool.call(fn, tuple(light(a) for a in args), kwargs, progress, check)
    finally:
        lock.release()


def _drain(channel: Any, progress: Callable[[int, int], Any] | None) -> None:
    if channel is None or progress is None:
        return
    latest = None
    while True:
        try:
            latest = channel.get_nowait()
        except queue.Empty:
            break
    if latest is not None:
        progress(*latest)


# ----------------------------------------------------------------------------- task functions (picklable)
#: Cached properties of a graph that are cheaper to rebuild than to send between processes.
_HEAVY_CACHES = ("networkx",)


def light(value: _T) -> _T:
    """A shallow copy of a Graph or Problem without its heavy caches (what crosses to a process).

    The digest and the other small cached properties travel with it; the copy is equal to ``value``.
    """
    if isinstance(value, placement.Problem):
        out = copy.copy(value)
        object.__setattr__(out, "graph", light(value.graph))
        return out
    if isinstance(value, placement.Graph):
        out = copy.copy(value)
        for name in _HEAVY_CACHES:
            out.__dict__.pop(name, None)
        return out
    return value


def parse_upload(data: bytes, name: str) -> placement.Problem:
    """:func:`placement.parse_problem` of an uploaded file (JSON parse, validation, digest)."""
    problem = placement.parse_problem(data, name)
    _ = problem.graph.digest  # computed here, in the worker, not in the server's thread
    return light(problem)


def scaled_graph(graph: placement.Graph, rules: tuple[tuple[str, float], ...]) -> placement.Graph:
    """``graph`` with the latency multipliers ``rules`` applied in order (pattern matching over every name)."""
    for pattern, factor in rules:
        graph = graph.with_latency_scale(pattern, factor)
    _ = graph.digest
    return light(graph)


def _kind_names(kinds: tuple[Any, ...]) -> list[str]:
    """Names of catalogue kinds (strings) and measured devices (accelerators)."""
    return [str(getattr(kind, "name", kind)) for kind in kinds]


def needs_pricing(graph: placement.Graph, kinds: tuple[Any, ...]) -> bool:
    """Whether ``graph`` must be priced again for ``kinds`` (catalogue names or measured devices, reference first).

    Not when there are no catalogue kinds, nor when the graph is already priced on the same reference for
    every one of them (``extra["pricedKinds"]``, reference first: the Graph page prices every catalogue kind),
    so costs edited by hand there stay until the inventory needs another reference or another kind. A graph
    without kernels (the paper's profiled files) is never priced (:func:`priced_graph` returns it unchanged).
    """
    priced = [str(kind) for kind in graph.extra.get("pricedKinds", ())]
    names = _kind_names(kinds)
    return bool(names) and not (priced and priced[0] == names[0] and set(names) <= set(priced))


def priced_graph(graph: placement.Graph, kinds: tuple[Any, ...]) -> placement.Graph:
    """``graph`` re-priced for ``kinds`` (:func:`placement.modelling.pricing.price_graph`)
    when :func:`needs_pricing` says so, else ``graph`` itself."""
    from placement.modelling.pricing import price_graph  # noqa: PLC0415

    if needs_pricing(graph, kinds):
        graph = price_graph(graph, kinds)
    _ = graph.digest
    return light(graph)


def count_matches(names: tuple[str, ...], patterns: tuple[str, ...]) -> list[int]:
    """For each pattern, how many of ``names`` it matches (the Devices page's "matching nodes" column)."""
    from placement.patterns import compile_pattern  # noqa: PLC0415

    compiled = [compile_pattern(p) for p in patterns]
    return [sum(1 for name in names if pattern.matches(name)) for pattern in compiled]


def ideal_count(graph: placement.Graph, cap: int) -> int | None:
    """:func:`placement.count_ideals` of ``graph`` up to ``cap``, or None past it (the Graph page's count)."""
    try:
        return placement.count_ideals(graph, cap)
    except placement.TooManyIdealsError:
        return None


def ideal_bounds(graph: placement.Graph) -> Any:
    """:func:`placement.exact.ideals.ideal_bounds` of the contracted ``graph`` (the Graph page's width line)."""
    from placement.exact.ideals import contract  # noqa: PLC0415
    from placement.exact.ideals import ideal_bounds as bounds  # noqa: PLC0415

    return bounds(contract(graph))


def solve(problem: placement.Problem, method: str, **options: Any) -> placement.Result:
    """:func:`placement.solve` with its ``time_limit`` in CPU seconds of this process (a solve worker's).

    The same limit then means the same work whatever the server's load: a niced worker that waits for a
    busy core no longer runs out of wall-clock time and comes back "feasible" where a quiet machine proves
    the optimum (issue 45). A wall-clock guard of :data:`SOLVE_CLOCK` stands beside it.
    """
    with cpu_time_limits(SOLVE_CLOCK):
        return placement.solve(problem, method, **options)
