"""The Plan view page's choices as plain functions (no Streamlit): the curve's counts, clicks, schedules, tables."""

from __future__ import annotations

from typing import Any

import placement
from placement.model import ScheduleKind
from placement.pipeline.schedule import SCHEDULES

#: The curve's accelerator counts: 1 to twice today's count, at least 8 and at most 24 (one DP solve each).
CURVE_MIN, CURVE_MAX = 8, 24
NONE = "(none)"


def curve_counts(count: int) -> list[int]:
    """The accelerator counts of the curve for a kind with ``count`` devices today."""
    return list(range(1, min(max(2 * count, CURVE_MIN), CURVE_MAX) + 1))


def clicked_point(event: Any) -> dict | None:
    """The first selected point of a chart event (None when nothing is selected)."""
    try:
        points = event["selection"]["points"]
    except (KeyError, TypeError):
        return None
    return points[0] if points else None


def shown_count(problem: placement.Problem, kind: str) -> int | None:
    """How many devices of ``kind`` the shown plan's problem has (None when it has no such kind)."""
    if any(k.name == kind for k in problem.devices.accelerators):
        return problem.devices.kind(kind).count
    return None


def schedules_for(training: bool) -> list[str]:
    """The schedules offered: every plannable schedule for a training graph, streaming inference otherwise."""
    return [s for s in SCHEDULES if training or s == ScheduleKind.INFERENCE]


def default_schedule(training: bool) -> str:
    """The schedule first shown: 1F1B for a training graph, streaming inference otherwise."""
    return ScheduleKind.ONE_F_ONE_B.value if training else ScheduleKind.INFERENCE.value


def moved_rows(diff, graph: placement.Graph) -> list[dict[str, Any]]:
    """One row per node that moved between the two plans: its id, name and device in A and in B ("-": none)."""
    names = {node.id: node.name or "" for node in graph.nodes}
    return [
        {"node": n, "name": names[n], "A": str(a) if a else "-", "B": str(b) if b else "-"} for n, a, b in diff.moved
    ]
