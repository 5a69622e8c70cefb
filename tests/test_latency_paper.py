"""The paper's latency program (``latency-ip`` with ``model="paper"`` or ``"both"``): brute force for one and two
calls per accelerator, and the two programs side by side on a sample graph."""

from __future__ import annotations

import math

import pytest

from placement import evaluate, load_problem
from placement.errors import PlacementError
from placement.ip.latency import solve_latency_ip

from .test_latency_bounds import brute_force_latency_calls

REL = 1e-6

CASES = [(seed, rich) for seed in range(12) for rich in (False, True)]


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= REL * max(1.0, abs(a), abs(b))


@pytest.mark.parametrize("seed,rich", CASES)
@pytest.mark.parametrize("calls", [1, 2])
def test_paper_model_equals_brute_force(random_problem, seed, rich, calls):
    problem = random_problem(seed, kinds=1 + seed % 2, zero_cost_edges=seed % 3 == 0, max_forward=5, rich=rich)
    expected = brute_force_latency_calls(problem, calls)
    # No warm start: the program alone must find the optimum (a start could hide a modelling bug).
    result = solve_latency_ip(problem, time_limit=30, q=calls, model="paper", warm_start=False)
    if math.isinf(expected):
        assert result.status in ("infeasible", "no solution")
        return
    assert result.status == "optimal", result.reason
    evaluation = evaluate(problem, result.placement)
    assert evaluation.feasible, evaluation.violations
    assert _close(evaluation.latency, expected), (evaluation.latency, expected)
    assert _close(result.objective, expected)
    assert _close(result.stat("paper_objective"), expected) or result.stat("from_start")
    assert result.bound <= expected * (1 + REL) + 1e-12


@pytest.mark.parametrize("seed", range(6))
def test_both_models_agree_with_brute_force(random_problem, seed):
    problem = random_problem(seed, kinds=1 + seed % 2, zero_cost_edges=seed % 3 == 0, max_forward=5)
    expected = brute_force_latency_calls(problem, 1)
    result = solve_latency_ip(problem, time_limit=30, model="both")
    if math.isinf(expected):
        assert result.status in ("infeasible", "no solution")
        return
    assert result.status == "optimal"
    assert _close(evaluate(problem, result.placement).latency, expected)


def test_both_models_run_side_by_side_and_keep_the_better(samples_dir):
    """BERT-3 operator graph, 6 s: ours gets half, the paper's the rest; the answer is the better plan, the larger bound."""
    problem = load_problem(samples_dir / "latency/operator/bert_l-3_inference.json")
    result = solve_latency_ip(problem, time_limit=6, model="both")
    assert result.status in ("feasible", "optimal")
    assert result.stat("ours_objective") is not None or result.stat("ip_skipped")
    value = evaluate(problem, result.placement).latency
    assert _close(result.objective, value)
    for name in ("ours", "paper"):
        found = result.stat(f"{name}_objective")
        if found is not None:
            assert value <= found * (1 + REL)
        bound = result.stat(f"{name}_bound")
        if bound is not None:
            assert result.bound >= min(bound, value) * (1 - REL)
    assert result.bound <= value * (1 + REL)


def test_unknown_model_is_a_placement_error(random_problem):
    with pytest.raises(PlacementError, match="model must be one of"):
        solve_latency_ip(random_problem(0), model="gurobi")
