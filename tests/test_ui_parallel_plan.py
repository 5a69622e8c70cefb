"""Plain tests of ui/parallel_plan.py (the cross-reference line) and the units of the Parallel plan figures."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import pytest

from placement import viz
from placement.multidim.dp import solve_multidim
from placement.multidim.evaluate import evaluate_plan
from placement.multidim.io import read_piper
from ui import parallel_plan as pp

BERT = Path(__file__).resolve().parent.parent / "sample_graphs" / "piper" / "bert32a100.json"
GiB = 2**30


def _plan(count: int):
    p = read_piper(BERT)
    problem = replace(p, kinds=(replace(p.kinds[0], count=count, memory=8 * GiB, bandwidth=25 * GiB),))
    result = solve_multidim(problem)
    return result.plan, evaluate_plan(problem, result.plan)


def test_figures_show_the_models_ms():
    plan, ev = _plan(64)
    problem = read_piper(BERT)
    rows = viz.multidim_stage_rows(problem, plan, ev)
    assert [r["time per sample (ms)"] for r in rows] == pytest.approx([c.time for c in ev.stages])  # ms, not x 1000
    assert [r["compute (ms)"] + r["communication (ms)"] for r in rows] == pytest.approx([c.time for c in ev.stages])
    figure = viz.multidim_timeline_figure(plan, ev, microbatches=2)
    ends = [b + w for trace in figure.data for b, w in zip(trace.base, trace.x)]
    times = [c.time for c in ev.stages]
    # Two samples through the pipeline: at least the slowest stage twice, at most every stage twice (ms, not s).
    assert 2 * max(times) - 1e-9 <= max(ends) <= 2 * sum(times) + 1e-9


def test_cross_reference_names_both_numbers_and_why():
    plan, ev = _plan(64)
    this_ms = ev.time_per_sample  # the model's ms
    line = pp.cross_reference(this_ms * 3, 12, plan, ev, training_added=False)
    assert line.startswith(
        f"Devices page (one device per stage, no data/tensor parallelism): {this_ms * 3:.4g} ms per sample on 12 devices; "
    )
    assert f"this plan: **{this_ms:.4g} ms**" in line
    assert "3x faster" in line
    assert len(plan.stages) > 6  # the line lists the first six stages' shapes
    shapes = ", ".join(f"{s.d} x {s.t}" for s in plan.stages[:6]) + ", ..."
    assert f"d x t = {shapes} devices ({sum(n for _, n in ev.devices_used)} in all)" in line
    assert "data parallelism" in line and "forward only" not in line
    slower = pp.cross_reference(this_ms / 2, 1, plan, ev, training_added=True)
    assert "2x slower" in slower and "on 1 device;" in slower and "forward only" in slower
    none = pp.cross_reference(None, None, plan, ev, training_added=False)
    assert none.startswith("Devices page (one device per stage, no data/tensor parallelism): no plan; ")
    assert re.search(r"this plan: \*\*[0-9.e+-]+ ms\*\* per sample, because ", none)


def test_no_plan_reference_keeps_the_devices_number():
    line = pp.no_plan_reference(12.5, 3)
    assert line.startswith(
        "Devices page (one device per stage, no data/tensor parallelism): 12.5 ms per sample on 3 devices; "
        "this plan: none fits, because "
    )
    assert "no plan either" in pp.no_plan_reference(None, None)
