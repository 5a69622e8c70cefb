"""placement.explore.purchase: every answer checked against a brute force over count vectors (solve_dp + evaluate)."""

import itertools
from dataclasses import replace

import pytest

from placement import AcceleratorKind, Devices, PlacementError, Problem, evaluate, solve_dp
from placement.explore.purchase import (
    candidate_counts,
    cheapest_under,
    cost_per_sample,
    fastest_within,
    price_frontier,
    purchase_options,
    worth_of_more,
)


def _brute(problem, extra, prices):
    """(counts, price per hour, optimal time or None) of every count vector, solved one by one."""
    kinds = problem.devices.accelerators
    out = []
    for counts in itertools.product(*(range(k.count + extra.get(k.name, 0) + 1) for k in kinds)):
        if not any(counts) and problem.devices.cpus == 0:
            continue
        config = problem.devices.with_changes(
            accelerators=tuple(replace(k, count=c, price_per_hour=prices[k.name]) for k, c in zip(kinds, counts))
        )
        result = solve_dp(Problem(problem.graph, config))
        time = evaluate(Problem(problem.graph, config), result.placement).max_load if result.ok else None
        price = sum(c * prices[k.name] for k, c in zip(kinds, counts)) + config.cpus * config.cpu_price_per_hour
        out.append((counts, price, time))
    return out


def _two_kinds(random_problem, seed):
    base = random_problem(seed, n_forward=6)
    memory = 6.0 + seed % 3
    devices = Devices(
        (AcceleratorKind("big", 1, memory, speed=2.0), AcceleratorKind("small", 1, memory)), cpus=base.devices.cpus
    )
    return Problem(base.graph, devices)


@pytest.mark.parametrize("seed", range(5))
def test_answers_match_a_brute_force_over_count_vectors(random_problem, seed):
    problem = _two_kinds(random_problem, seed)
    extra, prices = {"big": 2, "small": 2}, {"big": 3.0, "small": 1.0}
    options = purchase_options(problem, extra, prices)
    brute = _brute(problem, extra, prices)
    assert [o.counts for o in options] == [c for c, _, _ in brute]
    for option, (_, price, time) in zip(options, brute):
        assert option.price_per_hour == pytest.approx(price)
        assert (option.time_per_sample is None) == (time is None)
        if time is not None:
            assert option.time_per_sample == pytest.approx(time, rel=1e-9)
    feasible = [(p, t) for _, p, t in brute if t is not None]
    if not feasible:
        assert cheapest_under(options, 1e9) is None
        return
    times = sorted({t for _, t in feasible})
    for target in (times[0], times[len(times) // 2], times[-1]):
        best = cheapest_under(options, target)
        assert best.price_per_hour == pytest.approx(min(p for p, t in feasible if t <= target * (1 + 1e-12)))
        assert best.time_per_sample <= target * (1 + 1e-12)
    for budget in sorted({p for p, _ in feasible}):
        best = fastest_within(options, budget)
        assert best.time_per_sample == pytest.approx(min(t for p, t in feasible if p <= budget + 1e-12))
    front = {(o.price_per_hour, o.time_per_sample) for o in price_frontier(options)}
    expected = {
        (p, t)
        for p, t in feasible
        if not any(q <= p and u <= t and (q < p or u < t * (1 - 1e-12)) for q, u in feasible)
    }
    assert {(round(p, 9), round(t, 9)) for p, t in front} == {(round(p, 9), round(t, 9)) for p, t in expected}
    assert cheapest_under(options, times[0] * 0.5) is None  # faster than anything possible


def test_worth_of_more_cards_is_the_difference_of_two_exact_optima(random_problem):
    problem = _two_kinds(random_problem, 1)
    worth = worth_of_more(problem, "small", 2, prices={"big": 3.0, "small": 1.0})
    more = problem.devices.with_kind("small", count=3)
    expected = solve_dp(Problem(problem.graph, more))
    today = solve_dp(problem)
    if expected.ok and today.ok:
        assert worth.after.time_per_sample == pytest.approx(expected.objective)
        assert worth.time_saved == pytest.approx(today.objective - expected.objective)
        assert "ms" in worth.sentence
    assert worth.after.price_per_hour == pytest.approx(3.0 + 3 * 1.0 + problem.devices.cpus * 0.0)


def test_bad_requests_are_refused_with_a_message(random_problem):
    problem = _two_kinds(random_problem, 0)
    with pytest.raises(PlacementError, match="unknown accelerator kind 'nope'"):
        candidate_counts(problem.devices, {"nope": 1})
    with pytest.raises(PlacementError, match="non-negative"):
        candidate_counts(problem.devices, {"big": -1})
    with pytest.raises(PlacementError, match="over the limit"):
        candidate_counts(problem.devices, {"big": 40, "small": 40}, max_options=100)
    with pytest.raises(PlacementError, match="price per hour"):
        purchase_options(problem, {"big": 1}, prices={"big": -2.0})
    assert cost_per_sample(3600.0, 1000.0) == pytest.approx(1.0)  # 3600/h for 1 s = 1 per sample
    assert cost_per_sample(1.0, None) is None
