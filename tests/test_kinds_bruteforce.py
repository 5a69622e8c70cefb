"""Brute-force property tests of the multi-kind DP (placement.exact.dp.solve_dp).

Random small problems from the one generator (:func:`tests.randgraphs.random_problem` with
``rich=True``, drawn by hypothesis): inference and training graphs with color classes, 2 or
3 accelerator kinds with their own counts, memory, speed, bandwidth, per-kind latencies and
allowed kinds, CPU cores, unsupported nodes, tight memory and zero-latency nodes (which the
DP merges away). The oracle (:mod:`tests.oracle`) shares no code with the package: it
enumerates every assignment of the color units to devices, checks contiguity from the
definition and computes loads itself.

The DP must equal the oracle's best contiguous split and can never beat its best placement.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import HealthCheck, given, settings

from placement import AcceleratorKind, Devices, Edge, Graph, Node, Problem, solve_dp

from .oracle import brute_force, max_load
from .randgraphs import problems


def brute_contiguous(problem: Problem) -> float:
    return brute_force(problem, contiguous=True)[0]


def brute_any(problem: Problem) -> float:
    return brute_force(problem, contiguous=False)[0]


def _check_dp_placement(problem: Problem, result) -> None:
    """The DP's split, checked by the oracle: valid, its max-load the objective, stages in pipeline order."""
    value = max_load(problem, result.placement)
    assert value is not None, "the oracle finds a rule broken"
    assert math.isclose(value, result.objective, rel_tol=1e-9, abs_tol=1e-9)
    backward = {node.id for node in problem.graph.nodes if node.is_backward}
    prefix: set[int] = set()
    for stage in result.placement.stages:
        prefix |= set(stage.nodes) - backward
        for edge in problem.graph.edges:
            if edge.target in prefix and edge.source not in backward:
                assert edge.source in prefix, f"stage order breaks edge {edge.source}->{edge.target}"


SETTINGS = settings(
    max_examples=150,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@SETTINGS
@given(problems(kinds=(2, 3), max_forward=5))
def test_dp_equals_contiguous_brute_force(problem):
    result = solve_dp(problem)
    expected = brute_contiguous(problem)
    if math.isinf(expected):
        assert result.status == "infeasible", result
        assert result.placement is None and result.reason
    else:
        assert result.status == "optimal", result
        assert math.isclose(result.objective, expected, rel_tol=1e-9, abs_tol=1e-9), (result.objective, expected)
        _check_dp_placement(problem, result)


@settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(problems(kinds=(2, 3), max_forward=4))
def test_dp_never_beats_non_contiguous_brute_force(problem):
    result = solve_dp(problem)
    anything = brute_any(problem)
    if result.ok:
        assert result.objective >= anything * (1 - 1e-9) - 1e-9
    if math.isinf(anything):
        assert not result.ok


def test_brute_force_on_a_hand_computed_diamond():
    """The enumerations themselves on a hand-computed case: a diamond a->{b,c}->d, two alpha devices."""
    nodes = tuple(Node(i, cpu_latency=10.0, accelerator_latency=1.0) for i in range(4))
    edges = (Edge(0, 1, 1.0), Edge(0, 2, 1.0), Edge(1, 3, 1.0), Edge(2, 3, 1.0))
    devices = Devices((AcceleratorKind("alpha", 2), AcceleratorKind("beta", 0)), cpus=0)
    problem = Problem(Graph(nodes, edges), devices)
    # One device: compute 4, no crossing -> 4. Two devices {a,b}|{c,d}: each compute 2; crossing
    # edges a->c (node a counted on both) and b->d (node b counted on both): load 2 + 1 + 1 = 4.
    # {a}|{b,c,d}: 1 + 1 = 2 and 3 + 1 = 4. {a,b,c}|{d}: 3 + 2 = 5. So the optimum is 4.
    assert brute_contiguous(problem) == pytest.approx(4.0)
    assert solve_dp(problem).objective == pytest.approx(4.0)
    assert brute_any(problem) <= 4.0
