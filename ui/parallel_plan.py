"""Helpers of the Parallel plan page (no Streamlit): the cross-reference to the Devices page, widget keys.

:mod:`placement.multidim` works in ms like every page (Piper's seconds are converted when its files are
read), and so do its figures in :mod:`placement.viz`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any


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


GiB = 2**30
#: The most devices of one kind the page's count field takes.
MAX_DEVICES = 1024


def configured(problem: Any, settings: Sequence[tuple[int, float, float]], microbatches: int) -> Any:
    """``problem`` with each kind's (count, memory GiB, bandwidth GiB/s) from ``settings`` and N microbatches."""

    from placement.multidim.model import DeviceKind

    kinds = tuple(
        DeviceKind(k.name, int(count), float(memory_gib) * GiB, float(bandwidth_gib) * GiB, k.speed)
        for k, (count, memory_gib, bandwidth_gib) in zip(problem.kinds, settings)
    )
    return replace(problem, kinds=kinds, microbatches=int(microbatches))


def setting_key(field: str, i: int, suffix: str) -> str:
    """The widget key of kind ``i``'s ``field`` (``suffix``: each source keeps its own settings)."""
    return f"md_{field}{suffix}" + (f"_{i}" if i else "")


def widget_defaults(kinds: Sequence[Any], microbatches: int, suffix: str) -> dict[str, Any]:
    """Widget key -> value showing each kind's count, memory (GiB) and bandwidth (GiB/s), and the microbatches."""
    defaults: dict[str, Any] = {}
    for i, k in enumerate(kinds):
        defaults[setting_key("devices", i, suffix)] = min(max(k.count, 0), MAX_DEVICES)
        defaults[setting_key("memory", i, suffix)] = round(k.memory / GiB, 3)
        defaults[setting_key("bandwidth", i, suffix)] = round(k.bandwidth / GiB, 3)
    defaults[f"md_microbatches{suffix}"] = microbatches
    return defaults


def kind_prefix(name: str) -> str:
    """The label prefix of a kind's fields ("" for Piper's and the paper's generic kinds)."""
    return "" if name in ("device", "accelerator") else f"{name} "
