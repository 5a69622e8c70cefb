"""Timeline (Gantt) and memory-over-time figures of placement.viz."""

from __future__ import annotations

import pytest

from placement import Devices, Problem
from placement.pipeline.memory import memory_profile
from placement.pipeline.schedule import simulate
from placement.viz import memory_timeline_figure, peak_memory_rows, timeline_figure
from tests.test_schedule import A0, A1, two_stage_training


def test_gantt_bars_are_the_events():
    problem, placement = two_stage_training()
    schedule = simulate(problem, placement, 4, "1f1b")
    figure = timeline_figure(schedule)
    bars = {trace.name: trace for trace in figure.data}
    assert {"forward", "backward", "transfer", "idle (bubble)"} <= set(bars)
    for trace in figure.data:
        assert trace.type == "bar" and trace.orientation == "h"
    forward = bars["forward"]
    events = [e for e in schedule.events if e.kind == "forward"]
    assert list(forward.base) == [e.start for e in events]
    assert list(forward.x) == [e.duration for e in events]
    assert list(forward.text) == [str(e.microbatch) for e in events]
    assert figure.layout.xaxis.type == "linear"
    assert figure.layout.barmode == "overlay"
    # Idle bars add up to each device's idle time (10 and 10, hand-computed in test_schedule).
    idle = bars["idle (bubble)"]
    per_row: dict[str, float] = {}
    for row, width in zip(idle.y, idle.x):
        per_row[row] = per_row.get(row, 0.0) + width
    assert per_row == {"accelerator 0 (stage 0)": pytest.approx(10), "accelerator 1 (stage 1)": pytest.approx(10)}
    # First stage on top.
    assert list(figure.layout.yaxis.categoryarray) == ["accelerator 1 (stage 1)", "accelerator 0 (stage 0)"]


def test_memory_figure_lines_caps_and_oom():
    problem, placement = two_stage_training()
    capped = Problem(problem.graph, Devices.paper(2, 0, memory=250.0))
    profile = memory_profile(capped, simulate(capped, placement, 4, "gpipe"), optimizer_multiplier=2.0)
    figure = memory_timeline_figure(profile)
    lines = {trace.name: trace for trace in figure.data}
    gib = 2.0**30
    assert list(lines["accelerator 0"].x) == [0, 3, 6, 9, 32, 39, 46, 53]
    assert [round(y * gib) for y in lines["accelerator 0"].y] == [131, 231, 331, 431, 331, 231, 131, 31]
    assert lines["accelerator 0"].line.shape == "hv"
    assert [round(y * gib) for y in lines["cap 250 B"].y] == [250, 250]
    oom = lines["first OOM"]
    assert list(oom.x) == [6, 15]
    assert list(oom.text) == ["OOM accelerator 0", "OOM accelerator 1"]
    rows = peak_memory_rows(profile)
    assert [r["first OOM at"] for r in rows] == [6, 15]
    assert [round(r["peak (GiB)"] * gib) for r in rows] == [431, 262]


def test_no_oom_marker_when_it_fits():
    problem, placement = two_stage_training()
    profile = memory_profile(problem, simulate(problem, placement, 2, "1f1b"))
    figure = memory_timeline_figure(profile)
    assert "first OOM" not in {trace.name for trace in figure.data}
    assert profile.of(A0).fits and profile.of(A1).fits
