"""Plain tests of ui/parallel_plan.py (the Parallel plan page's units and its cross-reference line)."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import pytest

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


def test_figure_view_gives_the_figures_seconds():
    plan, ev = _plan(64)
    view = pp.figure_view(ev)
    assert view.time_per_sample == pytest.approx(ev.time_per_sample / 1000)  # the model's ms; the view's s
    assert [c.time for c in view.stages] == pytest.approx([c.time / 1000 for c in ev.stages])
    assert [c.compute for c in view.stages] == pytest.approx([c.compute / 1000 for c in ev.stages])
    assert [c.memory for c in view.stages] == [c.memory for c in ev.stages]  # bytes stay bytes


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
