"""The Tradeoffs grids moved into the package (placement.explore.grids): values and the memory grid's exactness."""

import math

import pytest

from placement import evaluate, solve_dp
from placement.explore.grids import bandwidth_values, count_values, memory_grid, plan_memory, use_pool
from placement.explore.sweep import count_label, vary


def test_count_and_bandwidth_grids_and_the_pool_rule():
    assert count_values(4) == (1, 2, 3, 4)
    assert count_values(0) == (1,)
    values = bandwidth_values(2.0)
    assert values[0] == pytest.approx(0.25) and values[-1] == pytest.approx(16.0) and len(values) == 13
    assert use_pool(0.5, 4) and not use_pool(0.1, 4)


@pytest.mark.parametrize("seed", range(6))
def test_memory_grid_points_are_optima_and_bracket_every_plan_change(random_problem, seed):
    problem = random_problem(seed, n_forward=6, max_accelerators=3)
    points = memory_grid(problem, points=6, rounds=2)
    if not points:  # the unlimited optimum puts nothing on the accelerators
        unlimited = vary(problem, "memory", math.inf)
        assert not plan_memory(unlimited, solve_dp(unlimited), problem.devices.accelerators[0].name) > 0
        return
    values = [p.value for p in points]
    assert values == sorted(values)
    for p in points:  # every point is the optimum at its own memory (independent solve + evaluator)
        fresh = solve_dp(p.problem)
        if fresh.ok:
            assert p.ok and p.time_per_sample == pytest.approx(fresh.objective, rel=1e-9)
            assert evaluate(p.problem, p.result.placement).feasible
        else:
            assert not p.ok
    # Times never rise with more memory, and the highest point holds the unlimited optimum.
    times = [p.time_per_sample for p in points if p.ok]
    assert all(a >= b * (1 - 1e-12) for a, b in zip(times, times[1:]))
    unlimited = solve_dp(vary(problem, "memory", math.inf))
    assert times[-1] == pytest.approx(unlimited.objective, rel=1e-9)


def test_count_labels_name_the_kinds(random_problem):
    from placement import AcceleratorKind, Devices

    devices = Devices((AcceleratorKind("V100", 2, 1.0), AcceleratorKind("T4", 3, 1.0)), cpus=0)
    assert count_label(devices, (2, 3)) == "2 x V100 + 3 x T4"
    assert count_label(devices, (0, 1)) == "1 x T4"
    assert count_label(devices, (0, 0)) == "no accelerators (CPU only)"


def _sleep(seconds: float) -> float:
    import time

    time.sleep(seconds)
    return seconds


def test_stop_executor_ends_busy_workers():
    """The Tradeoffs page's Stop: running solves do not finish first; the worker processes end."""
    import time
    from concurrent.futures import ProcessPoolExecutor

    import psutil

    from placement.explore.grids import stop_executor

    pool = ProcessPoolExecutor(max_workers=1)
    busy = pool.submit(_sleep, 60.0)
    queued = pool.submit(_sleep, 60.0)
    while not busy.running():
        time.sleep(0.05)
    workers = [psutil.Process(w.pid) for w in pool._processes.values()]
    started = time.perf_counter()
    stop_executor(pool)
    assert time.perf_counter() - started < 10
    assert queued.done()  # cancelled, or failed with the pool
    # psutil, not Process.is_alive: the pool's own thread may reap the worker first, and is_alive then says True
    assert not any(w.is_running() and w.status() != psutil.STATUS_ZOMBIE for w in workers)
