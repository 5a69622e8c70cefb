"""The max-load pass as feasibility runs (placement.exact.dp._max_load_pass) and the capacity bound of cell_floors.

The pass is exact whatever the number of runs: it must equal one plain run (clamp at the
problem's own lower bound) and the brute force, and some of the random cases must take more
than one run (the chain's value is not always optimal), so the loop is exercised. The capacity
bound's knapsack is checked against an enumeration of the LP's vertices, and the bound must
cut a cell that the fractional work bound keeps (a CPU core far slower than the accelerators).
"""

from __future__ import annotations

import itertools
import math
import random

import numpy as np
import pytest

from placement import Devices, Edge, Graph, Node, Problem, solve_dp
from placement.exact import dp as dp_module
from placement.exact.floors import _absorb, _capacity_root, _group_compute, root_bound
from placement.exact.ideals import contract, enumerate_ideals, reduce_groups
from placement.exact.kernel import build_inputs, cell_floors, chain_lattice, lattice_tuple, run

from .oracle import brute_force
from .randgraphs import random_problem


def _knapsack_by_vertices(gain: list[float], cost: list[float], cap: float) -> float:
    """The fractional knapsack's optimum: a vertex takes some items whole and at most one in part."""
    best = 0.0
    n = len(gain)
    for size in range(n + 1):
        for whole in itertools.combinations(range(n), size):
            used = sum(cost[g] for g in whole)
            if used > cap + 1e-12:
                continue
            value = sum(gain[g] for g in whole)
            best = max(best, value)
            for part in set(range(n)) - set(whole):
                share = 1.0 if cost[part] <= 0 else min(1.0, (cap - used) / cost[part])
                best = max(best, value + gain[part] * share)
    return best


@pytest.mark.parametrize("seed", range(12))
def test_absorb_is_the_fractional_knapsack_optimum(seed):
    rng = random.Random(seed)
    n = rng.randint(1, 7)
    reference = [rng.choice([0.0, rng.uniform(0.1, 5)]) for _ in range(n)]
    other = [rng.choice([0.0, math.inf, rng.uniform(0.1, 5)]) for _ in range(n)]
    cap = rng.uniform(0.5, 8)
    plain = np.array([reference, other])
    # Groups blocked on either type (inf) cannot move; free ones (cost 0 on the other type) always do.
    usable = [g for g in range(n) if math.isfinite(other[g]) and reference[g] > 0]
    expected = sum(reference[g] for g in usable if other[g] == 0) + _knapsack_by_vertices(
        [reference[g] for g in usable if other[g] > 0], [other[g] for g in usable if other[g] > 0], cap
    )
    assert _absorb(plain, 0, 1, cap) == pytest.approx(expected, rel=1e-12, abs=1e-12)


def _slow_cpu_problem() -> Problem:
    """Four unit layers on two accelerators and a CPU core: three layers take 1000 on the CPU, one takes 10."""
    nodes = tuple(Node(k, 1000.0 if k < 3 else 10.0, 1.0) for k in range(4))
    edges = tuple(Edge(k, k + 1, 0.0) for k in range(3))
    return Problem(Graph(nodes, edges), Devices.paper(2, 1))


def test_capacity_bound_cuts_a_cell_the_work_bound_keeps():
    problem = _slow_cpu_problem()
    groups, ignore = reduce_groups(problem.graph, contract(problem.graph))
    lattice = enumerate_ideals(groups)
    inputs = build_inputs(problem, groups, ignore)
    arrays = lattice_tuple(lattice)
    cut = 3.3
    one_accelerator_one_cpu = int(inputs.strides[0] * 1 + inputs.strides[1] * 1)
    # Every layer on one accelerator and the CPU core within 3.3: the CPU takes at most 3.3/10 of
    # the light layer, so the accelerator needs 4 - 0.33 > 3.3 (a split of whole layers is worse).
    assert math.isinf(cell_floors(inputs, arrays, cut)[0, one_accelerator_one_cpu])
    # The work bound alone (weights 1/total per type: the CPU looks cheap for the light layer)
    # gives about 3.009 and keeps the cell.
    assert math.isfinite(_work_bound_floors(inputs, arrays, cut)[0, one_accelerator_one_cpu])
    # The optimum is unchanged (two layers per accelerator).
    assert solve_dp(problem).objective == 2.0


def _work_bound_floors(inputs, arrays, upper_bound):
    from unittest import mock

    from placement.exact import floors as floors_module

    everything = lambda plain, out, inside, counts, ub: np.ones((out.shape[0], counts.shape[1]), dtype=np.bool_)  # noqa: E731
    with mock.patch.object(floors_module, "_capacity_ok", everything):
        return cell_floors(inputs, arrays, upper_bound)


def _inputs(problem: Problem):
    groups, ignore = reduce_groups(problem.graph, contract(problem.graph))
    lattice = enumerate_ideals(groups)
    inputs = build_inputs(problem, groups, ignore)
    last = inputs.n_states - 1
    chain = float(run(inputs, chain_lattice(groups.count), problem.devices.overlap, math.inf)[0][0, last])
    return inputs, lattice_tuple(lattice), chain


@pytest.mark.parametrize("training", [False, True])
def test_the_pass_equals_one_plain_run_and_sometimes_takes_several_runs(training):
    runs = []
    for number in range(30):
        problem = random_problem(5000 + number, training=training, kinds=1 + number % 2, rich=True)
        inputs, arrays, chain = _inputs(problem)
        if not math.isfinite(chain):
            continue
        overlap = problem.devices.overlap
        value, cut, count, (best, *_rest) = dp_module._max_load_pass(
            inputs, arrays, overlap, chain, None, lambda k: None
        )
        # One run with the work bound's floors and the chain's value as the cut: the DP as it was.
        last = inputs.n_states - 1
        plain = float(run(inputs, arrays, overlap, chain, floor=_work_bound_floors(inputs, arrays, chain))[0][0, last])
        assert value == plain
        assert best[0, last] == value and cut >= value
        runs.append(count)
        result = solve_dp(problem)
        expected, _ = brute_force(problem, contiguous=True)
        assert result.objective == expected if math.isfinite(expected) else result.status == "infeasible"
    # Not every chain value is optimal: the loop that lowers the clamp ran somewhere.
    assert runs and max(runs) > 1, runs


@pytest.mark.parametrize("seed", range(40))
def test_root_bound_is_below_the_optimum_and_the_capacity_part_binds(seed):
    """root_bound (work bound, then the capacity bisection) never exceeds the brute-force optimum."""
    problem = random_problem(seed, training=seed % 2 == 1, kinds=1 + seed % 2)
    groups = contract(problem.graph)
    inputs = build_inputs(problem, groups)
    optimum, _ = brute_force(problem, contiguous=True)
    bound = root_bound(inputs)
    assert bound <= optimum
    if math.isfinite(optimum):
        assert bound < optimum or optimum == 0.0


def test_the_capacity_bisection_sees_a_slow_core():
    """The slow-core problem: the work bound lets the core take a share of every layer, the capacity bound not.

    Two accelerators must hold 4 units of accelerator compute, the core at most U / 10 of it (a
    tenth of the light layer per unit of its time), so ``4 <= 2 U + U / 10``: ``U >= 4 / 2.1``.
    """
    problem = _slow_cpu_problem()
    inputs = build_inputs(problem, contract(problem.graph))
    plain, _, _ = _group_compute(inputs)
    capacity = _capacity_root(plain, np.asarray([2, 1]), 0.0)
    assert capacity == pytest.approx(4 / 2.1, rel=1e-4) and capacity < 4 / 2.1  # 16 bisection steps
    assert root_bound(inputs) == pytest.approx(capacity, rel=1e-4) and root_bound(inputs) < 4 / 2.1  # work bound: 1.506
    assert capacity < solve_dp(problem).objective == 2.0


@pytest.mark.parametrize("seed", range(12))
def test_lower_only_raises_the_finite_floors(seed):
    """cell_floors(..., lower=T) is cell_floors(...) with every floor raised to T (the max-load pass's first run uses this)."""
    problem = random_problem(6000 + seed, training=seed % 2 == 1, kinds=1 + seed % 2, rich=True)
    inputs, arrays, chain = _inputs(problem)
    if not math.isfinite(chain):
        return
    plain = cell_floors(inputs, arrays, chain)
    for lower in (-math.inf, 0.5 * chain, math.nextafter(chain, -math.inf), 2.0 * chain):
        assert np.array_equal(cell_floors(inputs, arrays, chain, lower=lower), np.maximum(plain, lower))
