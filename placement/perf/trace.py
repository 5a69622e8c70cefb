"""A transformer plan's pipeline schedule as a Chrome trace (opens in https://ui.perfetto.dev or chrome://tracing).

The same format as the graph pipeline's (:mod:`placement.pipeline.trace`): ``{"traceEvents": [...],
"displayTimeUnit": "ms", "otherData": {...}}`` with

* one *process* per pipeline rank (``pid`` = 1 + rank), named by a ``process_name`` metadata event ("pipeline
  rank i (layers, GPUs)"; every rank stands for the t x cp x d GPUs that run it in lockstep) and ordered by
  ``process_sort_index``; one thread ``compute`` (``tid`` 1);
* every operation of :func:`placement.perf.timeline.schedule_blocks` a complete event (``ph: "X"``), ``ts`` and
  ``dur`` in microseconds, ``name`` ``F3`` / ``B3`` / ``W3`` (micro-batch 3; ``.c`` the chunk when there are
  several), ``cat`` forward / backward / weight gradient.

The schedule covers the forward and backward passes of one step (the data-parallel reduction, the optimizer step
and the synchronisation term of the step time are not drawn; ``otherData`` gives the step time). Long schedules
are cut to :data:`MAX_EVENTS` operations (whole groups of micro-batches; ``otherData`` says how many are drawn).
"""

from __future__ import annotations

import json
from typing import Any

from .layout import Schedule, stage_layers
from .predict import stage_seconds
from .search import Plan
from .timeline import schedule_blocks
from .transformer import TransformerSpec

#: Most operations a trace holds (micro-batches drawn are cut to stay below).
MAX_EVENTS = 200_000
_CATEGORY = {"F": "forward", "B": "backward", "W": "weight gradient"}


def microbatches_drawn(p: int, m: int, v: int, schedule: Schedule) -> int:
    """How many of the step's ``m`` micro-batches a trace draws (all of them unless past :data:`MAX_EVENTS`)."""
    per_microbatch = p * (3 * 2 if schedule is Schedule.ZBV else 2 * v)
    shown = min(m, max(1, MAX_EVENTS // per_microbatch))
    if schedule is Schedule.INTERLEAVED and v > 1:
        shown = max(p, shown - shown % p)
    return shown


def chrome_trace(model: TransformerSpec, plan: Plan, cluster: Any) -> dict[str, Any]:
    """The plan's one-step pipeline schedule as a JSON-ready Chrome trace (see the module docstring).

    Parameters
    ----------
    model : TransformerSpec
    plan : Plan
        From :func:`placement.perf.search.search`.
    cluster : Cluster
        The cluster the plan was found for.

    Raises
    ------
    PlacementError
        For a schedule that is not drawn (ZB-H1).
    """
    layout = plan.layout
    p, v = layout.pipeline, layout.virtual_stages
    m = microbatches_drawn(p, layout.microbatches, v, layout.schedule)
    blocks = schedule_blocks(layout.schedule, stage_seconds(model, cluster, layout), m, v)
    layers = stage_layers(model, layout)
    per_rank = layout.tensor * layout.context * layout.data
    events: list[dict[str, Any]] = []
    for rank in range(p):
        pid = rank + 1
        name = f"pipeline rank {rank} ({layers[rank]} layers, {per_rank} GPUs in lockstep)"
        events += [
            {"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": name}},
            {"ph": "M", "name": "process_sort_index", "pid": pid, "tid": 0, "args": {"sort_index": pid}},
            {"ph": "M", "name": "thread_name", "pid": pid, "tid": 1, "args": {"name": "compute"}},
        ]
    chunks = layout.schedule is Schedule.ZBV or v > 1
    for b in blocks:
        events.append(
            {
                "ph": "X",
                "name": f"{b.kind}{b.microbatch}" + (f".{b.chunk}" if chunks else ""),
                "cat": _CATEGORY[b.kind],
                "pid": b.rank + 1,
                "tid": 1,
                "ts": b.start * 1e6,
                "dur": (b.end - b.start) * 1e6,
                "args": {"microbatch": b.microbatch, "chunk": b.chunk, "start_s": b.start, "end_s": b.end},
            }
        )
    return {
        "traceEvents": events,
        "displayTimeUnit": "ms",
        "otherData": {
            "model": model.name,
            "schedule": str(layout.schedule),
            "pipeline_ranks": p,
            "microbatches": layout.microbatches,
            "microbatches_drawn": m,
            "schedule_seconds": max((b.end for b in blocks), default=0.0),
            "step_seconds": plan.iteration_seconds,
            "not_drawn": "data-parallel reduction, optimizer step, synchronisation",
            "model_id": plan.prediction.model_id,
        },
    }


def chrome_trace_json(model: TransformerSpec, plan: Plan, cluster: Any) -> str:
    """:func:`chrome_trace` serialised to a JSON string."""
    return json.dumps(chrome_trace(model, plan, cluster), separators=(",", ":"), allow_nan=False)
