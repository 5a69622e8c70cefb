"""Latency lower bounds: never above the brute-force optimum (one or two calls per accelerator), and tight by hand."""

from __future__ import annotations

import itertools
import math

import pytest

from placement import AcceleratorKind, Devices, DeviceSlot, Edge, Graph, Node, Placement, Problem, evaluate
from placement.ip.latency import solve_latency_ip
from placement.ip.latency_bounds import (
    chain_bound,
    critical_path_bound,
    latency_bounds,
    memory_chain_bound,
    work_bound,
)
from placement.ip.latency_relax import relaxation_bound
from placement.model import Stage, Status

REL = 1e-9


def _groups(problem):
    """Color classes, written independently of the code under test."""
    classes: dict = {}
    for node in problem.graph.nodes:
        key = ("c", node.color_class) if node.color_class is not None else ("n", node.id)
        classes.setdefault(key, []).append(node.id)
    return list(classes.values())


def brute_force_latency_calls(problem, calls: int) -> float:
    """Minimum latency over every assignment of color classes to (accelerator, call) or the CPU core 0."""
    accels = [s for s in problem.devices.slots() if not s.is_cpu]
    targets = [(slot, j) for slot in accels for j in range(calls)]
    if problem.devices.cpus:
        targets.append((DeviceSlot("cpu", 0), 0))
    groups = _groups(problem)
    best = math.inf
    for choice in itertools.product(range(len(targets)), repeat=len(groups)):
        parts: dict = {}
        for members, t in zip(groups, choice):
            slot, j = targets[t]
            parts.setdefault(slot, [[] for _ in range(calls)])[j].extend(members)
        stages = []
        for slot, split in parts.items():
            split = [tuple(p) for p in split if p]
            nodes = tuple(n for p in split for n in p)
            stages.append(Stage(slot, nodes, tuple(split) if len(split) > 1 and not slot.is_cpu else None))
        evaluation = evaluate(problem, Placement(tuple(stages)))
        if evaluation.feasible:
            best = min(best, evaluation.latency)
    return best


CASES = [(seed, rich) for seed in range(14) for rich in (False, True)]


@pytest.mark.parametrize("seed,rich", CASES)
def test_every_bound_is_at_most_the_brute_force_optimum_for_one_and_two_calls(random_problem, seed, rich):
    problem = random_problem(seed, kinds=1 + seed % 2, zero_cost_edges=seed % 3 == 0, max_forward=5, rich=rich)
    bounds = latency_bounds(problem)
    for calls in (1, 2):
        expected = brute_force_latency_calls(problem, calls)
        if math.isinf(expected):
            continue
        for q, found in ((None, bounds), (calls, latency_bounds(problem, calls))):
            for name, value in found.items():
                assert value <= expected * (1 + REL) + 1e-12, (name, value, expected, calls, q)


BRANCHY = [(seed, kinds) for seed in range(40, 56) for kinds in (1, 2)]


@pytest.mark.parametrize("seed,kinds", BRANCHY)
def test_chain_bound_with_hulls_straddlers_and_call_counts_is_at_most_the_optimum(random_problem, seed, kinds):
    """Six-node graphs (skip edges give hulls and straddlers), one call per accelerator, and five nodes with two."""
    for calls, size in ((1, 6), (2, 5)):
        problem = random_problem(seed, kinds=kinds, n_forward=size, zero_cost_edges=seed % 3 == 0)
        expected = brute_force_latency_calls(problem, calls)
        if math.isinf(expected):
            continue
        value = chain_bound(problem, calls)
        assert value <= expected * (1 + REL) + 1e-12, (value, expected, calls)
        assert chain_bound(problem) <= value * (1 + REL) + 1e-12  # counting calls only tightens it


def _residual(accelerators: int) -> Problem:
    """0 -> 1 -> 2 -> 4 and a shortcut 0 -> 3 -> 4 (3 takes 2, the others 1; transfers 0.1); memory holds 3 of 5 nodes."""
    nodes = tuple(Node(i, cpu_latency=100, accelerator_latency=t, size=1) for i, t in enumerate([1, 1, 1, 2, 1]))
    edges = (Edge(0, 1, 0.1), Edge(1, 2, 0.1), Edge(2, 4, 0.1), Edge(0, 3, 0.1), Edge(3, 4, 0.1))
    return Problem(Graph(nodes, edges), Devices((AcceleratorKind("acc", accelerators, 3),), cpus=1))


def test_chain_bound_sees_the_shortcut_and_the_calls_it_needs():
    """Running the shortcut beside 1 -> 2 takes more calls than two accelerators with one call each have.

    There the optimum (brute force) is 6.4 and the bound, counting calls, 6.2; with two calls each, or
    four accelerators, both are 4.5. The critical path alone is 4.
    """
    assert critical_path_bound(_residual(2)) == pytest.approx(4.0)
    assert brute_force_latency_calls(_residual(2), 1) == pytest.approx(6.4)
    assert chain_bound(_residual(2), 1) == pytest.approx(6.2)
    assert brute_force_latency_calls(_residual(2), 2) == pytest.approx(4.5)
    assert chain_bound(_residual(2), 2) == pytest.approx(4.5)
    assert brute_force_latency_calls(_residual(4), 1) == pytest.approx(4.5)
    assert chain_bound(_residual(4), 1) == pytest.approx(4.5)


def _chain(sizes, costs, accel_times, cpu_times, memory, count=2, cpus=1):
    nodes = tuple(
        Node(i, cpu_latency=c, accelerator_latency=a, size=s)
        for i, (s, a, c) in enumerate(zip(sizes, accel_times, cpu_times))
    )
    edges = tuple(Edge(i, i + 1, costs[i]) for i in range(len(nodes) - 1))
    devices = Devices((AcceleratorKind("acc", count, memory),), cpus=cpus)
    return Problem(Graph(nodes, edges), devices)


def test_chain_bound_counts_the_transfer_that_memory_forces():
    """a -> b -> c, each of size 1 on accelerators holding 2: one cut (cost 3, paid by sender and receiver)."""
    problem = _chain([1, 1, 1], [5, 3], [1, 1, 1], [100, 100, 100], memory=2)
    assert critical_path_bound(problem) == pytest.approx(3.0)
    # Cut after b: 1+1 + 3 (out) and 3 (in) + 1 = 9; after a: 1 + 5, 5 + 1 + 1 = 13; a CPU node costs 100.
    assert chain_bound(problem) == pytest.approx(9.0)
    result = solve_latency_ip(problem, time_limit=30)
    assert result.objective == pytest.approx(9.0) and result.status == "optimal"
    assert result.stat("bound_source") in ("chain", "ip")


def test_work_bound_spreads_slow_cpu_nodes_over_the_accelerators():
    """Four independent nodes of accelerator time 2, CPU time 10, two accelerators: L >= min(max(10, 0), 4) = 4."""
    nodes = tuple(Node(i, cpu_latency=10, accelerator_latency=2, size=1) for i in range(4))
    problem = Problem(Graph(nodes, ()), Devices((AcceleratorKind("acc", 2, 100),), cpus=1))
    assert work_bound(problem) == pytest.approx(4.0)
    assert critical_path_bound(problem) == pytest.approx(2.0)
    result = solve_latency_ip(problem, time_limit=30)
    assert result.objective == pytest.approx(4.0) and result.bound == pytest.approx(4.0)
    assert result.status == "optimal"


def test_result_reports_every_bound_and_which_is_active(samples_dir):
    from placement import load_problem

    problem = load_problem(samples_dir / "latency/layer/bert24_inference.json")
    result = solve_latency_ip(problem, time_limit=5)
    names = ("critical_path", "work", "chain", "memory_chain", "relaxation")
    for name in names:
        assert result.stat(f"bound_{name}") is not None
        assert result.bound >= result.stat(f"bound_{name}") * (1 - 1e-9)
    assert result.stat("bound_source") in (*names, "ip")


RELAX_CASES = [(seed, rich) for seed in range(14) for rich in (False, True)] + [(seed, None) for seed in range(40, 52)]


@pytest.mark.parametrize("seed,rich", RELAX_CASES)
def test_relaxation_bound_is_at_most_the_brute_force_optimum_for_one_and_two_calls(random_problem, seed, rich):
    """The device-choice relaxation (solved to optimality) never exceeds the optimum."""
    if rich is None:  # six-node graphs with skip edges, tight memory from the fixture's sizes
        problem = random_problem(seed, kinds=1 + seed % 2, n_forward=6, zero_cost_edges=seed % 3 == 0)
    else:
        problem = random_problem(seed, kinds=1 + seed % 2, zero_cost_edges=seed % 3 == 0, max_forward=5, rich=rich)
    relaxed = relaxation_bound(problem)
    for calls in (1, 2):
        expected = brute_force_latency_calls(problem, calls)
        if math.isinf(expected):
            continue
        counted = relaxation_bound(problem, calls_per_accelerator=calls)
        assert relaxed.status is Status.OPTIMAL and counted.status is Status.OPTIMAL
        assert relaxed.bound <= expected * (1 + REL) + 1e-12, (relaxed.bound, expected, calls)
        assert counted.bound <= expected * (1 + REL) + 1e-12, (counted.bound, expected, calls)
        assert counted.bound >= relaxed.bound * (1 - 1e-6)  # counting runs only adds rows


def test_relaxation_sees_memory_where_the_combinatorial_bounds_do_not():
    """A chain of four nodes, two accelerators each holding one node: two nodes must run on the CPU core.

    Accelerator time 1, CPU time 10 each, no transfers: the best is 1 + 1 + 10 + 10 = 22 and the
    relaxation proves it, while the critical path (4) and work (2) bounds see no memory.
    """
    nodes = tuple(Node(i, cpu_latency=10.0, accelerator_latency=1.0, size=1.0) for i in range(4))
    edges = tuple(Edge(i, i + 1, 0.0) for i in range(3))
    problem = Problem(Graph(nodes, edges), Devices.paper(accelerators=2, cpus=1, memory=1.0))
    relaxed = relaxation_bound(problem)
    assert relaxed.bound == pytest.approx(22.0)
    assert brute_force_latency_calls(problem, 1) == pytest.approx(22.0)
    assert max(critical_path_bound(problem), work_bound(problem)) < 22.0


def test_relaxation_counts_accelerator_runs_along_a_path():
    """A chain alternating fast-on-accelerator and cheap-on-CPU nodes, one accelerator with room for all.

    Accelerator 1 / CPU 10 for nodes 0, 2, 4 and accelerator 5 / CPU 0 for nodes 1, 3: without call
    counting the relaxation puts 0, 2, 4 on the accelerator and 1, 3 on the CPU core (3); with one
    call the accelerator nodes form one run, so 1 and 3 must join them (the optimum, 13).
    """
    times = ((10.0, 1.0), (0.0, 5.0), (10.0, 1.0), (0.0, 5.0), (10.0, 1.0))
    nodes = tuple(Node(i, cpu_latency=c, accelerator_latency=a, size=1.0) for i, (c, a) in enumerate(times))
    problem = Problem(Graph(nodes, tuple(Edge(i, i + 1, 0.0) for i in range(4))), Devices.paper(1, 1, memory=5.0))
    assert relaxation_bound(problem).bound == pytest.approx(3.0)
    assert relaxation_bound(problem, calls_per_accelerator=1).bound == pytest.approx(13.0)
    assert brute_force_latency_calls(problem, 1) == pytest.approx(13.0)


@pytest.mark.parametrize("seed,kinds", BRANCHY)
def test_memory_chain_bound_is_at_most_the_optimum(random_problem, seed, kinds):
    """Hulls sharing the accelerators' memory: six-node graphs with one call per accelerator, five with two."""
    for calls, size in ((1, 6), (2, 5)):
        problem = random_problem(seed, kinds=kinds, n_forward=size, zero_cost_edges=seed % 3 == 0)
        expected = brute_force_latency_calls(problem, calls)
        if math.isinf(expected):
            continue
        assert memory_chain_bound(problem, calls) <= expected * (1 + REL) + 1e-12


def test_memory_chain_bound_shares_memory_between_calls():
    """A chain of four nodes (accelerator 1, CPU 10 each, size 1), one accelerator of memory 2 with two calls.

    The chain bound gives each call the whole memory (4 nodes in two calls: 4); shared, two nodes go to the
    CPU core: 1 + 1 + 10 + 10 = 22, the optimum.
    """
    nodes = tuple(Node(i, cpu_latency=10.0, accelerator_latency=1.0, size=1.0) for i in range(4))
    problem = Problem(Graph(nodes, tuple(Edge(i, i + 1, 0.0) for i in range(3))), Devices.paper(1, 1, memory=2.0))
    assert chain_bound(problem, 2) == pytest.approx(4.0)
    assert memory_chain_bound(problem, 2) == pytest.approx(22.0)
    assert brute_force_latency_calls(problem, 2) == pytest.approx(22.0)
