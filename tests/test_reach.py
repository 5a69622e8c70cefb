"""Reach (:mod:`placement.exact.reach`): the kernel's cut by the rows already final.

The cut must never change a result: forced on every run (``REACH_MIN_IDEALS = 0``), the DP
equals the brute force on mixed-magnitude problems (overlap, CPU bandwidth and training
graphs among them: the received-input term is added to the compute, or with overlap taken
beside it). ``fill_reach`` equals its definition (the least compute of a superset within the
bound) on random tables, and on a real sample graph the cut searches fewer pairs for the same
split.
"""

from __future__ import annotations

from pathlib import Path
from unittest import mock

import numpy as np
import pytest

import placement.exact.dp as dp_module
from placement import load_problem, solve_dp
from placement.exact import kernel
from placement.exact.ideals import contract, enumerate_ideals
from placement.exact.inputs import build_inputs
from placement.exact.kernel import lattice_tuple
from placement.exact.reach import beyond_reach, fill_reach, reach_inputs

from .randgraphs import random_problem
from .test_dp_exact import _check, mixed_problem

SAMPLES = Path(__file__).resolve().parent.parent / "sample_graphs"


@pytest.fixture
def reach_everywhere():
    """Reach on every run (the default threshold keeps it off on these small lattices), and a count of its runs."""
    runs: list[int] = []
    real = kernel.reach_inputs

    def counted(*args, **kwargs):
        runs.append(1)
        return real(*args, **kwargs)

    with mock.patch.multiple(kernel, REACH_MIN_IDEALS=0, reach_inputs=counted):
        yield runs


@pytest.mark.parametrize("seed", range(40))
def test_reach_inference_matches_brute_force(seed, reach_everywhere):
    _check(mixed_problem(seed))
    assert reach_everywhere  # the runs were made with reach


@pytest.mark.parametrize("seed", range(200, 220))
def test_reach_training_matches_brute_force(seed, reach_everywhere):
    _check(mixed_problem(seed, training=True))
    assert reach_everywhere  # the runs were made with reach


def _reach_by_definition(lattice, work, best, upper_bound):
    """``reach[J, s, t]`` by its definition: min of ``work[K, t]`` over supersets ``K`` of ``J`` with ``best[K, s] <= bound``."""
    n, n_states = best.shape
    reach = np.full((n, n_states, work.shape[1]), np.inf)
    for j in range(n):
        for k in range(n):
            if lattice.masks[k] & lattice.masks[j] != lattice.masks[j]:
                continue
            for s in range(n_states):
                if best[k, s] <= upper_bound:
                    reach[j, s] = np.minimum(reach[j, s], work[k])
    return reach


@pytest.mark.parametrize("seed", range(6))
def test_fill_reach_is_its_definition(seed):
    problem = random_problem(seed, training=seed % 2 == 1, kinds=2, max_forward=5)
    groups = contract(problem.graph)
    lattice = enumerate_ideals(groups, 10_000)
    inputs = build_inputs(problem, groups)
    rng = np.random.default_rng(seed)
    n = lattice.count
    best = np.where(rng.random((n, inputs.n_states)) < 0.6, rng.uniform(0, 2, (n, inputs.n_states)), np.inf)
    upper_bound = 1.0
    reach, work, slack, below, added = reach_inputs(inputs, lattice_tuple(lattice), best, upper_bound, 0)
    assert (slack >= 0).all() and below[0] == -1 and added[0] == -1
    for i in range(n - 2, -1, -1):  # supersets first, as the kernel closes rows
        fill_reach(i, lattice.up_start, lattice.up_target, best, reach, work, upper_bound, 0)
    np.testing.assert_array_equal(reach, _reach_by_definition(lattice, work, best, upper_bound))


def test_beyond_reach_needs_every_open_cell_and_type_out_of_reach():
    # One ideal pair (row 0, superset 1), two types, states 0..2 of type 0 only; cell (0, 2) open.
    prev_state = np.array([[-1, 0, 1], [-1, -1, -1]])
    best = np.array([[np.inf, np.inf, 5.0], [0.0, 0.0, 0.0]])
    reach = np.full((2, 3, 2), np.inf)
    work = np.zeros((2, 2))
    slack = np.zeros(2)
    no_input = np.zeros(1)
    type_cross = np.array([0, -1])
    open_cells = np.array([2])

    def cut(reach_value, received=0.0, overlap=False, objective=0):
        reach[1, 1, 0] = reach_value
        return beyond_reach(
            0,
            1,
            1,
            open_cells,
            prev_state,
            best,
            reach,
            work,
            slack,
            no_input + received,
            type_cross,
            overlap,
            3.0,
            objective,
        )

    assert not cut(2.9)  # a superset within the bound: the branch may end a split
    assert cut(3.1)  # its compute alone exceeds the bound
    assert cut(np.inf)  # no superset holds a split of the rest
    assert cut(2.0, received=1.5)  # compute + received input > 3
    assert not cut(2.0, received=1.5, overlap=True)  # with overlap: max(2, 1.5) <= 3
    assert cut(2.0, received=3.5, overlap=True)
    best[0, 2] = 2.5
    assert cut(2.9)  # cannot beat the cell's value (objective 0)
    assert not cut(2.9, objective=1)  # the tie-break pass keeps every stage within the bound


def test_reach_cuts_pairs_on_a_sample_graph():
    problem = load_problem(SAMPLES / "throughput" / "operator" / "bert_l-3_training.json")
    real = dp_module.run

    def without_reach(*args, **kwargs):
        return real(*args, **dict(kwargs, reach=False))

    with mock.patch.object(dp_module, "run", without_reach):
        plain = solve_dp(problem)
    cut = solve_dp(problem)
    assert cut.status == plain.status == "optimal"
    assert cut.objective == plain.objective
    assert cut.stat("pairs") < 0.8 * plain.stat("pairs")


def test_reach_is_off_past_its_table_cap():
    problem = random_problem(3, kinds=2, max_forward=5)
    runs: list[int] = []
    real = kernel.reach_inputs
    with mock.patch.multiple(
        kernel, REACH_MIN_IDEALS=0, REACH_MAX_BYTES=0, reach_inputs=lambda *a, **k: runs.append(1) or real(*a, **k)
    ):
        capped = solve_dp(problem)
    assert not runs
    with mock.patch.object(kernel, "REACH_MIN_IDEALS", 0):
        expected = solve_dp(problem)
    assert (capped.status, capped.objective) == (expected.status, expected.objective)
