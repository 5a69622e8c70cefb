"""Reach (:mod:`placement.exact.reach`): the kernel's cut by the rows already final.

The cut must never change a result: forced on every run (``REACH_MIN_IDEALS = 0``, training
graphs too: ``REACH_TRAINING``), the DP
equals the brute force on mixed-magnitude problems (overlap, CPU bandwidth and training
graphs among them: the received-input term is added to the compute, or with overlap taken
beside it). ``fill_reach`` equals its definition (the least compute of a superset within the
bound) on random tables, and on a real sample graph the cut searches fewer pairs for the same
split.
"""

from __future__ import annotations

import math
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
from placement.exact.reach import beyond_reach, fill_reach, ideal_output, node_graph, output_terms, reach_inputs

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

    with mock.patch.multiple(kernel, REACH_MIN_IDEALS=0, REACH_TRAINING=True, reach_inputs=counted):
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
    """``reach[J, s, t, b]`` by its definition: min of ``work[K, t, b]`` over supersets ``K`` of ``J`` with ``best[K, s] <= bound``."""
    n, n_states = best.shape
    reach = np.full((n, n_states) + work.shape[1:], np.inf)
    for j in range(n):
        for k in range(n):
            if lattice.masks[k] & lattice.masks[j] != lattice.masks[j]:
                continue
            for s in range(n_states):
                if best[k, s] <= upper_bound:
                    reach[j, s] = np.minimum(reach[j, s], work[k])
    return reach


def _small_lattice(seed: int, training: bool):
    """A random two-kind problem with its groups, ideal lattice and kernel inputs."""
    problem = random_problem(seed, training=training, kinds=2, max_forward=5)
    groups = contract(problem.graph)
    return problem, groups, enumerate_ideals(groups, 10_000), build_inputs(problem, groups)


@pytest.mark.parametrize("seed", range(6))
def test_fill_reach_is_its_definition(seed):
    _, _, lattice, inputs = _small_lattice(seed, training=seed % 2 == 1)
    rng = np.random.default_rng(seed)
    n = lattice.count
    best = np.where(rng.random((n, inputs.n_states)) < 0.6, rng.uniform(0, 2, (n, inputs.n_states)), np.inf)
    upper_bound = 1.0
    reach, work, slack, below, added = reach_inputs(inputs, lattice_tuple(lattice), best, upper_bound, 0)
    assert (slack >= 0).all() and below[0] == -1 and added[0] == -1
    for i in range(n - 2, -1, -1):  # supersets first, as the kernel closes rows
        fill_reach(i, lattice.up_start, lattice.up_target, best, reach, work, upper_bound, 0)
    np.testing.assert_array_equal(reach, _reach_by_definition(lattice, work, best, upper_bound))


@pytest.mark.parametrize("seed", range(6))
def test_ideal_output_is_its_definition(seed):
    """``C_t(J)``: the output terms on ``t`` of the nodes of ``J`` with a successor outside ``J`` (backward edges too)."""
    problem, groups, lattice, inputs = _small_lattice(seed, training=seed % 2 == 0)
    per_type = output_terms(inputs)
    output = ideal_output(lattice_tuple(lattice), node_graph(inputs), per_type)
    position = {node.id: k for k, node in enumerate(problem.graph.nodes)}
    for j in range(lattice.count):
        inside = {position[n] for g in lattice.groups_of(j) for n in groups.members[g]}
        sends = {
            position[e.source]
            for e in problem.graph.edges
            if position[e.source] in inside and position[e.target] not in inside
        }
        for t in range(inputs.n_types):
            exact = math.fsum(per_type[t, x] for x in sends)
            assert output[j, t] == pytest.approx(exact, rel=1e-12, abs=1e-15 * per_type[t].sum())


def test_beyond_reach_needs_every_open_cell_and_type_out_of_reach():
    # One ideal pair (row 0, superset 1), two types, states 0..2 of type 0 only; cell (0, 2) open.
    prev_state = np.array([[-1, 0, 1], [-1, -1, -1]])
    best = np.array([[np.inf, np.inf, 5.0], [0.0, 0.0, 0.0]])
    reach = np.full((2, 3, 2, 2), np.inf)
    work = np.zeros((2, 2, 2))
    slack = np.zeros((2, 2))
    type_cross = np.array([0, -1])
    open_cells = np.array([2])

    def cut(compute, received=0.0, overlap=False, objective=0, output=0.0, skipping=0.0, absorbed=0.0):
        reach[1, 1, 0] = compute, compute + output  # the least W(J'), and W(J') + C(J')
        stage = (np.array([received]), np.array([absorbed]), np.array([skipping]))
        bounds = (reach, work, slack, type_cross)
        hint = np.array([-1])  # no state found reachable before
        is_open = np.array([False, False, True])
        return beyond_reach(
            0, 1, 1, open_cells, is_open, hint, prev_state, best, bounds, stage, (overlap, 3.0, objective)
        )

    assert not cut(2.9)  # a superset within the bound: the branch may end a split
    assert cut(3.1)  # its compute alone exceeds the bound
    assert cut(np.inf)  # no superset holds a split of the rest
    assert cut(2.0, received=1.5)  # compute + received input > 3
    assert not cut(2.0, received=1.5, overlap=True)  # with overlap: max(2, 1.5) <= 3
    assert cut(2.0, received=3.5, overlap=True)
    assert cut(2.0, output=1.5)  # the stage sends C(J') = 1.5 at least: 2 + 1.5 > 3
    assert not cut(2.0, output=1.5, skipping=1.0)  # unless nodes of I may send past the stage
    assert cut(2.0, output=1.5, skipping=1.0, absorbed=1.0)  # ... and they no longer can
    assert not cut(2.0, output=1.5, overlap=True)  # with overlap the output bound is not used
    best[0, 2] = 2.5
    assert cut(2.9)  # cannot beat the cell's value (objective 0)
    assert not cut(2.9, objective=1)  # the tie-break pass keeps every stage within the bound


@pytest.mark.parametrize(
    ("sample", "reached"),
    [("ours/inception_v3_inference.json", True), ("throughput/operator/bert_l-3_training.json", False)],
)
def test_reach_on_sample_graphs(sample, reached):
    """Inference graphs: fewer pairs for the same split; training graphs keep the plain search (``REACH_TRAINING``).

    Reach is allowed on every lattice size here, so only the kind of graph decides.
    """
    problem = load_problem(SAMPLES / sample)
    real = dp_module.run

    def without_reach(*args, **kwargs):
        return real(*args, **dict(kwargs, reach=False))

    with mock.patch.object(kernel, "REACH_MIN_IDEALS", 0):
        with mock.patch.object(dp_module, "run", without_reach):
            plain = solve_dp(problem)
        cut = solve_dp(problem)
    assert cut.status == plain.status == "optimal"
    assert cut.objective == plain.objective
    if reached:
        assert cut.stat("pairs") < 0.5 * plain.stat("pairs")
    else:
        assert cut.stat("pairs") == plain.stat("pairs")


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
