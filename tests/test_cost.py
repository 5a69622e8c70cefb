"""The one cost model (placement.explore.cost): idle cards are paid for; Purchase counts the same way."""

from __future__ import annotations

import math

import pytest

from placement import AcceleratorKind, Devices, Problem, load_problem, solve_dp
from placement.explore.cost import format_money, plan_cost
from placement.explore.purchase import cheapest_under, purchase_options, today

from .apptest_helpers import ROOT

GRAPH = ROOT / "sample_graphs" / "throughput" / "layer" / "bert24_inference.json"


def inventory(fast=1, slow=3):
    memory = load_problem(GRAPH).devices.accelerators[0].memory
    return Devices(
        (
            AcceleratorKind("fast", fast, memory, speed=2.0, price_per_hour=3.0),
            AcceleratorKind("slow", slow, memory, price_per_hour=1.0),
        ),
        cpus=1,
    )


def test_idle_cards_are_paid_for_and_listed():
    problem = Problem(load_problem(GRAPH).graph, inventory(slow=40))  # far more cards than the DP uses
    result = solve_dp(problem)
    cost = plan_cost(problem.devices, result.placement, result.objective, owned={"fast": 1, "slow": 30})
    used = [s for s in result.placement.stages if s.nodes]
    assert cost.devices_used == len(used) < cost.devices_held == 42
    assert cost.price_per_hour == 3.0 + 40 * 1.0
    assert cost.used_price_per_hour == sum(
        3.0 if s.device.kind == "fast" else 1.0 for s in used if s.device.kind != "CPU"
    )
    assert cost.bought_price_per_hour == 10 * 1.0
    idle = dict(cost.idle)
    assert idle["slow"] == 40 - sum(s.device.kind == "slow" for s in used) and "CPU" not in idle  # unpriced cores
    assert cost.cost_per_sample == pytest.approx(43.0 * result.objective / 3.6e6)
    assert format_money(cost.cost_per_million, "EUR").endswith(" EUR") and format_money(None) == "—"


def test_purchase_prices_equal_plan_cost_and_today_survives_rounding():
    problem = Problem(load_problem(GRAPH).graph, inventory())
    options = purchase_options(problem, {"fast": 1, "slow": 0})
    for option in options:
        if option.ok:
            cost = plan_cost(option.point.problem.devices, option.point.result.placement, option.time_per_sample)
            assert option.price_per_hour == cost.price_per_hour
            assert option.cost_per_sample == pytest.approx(cost.cost_per_sample)
    now = today(options, problem.devices)
    assert now is not None and now.counts == (1, 3)
    shown = float(f"{now.time_per_sample:.6g}")  # what a page shows (6 significant digits), typed back in
    for typed in (shown, math.floor(now.time_per_sample * 1e4) / 1e4):
        answer = cheapest_under(options, typed)
        assert answer is not None and answer.price_per_hour <= now.price_per_hour
