"""ui/worker.py: heavy work in worker processes, one job per session, results equal to the inline ones."""

from __future__ import annotations

import os
import pickle
import queue
import threading
import time

import pytest

import placement
from ui import worker


def _problem() -> placement.Problem:
    nodes = [
        {"id": i, "name": f"{'attention' if i % 2 else 'mlp'}_{i}", "supportedOnFpga": 1, "cpuLatency": 2.0}
        | {"fpgaLatency": 1.0, "isBackwardNode": 0}
        for i in range(6)
    ]
    edges = [{"sourceId": i, "destId": i + 1, "cost": 0.1} for i in range(5)]
    text = placement.io.json.dumps({"maxFPGAs": 2, "maxCPUs": 1, "nodes": nodes, "edges": edges})
    return placement.parse_problem(text, "g.json")


def test_light_copy_is_equal_and_drops_the_networkx_cache():
    problem = _problem()
    _ = problem.graph.networkx, problem.graph.digest
    small = worker.light(problem)
    assert small == problem and small.graph.digest == problem.graph.digest
    assert "networkx" not in small.graph.__dict__ and "networkx" in problem.graph.__dict__
    assert len(pickle.dumps(small)) < len(pickle.dumps(problem))
    assert worker.light(3) == 3


def test_inline_outside_a_server_with_progress():
    seen = []

    def task(a, b, progress=None):
        progress(1, 2)
        return a + b

    assert not worker._in_server()
    assert worker.run(task, 1, 2, progress=lambda d, t: seen.append((d, t))) == 3
    assert seen == [(1, 2)]


def test_task_functions_match_the_library():
    problem = _problem()
    rules = (("attention", 3.0), ("mlp_[0-2]", 0.5))
    scaled = worker.scaled_graph(problem.graph, rules)
    expected = problem.graph.with_latency_scale("attention", 3.0).with_latency_scale("mlp_[0-2]", 0.5)
    assert scaled == expected
    with pytest.raises(placement.PlacementError):
        worker.parse_upload(b"{", "bad.json")
    parsed = worker.parse_upload(
        placement.io.json.dumps(placement.io.graph_to_dict(problem.graph, problem.devices)).encode(), "g.json"
    )
    assert parsed.graph.nodes == problem.graph.nodes and "networkx" not in parsed.graph.__dict__
    names = tuple(n.name for n in problem.graph.nodes)
    assert worker.count_matches(names, ("attention", "mlp_[0-2]", "zzz")) == [3, 2, 0]
    result = worker.solve(problem, "dp")
    assert result.objective == placement.solve(problem, "dp").objective


def test_relay_forwards_the_latest_progress():
    channel: queue.Queue = queue.Queue()
    relay = worker._Relay(channel)
    for done in range(1000):
        relay(done, 1000)
    relay(1000, 1000)
    seen = []
    worker._drain(channel, lambda d, t: seen.append((d, t)))
    assert seen == [(1000, 1000)]  # the last one always; the rest throttled
    assert channel.empty()


def test_worker_count(monkeypatch):
    monkeypatch.setenv(worker.WORKERS_ENV, "0")
    assert worker.worker_count() == 0
    monkeypatch.setenv(worker.WORKERS_ENV, "3")
    assert worker.worker_count() == 3
    monkeypatch.delenv(worker.WORKERS_ENV)
    assert worker.worker_count() >= 2  # one long job never holds every worker


@pytest.mark.slow
def test_pool_runs_tasks_in_another_process_and_reraises_one_line():
    pool = worker._Pool(1)
    try:
        problem = _problem()
        rules = (("attention", 3.0),)
        assert pool.submit(worker.scaled_graph, worker.light(problem.graph), rules).result(120) == (
            worker.scaled_graph(problem.graph, rules)
        )
        with pytest.raises(placement.PlacementError, match="bad.json") as caught:
            pool.submit(worker.parse_upload, b"{", "bad.json").result(120)
        assert "\n" not in str(caught.value)
        channel = pool.manager.Queue()
        result = pool.submit(worker.solve, problem, "dp", progress=worker._Relay(channel)).result(120)
        assert result.objective == placement.solve(problem, "dp").objective
        assert threading.active_count() >= 1
    finally:
        pool.executor.shutdown(cancel_futures=True)
        pool.manager.shutdown()


def _session_script():
    import os

    import streamlit as st

    import placement
    from ui import worker

    text = placement.io.json.dumps(
        {
            "maxFPGAs": 2,
            "nodes": [
                {
                    "id": 0,
                    "name": "attention",
                    "supportedOnFpga": 1,
                    "cpuLatency": 1.0,
                    "fpgaLatency": 1.0,
                    "isBackwardNode": 0,
                }
            ],
            "edges": [],
        }
    )
    problem = worker.run(worker.parse_upload, text.encode(), "g.json")
    graph = worker.run(worker.scaled_graph, problem.graph, (("attent", 4.0),))
    seen = []
    result = worker.run(
        worker.solve, placement.Problem(graph, problem.devices), "dp", progress=lambda d, t: seen.append(d)
    )
    st.session_state["out"] = (graph.nodes[0].accelerator_latency, result.objective, worker.run(os.getpid))
    try:
        worker.run(worker.parse_upload, b"{", "bad.json")
    except placement.PlacementError as exc:
        st.session_state["error"] = str(exc)


@pytest.mark.slow
def test_run_in_a_session_uses_the_pool_and_keeps_one_job(monkeypatch):
    from streamlit.testing.v1 import AppTest

    monkeypatch.setattr(worker, "_in_server", lambda: True)  # AppTest's runtime is a mock: force the pool
    monkeypatch.setenv(worker.WORKERS_ENV, "1")
    at = AppTest.from_function(_session_script, default_timeout=180)
    at.run()
    assert not at.exception, at.exception
    latency, objective, pid = at.session_state["out"]
    assert latency == 4.0 and objective == 4.0
    assert pid != os.getpid()  # ran in a worker process
    assert "bad.json" in at.session_state["error"] and "\n" not in at.session_state["error"]
    assert at.session_state[worker._JOB].done()


def test_yield_cpu_leaves_one_cpu_to_the_server():
    from placement.exact.kernel import default_workers

    seen: dict = {}

    def body() -> None:
        tid = threading.get_native_id()
        before = (sorted(os.sched_getaffinity(0)), os.getpriority(os.PRIO_PROCESS, tid))
        worker.yield_cpu()
        seen["before"], seen["after"] = before, (sorted(os.sched_getaffinity(0)), os.getpriority(os.PRIO_PROCESS, tid))
        seen["kernel_threads"] = default_workers(10**6)

    process_cpus = sorted(os.sched_getaffinity(0))
    thread = threading.Thread(target=body)
    thread.start()
    thread.join()
    (cpus, nice), (cpus_after, nice_after) = seen["before"], seen["after"]
    assert cpus == process_cpus
    assert cpus_after == (cpus[1:] if len(cpus) > 1 else cpus)  # one CPU left to the server
    assert seen["kernel_threads"] == len(cpus_after)  # the DP kernel starts one thread fewer
    assert nice_after == nice  # never niced: a thread holding the GIL must not wait behind other work
    assert sorted(os.sched_getaffinity(0)) == process_cpus  # only the work's own thread changed


def test_run_yielding_is_inline_outside_a_server():
    caller = threading.get_ident()
    assert worker.run_yielding(lambda x, y=0: (x + y, threading.get_ident()), 1, y=2) == (3, caller)
    with pytest.raises(placement.PlacementError, match="one line"):
        worker.run_yielding(lambda: (_ for _ in ()).throw(placement.PlacementError("one line")))


def test_graph_facts_tasks_match_the_library():
    from placement.exact.ideals import contract, ideal_bounds

    graph = _problem().graph
    assert worker.ideal_count(graph, 10**6) == placement.count_ideals(graph, 10**6)
    assert worker.ideal_count(graph, 2) is None  # past the cap: None, not an error
    assert worker.ideal_bounds(graph) == ideal_bounds(contract(graph))
    pickle.dumps(worker.ideal_bounds(graph))  # crosses back from a worker process


def _hold(megabytes: int) -> int:
    """In a worker: allocate ``megabytes`` MiB (touched) and keep them; its pid."""
    _HELD.append(b"x" * (megabytes << 20))
    return os.getpid()


_HELD: list[bytes] = []  # what _hold keeps, in the worker process


@pytest.mark.slow
def test_the_quick_jobs_pool_gives_memory_back(monkeypatch):
    """Issue 45.2: once no job is in flight, workers grown past the limit are ended; the next job starts afresh."""
    monkeypatch.setattr(worker, "JANITOR_S", 0.2)
    monkeypatch.setattr(worker, "RECYCLE_RSS_BYTES", 1 << 40)
    pool = worker._Pool(1)
    try:
        from ui.processes import rss_bytes

        base = rss_bytes(pool.submit(os.getpid).result(120)) or 0
        time.sleep(0.5)
        assert pool.recycled == 0 and base > 0
        monkeypatch.setattr(worker, "RECYCLE_RSS_BYTES", base + (200 << 20))
        large = pool.submit(_hold, 400).result(120)
        deadline = time.monotonic() + 30
        while pool.recycled < 1 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert pool.recycled == 1
        assert pool.submit(os.getpid).result(120) != large
    finally:
        if pool.executor is not None:
            pool.executor.shutdown(cancel_futures=True)
        pool.manager.shutdown()


@pytest.mark.slow
def test_idle_grown_quick_workers_are_replaced_by_started_ones_once(monkeypatch):
    """Issue 45.2: idle workers past QUICK_IDLE_RSS_BYTES are replaced by fresh, already started ones; fresh
    workers are not replaced again while no job has run (no churn when a fresh worker is over the threshold)."""
    monkeypatch.setattr(worker, "JANITOR_S", 0.2)
    monkeypatch.setattr(worker, "IDLE_RECYCLE_S", 0.5)
    monkeypatch.setattr(worker, "RECYCLE_RSS_BYTES", 1 << 40)
    pool = worker._Pool(1)
    try:
        from ui.processes import rss_bytes

        base = rss_bytes(pool.submit(os.getpid).result(120)) or 0
        monkeypatch.setattr(worker, "QUICK_IDLE_RSS_BYTES", base + (60 << 20))
        held = pool.submit(_hold, 120).result(120)
        deadline = time.monotonic() + 30
        while pool.recycled < 1 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert pool.recycled == 1
        deadline = time.monotonic() + 30
        while not getattr(pool.executor, "_processes", None) and time.monotonic() < deadline:
            time.sleep(0.2)
        (fresh,) = list(pool.executor._processes)  # started at once, before any job asks
        assert fresh != held
        monkeypatch.setattr(worker, "QUICK_IDLE_RSS_BYTES", 1)  # every worker over it now
        time.sleep(2.0)
        assert pool.recycled == 1 and list(pool.executor._processes) == [fresh]
    finally:
        if pool.executor is not None:
            pool.executor.shutdown(cancel_futures=True)
        pool.manager.shutdown()
