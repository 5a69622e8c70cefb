"""Interval splits for latency: exact on chains (one call per accelerator), feasible and never below the optimum."""

from __future__ import annotations

import math
import random

import pytest

from placement import Devices, Edge, Graph, Node, Problem, evaluate
from placement.ip.latency_interval import calls_interval_placement, interval_placement, interval_placements

from .test_latency_bounds import brute_force_latency_calls

REL = 1e-9


def _chain(seed: int) -> Problem:
    """A random chain of 4-6 nodes on two accelerators holding about a third of it each, one CPU core."""
    rng = random.Random(seed)
    n = rng.randint(4, 6)
    nodes = tuple(
        Node(
            i,
            cpu_latency=round(rng.uniform(1, 10), 2),
            accelerator_latency=round(rng.uniform(0.2, 3), 2),
            supported_on_accelerator=rng.random() > 0.1,
            size=float(rng.randint(1, 4)),
        )
        for i in range(n)
    )
    edges = tuple(Edge(i, i + 1, round(rng.uniform(0, 2), 2)) for i in range(n - 1))
    memory = max(node.size for node in nodes) + rng.randint(0, 3)
    return Problem(Graph(nodes, edges), Devices.paper(accelerators=2, cpus=1, memory=memory))


@pytest.mark.parametrize("seed", range(16))
def test_interval_split_is_the_optimum_on_a_chain_with_one_call_per_accelerator(seed):
    """On a chain every call is a run of consecutive nodes and the units run one after another: the DP is exact."""
    problem = _chain(seed)
    found = interval_placement(problem)
    assert found is not None
    assert evaluate(problem, found).feasible
    assert evaluate(problem, found).latency == pytest.approx(brute_force_latency_calls(problem, 1), rel=REL)


@pytest.mark.parametrize("seed", range(12))
def test_interval_splits_are_feasible_and_never_below_the_optimum(random_problem, seed):
    problem = random_problem(seed, n_forward=6, zero_cost_edges=seed % 3 == 0)
    optimum = brute_force_latency_calls(problem, 1)
    for found in interval_placements(problem):
        evaluation = evaluate(problem, found)
        assert evaluation.feasible, evaluation.violations
        assert all(stage.calls is None for stage in found.stages)  # one call per accelerator
        assert evaluation.latency >= optimum * (1 - REL)
    if math.isinf(optimum):
        assert interval_placements(problem) == []


def test_interval_split_chooses_cpu_nodes_and_calls_together():
    """Four nodes in a chain, two accelerators holding one node each: the two slowest-on-CPU nodes go on them.

    CPU times 10, 2, 10, 2 (accelerator 1 each, no transfers): calls {0} and {2}, CPU nodes 1 and 3 -> 6.
    """
    cpu = (10.0, 2.0, 10.0, 2.0)
    nodes = tuple(Node(i, cpu_latency=c, accelerator_latency=1.0, size=1.0) for i, c in enumerate(cpu))
    edges = tuple(Edge(i, i + 1, 0.0) for i in range(3))
    problem = Problem(Graph(nodes, edges), Devices.paper(accelerators=2, cpus=1, memory=1.0))
    found = interval_placement(problem)
    assert found is not None
    assert evaluate(problem, found).latency == pytest.approx(6.0)
    assert sorted(v for stage in found.stages if not stage.device.is_cpu for v in stage.nodes) == [0, 2]


@pytest.mark.parametrize("seed", range(10))
def test_several_calls_split_is_feasible_and_never_below_the_two_call_optimum(random_problem, seed):
    problem = random_problem(seed, n_forward=5, zero_cost_edges=seed % 3 == 0)
    found = calls_interval_placement(problem, 2)
    if found is None:
        return
    evaluation = evaluate(problem, found)
    assert evaluation.feasible, evaluation.violations
    assert all(len(stage.calls or (stage.nodes,)) <= 2 for stage in found.stages)
    assert evaluation.latency >= brute_force_latency_calls(problem, 2) * (1 - REL)


def test_two_calls_leave_a_cheap_middle_node_to_the_cpu():
    """a -> b -> c (accelerator 1 each; CPU 10, 0, 10), one accelerator holding two: one call pays 11, two pay 2."""
    nodes = tuple(Node(i, cpu_latency=c, accelerator_latency=1.0, size=1.0) for i, c in enumerate((10.0, 0.0, 10.0)))
    problem = Problem(Graph(nodes, (Edge(0, 1, 0.0), Edge(1, 2, 0.0))), Devices.paper(1, 1, memory=2.0))
    one = interval_placement(problem)
    two = calls_interval_placement(problem, 2)
    assert one is not None and two is not None
    assert evaluate(problem, one).latency == pytest.approx(11.0) == brute_force_latency_calls(problem, 1)
    assert evaluate(problem, two).latency == pytest.approx(2.0) == brute_force_latency_calls(problem, 2)
