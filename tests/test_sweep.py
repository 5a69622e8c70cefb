"""Tests of placement.explore.sweep: sweeps, executors, Pareto frontiers, sensitivity, and its figures in viz."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from placement import (
    AcceleratorKind,
    Devices,
    Edge,
    Graph,
    Node,
    PlacementError,
    Problem,
    evaluate,
    load_problem,
    solve_dp,
    viz,
)
from placement.explore.sweep import (
    PARAMETERS,
    count_grid,
    executor_for,
    pareto_front,
    sensitivity,
    sweep,
    vary,
)


def chain(costs=(0.0, 0.0), latency=2.0, size=1.0) -> Graph:
    """a -> b -> c, each ``latency`` on the reference accelerator, ``size`` bytes, 10x slower on a CPU."""
    nodes = tuple(Node(i, cpu_latency=10 * latency, accelerator_latency=latency, size=size) for i in range(3))
    return Graph(nodes, (Edge(0, 1, costs[0]), Edge(1, 2, costs[1])))


def big(count: int, memory: float = math.inf, price: float = 3.0, cpus: int = 0) -> Devices:
    return Devices((AcceleratorKind("big", count, memory, price_per_hour=price),), cpus=cpus, cpu_price_per_hour=0.5)


# ----------------------------------------------------------------------------- sweeps (hand-computed values)


def test_count_sweep_hand_computed():
    problem = Problem(chain(), big(1))
    points = sweep(problem, "accelerators", [1, 2, 3, 4])
    # 6 units of work; split over k devices the best bottleneck is 6, 4 (2+4), 2, 2.
    assert [p.time_per_sample for p in points] == pytest.approx([6.0, 4.0, 2.0, 2.0])
    assert [p.devices_used for p in points] == [1, 2, 3, 3]
    assert [p.price_per_hour for p in points] == pytest.approx([3.0, 6.0, 9.0, 9.0])
    assert [p.total_memory for p in points] == [math.inf] * 4
    assert [p.memory_used for p in points] == pytest.approx([3.0] * 4)
    assert [p.index for p in points] == [0, 1, 2, 3]
    assert [p.problem.devices.kind("big").count for p in points] == [1, 2, 3, 4]
    assert all(p.status == "optimal" and p.ok for p in points)
    assert points[1].label == "accelerators = 2"


def test_memory_sweep_hand_computed_with_infeasible_point():
    problem = Problem(chain(), big(2, price=1.0, cpus=0))
    points = sweep(problem, "memory", [1.0, 2.0, 3.0, math.inf])
    # Two devices of 1 byte cannot hold 3 nodes of 1 byte; 2 bytes allow 2+1 (time 4).
    assert points[0].status == "infeasible" and points[0].time_per_sample is None and not points[0].ok
    assert points[0].devices_used == 0 and points[0].price_per_hour == 0.0
    assert [p.time_per_sample for p in points[1:]] == pytest.approx([4.0, 4.0, 4.0])
    assert points[1].total_memory == pytest.approx(4.0)  # two devices of 2 bytes provisioned
    assert points[2].total_memory == pytest.approx(6.0)


def test_bandwidth_sweep_hand_computed():
    # a->b and b->c cost 1. One device: 6. Two devices: 4 + 1/bw (the crossing output is paid once per device).
    problem = Problem(chain(costs=(1.0, 1.0)), big(2))
    points = sweep(problem, "bandwidth", [0.25, 0.5, 1.0, 4.0])
    assert [p.time_per_sample for p in points] == pytest.approx([6.0, 6.0, 5.0, 4.25])
    assert [p.devices_used for p in points[2:]] == [2, 2]


def test_cpu_and_speed_sweeps_hand_computed():
    # CPU cores run a node in 20; one "big" device runs everything in 6 (speed 1) or 3 (speed 2).
    problem = Problem(chain(), big(1, cpus=0))
    cpus = sweep(problem, "cpus", [0, 1])
    assert [p.time_per_sample for p in cpus] == pytest.approx([6.0, 6.0])
    speed = sweep(problem, "speed", [0.5, 2.0])
    assert [p.time_per_sample for p in speed] == pytest.approx([12.0, 3.0])
    # No accelerator at all: the CPU cores do the work, priced at cpu_price_per_hour.
    only_cpus = sweep(Problem(chain(), big(0, cpus=3)), "cpus", [3])[0]
    assert only_cpus.time_per_sample == pytest.approx(20.0)
    assert (only_cpus.cpus_used, only_cpus.accelerators_used, only_cpus.price_per_hour) == (3, 0, pytest.approx(1.5))


def test_sweep_matches_solve_dp_on_a_shared_graph_with_three_kinds(samples_dir):
    base = load_problem(samples_dir / "throughput" / "layer" / "bert24_inference.json")
    memory = base.devices.accelerators[0].memory
    devices = Devices(
        (
            AcceleratorKind("fast", 2, memory, speed=2.0, price_per_hour=4.0),
            AcceleratorKind("mid", 2, memory, speed=1.0, price_per_hour=2.0),
            AcceleratorKind("slow", 2, memory / 2, speed=0.5, price_per_hour=0.5),
        ),
        cpus=1,
    )
    problem = Problem(base.graph, devices)
    values = [0, 1, 2, 3]
    points = sweep(problem, "accelerators", values, kind="mid")
    for value, point in zip(values, points):
        expected = solve_dp(Problem(base.graph, devices.with_kind("mid", count=value)))
        assert point.time_per_sample == pytest.approx(expected.objective)
        # Price and devices used recomputed from the evaluator's per-device loads.
        loads = evaluate(point.problem, point.result.placement).devices
        prices = {k.name: k.price_per_hour for k in devices.accelerators}
        assert point.price_per_hour == pytest.approx(sum(prices.get(d.device.kind, 0.0) for d in loads))
        assert point.devices_used == len(loads)
    times = [p.time_per_sample for p in points]
    assert times == sorted(times, reverse=True)  # more devices never hurt (at most semantics)


def test_counts_grid_and_sweep():
    devices = Devices((AcceleratorKind("a", 2), AcceleratorKind("b", 1)))
    grid = count_grid(devices)
    assert sorted(grid) == sorted(c for c in [(a, b) for a in range(3) for b in range(2)] if any(c))
    thinned = count_grid(Devices((AcceleratorKind("a", 8), AcceleratorKind("b", 8))), max_points=20)
    assert len(thinned) <= 20 and (8, 8) in thinned and (0, 8) in thinned
    problem = Problem(chain(), Devices((AcceleratorKind("a", 2), AcceleratorKind("b", 1, speed=2.0))))
    points = sweep(problem, "counts", grid)
    for point, combo in zip(points, grid):
        expected = solve_dp(vary(problem, "counts", combo))
        assert point.time_per_sample == pytest.approx(expected.objective)


def _double_speed(problem: Problem, factor: float) -> Devices:
    return problem.devices.with_kind("big", speed=factor)


def test_callable_parameter_and_duplicates_solved_once():
    problem = Problem(chain(), big(1))
    points = sweep(problem, _double_speed, [1.0, 2.0, 2.0])
    assert [p.time_per_sample for p in points] == pytest.approx([6.0, 3.0, 3.0])
    assert points[0].parameter == "_double_speed"
    assert points[1].result is points[2].result  # the same inventory is solved once


def test_progress_callback_and_errors():
    calls = []
    problem = Problem(chain(), big(1))
    sweep(problem, "accelerators", [1, 2, 3], progress=lambda done, total: calls.append((done, total)))
    assert calls == [(0, 3), (1, 3), (2, 3), (3, 3)]
    with pytest.raises(PlacementError, match="unknown sweep parameter"):
        sweep(problem, "color", [1])
    with pytest.raises(PlacementError, match="non-negative integer"):
        sweep(problem, "accelerators", [1.5])
    with pytest.raises(PlacementError, match="no accelerator kind"):
        sweep(problem, "memory", [1.0], kind="nope")
    # A solver error becomes a point with status "error" (here: too many ideals for the limit).
    point = sweep(problem, "accelerators", [2], max_ideals=2)[0]
    assert point.status == "error" and "ideals" in point.result.reason and point.time_per_sample is None


# ----------------------------------------------------------------------------- executors


@pytest.mark.slow  # over 5 s (spawns a process pool and a Dask cluster)
def test_process_pool_and_dask_give_the_sequential_numbers(samples_dir):
    problem = load_problem(samples_dir / "throughput" / "layer" / "gnmt_training.json")
    values = [0.25 * k for k in range(1, 13)]
    sequential = sweep(problem, "bandwidth", values)
    calls = []
    pooled = sweep(problem, "bandwidth", values, executor="process", progress=lambda d, t: calls.append(d))
    assert [p.time_per_sample for p in pooled] == [p.time_per_sample for p in sequential]
    assert [p.result.placement for p in pooled] == [p.result.placement for p in sequential]
    assert sorted(calls) == list(range(len(values) + 1))
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(
        processes=False, n_workers=1, threads_per_worker=2, dashboard_address=":0"
    ) as cluster:
        executor = executor_for(cluster.scheduler_address, allowed=(cluster.scheduler_address,))
        try:
            dasked = sweep(problem, "bandwidth", values, executor=executor)
        finally:
            executor.shutdown()
    assert [p.time_per_sample for p in dasked] == [p.time_per_sample for p in sequential]


def test_executor_for_bad_address():
    with pytest.raises(PlacementError, match="Dask scheduler"):
        executor_for("tcp://127.0.0.1:1", timeout=1, allowed=("tcp://127.0.0.1:1",))


def test_dask_address_refused_unless_allow_listed(monkeypatch):
    from placement.explore.sweep import DASK_ALLOW_ENV, allowed_dask_addresses

    monkeypatch.delenv(DASK_ALLOW_ENV, raising=False)
    with pytest.raises(PlacementError, match="not allowed"):
        executor_for("tcp://attacker.example:8786", timeout=1)
    monkeypatch.setenv(DASK_ALLOW_ENV, "tcp://127.0.0.1:1, tcp://10.0.0.5:8786")
    assert allowed_dask_addresses() == ("tcp://127.0.0.1:1", "tcp://10.0.0.5:8786")
    with pytest.raises(PlacementError, match="not allowed"):
        executor_for("tcp://attacker.example:8786", timeout=1)
    with pytest.raises(PlacementError, match="cannot reach"):  # allowed: it tries to connect
        executor_for("tcp://127.0.0.1:1", timeout=1)


def test_worker_results_are_plain_data_only(samples_dir):
    from placement.explore.sweep import result_from_plain, result_to_plain, solve_point

    problem = load_problem(samples_dir / "throughput" / "layer" / "bert24_inference.json")
    result = solve_point(problem)
    assert result_from_plain(json.loads(json.dumps(result_to_plain(result)))) == result
    bad = result_to_plain(result)
    bad["objective"] = "1; rm -rf /"
    with pytest.raises(PlacementError, match="objective must be a number"):
        result_from_plain(bad)
    bad = result_to_plain(result)
    bad["placement"][0]["nodes"] = [{"__reduce__": "os.system"}]
    with pytest.raises(PlacementError, match="stage nodes"):
        result_from_plain(bad)
    with pytest.raises(PlacementError, match="not an object"):
        result_from_plain(["status", "optimal"])


def test_sweep_points_are_capped(samples_dir):
    from placement.explore.sweep import MAX_SWEEP_POINTS

    problem = load_problem(samples_dir / "throughput" / "layer" / "bert24_inference.json")
    with pytest.raises(PlacementError, match=f"at most {MAX_SWEEP_POINTS:,} values"):
        sweep(problem, "bandwidth", (1.0 + k for k in range(10**9)))


# ----------------------------------------------------------------------------- Pareto frontier


def test_pareto_front_hand_computed():
    problem = Problem(chain(), big(1))
    points = sweep(problem, "accelerators", [4, 1, 2, 3])
    front = pareto_front(points, x="devices")
    # (devices, time): (3,2) from 4 and 3 - the first is kept; (1,6); (2,4).
    assert [(p.devices_used, p.time_per_sample) for p in front] == [(1, 6.0), (2, 4.0), (3, 2.0)]
    assert front[-1].value == 4
    assert [p.value for p in pareto_front(points, x="price")] == [1, 2, 4]
    with pytest.raises(PlacementError, match="Pareto axis"):
        pareto_front(points, x="color")


@settings(max_examples=60, deadline=None, derandomize=True)
@given(st.lists(st.tuples(st.integers(0, 5), st.integers(0, 5), st.booleans()), min_size=1, max_size=12))
def test_pareto_front_matches_definition(coords):
    template = sweep(Problem(chain(), big(1)), "accelerators", [1])[0]
    infeasible = replace(
        template,
        result=replace(template.result, status="infeasible", placement=None),
        status="infeasible",
        time_per_sample=None,
    )
    points = [
        replace(template if ok else infeasible, index=k, devices_used=x, time_per_sample=float(y) if ok else None)
        for k, (x, y, ok) in enumerate(coords)
    ]
    front = pareto_front(points, x="devices")
    good = [p for p in points if p.ok]
    for p in good:
        dominated = any(
            q.devices_used <= p.devices_used
            and q.time_per_sample <= p.time_per_sample
            and (q.devices_used, q.time_per_sample) != (p.devices_used, p.time_per_sample)
            for q in good
        )
        first_of_equals = all(
            (q.devices_used, q.time_per_sample) != (p.devices_used, p.time_per_sample)
            for q in good
            if q.index < p.index
        )
        assert (p in front) == (not dominated and first_of_equals)
    assert [p.devices_used for p in front] == sorted(p.devices_used for p in front)


# ----------------------------------------------------------------------------- sensitivity


def test_sensitivity_of_device_count_hand_computed():
    problem = Problem(chain(), big(2))
    result = sensitivity(problem, "accelerators", max_count=8)
    assert result.objective == pytest.approx(4.0)
    assert result.down.value == 1 and result.down.reason == "plan does not fit"
    assert result.down.objective == pytest.approx(6.0)
    assert result.up.value == 3 and result.up.reason == "faster plan"
    assert result.up.objective == pytest.approx(2.0) and result.up.plan_objective == pytest.approx(4.0)
    assert "With 3" in result.sentence and "With 1" in result.sentence


def test_sensitivity_of_bandwidth_hand_computed():
    # Two devices: 4 + 1/bw; one device: 6. The split stops being optimal below bw = 0.5.
    problem = Problem(chain(costs=(1.0, 1.0)), big(2))
    result = sensitivity(problem, "bandwidth", rel_tol=1e-4)
    assert result.objective == pytest.approx(5.0)
    assert result.down is not None and result.down.value == pytest.approx(0.5, rel=2e-4)
    assert result.down.value < 0.5
    assert result.down.objective == pytest.approx(6.0)
    assert result.up is None  # more bandwidth only makes the split faster
    assert "bandwidth factor" in result.sentence and "keeps the plan optimal" in result.sentence


def test_sensitivity_of_memory_hand_computed():
    # Two devices of 2 bytes: the 2+1 split (time 4). Below 2 bytes nothing fits; more memory changes nothing.
    problem = Problem(chain(), big(2, memory=2.0))
    result = sensitivity(problem, "memory")
    assert result.down.value == pytest.approx(2.0) and result.down.value < 2.0
    assert result.down.objective is None and "nothing fits" in result.sentence
    assert result.up is None
    # One device of 3 bytes holds the whole graph; below 3 bytes nothing fits.
    single = sensitivity(Problem(chain(), big(1, memory=3.0)), "memory")
    assert single.down.value == pytest.approx(3.0) and single.down.objective is None


def test_sensitivity_errors_and_no_plan():
    problem = Problem(chain(), big(2))
    with pytest.raises(PlacementError, match="unknown parameter"):
        sensitivity(problem, "counts")
    nothing = sensitivity(Problem(chain(), big(0)), "bandwidth")
    assert nothing.objective is None and "No plan" in nothing.sentence
    assert set(PARAMETERS) == {"accelerators", "memory", "bandwidth", "speed", "cpus"}


# ----------------------------------------------------------------------------- figures


def test_sweep_and_pareto_figures_carry_point_ids():
    problem = Problem(chain(costs=(1.0, 1.0)), big(2, memory=2.0))
    points = sweep(problem, "accelerators", [0, 1, 2, 3])  # 0 and 1 devices: nothing fits
    figure = viz.sweep_figure(points, sensitivity=sensitivity(problem, "accelerators", max_count=4), selected=2)
    spec = json.loads(figure.to_json())
    curve = spec["data"][0]
    assert curve["customdata"] == [[2], [3]] and curve["x"] == [2.0, 3.0]
    assert curve["y"] == pytest.approx([p.time_per_sample for p in points[2:]])
    assert spec["data"][1]["name"] == "no plan fits" and spec["data"][1]["customdata"] == [[0], [1]]
    assert spec["data"][2]["name"] == "selected" and spec["data"][2]["customdata"] == [[2]]
    assert len(spec["layout"]["shapes"]) >= 2  # "now" and where the plan changes

    pareto = json.loads(viz.pareto_figure(points, x="price").to_json())
    front = [t for t in pareto["data"] if t["name"] == "Pareto frontier"][0]
    expected = pareto_front(points, x="price")
    assert front["customdata"] == [[p.index] for p in expected]
    assert front["x"] == [p.price_per_hour for p in expected]
    rows = viz.sweep_rows(points)
    assert [r["status"] for r in rows] == [p.status for p in points]


# ----------------------------------------------------------------------------- stopping (issue 26 item 9)


class _Recording:
    """An executor that records the futures a sweep submits (each goes to the real pool)."""

    def __init__(self, pool):
        self.pool, self.futures = pool, []

    def submit(self, fn, *args):
        future = self.pool.submit(fn, *args)
        self.futures.append(future)
        return future


class _Interrupted(Exception):
    pass


def test_an_interrupted_sweep_cancels_its_queued_solves_and_stop_ends_the_workers(samples_dir):
    """The page's Stop: the waiting sweep is interrupted at a heartbeat, queued solves are cancelled,
    the busy worker is terminated (no process left), and nothing waits for the exact solve to finish."""
    from concurrent.futures.process import BrokenProcessPool

    import psutil

    from placement.explore.grids import stop_executor

    problem = load_problem(samples_dir / "ours" / "inception_wide_inference.json")
    pool = executor_for(None, max_workers=1)
    recording = _Recording(pool)
    beats = []

    def progress(done, total):
        beats.append(done)
        if recording.futures and recording.futures[0].running():
            raise _Interrupted  # what Streamlit does when Stop is clicked (a RerunException)

    with pytest.raises(_Interrupted):
        sweep(problem, "accelerators", range(1, 7), executor=recording, progress=progress, heartbeat_s=0.1)
    assert beats and set(beats) == {0}  # heartbeats while no solve finished
    # the pool hands one solve per worker plus one more to its call queue (those count as running)
    started = [f for f in recording.futures if not f.cancelled()]
    assert len(recording.futures) == 6 and len(started) <= 2 and not any(f.done() for f in started)
    workers = [psutil.Process(p.pid) for p in pool._processes.values()]
    assert workers
    stop_executor(pool)
    assert all(f.done() and not f.cancelled() for f in started)  # failed with the terminated worker
    with pytest.raises(BrokenProcessPool):
        started[0].result()
    assert not any(w.is_running() and w.status() != psutil.STATUS_ZOMBIE for w in workers)
    stop_executor(pool)  # stopping twice is harmless


def test_a_pool_does_not_keep_the_interpreter_waiting_for_busy_workers(tmp_path):
    """A server stopped while a solve runs exits at once: the pool's busy workers are ended at exit."""
    import subprocess
    import sys

    script = tmp_path / "busy.py"
    script.write_text(
        "import time\n"
        "from placement.explore.executors import executor_for\n"
        "if __name__ == '__main__':  # a spawned worker imports this file again\n"
        "    pool = executor_for(None, max_workers=1)\n"
        "    future = pool.submit(time.sleep, 600)\n"
        "    while not future.running():\n"
        "        time.sleep(0.05)\n"
        "    time.sleep(1)\n"
        "    assert not future.done()  # the worker is alive and sleeping\n"
        "    print(' '.join(str(p.pid) for p in pool._processes.values()), flush=True)\n"
    )
    import os

    import psutil

    root = str(Path(__file__).resolve().parent.parent)
    env = {**os.environ, "PYTHONPATH": root}
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr
    pids = [int(p) for p in done.stdout.split()]
    assert pids
    for pid in pids:  # the worker sleeping 600 s is gone
        assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
