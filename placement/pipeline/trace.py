"""Export a pipeline schedule as a Chrome trace (opens in https://ui.perfetto.dev or chrome://tracing).

The JSON object format of the Trace Event Format: ``{"traceEvents": [...], "displayTimeUnit": "ms"}``.

* one *process* per device (``pid`` = 1 + pipeline position), named by a ``process_name``
  metadata event (``ph: "M"``) and ordered by ``process_sort_index``;
* two *threads* per device: ``tid`` 1 "compute" (forward, backward and recompute events) and
  ``tid`` 2 "transfers", named by ``thread_name`` metadata events;
* every schedule event is a complete event (``ph: "X"``) with ``ts`` and ``dur`` in
  microseconds, ``name`` like ``"F3"`` / ``"B3"`` / ``"W3"`` (ZB-H1 weight gradient) / ``"recompute 3"`` /
  ``"send 3"`` / ``"recv 3"``, ``cat`` the event kind and ``args`` with the microbatch, the stage
  and the times in graph units (interleaved schedules name every stage of a device's process);
* with a memory profile, a counter event (``ph: "C"``, name ``"memory"``, ``args`` {"GiB": value}) at
  every step of each device's memory.

The graph's times have no unit in the file format; ``microseconds_per_unit`` (default 1000:
graph times in milliseconds) converts them.
"""

from __future__ import annotations

import json
import math
from typing import Any

from ..errors import PlacementError
from ..model import EventKind
from .schedule import Schedule

COMPUTE_TID = 1
TRANSFER_TID = 2


def _event_name(kind: str, direction: str, microbatch: int) -> str:
    if kind == EventKind.FORWARD:
        return f"F{microbatch}"
    if kind == EventKind.BACKWARD:
        return f"B{microbatch}"
    if kind == EventKind.WEIGHT:
        return f"W{microbatch}"
    if kind == EventKind.RECOMPUTE:
        return f"recompute {microbatch}"
    return f"{'send' if direction == 'out' else 'recv'} {microbatch}"


def chrome_trace(schedule: Schedule, memory=None, microseconds_per_unit: float = 1000.0) -> dict[str, Any]:
    """The trace as a JSON-ready dict (see the module docstring).

    Parameters
    ----------
    schedule : Schedule
        From :func:`placement.pipeline.schedule.simulate`.
    memory : MemoryProfile, optional
        From :func:`placement.pipeline.memory.memory_profile`: adds memory counter tracks.
    microseconds_per_unit : float
        Microseconds per graph time unit.
    """
    if not (
        isinstance(microseconds_per_unit, (int, float))
        and math.isfinite(microseconds_per_unit)
        and microseconds_per_unit > 0
    ):
        raise PlacementError(f"microseconds per time unit must be a positive number (got {microseconds_per_unit!r})")
    scale = float(microseconds_per_unit)
    pid_of = {device: k + 1 for k, device in enumerate(schedule.devices)}
    events: list[dict[str, Any]] = []
    for device, pid in pid_of.items():
        stages = schedule.stages_of(device)
        events.append(
            {
                "ph": "M",
                "name": "process_name",
                "pid": pid,
                "tid": 0,
                "args": {"name": f"{device} (stage{'s' if len(stages) > 1 else ''} {', '.join(map(str, stages))})"},
            }
        )
        events.append({"ph": "M", "name": "process_sort_index", "pid": pid, "tid": 0, "args": {"sort_index": pid}})
        events.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": COMPUTE_TID, "args": {"name": "compute"}})
        events.append(
            {"ph": "M", "name": "thread_name", "pid": pid, "tid": TRANSFER_TID, "args": {"name": "transfers"}}
        )
    for event in schedule.events:
        events.append(
            {
                "ph": "X",
                "name": _event_name(event.kind, event.direction, event.microbatch),
                "cat": event.kind,
                "pid": pid_of[event.device],
                "tid": TRANSFER_TID if event.kind == EventKind.TRANSFER else COMPUTE_TID,
                "ts": event.start * scale,
                "dur": event.duration * scale,
                "args": {
                    "microbatch": event.microbatch,
                    "stage": event.stage,
                    "phase": event.phase,
                    "start": event.start,
                    "end": event.end,
                },
            }
        )
    if memory is not None:
        for entry in memory.devices:
            entry_pid = pid_of.get(entry.device)
            if entry_pid is None:
                continue
            for time, value in zip(entry.times, entry.bytes):
                events.append(
                    {
                        "ph": "C",
                        "name": "memory",
                        "pid": entry_pid,
                        "tid": 0,
                        "ts": time * scale,
                        "args": {"GiB": value / 2**30},
                    }
                )
    return {
        "traceEvents": events,
        "displayTimeUnit": "ms",
        "otherData": {
            "schedule": schedule.kind,
            "microbatches": schedule.microbatches,
            "makespan": schedule.makespan,
            "period": schedule.period,
            "bubble_fraction": schedule.bubble_fraction,
            "microseconds_per_unit": scale,
        },
    }


def chrome_trace_json(schedule: Schedule, memory=None, microseconds_per_unit: float = 1000.0) -> str:
    """:func:`chrome_trace` serialised to a JSON string."""
    return json.dumps(chrome_trace(schedule, memory, microseconds_per_unit), separators=(",", ":"))
