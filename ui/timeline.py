"""The Timeline page's tables and decisions as plain functions (no Streamlit).

The page (``Timeline`` in :data:`ui.navigation.PAGES`) draws them; its widgets are in :mod:`ui.timeline_view`.
"""

from __future__ import annotations

import math
from typing import Any

import placement
from placement.model import Recompute, ScheduleKind
from placement.pipeline.registry import SCHEDULE_TITLES
from ui.samples import SAMPLES_DIR

#: Long schedule names of the Schedule menu.
SCHEDULE_LABELS = SCHEDULE_TITLES
#: The plans the page can show: the current one, or the memory-aware plan for the chosen schedule.
PLANS = ("current plan", "memory-aware plan")
#: Ideal cap of the memory-aware DP here: lower than the default, so that the rare fallback to the unreduced
#: lattice takes seconds (the result is then "feasible" with a bound and gap instead of a minute-long proof).
MEMORY_AWARE_MAX_IDEALS = 200_000


def memory_model_settings(model: placement.MemoryModel) -> dict[str, Any]:
    """Widget key -> value: the Timeline settings a training memory model decides."""
    return {
        "timeline_schedule": model.schedule,
        "timeline_microbatches": model.microbatches,
        "timeline_optimizer": model.optimizer_multiplier,
        "timeline_recompute": model.recompute == Recompute.ALWAYS,
    }


def default_schedule(training_graph: bool) -> str:
    """The schedule first shown: 1F1B for a training graph, streaming inference otherwise."""
    return ScheduleKind.ONE_F_ONE_B.value if training_graph else ScheduleKind.INFERENCE.value


def moved_stages(plan: placement.Placement, virtual: int) -> list[tuple[int, Any, Any]]:
    """Stages that interleaving runs on another kind of device: ``(stage, planned device, device it runs on)``.

    With ``virtual`` stages per device, stage i runs on the device of stage ``i mod (stages / virtual)``.
    """
    ranks = max(1, len(plan.stages) // virtual)
    return [
        (i, plan.stages[i].device, plan.stages[i % ranks].device)
        for i in range(len(plan.stages))
        if plan.stages[i].device.kind != plan.stages[i % ranks].device.kind
    ]


def moved_warning(moved: list[tuple[int, Any, Any]]) -> str:
    """The warning about :func:`moved_stages` (issue 26: on a mixed plan that is another kind)."""
    i, planned, runs = moved[0]
    return (
        f"Interleaved 1F1B runs {len(moved)} stage{'s' if len(moved) != 1 else ''} on another kind of device "
        f"than planned (e.g. stage {i}, planned on {planned}, runs on {runs}): the schedule's times use the "
        "devices it runs on, which may be slower. Plan stages of one kind for interleaving."
    )


def period_note(schedule_kind: str, training_graph: bool, recompute: bool, period: float, max_load: float) -> str:
    """The caption under the numbers: how the steady-state time per sample relates to the max-load ("" for none)."""
    if schedule_kind == ScheduleKind.GPIPE:
        return (
            "GPipe's steady-state time per sample is the slowest forward unit plus the slowest backward unit, "
            "which exceeds the max-load when different devices are the bottleneck of each pass."
        )
    if (schedule_kind == ScheduleKind.INFERENCE and training_graph) or recompute:
        return ""
    same = math.isclose(period, max_load, rel_tol=1e-9, abs_tol=1e-12)
    return (
        "Steady-state time per sample = max-load."
        if same
        else "Steady-state time per sample differs from the max-load."
    )


#: The textbook training graph one click away from the Timeline and Teaching pages: a chain whose gradients flow
#: back from the last layer to the first, as in a real backward pass.
TEXTBOOK_TRAINING = SAMPLES_DIR / "ours" / "tiny_training.json"


def forward_gradients_note(schedule_kind: str) -> str:
    """What a graph whose gradient edges run from earlier to later stages does to the schedule drawn."""
    text = (
        "This graph's gradient edges run from earlier to later stages (gradient of layer k -> gradient of layer "
        "k + 1, as the paper's training files are drawn), the reverse of a real backward pass, where the last "
        "stage's gradient feeds the one before. Each device's backward units here wait for the previous device, "
        "so the backward pass drains towards the last stage"
    )
    if schedule_kind == ScheduleKind.ONE_F_ONE_B:
        text += (
            ", against 1F1B's order (built for gradients flowing back): its bubble can come out larger than "
            "GPipe's, the reverse of the textbook"
        )
    return text + ". Load the textbook training graph to see the schedules as taught."


def idle_rows(schedule) -> list[dict[str, Any]]:
    """One row per device: its stages, busy and idle time, and its forward and backward unit."""
    return [
        {
            "device": str(device),
            "stages": ", ".join(map(str, schedule.stages_of(device))),
            "busy": schedule.makespan - idle,
            "idle": idle,
            "idle %": 100 * idle / schedule.makespan if schedule.makespan else 0.0,
            "forward unit": schedule.device_work(device)[0],
            "backward unit": schedule.device_work(device)[1],
        }
        for device, idle in schedule.idle
    ]


def aware_rows(result: placement.Result, fits: bool, aware: placement.Result) -> list[dict[str, Any]]:
    """The current plan beside the memory-aware plan (``fits``: the current plan holds the schedule's memory)."""
    return [
        {
            "plan": "current plan",
            "status": result.status,
            "time per sample": result.objective,
            "stages": len(result.placement.stages),
            "fits this schedule's memory": fits,
        },
        {
            "plan": "memory-aware plan",
            "status": aware.status,
            "time per sample": aware.objective,
            "stages": len(aware.placement.stages) if aware.ok else None,
            "fits this schedule's memory": aware.ok,
        },
    ]


def not_optimal_warning(aware: placement.Result) -> str:
    """Why a feasible memory-aware plan is not proven optimal."""
    if aware.gap is not None:
        return f"Memory-aware plan not proven optimal: within {aware.gap:.1%} of the bound {aware.bound:.6g}."
    return f"Memory-aware plan not proven optimal ({aware.reason})."


#: The page's explanation of how the schedule is computed (markdown).
HOW = (
    "* Each device runs, per microbatch, a **forward unit** (incoming transfers, forward compute, outgoing "
    "transfers) and in training a **backward unit** (the same for the backward nodes, plus the forward compute "
    "again with recomputation). Forward + backward unit = the device's load from the evaluator.\n"
    "* A unit starts when the device is free and the units it depends on (graph edges between devices, same "
    "microbatch) have ended.\n"
    "* **Inference** streams F0, F1, ...; **GPipe** runs all forwards then all backwards; **1F1B** runs "
    "min(K - k - 1, N) warm-up forwards on the stage at position k of K, then alternates one forward and one "
    "backward, then drains.\n"
    "* **Interleaved 1F1B** (torch's ScheduleInterleaved1F1B, Megatron's interleaving): with v virtual stages per "
    "device, stage i runs on the device of stage i mod D; each device cycles through its stages in rounds of "
    "microbatches.\n"
    "* **ZB-H1** (zero bubble): the backward unit splits into the input-gradient part I (what the neighbouring "
    "stage waits for) and the weight-gradient part W; device d defers d W units to fill the drain bubble (mirrored "
    "when the graph's gradient edges run from the first stage to the last). The split is the backward nodes' "
    "weightGradFraction field, else 1:1. A microbatch's activations stay until its W ends.\n"
    "* Memory: weights always; optimizer state (training); each microbatch's activations (output bytes of the "
    "stage's forward nodes, from the edge sizes) from its forward unit to the end of its backward unit."
)
