"""The chain probe (placement.exact.probe): random topological orders, their chains, and the pass's first run.

A chain of any topological order must be a real split: the kernel's value on it equals the
evaluator's max-load of the traced split. The probe decides only which run the max-load pass
makes first, so the pass with the bet skipped must still equal the brute force; and on the
Inception-v3 graphs it must decide as measured (training: beaten, one run; inference: not).
"""

from __future__ import annotations

import math
from pathlib import Path
from unittest import mock

import networkx as nx
import pytest

from placement import load_problem, solve_dp
from placement.evaluate import evaluate
from placement.exact import dp as dp_module
from placement.exact import probe
from placement.exact.ideals import contract, enumerate_ideals, reduce_groups
from placement.exact.kernel import build_inputs, chain_lattice, lattice_tuple, run, traceback_split

from .oracle import brute_force
from .randgraphs import random_problem

SAMPLES = Path(__file__).resolve().parent.parent / "sample_graphs"


def _order_graph(groups) -> nx.DiGraph:
    graph = nx.DiGraph()
    graph.add_nodes_from(range(groups.count))
    graph.add_edges_from(groups.order_edges)
    return graph


@pytest.mark.parametrize("seed", range(8))
def test_random_orders_are_topological_and_deterministic(seed):
    problem = random_problem(seed, training=seed % 2 == 1, rich=True)
    groups = contract(problem.graph)
    graph = _order_graph(groups)
    orders = probe.random_orders(groups.count, groups.order_edges, 6, seed=seed)
    assert len(orders) == 6
    for order in orders:
        assert sorted(order) == list(range(groups.count))
        position = {g: k for k, g in enumerate(order)}
        assert all(position[a] < position[b] for a, b in graph.edges)
    assert orders == probe.random_orders(groups.count, groups.order_edges, 6, seed=seed)


def test_random_orders_differ_where_the_graph_allows():
    groups = contract(load_problem(SAMPLES / "ours" / "inception_v3_inference.json").graph)
    orders = probe.random_orders(groups.count, groups.order_edges, probe.PROBE_ORDERS)
    assert len({tuple(order) for order in orders}) == probe.PROBE_ORDERS


@pytest.mark.parametrize("seed", range(24))
def test_the_chain_of_any_order_is_a_real_split(seed):
    """The kernel's value on the chain of a random order is the evaluator's max-load of the traced split."""
    problem = random_problem(seed, training=seed % 2 == 1, kinds=1 + seed % 2, rich=True)
    groups = contract(problem.graph)
    inputs = build_inputs(problem, groups)
    last = inputs.n_states - 1
    for order in probe.random_orders(groups.count, groups.order_edges, 3, seed=seed):
        best, parent_ideal, parent_type, _ = run(
            inputs, chain_lattice(groups.count, order), problem.devices.overlap, math.inf
        )
        value = float(best[0, last])
        if not math.isfinite(value):
            continue
        placement, _ = traceback_split(
            problem, groups, lambda i, order=order: order[:i], parent_ideal, parent_type, last, groups.count, inputs
        )
        assert evaluate(problem, placement).max_load == value


@pytest.mark.parametrize("training", [False, True])
def test_the_pass_without_the_bet_is_exact(training):
    """With ``beaten`` forced, the pass starts below the chain's value and still finds the brute force's optimum."""
    runs = []
    for number in range(24):
        problem = random_problem(7000 + number, training=training, kinds=1 + number % 2, rich=True)
        groups, ignore = reduce_groups(problem.graph, contract(problem.graph))
        inputs = build_inputs(problem, groups, ignore)
        last = inputs.n_states - 1
        overlap = problem.devices.overlap
        chain = float(run(inputs, chain_lattice(groups.count), overlap, math.inf)[0][0, last])
        if not math.isfinite(chain):
            continue
        arrays = lattice_tuple(enumerate_ideals(groups))
        betting = dp_module._max_load_pass(inputs, arrays, overlap, chain, None, lambda k: None)
        skipping = dp_module._max_load_pass(inputs, arrays, overlap, chain, None, lambda k: None, lambda: True)
        assert skipping[0] == betting[0]
        runs.append(skipping[2])
        with (
            mock.patch.object(probe, "PROBE_MIN_IDEALS", 0),
            mock.patch.object(probe, "chain_beaten", lambda *a, **k: True),
        ):
            result = solve_dp(problem)
        expected, _ = brute_force(problem, contiguous=True)
        assert result.objective == expected if math.isfinite(expected) else result.status == "infeasible"
    assert runs


@pytest.mark.slow
@pytest.mark.parametrize(
    ("sample", "beaten"), [("inception_v3_training.json", True), ("inception_v3_inference.json", False)]
)
def test_the_probe_on_inception_v3(sample, beaten):
    """Training: some order beats the numbering's chain, and the pass proves the optimum in one run; inference: none does."""
    problem = load_problem(SAMPLES / "ours" / sample)
    groups, ignore = reduce_groups(problem.graph, contract(problem.graph))
    inputs = build_inputs(problem, groups, ignore)
    last = inputs.n_states - 1
    overlap = problem.devices.overlap
    chain = float(run(inputs, chain_lattice(groups.count), overlap, math.inf)[0][0, last])
    assert probe.chain_beaten(inputs, groups.count, groups.order_edges, overlap, chain) is beaten
    if beaten:
        arrays = lattice_tuple(enumerate_ideals(groups))
        value, _, runs, _ = dp_module._max_load_pass(inputs, arrays, overlap, chain, None, lambda k: None, lambda: True)
        assert runs == 1 and value < chain


@pytest.mark.parametrize("seed", range(24))
def test_the_probe_says_whether_some_order_beats_the_chain(seed):
    """chain_beaten (feasibility runs clamped just below the chain's value) agrees with plain runs of the same orders."""
    problem = random_problem(9000 + seed, training=seed % 2 == 1, kinds=1 + seed % 2, rich=True)
    groups = contract(problem.graph)
    inputs = build_inputs(problem, groups)
    last = inputs.n_states - 1
    overlap = problem.devices.overlap
    chain = float(run(inputs, chain_lattice(groups.count), overlap, math.inf)[0][0, last])
    if not math.isfinite(chain):
        return
    values = [
        float(run(inputs, chain_lattice(groups.count, order), overlap, math.inf)[0][0, last])
        for order in probe.random_orders(groups.count, groups.order_edges, probe.PROBE_ORDERS)
    ]
    assert probe.chain_beaten(inputs, groups.count, groups.order_edges, overlap, chain) == (min(values) < chain)


def test_the_probe_is_exercised_both_ways():
    """Among small random problems some order beats the numbering's chain and some does not (the test above binds)."""
    outcomes = set()
    for seed in range(24):
        problem = random_problem(9000 + seed, training=seed % 2 == 1, kinds=1 + seed % 2, rich=True)
        groups = contract(problem.graph)
        inputs = build_inputs(problem, groups)
        last = inputs.n_states - 1
        chain = float(run(inputs, chain_lattice(groups.count), problem.devices.overlap, math.inf)[0][0, last])
        if math.isfinite(chain):
            outcomes.add(probe.chain_beaten(inputs, groups.count, groups.order_edges, problem.devices.overlap, chain))
    assert outcomes == {True, False}
