"""Solving for the pages: the method registry's options, and every solve cached on (graph, devices, method, options).

Every solve runs under the memory model in force (:func:`ui.graph_state.current_memory_model`);
a :class:`placement.PlacementError` becomes a result with status ``error`` (pages never crash on a
bad setting).
"""

from __future__ import annotations

import time
from typing import Any

import streamlit as st

import placement
from placement.budget import precheck_solve
from placement.model import Status
from placement.solve import METHODS
from ui import graph_info, tie_break, worker
from ui import live as live_tables
from ui.formatting import method_name
from ui.graph_state import current_memory_model


def method_options(method: str, **options: Any) -> dict[str, Any]:
    """The subset of ``options`` that ``method`` takes (its registry entry), None values dropped."""
    spec = METHODS.get(method)
    if spec is None:
        return {}
    return {k: v for k, v in options.items() if k in spec.option_names and v is not None}


def effective_method(method: str) -> str:
    """The method that actually runs for ``method`` under the current memory model (e.g. dp -> memory-aware)."""
    model = current_memory_model()
    return model.method_for(method)[0] if model.supports(method) else method


def method_objective(method: str) -> str:
    """The objective a method optimises: ``"throughput"`` or ``"latency"``."""
    return str(METHODS[method].objective) if method in METHODS else "throughput"


def takes_time_limit(method: str) -> bool:
    """Whether ``method`` (as run under the current memory model) has a time limit."""
    spec = METHODS.get(effective_method(method))
    return spec is not None and spec.has_time_limit


def _solve_uncached(
    problem: placement.Problem, method: str, options: dict[str, Any], progress: Any = None
) -> placement.Result:
    started = time.perf_counter()
    # In a worker process of the solve pool (ui.worker.run_solve), never in the server's: a solve's Python
    # parts and numba's cache loading hold the GIL (a probe thread beside a first solve
    # waited up to 1.35 s at once in one run, 0.11 s in another; scripts/bench_health.py --gil), which stalls
    # the event loop and every other session. The progress bar (a method with a progress option, checked by
    # the caller) is updated in this thread.
    try:
        precheck_solve(problem, method, options)  # one line, before a solve estimated past the caps starts
        return worker.run_solve(worker.solve, problem, method, progress=progress, **options)
    except worker.WorkerError:
        raise  # never cached: solve_cached turns it into a result, and the next run tries again
    except placement.PlacementError as exc:
        return placement.make_result(
            method, Status.ERROR, started=started, objective_kind=method_objective(method), reason=str(exc)
        )


@st.cache_data(show_spinner=False, max_entries=512)
def _solve_cached(
    graph_digest: str, devices_key: str, method: str, options: tuple, _problem: placement.Problem, _progress=None
):
    # The progress bar is created and removed in here, so that a cache hit replays nothing visible.
    try:
        return _solve_uncached(_problem, method, dict(options), _progress)
    finally:
        if _progress is not None:
            _progress.close()


def problem_key(problem: placement.Problem) -> tuple[str, str]:
    """A hashable key of a problem: the graph digest and the devices' repr (frozen dataclasses)."""
    return problem.graph.digest, repr(problem.devices)


def solve_cached(
    problem: placement.Problem, method: str = "dp", *, live: bool = False, **options: Any
) -> placement.Result:
    """Solve ``problem`` with ``method`` under the current memory model, cached on (graph, devices, method, options).

    Under the training memory model the method runs as its memory-aware variant with the
    model's options (:meth:`placement.solve.MemoryModel.method_for`). Options the method
    does not take are dropped (see :func:`method_options`); a :class:`placement.PlacementError`
    becomes a result with status ``"error"`` and its message as ``reason``, so pages never
    crash on a bad setting. A method with a ``progress`` option (the exact DP) shows a progress
    bar once it runs over a second (:class:`ui.live.SolveProgress`).

    ``live=True`` (the current scenario: the Placement page, the Devices page's summary): the
    exact DP answers a lowered device count from the last table of this session when it can
    (:func:`ui.live.answer`; the result's ``stat("from_table")`` is True), and keeps the table
    of every fresh solve (:func:`ui.live.keep`).
    """
    model = current_memory_model()
    try:
        method, model_options = model.method_for(method)
    except placement.PlacementError as exc:  # the method plans with weights only: say so, solve nothing
        return placement.make_result(
            method, Status.ERROR, started=time.perf_counter(), objective_kind=method_objective(method), reason=str(exc)
        )
    options = dict(method_options(method, **options), **model_options)
    options.pop("progress", None)  # never part of the key: the bar is added below
    spec = METHODS.get(method)
    if spec is not None:  # the user asked for the DP's tie-break pass on this graph: every page makes it
        options.update(tie_break.options(problem, spec.option_names))
    table_method = live and method == "dp"
    if table_method:
        answered = live_tables.answer(problem, options)
        if answered is not None:
            return answered
    digest, devices_key = problem_key(problem)
    progress = None
    if spec is not None and "progress" in spec.option_names:
        progress = live_tables.SolveProgress(method_name(method), "ideals")
    try:
        result = _solve_cached(digest, devices_key, method, tuple(sorted(options.items())), problem, progress)
    except worker.WorkerError as exc:  # the worker died (killed, out of memory): one line, not cached
        return placement.make_result(
            method, Status.ERROR, started=time.perf_counter(), objective_kind=method_objective(method), reason=str(exc)
        )
    if table_method and result.status == Status.OPTIMAL:
        ideals = result.stat("ideals", None)
        live_tables.keep(problem, options, float(result.objective), result.seconds, ideals)
    return result


def clear_caches() -> None:
    """Drop every cached solve, layout, ideal count and bound (tests call this between cases)."""
    _solve_cached.clear()
    graph_info.clear()
