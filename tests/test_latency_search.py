"""Latency local search (:mod:`placement.ip.latency_search`): never worse than its start, and its compound move
finds a side branch run beside the main one, which no single move can."""

from __future__ import annotations

import math

import pytest

from placement import Placement, evaluate
from placement.ip.latency_search import baseline_placements, latency_local_search, latency_of

from .test_latency_bounds import _residual, brute_force_latency_calls


def test_compound_move_runs_the_shortcut_beside_the_main_branch():
    """0 -> 1 -> 2 -> 4 with a shortcut 0 -> 3 -> 4 on four accelerators (one call each).

    From the split {0, 1, 3} | {2, 4} (6.4) moving one node never helps; the compound move puts 1, 2 and 3
    on free accelerators and reaches the brute-force optimum 4.5.
    """
    problem = _residual(4)
    a = [slot for slot in problem.devices.slots() if not slot.is_cpu]
    start = Placement.from_assignment({0: a[0], 1: a[0], 3: a[0], 2: a[1], 4: a[1]})
    assert latency_of(problem, start) == pytest.approx(6.4)
    improved = latency_local_search(problem, start, time_limit=10)
    assert evaluate(problem, improved).feasible
    assert latency_of(problem, improved) == pytest.approx(brute_force_latency_calls(problem, 1)) == pytest.approx(4.5)


@pytest.mark.parametrize("seed", range(10))
def test_never_worse_than_its_start_nor_better_than_the_optimum(random_problem, seed):
    problem = random_problem(seed, n_forward=5, zero_cost_edges=seed % 3 == 0)
    starts = baseline_placements(problem)  # feasible ones only
    if not starts:
        assert math.isinf(brute_force_latency_calls(problem, 1))
        return
    start = max(starts, key=lambda p: latency_of(problem, p))
    before = latency_of(problem, start)
    improved = latency_local_search(problem, start, time_limit=5, seed=seed)
    after = latency_of(problem, improved)
    assert after <= before * (1 + 1e-12)
    assert after >= brute_force_latency_calls(problem, 1) * (1 - 1e-9)
