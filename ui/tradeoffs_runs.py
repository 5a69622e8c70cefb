"""The Tradeoffs page's sweeps, cached per graph and device settings, with a progress bar each.

Cached with ``st.cache_data`` on the graph digest, the devices' key and the values (the executor
never changes the numbers). A local process pool belongs to one browser session (so that its Stop,
or closing its tab, ends only its own solves); a Dask executor is kept per address for the server.

While a sweep waits on its workers, its progress bar is refreshed every :data:`HEARTBEAT_S`
seconds: each refresh lets Streamlit act on a click (Stop) and checks that the session is still
connected (a closed tab stops the session's pool).
"""

from __future__ import annotations

import streamlit as st
from streamlit.runtime import Runtime
from streamlit.runtime import exists as runtime_exists
from streamlit.runtime.scriptrunner import get_script_run_ctx

from placement.errors import PlacementError
from placement.explore.bounds import count_band
from placement.explore.grids import memory_grid, stop_executor
from placement.explore.sweep import executor_for, sensitivity, solve_point, sweep
from ui.tradeoffs import worker_failed

#: Seconds between two refreshes of a waiting sweep's progress bar (Stop acts within about this).
HEARTBEAT_S = 0.5
#: Session-state key of this session's local process pool.
POOL_KEY = "_to_pool"
#: What a sweep whose workers were ended says (a Stop, a closed tab); nothing of it is cached.
STOPPED = "the sweep was stopped (its worker processes ended); press Run the sweeps to start again"


@st.cache_resource(show_spinner=False, max_entries=4, on_release=stop_executor)
def _dask_executor(address: str):
    """One Dask executor per allow-listed address, kept for the whole server."""
    return executor_for(address)


def executor(address: str):
    """The executor for ``address``: this session's local process pool for "", else the Dask cluster's."""
    if address:
        return _dask_executor(address)
    pool = st.session_state.get(POOL_KEY)
    if pool is None:
        pool = st.session_state[POOL_KEY] = executor_for(None)
    return pool


def stop_all() -> None:
    """End this session's pool now (queued solves dropped, busy workers terminated) and the Dask executors."""
    pool = st.session_state.pop(POOL_KEY, None)
    if pool is not None:
        stop_executor(pool)
    _dask_executor.clear()


def _stopped(executor) -> bool:
    """Whether a local pool was stopped or broke (its unfinished solves failed; nothing may be cached)."""
    return bool(getattr(executor, "_broken", False) or getattr(executor, "_shutdown_thread", False))


def session_connected() -> bool:
    """Whether this script's browser session is still connected (True outside a Streamlit server)."""
    ctx = get_script_run_ctx()
    if ctx is None or not runtime_exists():
        return True
    return Runtime.instance().is_active_session(ctx.session_id)


def _bar(title: str, about: bool = False):
    """A progress bar and its ``progress(done, total)`` callback (also the heartbeat of a waiting sweep)."""
    bar = st.progress(0.0, text=f"{title}: starting")

    def progress(done: int, total: int) -> None:
        if not session_connected():  # the tab was closed: nobody waits for these solves
            stop_all()
            st.stop()
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
    retry_here: bool = True,
):
    """One sweep (:func:`placement.explore.sweep.sweep`).

    When a worker crashed (a broken pool or a lost cluster), the sweep is solved again in this
    process if ``retry_here`` (small graphs); otherwise :data:`STOPPED` is raised, so that nothing
    of the stopped sweep is cached. The progress bar is created and removed in here, so that a
    cache hit replays nothing visible.
    """
    bar, progress = _bar(title)

    def run(on):
        return sweep(
            _problem,
            parameter,
            values,
            kind=kind,
            executor=on,
            progress=progress,
            method=method,
            heartbeat_s=HEARTBEAT_S,
            **dict(options),
        )

    points = run(_executor_value)
    if _executor_value is not None and worker_failed(points):
        stop_all()  # a broken pool (or lost cluster) must not poison the cache
        if not retry_here:
            raise PlacementError(STOPPED)
        points = run(None)
    bar.empty()
    return points


@st.cache_data(show_spinner=False, max_entries=64)
def run_memory_grid(digest: str, devices_key: str, kind: str, title: str, _problem, _executor_value):
    """The memory sweep (:func:`placement.explore.grids.memory_grid`), cached like :func:`run_sweep`."""
    bar, progress = _bar(title, about=True)
    points = memory_grid(_problem, kind, executor=_executor_value, progress=progress, heartbeat_s=HEARTBEAT_S)
    if _executor_value is not None and (worker_failed(points) or _stopped(_executor_value)):
        stop_all()
        raise PlacementError(STOPPED)
    bar.empty()
    return points


@st.cache_data(show_spinner=False, max_entries=64)
def band(digest: str, devices_key: str, kind: str, max_count: int, _problem, plans: bool = True):
    """:func:`placement.explore.bounds.count_band` for counts 1..``max_count`` of ``kind`` (no exact solve)."""
    return count_band(_problem, range(1, max_count + 1), kind, plans=plans)


@st.cache_data(show_spinner=False, max_entries=256)
def run_sensitivity(digest: str, devices_key: str, parameter: str, kind: str | None, max_count: int, _problem):
    """:func:`placement.explore.sweep.sensitivity` of the current plan, cached."""
    return sensitivity(_problem, parameter, kind=kind, max_count=max_count)


@st.cache_data(show_spinner=False, max_entries=64)
def base_seconds(digest: str, devices_key: str, _problem, method: str = "dp", options: tuple = ()) -> float:
    """Seconds one solve of the current problem takes (decides whether a process pool pays; small graphs only).

    Solved twice: the first call may include loading the compiled DP kernel.
    """
    solve_point(_problem, method, options)
    return solve_point(_problem, method, options).seconds
