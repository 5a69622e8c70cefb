"""Numbers about a solved plan beyond its time per sample: one batch with fill and drain, and its cost."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import placement
from placement.model import Recompute, ScheduleKind
from placement.pipeline.registry import SCHEDULE_LABELS
from ui.graph_state import current_memory_model


@dataclass(frozen=True)
class BatchTiming:
    """Time per batch with pipeline fill and drain (ms), next to the steady-state time per sample.

    ``schedule`` and ``microbatches`` are the memory model's (Devices page); a forward-only graph
    streams (``"inference"``). ``samples_per_second`` counts the fill and drain.
    """

    schedule: str
    microbatches: int
    batch_time: float
    steady_time: float
    bubble: float

    @property
    def samples_per_second(self) -> float:
        return 1000.0 * self.microbatches / self.batch_time if self.batch_time > 0 else math.inf

    def label(self) -> str:
        name = SCHEDULE_LABELS.get(self.schedule, self.schedule)
        return f"{self.microbatches} microbatch{'es' if self.microbatches != 1 else ''}, {name}"


def batch_timing(problem: placement.Problem, result: placement.Result) -> BatchTiming | None:
    """Simulate one batch of the memory model's schedule and microbatches on ``result``'s plan (None without one)."""
    if not result.ok or result.placement is None:
        return None
    from placement.pipeline.schedule import simulate
    from placement.solve import recomputing_devices

    model = current_memory_model()
    kind = model.schedule if problem.graph.is_training else ScheduleKind.INFERENCE.value
    recompute: Any = ()
    if kind != ScheduleKind.INFERENCE and model.training:
        chosen = recomputing_devices(result)
        recompute = chosen if chosen is not None else (model.recompute == Recompute.ALWAYS)
    try:
        run = simulate(problem, result.placement, model.microbatches, kind, recompute=recompute)
    except placement.PlacementError:
        return None
    return BatchTiming(kind, model.microbatches, run.makespan, run.period, run.bubble_fraction)


def plan_cost(problem: placement.Problem, result: placement.Result):
    """:func:`placement.explore.cost.plan_cost` of a solved plan (the one cost model of every page)."""
    from placement.explore.cost import plan_cost as cost_of

    ok = result.ok and result.placement is not None
    return cost_of(problem.devices, result.placement if ok else None, result.objective if ok else None)
