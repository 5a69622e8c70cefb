"""Per-stage recomputation in the memory-aware planner: brute force over splits, orders and recompute sets.

The brute force (tests/test_memory_aware.py) is independent of the planner: it enumerates every
contiguous split, every pipeline order and every subset of stages that recompute, scores a plan
with the evaluator (a recomputing stage adds ``math.fsum`` of its forward latencies to its load)
and checks memory by simulating the schedule, not with the planner's closed form.
"""

from __future__ import annotations

import math

import pytest

from placement import PlacementError, evaluate
from placement.exact.memory_aware import solve_memory_aware
from placement.pipeline.memory import memory_profile
from placement.pipeline.schedule import simulate
from tests.test_memory_aware import brute_force, forward_compute, random_memory_problem

CASES = [(seed, ("1f1b", "gpipe")[seed % 2], (1, 2, 4, 8)[seed % 4], (0.0, 1.0, 2.0)[seed % 3]) for seed in range(36)]


@pytest.mark.parametrize("seed, schedule, microbatches, optimizer", CASES)
def test_per_stage_recompute_matches_brute_force(seed, schedule, microbatches, optimizer):
    problem = random_memory_problem(seed)
    expected, _ = brute_force(problem, schedule, microbatches, optimizer, "per-stage")
    result = solve_memory_aware(problem, schedule, microbatches, optimizer, recompute="per-stage")
    if math.isinf(expected):
        assert result.status == "infeasible", result
        return
    assert result.status == "optimal", result
    assert result.objective == expected
    stats = dict(result.stats)
    recomputing = [
        s.device
        for s in result.placement.stages
        if f"{s.device.kind}:{s.device.index}" in stats["recompute_devices"].split(",")
    ]
    value = max(
        entry.load + (forward_compute(problem, stage) if stage.device in recomputing else 0.0)
        for entry, stage in zip(evaluate(problem, result.placement).devices, result.placement.stages)
    )
    assert value == result.objective
    timeline = simulate(problem, result.placement, microbatches, schedule, recompute=recomputing)
    assert memory_profile(problem, timeline, optimizer).fits
    # Choosing per stage is never worse than either uniform choice.
    for choice in ("never", "always"):
        other = solve_memory_aware(problem, schedule, microbatches, optimizer, recompute=choice)
        if other.ok:
            assert result.objective <= other.objective


def test_per_stage_recompute_helps_somewhere():
    """On some case the per-stage choice beats both uniform choices (the option is not a no-op)."""
    better = 0
    for seed, schedule, microbatches, optimizer in CASES:
        problem = random_memory_problem(seed)
        per = solve_memory_aware(problem, schedule, microbatches, optimizer, recompute="per-stage")
        uniform = [
            solve_memory_aware(problem, schedule, microbatches, optimizer, recompute=c) for c in ("never", "always")
        ]
        values = [r.objective for r in uniform if r.ok]
        if per.ok and (not values or per.objective < min(values)):
            better += 1
    assert better >= 1


def test_recompute_option_values():
    problem = random_memory_problem(1)
    assert dict(solve_memory_aware(problem, "1f1b", 2, recompute=True).stats)["recompute"] == "always"
    assert dict(solve_memory_aware(problem, "1f1b", 2, recompute=False).stats)["recompute"] == "never"
    assert dict(solve_memory_aware(problem, "inference", 2, recompute="per-stage").stats)["recompute"] == "never"
    with pytest.raises(PlacementError):
        solve_memory_aware(problem, "1f1b", 2, recompute="sometimes")
