"""The exact DP: golden values on the paper's workloads and brute force on random graphs."""

import math

import pytest

from placement import Devices, Problem, evaluate, is_contiguous, load_problem, solve_dp
from placement.exact.dp import count_pairs

from .golden import OPTIMAL_MAX_LOAD, PAPER_PAIRS
from .randgraphs import brute_force, random_problem

#: Graphs whose solve takes over 5 s (marked slow).
SLOW_GRAPHS = {"throughput/operator/bert_l-3_training.json"}


@pytest.mark.parametrize(
    "name", [pytest.param(n, marks=pytest.mark.slow) if n in SLOW_GRAPHS else n for n in sorted(OPTIMAL_MAX_LOAD)]
)
def test_reproduces_the_papers_optimum_and_the_evaluator_agrees(samples_dir, name):
    problem = load_problem(samples_dir / name)
    result = solve_dp(problem)
    assert result.status == "optimal"
    assert result.objective == pytest.approx(OPTIMAL_MAX_LOAD[name], rel=1e-6)
    evaluation = evaluate(problem, result.placement)
    assert evaluation.feasible, evaluation.violations
    assert evaluation.max_load == pytest.approx(result.objective, rel=1e-9)
    assert is_contiguous(problem, result.placement)


@pytest.mark.parametrize("seed", range(60))
def test_inference_graphs_match_brute_force(seed):
    problem = random_problem(seed, rich=True)
    expected, _ = brute_force(problem, contiguous=True)
    result = solve_dp(problem)
    if math.isinf(expected):
        assert result.status == "infeasible" and result.reason
        return
    assert result.status == "optimal"
    assert result.objective == pytest.approx(expected, rel=1e-9, abs=1e-12)
    evaluation = evaluate(problem, result.placement)
    assert evaluation.feasible, evaluation.violations
    assert evaluation.max_load == pytest.approx(result.objective, rel=1e-9, abs=1e-12)
    # Non-contiguous splits are a superset: never worse than the DP.
    assert brute_force(problem, contiguous=False)[0] <= result.objective + 1e-9


@pytest.mark.parametrize("seed", range(100, 140))
def test_training_graphs_match_brute_force(seed):
    problem = random_problem(seed, training=True, max_forward=4, rich=True)
    expected, _ = brute_force(problem, contiguous=True)
    result = solve_dp(problem)
    if math.isinf(expected):
        assert result.status == "infeasible"
        return
    assert result.status == "optimal"
    assert result.objective == pytest.approx(expected, rel=1e-9, abs=1e-12)
    assert evaluate(problem, result.placement).max_load == pytest.approx(result.objective, rel=1e-9, abs=1e-12)


def test_tight_memory_on_merged_nodes_is_still_exact(samples_dir):
    # GNMT's zero-latency sinks are merged into their producers with their memory ignored;
    # with memory this tight the DP must notice and re-solve with the real sizes.
    problem = load_problem(samples_dir / "throughput/layer/gnmt_inference.json")
    total = sum(node.size for node in problem.graph.nodes)
    devices = Devices.paper(6, 1, total / 5.2)
    tight = Problem(problem.graph, devices)
    result = solve_dp(tight)
    assert result.status in ("optimal", "feasible")
    evaluation = evaluate(tight, result.placement)
    assert evaluation.feasible, evaluation.violations
    assert evaluation.max_load == pytest.approx(result.objective)


def test_no_cpu_and_unsupported_node_is_infeasible_with_a_reason(samples_dir):
    problem = random_problem(3)
    graph = problem.graph
    from dataclasses import replace

    nodes = tuple(replace(n, supported_on_accelerator=False) if i == 0 else n for i, n in enumerate(graph.nodes))
    problem = Problem(replace(graph, nodes=nodes), Devices.paper(2, 0))
    result = solve_dp(problem)
    assert result.status == "infeasible"
    assert "cannot run on any accelerator" in result.reason


@pytest.mark.parametrize(
    "name", ["throughput/layer/bert24_inference.json", "throughput/operator/resnet50_inference.json"]
)
def test_pairs_are_the_comparable_pairs_of_ideals(samples_dir, name):
    from placement.exact.ideals import contract, enumerate_ideals, reduce_groups

    problem = load_problem(samples_dir / name)
    groups, _ = reduce_groups(problem.graph, contract(problem.graph))
    masks = enumerate_ideals(groups).masks
    expected = sum(1 for i in masks for j in masks if i & j == i)
    assert count_pairs(problem) == (len(masks), expected)


@pytest.mark.parametrize("name", sorted(PAPER_PAIRS))
def test_pair_counts_match_the_papers_code(samples_dir, name):
    assert count_pairs(load_problem(samples_dir / name))[1] == PAPER_PAIRS[name]


def test_more_devices_never_hurt(samples_dir):
    """The optimum with k accelerators is no worse than the k-plan kept on more (it stays valid there), and on
    ResNet-50, which splits well, it strictly improves: a solver ignoring the count (equal values) fails."""
    problem = load_problem(samples_dir / "throughput/layer/resnet50_inference.json")
    kind = problem.devices.accelerators[0].name
    values, previous = [], None
    for k in (1, 2, 4, 8):
        bigger = Problem(problem.graph, problem.devices.with_kind(kind, count=k))
        result = solve_dp(bigger)
        evaluation = evaluate(bigger, result.placement)
        assert evaluation.feasible and evaluation.max_load == pytest.approx(result.objective, rel=1e-12)
        assert sum(1 for stage in result.placement.stages if stage.device.kind == kind and stage.nodes) <= k
        if previous is not None:  # the smaller plan, run unchanged with more devices
            assert result.objective <= evaluate(bigger, previous).max_load * (1 + 1e-12)
        values.append(result.objective)
        previous = result.placement
    assert all(more < fewer for fewer, more in zip(values, values[1:])), values


def test_tie_break_prefers_the_lower_latency_split(samples_dir):
    """BERT-3 operator latency input: without the tie-break the DP returned an optimal split of latency 1017.6;
    with it, one of latency 414.4295 (the paper's DP split: 414.441)."""
    from placement.evaluate import latency

    problem = load_problem(samples_dir / "latency/operator/bert_l-3_inference.json")
    plain = solve_dp(problem, tie_break=False)
    result = solve_dp(problem)
    assert result.objective == plain.objective
    assert evaluate(problem, result.placement).max_load == result.objective
    assert latency(problem, plain.placement) > 1000
    assert latency(problem, result.placement) <= 414.43
