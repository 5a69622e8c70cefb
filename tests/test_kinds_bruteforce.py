"""Brute-force property tests of the multi-kind DP (placement.dp.solve_dp).

Random small graphs (inference and training with colour classes), 2 or 3 accelerator
kinds with their own counts, memory, speed, bandwidth and per-kind latency overrides, CPU
cores, nodes that cannot run on accelerators or only on some kinds, tight memory and
zero-latency nodes (which the DP merges away). Two independent enumerations:

* every contiguous split, straight from the definition: an ordered sequence of devices
  whose node sets are the consecutive differences of a strictly increasing chain of
  ideals (down-closed sets of the groups of :func:`placement.ideals.contract`, found here
  by trying every subset), each scored with the independent evaluator;
* every assignment of groups to devices (non-contiguous splits).

The DP must equal the first and can never beat the second.
"""

from __future__ import annotations

import itertools
import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from placement import (
    CPU_KIND,
    AcceleratorKind,
    Devices,
    Edge,
    Graph,
    Node,
    Placement,
    Problem,
    Stage,
    DeviceSlot,
    contract,
    evaluate,
    is_contiguous,
    solve_dp,
)

KIND_NAMES = ("alpha", "beta", "gamma")


def _ideals(groups) -> list[int]:
    """Every down-closed set of groups (as bitmasks), by trying all subsets."""
    n = groups.count
    preds = [0] * n
    for a, b in groups.order_edges:
        preds[b] |= 1 << a
    out = []
    for mask in range(1 << n):
        if all(not (mask >> g & 1) or preds[g] & mask == preds[g] for g in range(n)):
            out.append(mask)
    return out


def _device_types(devices: Devices) -> list[tuple[str, int]]:
    return [(kind.name, kind.count) for kind in devices.accelerators] + [(CPU_KIND, devices.cpus)]


def brute_contiguous(problem: Problem) -> float:
    """Min max-load over every contiguous split satisfying all rules (inf if none)."""
    groups = contract(problem.graph)
    n = groups.count
    full = (1 << n) - 1
    ideals = _ideals(groups)
    types = _device_types(problem.devices)
    best = math.inf

    def nodes_of(mask: int) -> tuple[int, ...]:
        return tuple(node for g in range(n) if mask >> g & 1 for node in groups.members[g])

    def extend(ideal: int, remaining: list[int], stages: list[tuple[str, int]]) -> None:
        nonlocal best
        if ideal == full:
            used = {name: 0 for name, _ in types}
            placed = []
            for name, diff in stages:
                placed.append(Stage(DeviceSlot(name, used[name]), nodes_of(diff)))
                used[name] += 1
            placement = Placement(tuple(placed))
            result = evaluate(problem, placement)
            if result.feasible:
                best = min(best, result.max_load)
            return
        for bigger in ideals:
            if bigger & ideal != ideal or bigger == ideal:
                continue
            for t, (name, _) in enumerate(types):
                if remaining[t] == 0:
                    continue
                remaining[t] -= 1
                stages.append((name, bigger & ~ideal))
                extend(bigger, remaining, stages)
                stages.pop()
                remaining[t] += 1

    extend(0, [count for _, count in types], [])
    return best


def brute_any(problem: Problem) -> float:
    """Min max-load over every assignment of groups to devices (contiguous or not)."""
    groups = contract(problem.graph)
    slots = problem.devices.slots()
    best = math.inf
    for choice in itertools.product(range(len(slots)), repeat=groups.count):
        assignment = {node: slots[d] for g, d in enumerate(choice) for node in groups.members[g]}
        result = evaluate(problem, Placement.from_assignment(assignment))
        if result.feasible:
            best = min(best, result.max_load)
    return best


@st.composite
def problems(draw, max_forward: int = 5, max_devices: int = 4) -> Problem:
    """A random small problem with 2 or 3 accelerator kinds."""
    n_kinds = draw(st.integers(2, 3))
    names = KIND_NAMES[:n_kinds]
    training = draw(st.booleans())
    n = draw(st.integers(2, max_forward - 1 if training else max_forward))
    latency = st.sampled_from([0.0, 1.0, 2.0, 3.0, 5.0, 8.0])
    nodes: list[Node] = []
    for i in range(n):
        if draw(st.integers(0, 5)) == 0:
            # A free node (zero latency everywhere): the DP merges these into neighbours.
            nodes.append(Node(id=i, cpu_latency=0.0, accelerator_latency=0.0, size=float(draw(st.integers(0, 2))),
                              color_class=i if training else None))
            continue
        supported = draw(st.integers(0, 9)) > 0
        allowed = None
        if draw(st.integers(0, 3)) == 0:
            allowed = tuple(draw(st.lists(st.sampled_from(names), min_size=0, max_size=n_kinds, unique=True)))
        overrides = ()
        if draw(st.integers(0, 3)) == 0:
            overrides = ((draw(st.sampled_from(names)), draw(latency)),)
        nodes.append(Node(
            id=i, cpu_latency=draw(latency) * 2, accelerator_latency=draw(latency),
            supported_on_accelerator=supported, size=float(draw(st.integers(0, 4))),
            allowed_kinds=allowed, kind_latency=overrides, color_class=i if training else None,
        ))
    cost = {i: float(draw(st.sampled_from([0.0, 1.0, 2.0, 4.0]))) for i in range(n)}
    edges: list[Edge] = []
    for j in range(n):
        for i in range(j):
            if draw(st.integers(0, 2)) == 0:
                edges.append(Edge(i, j, cost[i]))
    if training:
        # Mirror: backward node n+i pairs with forward node i (same colour class); gradients flow back.
        for i in range(n):
            nodes.append(Node(id=n + i, cpu_latency=draw(latency) * 2, accelerator_latency=draw(latency),
                              supported_on_accelerator=nodes[i].supported_on_accelerator,
                              allowed_kinds=nodes[i].allowed_kinds, is_backward=True, color_class=i,
                              size=float(draw(st.integers(0, 2)))))
        back_cost = {n + i: float(draw(st.sampled_from([0.0, 1.0, 3.0]))) for i in range(n)}
        forward_edges = list(edges)
        for e in forward_edges:
            edges.append(Edge(n + e.target, n + e.source, back_cost[n + e.target]))
        sinks = [i for i in range(n) if not any(e.source == i for e in forward_edges)]
        for i in sinks:
            edges.append(Edge(i, n + i, cost[i]))
        # Keep "all edges leaving a node share one cost".
        fixed = []
        for e in edges:
            fixed.append(Edge(e.source, e.target, cost[e.source] if e.source < n else back_cost[e.source]))
        edges = fixed
    graph = Graph(tuple(nodes), tuple(edges))
    total_size = sum(node.size for node in nodes)
    kinds = []
    cpus = draw(st.sampled_from([0, 1, 1, 2]))
    budget = max_devices - cpus
    for name in names:
        count = draw(st.integers(0 if name != names[0] else 1, min(2, budget)))
        budget -= count
        memory = draw(st.sampled_from([math.inf, max(total_size, 1.0), math.ceil(total_size / 2),
                                       math.ceil(total_size / 3), 4.0, 2.0]))
        kinds.append(AcceleratorKind(
            name, count, float(memory), speed=draw(st.sampled_from([0.5, 1.0, 2.0])),
            bandwidth=draw(st.sampled_from([0.5, 1.0, 2.0])), price_per_hour=1.0,
        ))
    devices = Devices(tuple(kinds), cpus=cpus, bandwidth=draw(st.sampled_from([0.5, 1.0, 2.0])),
                      overlap=draw(st.booleans()))
    return Problem(graph, devices)


def _check_dp_placement(problem: Problem, result) -> None:
    evaluation = evaluate(problem, result.placement)
    assert evaluation.feasible, evaluation.violations
    assert math.isclose(evaluation.max_load, result.objective, rel_tol=1e-9, abs_tol=1e-9)
    assert is_contiguous(problem, result.placement)
    # Pipeline order: each stage's forward groups form, with the earlier ones, an ideal.
    groups = contract(problem.graph)
    ideals = set(_ideals(groups))
    mask = 0
    for stage in result.placement.stages:
        for node in stage.nodes:
            mask |= 1 << groups.group_of[node]
        assert mask in ideals


SETTINGS = settings(max_examples=250, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@SETTINGS
@given(problems(max_forward=6))
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


@settings(max_examples=60, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(problems(max_forward=4, max_devices=4))
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
