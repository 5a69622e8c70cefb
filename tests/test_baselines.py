"""Baselines: the README's reference figures, validity checked by the evaluator, brute force bounds."""

from __future__ import annotations

import itertools
import math

import pytest

from placement import (
    Devices,
    DeviceSlot,
    Edge,
    Graph,
    Node,
    Placement,
    Problem,
    evaluate,
    is_contiguous,
    load_problem,
    solve,
    solve_dp,
)
from placement.errors import PlacementError
from placement.heuristics import greedy_latency, local_search, one_accelerator, pipedream
from placement.model import Status
from placement.solve import METHODS

from .oracle import brute_force
from .oracle import max_load as oracle_max_load

# The workloads README's one-accelerator figures (sum of accelerator latencies; ResNet-50 does not fit memory).
ONE_ACCELERATOR = {
    "bert24_inference": (92.406, True),
    "bert24_training": (217.813, True),
    "gnmt_inference": (182.563, True),
    "gnmt_training": (520.453, True),
    "resnet50_inference": (201.45, False),
    "resnet50_training": (462.381, False),
}


def _valid(problem, result, objective="throughput"):
    assert result.ok, result.reason
    evaluation = evaluate(problem, result.placement)
    assert evaluation.feasible, evaluation.violations
    value = evaluation.max_load if objective == "throughput" else evaluation.latency
    assert result.objective == pytest.approx(value, rel=1e-9)
    return value


@pytest.mark.parametrize("name", sorted(ONE_ACCELERATOR))
def test_one_accelerator_reference_figures(samples_dir, name):
    figure, fits = ONE_ACCELERATOR[name]
    problem = load_problem(samples_dir / f"throughput/layer/{name}.json")
    result = one_accelerator(problem)
    assert result.method == "one-accelerator" and result.objective_kind == "throughput"
    assert result.stat("load_ignoring_memory") == pytest.approx(figure, abs=5e-4)
    if fits:
        assert result.status == "feasible"
        assert _valid(problem, result) == pytest.approx(figure, abs=5e-4)
    else:
        assert result.status == "infeasible" and "does not fit" in result.reason
        assert result.placement is None
        ignoring = one_accelerator(problem, ignore_memory=True)
        assert ignoring.status == "infeasible"
        assert ignoring.objective == pytest.approx(figure, abs=5e-4)


def test_one_accelerator_puts_unsupported_nodes_on_cpu():
    nodes = (Node(0, 5, 1), Node(1, 3, 1, supported_on_accelerator=False), Node(2, 5, 2))
    problem = Problem(Graph(nodes, (Edge(0, 1, 0.5), Edge(1, 2, 0.25))), Devices.paper(2, 1))
    result = one_accelerator(problem)
    # accelerator: compute 3, communication: node 0 (out) + node 1 (in) = 0.75 -> 3.75; CPU 3.
    assert _valid(problem, result) == pytest.approx(3.75)
    no_cpu = one_accelerator(Problem(problem.graph, Devices.paper(2, 0)))
    assert no_cpu.status == "infeasible" and no_cpu.reason


@pytest.mark.parametrize(
    "path,figure",
    [
        ("latency/layer/bert24_inference.json", 100.219),
        ("latency/operator/bert_l-3_inference.json", 416.204),
    ],
)
def test_greedy_latency_reference_figures(samples_dir, path, figure):
    problem = load_problem(samples_dir / path)
    result = greedy_latency(problem)
    assert result.method == "greedy-latency" and result.objective_kind == "latency"
    assert _valid(problem, result, "latency") == pytest.approx(figure, abs=5e-4)
    other = greedy_latency(problem, order="lexicographic")
    _valid(problem, other, "latency")
    with pytest.raises(PlacementError):
        greedy_latency(problem, order="random")


def test_greedy_fills_accelerators_in_order():
    nodes = tuple(Node(i, cpu_latency=10, accelerator_latency=1, size=2) for i in range(5))
    edges = tuple(Edge(i, i + 1, 0.5) for i in range(4))
    problem = Problem(Graph(nodes, edges), Devices.paper(2, 1, memory=4))
    result = greedy_latency(problem)
    placement = result.placement
    assert placement.stage_of(DeviceSlot("accelerator", 0)).nodes == (0, 1)
    assert placement.stage_of(DeviceSlot("accelerator", 1)).nodes == (2, 3)
    assert placement.device_of[4].is_cpu
    # By hand: call 1: 2 + 0.5 out = 2.5; call 2: 0.5 in + 2 + 0.5 out = 3 -> 5.5; CPU node: 10 -> 15.5.
    assert _valid(problem, result, "latency") == pytest.approx(15.5)


def _chain_brute_force(problem):
    """Best max-load over splits of the lexicographic topological order into consecutive runs (brute force)."""
    order = list(problem.graph.topological_order)
    slots = problem.devices.slots()
    best = math.inf
    n = len(order)
    for cuts in itertools.product((False, True), repeat=n - 1):
        runs, current = [], [order[0]]
        for node, cut in zip(order[1:], cuts):
            if cut:
                runs.append(current)
                current = []
            current.append(node)
        runs.append(current)
        if len(runs) > len(slots):
            continue
        for devices in itertools.permutations(slots, len(runs)):
            placement = Placement.from_assignment({n: d for run, d in zip(runs, devices) for n in run}, devices)
            value = oracle_max_load(problem, placement)  # scored by the oracle, not the evaluator under test
            if value is not None:
                best = min(best, value)
    return best


@pytest.mark.parametrize("seed", range(8))
def test_pipedream_is_the_best_chain_split(random_problem, seed):
    problem = random_problem(seed, kinds=1 + seed % 2)
    result = pipedream(problem)
    expected = _chain_brute_force(problem)
    if math.isinf(expected):
        assert result.status == "infeasible"
        return
    assert _valid(problem, result) == pytest.approx(expected, rel=1e-9)
    assert is_contiguous(problem, result.placement)
    dp = solve_dp(problem)
    assert result.objective >= dp.objective * (1 - 1e-9)


@pytest.mark.parametrize("name", ["bert24_inference", "resnet50_training"])
def test_pipedream_on_workloads(samples_dir, name):
    problem = load_problem(samples_dir / f"throughput/layer/{name}.json")
    result = solve(problem, "pipedream")
    assert result.method == "pipedream"
    assert _valid(problem, result) >= solve_dp(problem).objective * (1 - 1e-9)


@pytest.mark.parametrize("seed", range(8))
def test_local_search_valid_and_never_below_optimum(random_problem, seed):
    """Valid, never below the oracle's optimum, and a plan whenever one exists (so "always infeasible" fails)."""
    problem = random_problem(seed, training=seed % 2 == 1)
    expected, _ = brute_force(problem, contiguous=False)
    result = local_search(problem, seed=seed, restarts=5)
    if math.isinf(expected):
        assert result.status == "infeasible" and result.reason
        return
    assert result.ok, (seed, result.status, result.reason)
    assert _valid(problem, result) >= expected * (1 - 1e-9)
    assert oracle_max_load(problem, result.placement) == pytest.approx(result.objective, rel=1e-9)


def test_local_search_tests_see_feasible_problems(random_problem):
    """The seeds above include problems with a plan: the test cannot pass by saying "infeasible"."""
    assert (
        sum(
            math.isfinite(brute_force(random_problem(seed, training=seed % 2 == 1), contiguous=False)[0])
            for seed in range(8)
        )
        >= 4
    )


def test_local_search_is_reproducible_and_can_beat_contiguous(samples_dir):
    problem = load_problem(samples_dir / "throughput/layer/bert24_training.json")
    first = local_search(problem, seed=3, restarts=3)
    second = local_search(problem, seed=3, restarts=3)
    assert first.placement == second.placement
    assert _valid(problem, first) <= pipedream(problem).objective * (1 + 1e-9)
    with pytest.raises(PlacementError):
        local_search(problem, restarts=0)


@pytest.mark.parametrize("seed", range(6))
def test_local_search_incremental_loads_match_the_evaluator(random_problem, seed):
    import random

    from placement.evaluate import device_loads
    from placement.heuristics import _State
    from placement.ip import color_groups

    problem = random_problem(seed, training=seed % 2 == 0, kinds=1 + seed % 2, n_forward=6)
    groups = color_groups(problem.graph)
    slots = problem.devices.slots()
    state = _State(problem, groups, slots)
    rng = random.Random(seed)
    if not all(state.allowed):
        pytest.skip("a group fits no device")
    state.reset([rng.choice(state.allowed[g]) for g in range(len(groups))])
    for _ in range(30):
        g = rng.randrange(len(groups))
        j = rng.choice(state.allowed[g])
        i = state.assign[g]
        if i == j:
            continue
        state.move(g, j, state.comm[i] + state.comm_delta(i, g, j), state.comm[j] + state.comm_delta(j, g, j))
        placement = Placement.from_assignment({n: slots[state.assign[h]] for h, m in enumerate(groups) for n in m})
        expected = {entry.device: entry.load for entry in device_loads(problem, placement)}
        for k, slot in enumerate(slots):
            assert state.loads[k] == pytest.approx(expected.get(slot, 0.0), abs=1e-9)


@pytest.mark.parametrize("function", [one_accelerator, greedy_latency, pipedream, local_search])
def test_an_unknown_keyword_is_a_type_error(random_problem, function):
    """A misspelt option (``time_limt``) is refused, not ignored (as for ``solve_dp``)."""
    with pytest.raises(TypeError, match="time_limt"):
        function(random_problem(1), time_limt=1)


@pytest.mark.parametrize("method", ["one-accelerator", "greedy-latency", "pipedream", "local-search", "latency-ip"])
def test_solve_passes_every_registered_option(random_problem, method):
    """The registry's options are exactly keywords the function takes: ``solve`` with all of them set works."""
    options = METHODS[method].defaults()
    if "time_limit" in options:
        options["time_limit"] = 5.0
    result = solve(random_problem(1), method, **options)
    assert result.method == method
    assert result.status in (Status.OPTIMAL, Status.FEASIBLE, Status.INFEASIBLE)
