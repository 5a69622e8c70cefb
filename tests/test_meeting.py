"""The meeting summary (placement.explore.meeting), checked against independent calls of the engine."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from placement import MemoryModel, PlacementError, Problem, evaluate, solve
from placement.explore.cost import plan_cost
from placement.explore.meeting import (
    BatchFigures,
    default_more,
    format_rate,
    idle_text,
    meeting_summary,
    summary_markdown,
)
from placement.explore.purchase import worth_of_more
from placement.modelling.builders import build_transformer
from placement.modelling.pricing import devices_for
from placement.perf.transformer import TransformerSpec
from placement.pipeline.schedule import simulate
from placement.viz.meeting import memory_breakdown_figure, worth_figure

MODEL = MemoryModel(training=True, microbatches=4)
PRICES = {"A100": 3.0, "V100": 1.5}


@pytest.fixture(scope="module")
def problem():
    """A small GPT training graph on 2 A100 + 3 V100 (priced), one CPU core."""
    config = TransformerSpec(layers=4, hidden=512, heads=8, seq_length=256, vocab=50257)
    kinds = {"A100": 2, "V100": 3}
    graph = build_transformer(config, kinds, cpus=1, training=True, micro_batch=4, dtype="fp16").graph
    devices = devices_for(kinds, 1)
    kinds = tuple(replace(k, price_per_hour=PRICES[k.name]) for k in devices.accelerators)
    return Problem(graph, devices.with_changes(accelerators=kinds, cpu_price_per_hour=0.0))


@pytest.fixture(scope="module")
def solved(problem):
    method, options = MODEL.method_for("dp")
    result = solve(problem, method, **options)
    assert result.ok
    return result


def batch_of(problem, result):
    run = simulate(problem, result.placement, MODEL.microbatches, MODEL.schedule)
    return BatchFigures("4 microbatches, 1F1B", MODEL.microbatches, run.makespan, run.bubble_fraction)


def test_numbers_equal_the_engines(problem, solved):
    method, options = MODEL.method_for("dp")
    worth = [worth_of_more(problem, kind, n, method=method, **options) for kind, n in (("A100", 2), ("V100", 4))]
    batch = batch_of(problem, solved)
    summary = meeting_summary(
        problem, solved, MODEL, batch=batch, currency="EUR", samples_per_run=10, tokens_per_sample=1024, worth=worth
    )
    evaluation = evaluate(problem, solved.placement)
    assert summary.time_per_sample == evaluation.max_load == pytest.approx(solved.objective)
    assert summary.throughput == pytest.approx(1000 / evaluation.max_load)
    # Memory: the model's peaks, parts summing to the peak.
    peaks = MODEL.peaks(problem, solved.placement)
    assert [b.peak for b in summary.memory] == pytest.approx([p for _, p, _ in peaks])
    for b in summary.memory:
        assert b.weights + b.gradients + b.optimizer + b.activations == pytest.approx(b.peak)
    assert summary.peak.peak == max(p for _, p, _ in peaks) and summary.fits
    # Cost: the one cost model; run = whole batches (ceil(10 / 4) = 3) with fill and drain.
    cost = plan_cost(problem.devices, solved.placement, evaluation.max_load)
    assert summary.cost == cost and cost.price_per_hour == 2 * 3.0 + 3 * 1.5
    assert summary.cost_per_run == pytest.approx(cost.price_per_hour * 3 * batch.batch_time / 3.6e6)
    assert summary.tokens_per_second == pytest.approx(1024 * 1000 / evaluation.max_load)
    assert summary.batch_tokens_per_second == pytest.approx(1024 * 1000 * 4 / batch.batch_time)
    # Layout: every non-empty stage once, loads from the evaluator.
    used = [s for s in solved.placement.stages if s.nodes]
    assert [t.device for t in summary.stages] == [str(s.device) for s in used]
    assert sum(t.nodes for t in summary.stages) == len(problem.graph.nodes)
    assert max(t.load for t in summary.stages) == pytest.approx(evaluation.max_load)
    held = {k.name: k.count for k in problem.devices.accelerators}
    for kind, n in summary.idle:
        assert n == held[kind] - sum(s.device.kind == kind for s in used)
    # Worth: each "after" is the exact optimum of the bigger inventory.
    for w, (kind, n) in zip(summary.worth, (("A100", 2), ("V100", 4))):
        bigger = Problem(problem.graph, problem.devices.with_kind(kind, count=held[kind] + n))
        assert w.after.time_per_sample == pytest.approx(solve(bigger, method, **options).objective)
        assert w.before.time_per_sample == pytest.approx(solved.objective)
    # Markdown: the same numbers as shown.
    text = summary_markdown(summary)
    for needle in (
        f"{evaluation.max_load:.6g} ms",
        f"{batch.batch_time:.6g} ms",
        summary.money(cost.cost_per_million),
        summary.money(summary.cost_per_run),
        "+4 V100",
        f"{summary.worth[1].after.time_per_sample:.6g} ms",
        format_rate(summary.batch_tokens_per_second),
    ):
        assert needle in text, needle
    if summary.idle:
        assert idle_text(summary) in text and "Parallel plan" in text
    assert memory_breakdown_figure(summary.memory).data and len(worth_figure(summary.worth, "EUR").data) == 2


def test_without_batch_and_prices_run_is_steady_state(problem, solved):
    free = Problem(
        problem.graph,
        problem.devices.with_changes(
            accelerators=tuple(replace(k, price_per_hour=0.0) for k in problem.devices.accelerators)
        ),
    )
    summary = meeting_summary(free, solved, MODEL, samples_per_run=7)
    assert summary.run_hours == pytest.approx(7 * summary.time_per_sample / 3.6e6)
    assert summary.cost_per_run == 0 and summary.tokens_per_second is None and summary.batch_tokens_per_second is None
    assert "## What more cards are worth" not in summary_markdown(summary)


def test_default_more_is_the_same_spend_per_kind(problem):
    # 2 A100 at 3/h = 6/h; at 1.5/h that buys 4 V100.
    assert default_more(problem.devices) == {"A100": 2, "V100": 4}
    unpriced = problem.devices.with_changes(
        accelerators=tuple(replace(k, price_per_hour=0.0) for k in problem.devices.accelerators)
    )
    assert default_more(unpriced) == {"A100": 2, "V100": 3}


def test_bad_input_is_one_clear_error(problem, solved):
    with pytest.raises(PlacementError, match="microbatches"):
        BatchFigures("x", 0, 1.0, 0.0)
    with pytest.raises(PlacementError, match="samples per run"):
        meeting_summary(problem, solved, MODEL, samples_per_run=0)
    with pytest.raises(PlacementError, match="tokens per sample"):
        meeting_summary(problem, solved, MODEL, tokens_per_sample=-1)
    with pytest.raises(PlacementError, match="no plan"):
        meeting_summary(problem, replace(solved, status="infeasible", placement=None), MODEL)
    assert math.isfinite(meeting_summary(problem, solved, MODEL).time_per_sample)


def test_format_rate():
    assert format_rate(62667.4) == "62,667" and format_rate(15.61853) == "15.62" and format_rate(None) == "—"
