"""ui/solve_pool.py: solves in pre-warmed worker processes; stop kills the job; a dead worker is one line."""

from __future__ import annotations

import os
import sys
import time

import pytest

import placement
from ui import solve_pool, worker


def _problem() -> placement.Problem:
    nodes = [
        {"id": i, "name": f"{'attention' if i % 2 else 'mlp'}_{i}", "supportedOnFpga": 1, "cpuLatency": 2.0}
        | {"fpgaLatency": 1.0 + i % 3, "isBackwardNode": 0}
        for i in range(8)
    ]
    edges = [{"sourceId": i, "destId": i + 1, "cost": 0.1} for i in range(7)]
    text = placement.io.json.dumps({"maxFPGAs": 3, "maxCPUs": 1, "nodes": nodes, "edges": edges})
    return placement.parse_problem(text, "g.json")


def _raise_one_line(text: str) -> None:
    raise placement.InvalidGraphError(text)


@pytest.fixture(scope="module")
def pool():
    pool = solve_pool.SolvePool(1, warm_up=False)
    yield pool
    pool.close()


def test_solver_count(monkeypatch):
    monkeypatch.setenv(solve_pool.SOLVERS_ENV, "3")
    assert solve_pool.solver_count() == 3
    monkeypatch.setenv(solve_pool.SOLVERS_ENV, "x")
    assert 2 <= solve_pool.solver_count() <= 4  # two sessions solve at once; idle workers stay few


@pytest.mark.slow
def test_solves_in_a_niced_process_with_progress_and_equal_results(pool):
    problem = _problem()
    seen = []
    result = pool.call(placement.solve, (worker.light(problem), "dp"), {}, progress=lambda d, t: seen.append((d, t)))
    expected = placement.solve(problem, "dp")
    assert result.objective == expected.objective and result.placement == expected.placement
    assert seen and seen[-1][0] == seen[-1][1]  # the last report: done
    assert pool.call(os.getpid, (), {}) != os.getpid()
    assert pool.call(os.nice, (0,), {}) >= os.nice(0) + solve_pool.SOLVE_NICE
    assert pool.call(os.getsid, (0,), {}) == pool.call(os.getpid, (), {})  # a session (autogroup) of its own


@pytest.mark.slow
def test_errors_are_raised_again_one_line(pool):
    with pytest.raises(placement.InvalidGraphError, match="bad name") as caught:
        pool.call(_raise_one_line, ("bad name",), {})
    assert "\n" not in str(caught.value)
    assert pool.call(os.getpid, (), {}) > 0  # the worker is kept


@pytest.mark.slow
def test_a_stopped_session_kills_its_job_and_the_pool_stays_usable(pool):
    busy_pid = pool.call(os.getpid, (), {})
    started = time.monotonic()

    class Stop(Exception):
        pass

    def stop_after_half_a_second() -> None:
        if time.monotonic() - started > 0.5:
            raise Stop

    with pytest.raises(Stop):
        pool.call(time.sleep, (60,), {}, yield_check=stop_after_half_a_second)
    assert time.monotonic() - started < 10  # never waits for the job
    with pytest.raises(OSError):
        os.kill(busy_pid, 0)  # the worker that ran it is gone
    assert pool.call(os.getpid, (), {}) not in (busy_pid, os.getpid())  # a fresh one serves the next job
    assert len(pool.idle) == 1


@pytest.mark.slow
def test_a_dead_worker_is_one_line_and_replaced(pool):
    with pytest.raises(worker.WorkerError) as caught:
        pool.call(os._exit, (3,), {})
    assert "\n" not in str(caught.value)
    assert pool.call(os.getpid, (), {}) != os.getpid()


@pytest.mark.slow
def test_warm_loads_the_kernels_and_a_warmed_pool_solves():
    solve_pool.warm()  # must not raise (a failure would only cost the first solve its head start)
    warmed = solve_pool.SolvePool(1)
    try:
        problem = _problem()
        assert warmed.call(placement.solve, (problem, "dp"), {}).objective == placement.solve(problem, "dp").objective
    finally:
        warmed.close()


def _session_script():
    import os

    import streamlit as st

    import placement
    from ui import worker

    nodes = [{"id": 0, "name": "a", "supportedOnFpga": 1, "cpuLatency": 1.0, "fpgaLatency": 2.0, "isBackwardNode": 0}]
    problem = placement.parse_problem(placement.io.json.dumps({"maxFPGAs": 2, "nodes": nodes, "edges": []}), "g.json")
    seen = []
    result = worker.run_solve(placement.solve, problem, "dp", progress=lambda d, t: seen.append(d))
    st.session_state["out"] = (result.objective, bool(seen), worker.run_solve(os.getpid))


@pytest.mark.slow
def test_run_solve_in_a_session_uses_the_solve_pool(monkeypatch):
    from streamlit.testing.v1 import AppTest

    monkeypatch.setattr(worker, "_in_server", lambda: True)  # AppTest's runtime is a mock: force the pool
    monkeypatch.setenv(solve_pool.SOLVERS_ENV, "1")
    at = AppTest.from_function(_session_script, default_timeout=180)
    at.run()
    assert not at.exception, at.exception
    objective, reported, pid = at.session_state["out"]
    assert objective == 2.0 and reported
    assert pid != os.getpid()
    worker._solvers(1).close()
    worker._solvers.clear()


def test_run_solve_is_inline_outside_a_server():
    assert worker.run_solve(os.getpid) == os.getpid()


@pytest.mark.slow
def test_live_table_builds_in_the_pool_and_a_stopped_build_ends(pool):
    from ui import live

    problem = _problem()
    optimum = float(placement.solve(problem, "dp").objective)
    inline = live._build(problem, None, 2 * optimum, live._Searched())
    pooled = live._build(problem, None, 2 * optimum, live._Searched(), pool)
    assert pooled is not None and inline is not None
    for counts in [((1,), 1), ((2,), 0), ((1,), 0)]:
        assert pooled.query(*counts) == inline.query(*counts)
    stopped = live._Searched()
    stopped.stop = True
    started = time.monotonic()
    with pytest.raises(live._Stopped):  # nobody waits: no table (as in a build in this thread)
        live._build(problem, None, 2 * optimum, stopped, pool)
    assert time.monotonic() - started < 10
    assert pool.call(os.getpid, (), {}) != os.getpid()  # the pool keeps serving


def _hold(megabytes: int) -> int:
    """In a worker: allocate ``megabytes`` MiB (touched) and keep them; its pid."""
    _HELD.append(b"x" * (megabytes << 20))
    return os.getpid()


def _own_rss() -> int:
    from ui.processes import rss_bytes

    return rss_bytes(os.getpid()) or 0


_HELD: list[bytes] = []  # what _hold keeps, in the worker process


def _fragment(megabytes: int) -> int:
    """In a worker: allocate ``megabytes`` MB of small buffers and free all but every 500th (a fragmented heap)."""
    buffers = [bytes(1000) for _ in range(megabytes * 1000)]
    _HELD.extend(buffers[::500])
    return os.getpid()


@pytest.mark.slow
def test_memory_is_given_back_after_a_large_job_and_when_idle():
    """Issue 45.2: a worker over its memory after a job is replaced at once; an idle grown one after a while."""
    pool = solve_pool.SolvePool(1, warm_up=False, idle_s=1.0, janitor_s=0.2)
    try:
        base = pool.call(_own_rss, (), {})
        pool.recycle_rss, pool.idle_rss = base + (200 << 20), base + (60 << 20)
        large = pool.call(_hold, (300,), {})  # over recycle_rss: replaced at once
        assert pool.recycled == 1 and pool.call(os.getpid, (), {}) != large
        held = pool.call(_hold, (120,), {})  # under recycle_rss, over idle_rss: kept while in use
        assert pool.recycled == 1 and pool.call(os.getpid, (), {}) == held
        deadline = time.monotonic() + 30
        while pool.recycled < 2 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert pool.recycled == 2 and pool.call(os.getpid, (), {}) != held
        assert pool.call(_own_rss, (), {}) < pool.idle_rss  # the fresh worker holds its start's memory
    finally:
        pool.close()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc_trim, /proc")
def test_a_worker_gives_back_what_its_job_freed_without_being_replaced():
    """Issue 45.2: the free pages a job leaves in the C heap go back to the system after the job."""
    pool = solve_pool.SolvePool(1, warm_up=False, idle_s=3600.0, janitor_s=3600.0)
    try:
        base = pool.call(_own_rss, (), {})
        pid = pool.call(_fragment, (200,), {})
        after = pool.call(_own_rss, (), {})
        assert pool.recycled == 0 and pool.call(os.getpid, (), {}) == pid
        assert after - base < 60 << 20, (base >> 20, after >> 20)  # not the 200 MB the job touched
    finally:
        pool.close()
