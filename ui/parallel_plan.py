"""Helpers of the Parallel plan page (no Streamlit): the figures' units and the cross-reference to the
Devices page.

:mod:`placement.multidim` works in ms like every page (Piper's seconds are converted when its files are
read). The multidim figures of :mod:`placement.viz` still take an evaluation in seconds (they multiply by
1000): :func:`figure_view` gives them one, until they take ms.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

MS_PER_S = 1000.0


def figure_view(evaluation: Any) -> Any:
    """``evaluation`` (a :class:`~placement.multidim.model.PlanEvaluation`, ms) with its times in seconds,
    for :func:`placement.viz.multidim_stage_rows` and :func:`placement.viz.multidim_timeline_figure`."""
    stages = tuple(replace(c, compute=c.compute / MS_PER_S, time=c.time / MS_PER_S) for c in evaluation.stages)
    return replace(evaluation, stages=stages, time_per_sample=evaluation.time_per_sample / MS_PER_S)


def cross_reference(
    devices_ms: float | None,
    devices_used: int | None,
    plan: Any,
    evaluation: Any,
    *,
    training_added: bool,
) -> str:
    """One Markdown line comparing the Devices page's answer with this plan, and saying why they differ.

    Parameters
    ----------
    devices_ms : float or None
        The Devices page's time per sample (ms; the session's DP: one device per stage, no data or tensor
        parallelism). None when the Devices page has no plan (e.g. nothing fits).
    devices_used : int or None
        Devices that answer uses (its stages).
    plan, evaluation
        This page's :class:`~placement.multidim.model.Plan` and its evaluation (ms).
    training_added : bool
        True when the app's graph is forward-only and this plan times a training step (forward + backward,
        weight resync), while the Devices page times the graph as loaded.
    """
    this_ms = evaluation.time_per_sample
    used = sum(n for _, n in evaluation.devices_used)
    stages = len(plan.stages)
    shapes = ", ".join(f"{s.d} x {s.t}" for s in plan.stages[:6]) + (", ..." if stages > 6 else "")
    most_d = max((s.d for s in plan.stages), default=1)
    most_t = max((s.t for s in plan.stages), default=1)
    if devices_ms is None:
        head = "Devices page (one device per stage, no data/tensor parallelism): no plan"
    else:
        on = f" on {devices_used} device{'s' if devices_used != 1 else ''}" if devices_used else ""
        head = f"Devices page (one device per stage, no data/tensor parallelism): {devices_ms:.4g} ms per sample{on}"
    reasons = [
        f"it runs {stages} stage{'s' if stages != 1 else ''} on d x t = {shapes} devices ({used} in all)"
        + (f": data parallelism d shares the samples among up to {most_d} replicas" if most_d > 1 else "")
        + (
            f"{', and' if most_d > 1 else ':'} tensor parallelism splits nodes over up to {most_t}"
            if most_t > 1
            else ""
        )
    ]
    reasons.append("it pays for edge transfers and the weights' resync at the link bandwidth (Piper's model)")
    if training_added:
        reasons.append(
            "it times a training step (forward + backward) while the graph loaded in the app is forward only"
        )
    if devices_ms is not None:
        ratio = devices_ms / this_ms if this_ms > 0 else float("inf")
        compare = f"{ratio:.3g}x faster" if ratio >= 1 else f"{1 / ratio:.3g}x slower"
        return f"{head}; this plan: **{this_ms:.4g} ms**, {compare}, because " + "; ".join(reasons) + "."
    return f"{head}; this plan: **{this_ms:.4g} ms** per sample, because " + "; ".join(reasons) + "."


def no_plan_reference(devices_ms: float | None, devices_used: int | None) -> str:
    """The cross-reference line when no multidimensional plan fits (``devices_ms``: the Devices page's ms)."""
    if devices_ms is None:
        head = "Devices page (one device per stage, no data/tensor parallelism): no plan either"
    else:
        on = f" on {devices_used} device{'s' if devices_used != 1 else ''}" if devices_used else ""
        head = f"Devices page (one device per stage, no data/tensor parallelism): {devices_ms:.4g} ms per sample{on}"
    return (
        f"{head}; this plan: none fits, because Piper's model keeps on every device its stage's weights, "
        "gradients and optimizer state and the activations of every microbatch in flight (a training step); "
        "raise the memory per device or the device count."
    )
