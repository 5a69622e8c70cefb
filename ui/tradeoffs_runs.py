"""The Tradeoffs page's sweeps, cached per graph and device settings, with a progress bar each.

Cached with ``st.cache_data`` on the graph digest, the devices' key and the values (the executor
never changes the numbers); executors with ``st.cache_resource``, one per address for the whole server.
"""

from __future__ import annotations

import streamlit as st

from placement.explore.grids import memory_grid, stop_executor
from placement.explore.sweep import executor_for, sensitivity, solve_point, sweep
from ui.tradeoffs import worker_failed


@st.cache_resource(show_spinner=False, max_entries=4, on_release=stop_executor)
def executor(address: str):
    """One executor per address ("" = local process pool), kept for the whole server."""
    return executor_for(address or None)


def stop_all() -> None:
    """Release every executor: queued solves are dropped and the worker processes end (``stop_executor``)."""
    executor.clear()


def _bar(title: str, about: bool = False):
    """A progress bar and its ``progress(done, total)`` callback."""
    bar = st.progress(0.0, text=f"{title}: starting")

    def progress(done: int, total: int) -> None:
        if total:
            bar.progress(min(done / total, 1.0), text=f"{title}: {done} of {'about ' if about else ''}{total} solves")

    return bar, progress


@st.cache_data(show_spinner=False, max_entries=256)
def run_sweep(
    digest: str,
    devices_key: str,
    parameter: str,
    values: tuple,
    kind: str | None,
    title: str,
    _problem,
    _executor_value,
    method: str = "dp",
    options: tuple = (),
):
    """One sweep (:func:`placement.explore.sweep.sweep`); a crashed worker retries the sweep in this process.

    The progress bar is created and removed in here, so that a cache hit replays nothing visible.
    """
    bar, progress = _bar(title)

    def run(on):
        return sweep(
            _problem, parameter, values, kind=kind, executor=on, progress=progress, method=method, **dict(options)
        )

    points = run(_executor_value)
    if _executor_value is not None and worker_failed(points):
        stop_all()  # a broken pool (or lost cluster) must not poison the cache: solve here instead
        points = run(None)
    bar.empty()
    return points


@st.cache_data(show_spinner=False, max_entries=64)
def run_memory_grid(digest: str, devices_key: str, kind: str, title: str, _problem, _executor_value):
    """The memory sweep (:func:`placement.explore.grids.memory_grid`), cached like :func:`run_sweep`."""
    bar, progress = _bar(title, about=True)
    points = memory_grid(_problem, kind, executor=_executor_value, progress=progress)
    bar.empty()
    return points


@st.cache_data(show_spinner=False, max_entries=256)
def run_sensitivity(digest: str, devices_key: str, parameter: str, kind: str | None, max_count: int, _problem):
    """:func:`placement.explore.sweep.sensitivity` of the current plan, cached."""
    return sensitivity(_problem, parameter, kind=kind, max_count=max_count)


@st.cache_data(show_spinner=False, max_entries=64)
def base_seconds(digest: str, devices_key: str, _problem, method: str = "dp", options: tuple = ()) -> float:
    """Seconds one solve of the current problem takes (decides whether a process pool pays).

    Solved twice: the first call may include loading the compiled DP kernel.
    """
    solve_point(_problem, method, options)
    return solve_point(_problem, method, options).seconds
