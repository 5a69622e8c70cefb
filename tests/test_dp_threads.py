"""The threaded DP (rows of one lattice level shared out among threads) equals the one-thread DP bit for bit.

Every call of :func:`placement.exact.kernel.run` made by ``solve_dp`` / ``solve_memory_aware``
(chain bound, max-load pass, tie-break pass) is run once with ``workers=1`` and once with
``workers=2``; the tables (values, parents), the pair counts and the results (objective,
chosen split after the tie-break) must be identical, and the threaded run must really have
called the kernel from two threads. Random graphs come from the one generator
(:func:`tests.randgraphs.random_problem`), with every level split into one-row pieces so that
even small lattices run concurrently; the wide sample graph runs with the default settings.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest

from placement import load_problem, solve_dp
from placement.exact import dp as dp_module
from placement.exact import kernel
from placement.exact import memory_aware as memory_aware_module
from placement.exact.ideals import contract, enumerate_ideals, reduce_groups
from placement.exact.memory_aware import solve_memory_aware

from .randgraphs import random_problem


def _solve_with(monkeypatch, workers: int, solve):
    """``solve()`` with every kernel run on ``workers`` threads; returns (result, tables, kernel thread ids)."""
    tables = []
    threads = set()
    real_run, real_dp = kernel.run, kernel.lattice_dp

    def run(*args, **kwargs):
        out = real_run(*args, **dict(kwargs, workers=workers))
        tables.append(out)
        return out

    def lattice_dp(*args):
        threads.add(threading.get_ident())
        return real_dp(*args)

    with monkeypatch.context() as patch:
        patch.setattr(dp_module, "run", run)
        patch.setattr(memory_aware_module, "run", run)
        patch.setattr(kernel, "lattice_dp", lattice_dp)
        result = solve()
    return result, tables, threads


def _assert_identical(one, two):
    (result1, tables1, threads1), (result2, tables2, threads2) = one, two
    assert len(threads1) == 1
    assert len(threads2) >= 2  # the threaded path really ran (a pool of threads per kernel run)
    assert len(tables1) == len(tables2) > 0
    for (best1, ideal1, type1, pairs1), (best2, ideal2, type2, pairs2) in zip(tables1, tables2):
        assert np.array_equal(best1.view(np.int64), best2.view(np.int64))  # bit for bit
        assert np.array_equal(ideal1, ideal2)
        assert np.array_equal(type1, type2)
        assert pairs1 == pairs2
    assert result1.status == result2.status
    assert repr(result1.objective) == repr(result2.objective)
    assert result1.placement == result2.placement
    assert result1.stat("pairs") == result2.stat("pairs")


@pytest.mark.parametrize("seed", range(12))
def test_threaded_dp_equals_one_thread_on_random_graphs(monkeypatch, seed):
    problem = random_problem(seed, training=seed % 2 == 1, n_forward=9, kinds=1 + seed % 3, rich=seed % 4 == 3)
    monkeypatch.setattr(kernel, "THREAD_MIN_ROWS", 1)  # every level on both threads, in one-row pieces
    one = _solve_with(monkeypatch, 1, lambda: solve_dp(problem))
    two = _solve_with(monkeypatch, 2, lambda: solve_dp(problem))
    _assert_identical(one, two)
    if problem.graph.nodes[-1].is_backward:  # training: the memory-aware planner's kernel runs too
        one = _solve_with(monkeypatch, 1, lambda: solve_memory_aware(problem, "1f1b", 4, recompute="per-stage"))
        two = _solve_with(monkeypatch, 2, lambda: solve_memory_aware(problem, "1f1b", 4, recompute="per-stage"))
        _assert_identical(one, two)


def test_threaded_progress_reaches_the_total(monkeypatch):
    problem = random_problem(3, n_forward=10)
    monkeypatch.setattr(kernel, "THREAD_MIN_ROWS", 1)
    seen = []
    _solve_with(monkeypatch, 2, lambda: solve_dp(problem, progress=lambda done, total: seen.append((done, total))))
    assert seen and seen[-1][0] == seen[-1][1]
    assert all(a[0] <= b[0] for a, b in zip(seen, seen[1:]))


def test_levels_put_every_superset_on_a_lower_level():
    problem = random_problem(5, training=True, n_forward=8)
    groups, _ = reduce_groups(problem.graph, contract(problem.graph))
    lattice = enumerate_ideals(groups)
    order, level_start = kernel.ideal_levels(lattice.up_start, lattice.up_target, lattice.count)
    assert sorted(order.tolist()) == list(range(lattice.count - 1))  # every row but the full ideal, once
    level = np.zeros(lattice.count, dtype=np.int64)
    begin = 0
    for k, end in enumerate(level_start.tolist(), start=1):
        level[order[begin:end]] = k
        begin = end
    for i in range(lattice.count - 1):
        targets = lattice.up_target[lattice.up_start[i] : lattice.up_start[i + 1]]
        assert all(level[j] < level[i] for j in targets)


def test_one_cpu_or_a_small_lattice_runs_on_one_thread(monkeypatch):
    monkeypatch.setattr(kernel.os, "sched_getaffinity", lambda pid: {0})
    assert kernel.default_workers(10**6) == 1
    monkeypatch.setattr(kernel.os, "sched_getaffinity", lambda pid: {0, 1})
    assert kernel.default_workers(10**6) == 2
    assert kernel.default_workers(kernel.THREAD_MIN_IDEALS - 1) == 1


@pytest.mark.slow
def test_threaded_dp_equals_one_thread_on_a_wide_sample_graph(monkeypatch, samples_dir):
    problem = load_problem(samples_dir / "ours" / "inception_wide_inference.json")
    one = _solve_with(monkeypatch, 1, lambda: solve_dp(problem))
    two = _solve_with(monkeypatch, 2, lambda: solve_dp(problem))
    _assert_identical(one, two)
