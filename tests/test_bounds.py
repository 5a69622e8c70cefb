"""Tests of placement.explore.bounds: the band (lower bound, a valid plan) holds the exact optimum."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from placement import PlacementError, evaluate, load_problem, solve_dp
from placement.explore.bounds import MAX_BAND_POINTS, BandPoint, count_band
from placement.explore.sweep import vary
from placement.viz.bounds import EXACT_NAME, LOWER_NAME, UPPER_NAME, band_figure


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    training=st.booleans(),
    kinds=st.sampled_from([1, 2]),
    rich=st.booleans(),
)
def test_band_holds_the_exact_optimum(random_problem, seed, training, kinds, rich):
    """lower bound <= solve_dp <= the plan's time, at every count; the plan valued again by the evaluator."""
    problem = random_problem(seed, training=training, kinds=kinds, rich=rich)
    kind = problem.devices.accelerators[0].name
    for point in count_band(problem, range(0, 4), kind):
        varied = vary(problem, "accelerators", point.value, kind)
        exact = solve_dp(varied)
        if exact.ok:
            assert point.lower <= exact.objective * (1 + 1e-9) + 1e-12, (seed, point.value)
        if point.upper is not None:
            assert exact.ok, (seed, point.value)  # the DP searches every split the plan could be
            assert exact.objective <= point.upper * (1 + 1e-9) + 1e-12, (seed, point.value)
            assert point.upper == pytest.approx(evaluate(varied, point.plan.placement).max_load, rel=1e-9)


def test_band_on_a_sample_with_plans_left_out(samples_dir):
    problem = load_problem(samples_dir / "ours" / "teach_inception_mini_inference.json")
    band = count_band(problem, [1, 2, 3], plans=False)
    assert [p.value for p in band] == [1, 2, 3]
    assert all(p.upper is None and p.plan is None and math.isfinite(p.lower) for p in band)
    assert band[0].lower >= band[2].lower  # more devices: the bound never rises


def test_band_errors(samples_dir):
    problem = load_problem(samples_dir / "ours" / "tiny_training.json")
    with pytest.raises(PlacementError, match="at most"):
        count_band(problem, range(MAX_BAND_POINTS + 1))
    with pytest.raises(PlacementError):
        count_band(problem, [1], kind="no such kind")
    with pytest.raises(PlacementError, match="below the lower bound"):
        BandPoint(1, lower=2.0, lower_reason="", upper=1.0, plan=None)


def test_band_figure_traces(samples_dir):
    problem = load_problem(samples_dir / "ours" / "tiny_training.json")
    band = count_band(problem, [1, 2])
    figure = band_figure(band, title="t")
    names = [trace.name for trace in figure.data]
    assert names == [LOWER_NAME, UPPER_NAME]
    assert list(figure.data[0].y) == [p.lower for p in band]
    assert list(figure.data[1].y) == [p.upper for p in band]
    from placement.explore.sweep import sweep

    exact = sweep(problem, "accelerators", [1, 2])
    figure = band_figure(band, exact)
    assert figure.data[-1].name == EXACT_NAME
    assert list(figure.data[-1].y) == [p.time_per_sample for p in exact]
