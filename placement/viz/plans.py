"""Linked plan views: time per sample against a device count, device highlighting, and the plan diff."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

import plotly.graph_objects as go

from ._base import (
    _LEGEND_RIGHT,
    _add_bars,
    _finite,
    _layout,
    _ring,
    format_bytes,
)


def count_curve_figure(
    counts: Sequence[int], times: Sequence[float | None], selected: int | None = None, kind: str = "accelerator"
) -> go.Figure:
    """Time per sample against the number of accelerators of one kind; click a point to pick its plan.

    ``times[i]`` is None where ``counts[i]`` has no feasible plan (drawn as a cross on the
    axis floor, not at 0). The point for ``selected`` is ringed.
    """
    feasible = [(c, float(t)) for c, t in zip(counts, times) if t is not None and math.isfinite(t)]
    missing = [c for c, t in zip(counts, times) if t is None or not math.isfinite(t)]
    figure = go.Figure()
    figure.add_trace(
        go.Scatter(
            x=[c for c, _ in feasible],
            y=[t for _, t in feasible],
            mode="lines+markers",
            name="optimal plan",
            marker={"size": 11, "color": "#1f77b4"},
            customdata=[c for c, _ in feasible],
            hovertemplate=f"%{{x}} x {kind}<br>time per sample %{{y:.6g}}<br>click to show this plan<extra></extra>",
        )
    )
    floor = min((t for _, t in feasible), default=0.0)
    if missing:
        figure.add_trace(
            go.Scatter(
                x=missing,
                y=[floor] * len(missing),
                mode="markers",
                name="infeasible",
                marker={"symbol": "x", "size": 10, "color": "#d62728"},
                hovertemplate="%{x}: infeasible<extra></extra>",
            )
        )
    chosen = [(c, t) for c, t in feasible if c == selected]
    if chosen:
        figure.add_trace(
            _ring(chosen[0][0], chosen[0][1], 20, color="#d62728", width=3, name="shown below", hoverinfo="skip")
        )
    _layout(
        figure,
        60,
        legend=_LEGEND_RIGHT,
        title=f"Time per sample against the number of {kind}s (click a point)",
        height=320,
        xaxis={"title": f"{kind}s", "dtick": 1, "type": "linear"},
        yaxis={"title": "time per sample", "rangemode": "tozero"},
        clickmode="event+select",
    )
    return figure


def highlight_device(figure: go.Figure, device: str, devices: Iterable[str]) -> go.Figure:
    """Emphasise one device (its ``str``) among ``devices`` in a figure of this module; returns the figure.

    Traces named after another device are faded (graph, memory over time); a bar chart with the
    device on its category axis gets a band behind that bar (loads, memory), a Gantt chart
    a band along that device's row.
    """
    device_names = set(devices)
    for trace in figure.data:
        owner = str(trace.name).removesuffix(" peak")  # memory over time: a peak marker per device
        if owner in device_names and owner != device:
            trace.opacity = 0.2
    for trace in figure.data:
        if getattr(trace, "type", "") != "bar":
            continue
        horizontal = trace.orientation == "h"
        labels = list(trace.y if horizontal else trace.x) if (trace.y if horizontal else trace.x) is not None else []
        matches = [label for label in labels if str(label) == device or str(label).startswith(f"{device} (")]
        if not matches:
            continue
        if horizontal:
            figure.add_hrect(
                y0=_category_index(figure, matches[0], "y") - 0.5,
                y1=_category_index(figure, matches[0], "y") + 0.5,
                fillcolor="rgba(255, 215, 0, 0.25)",
                line_width=0,
                layer="below",
            )
        else:
            index = labels.index(matches[0])
            figure.add_vrect(
                x0=index - 0.5, x1=index + 0.5, fillcolor="rgba(255, 215, 0, 0.35)", line_width=0, layer="below"
            )
        break
    return figure


def _category_index(figure: go.Figure, label: str, axis: str) -> int:
    layout_axis = figure.layout.yaxis if axis == "y" else figure.layout.xaxis
    order = list(layout_axis.categoryarray or [])
    return order.index(label) if label in order else 0


def plan_diff_figure(diff, title: str | None = None) -> go.Figure:
    """Per-device load in plan A (pinned) and plan B (current), grouped bars, with both max-loads.

    Takes a :class:`placement.explore.diff.PlanDiff`.
    """
    labels = [str(d.device) for d in diff.devices]
    figure = go.Figure()
    _add_bars(
        figure,
        labels,
        ([d.load_a for d in diff.devices], "pinned plan (A)", "#9e9e9e", "A:"),
        ([d.load_b for d in diff.devices], "current plan (B)", "#1f77b4", "B:"),
    )
    for value, name, color, position in (
        (diff.time_a, "A", "#616161", "top left"),
        (diff.time_b, "B", "#d62728", "top right"),
    ):
        if _finite(value) is not None:
            figure.add_hline(
                y=value,
                line_dash="dash",
                line_color=color,
                annotation_text=f"time per sample {name} {value:.6g}",
                annotation_position=position,
            )
    _layout(
        figure,
        60,
        legend=_LEGEND_RIGHT,
        barmode="group",
        height=360,
        yaxis_title="load (time per sample)",
        title=title or "Load per device: pinned plan (A) and current plan (B)",
    )
    return figure


def plan_diff_rows(diff) -> list[dict[str, Any]]:
    """One row per device: load and memory in both plans, and the deltas (B - A)."""
    return [
        {
            "device": str(d.device),
            "nodes A": d.nodes_a,
            "nodes B": d.nodes_b,
            "load A": d.load_a,
            "load B": d.load_b,
            "load Δ": d.load_delta,
            "memory A": format_bytes(d.memory_a),
            "memory B": format_bytes(d.memory_b),
            "memory Δ": ("+" if d.memory_delta > 0 else "-" if d.memory_delta < 0 else "")
            + format_bytes(abs(d.memory_delta)),
        }
        for d in diff.devices
    ]
