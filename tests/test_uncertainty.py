"""placement.explore.uncertainty: seeded Monte Carlo of a plan's time per sample (bounds checked independently)."""

import math

import numpy as np
import pytest

from placement import PlacementError, load_problem, solve_dp
from placement.explore.uncertainty import latency_errors, monte_carlo, quantiles

from .apptest_helpers import ROOT

DEFAULT = ROOT / "sample_graphs" / "throughput" / "layer" / "bert24_inference.json"


def test_quantiles_match_numpy():
    values = [3.0, 1.0, 4.0, 1.5, 9.0, 2.6, 5.0]
    assert quantiles(values) == pytest.approx(tuple(np.percentile(values, [10, 50, 90])))


@pytest.mark.parametrize("seed", range(4))
def test_draws_stay_inside_the_error_bars_and_reoptimising_never_loses(random_problem, seed):
    problem = random_problem(seed, n_forward=6, max_accelerators=3)
    result = solve_dp(problem)
    if not result.ok:
        pytest.skip("no plan")
    error = 0.3
    mc = monte_carlo(problem, result.placement, error, samples=40, seed=seed)
    nominal = result.objective
    # Each device's load is (scaled compute) + (unscaled communication), so the max-load stays in
    # [(1 - e) L, (1 + e) L] for the nominal max-load L.
    for t in mc.plan_times:
        assert (1 - error) * nominal * (1 - 1e-9) <= t <= (1 + error) * nominal * (1 + 1e-9)
    for plan_time, best in zip(mc.plan_times, mc.reopt_times):
        assert best is not None and best <= plan_time * (1 + 1e-9)  # the optimum of the draw beats the fixed plan
    p10, p50, p90 = mc.plan_quantiles
    assert p10 <= p50 <= p90
    assert math.isclose(sum(share for _, share in mc.bottleneck_shares), 1.0)


def test_same_seed_same_draws_and_zero_error_is_the_nominal_plan():
    problem = load_problem(DEFAULT)
    result = solve_dp(problem)
    a = monte_carlo(problem, result.placement, 0.2, samples=20, seed=7, reoptimise=False)
    b = monte_carlo(problem, result.placement, 0.2, samples=20, seed=7, reoptimise=False)
    c = monte_carlo(problem, result.placement, 0.2, samples=20, seed=8, reoptimise=False)
    assert a == b and a.plan_times != c.plan_times
    # The first draws do not depend on how many are asked for.
    assert (
        monte_carlo(problem, result.placement, 0.2, samples=5, seed=7, reoptimise=False).plan_times == a.plan_times[:5]
    )
    flat = monte_carlo(problem, result.placement, 0.0, samples=5, seed=1)
    assert all(t == pytest.approx(result.objective) for t in flat.plan_times)
    assert all(t == pytest.approx(result.objective) for t in flat.reopt_times)
    assert flat.plan_oom_probability == 0.0


def test_out_of_memory_under_a_schedule_is_counted():
    problem = load_problem(ROOT / "sample_graphs" / "throughput" / "layer" / "bert24_training.json")
    result = solve_dp(problem)
    many = monte_carlo(
        problem, result.placement, 0.1, samples=3, seed=0, schedule="gpipe", microbatches=4096, reoptimise=False
    )
    # GPipe stashes every microbatch's activations: 4096 of them exceed 16 GiB on a loaded device.
    from placement.pipeline.memory import peak_table

    over = any(peak > cap for _, peak, cap in peak_table(problem, result.placement, "gpipe", 4096))
    assert many.plan_oom_probability == (1.0 if over else 0.0)


def test_bad_inputs_are_refused(random_problem):
    problem = random_problem(0)
    result = solve_dp(problem)
    with pytest.raises(PlacementError, match=r"in \[0, 1\)"):
        monte_carlo(problem, result.placement, 1.5)
    with pytest.raises(PlacementError, match="samples"):
        monte_carlo(problem, result.placement, 0.1, samples=0)
    with pytest.raises(PlacementError, match="unknown schedule"):
        monte_carlo(problem, result.placement, 0.1, schedule="zigzag")
    with pytest.raises(PlacementError, match="unknown node"):
        latency_errors(problem.graph, {999: 0.1})
    assert latency_errors(problem.graph, {0: 0.2})[0] == 0.2
