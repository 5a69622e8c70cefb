"""Sweep and Pareto figures of :mod:`placement.explore.sweep` results.

Every point carries ``customdata = [point.index]`` so a page can map a Plotly selection back to its
SweepPoint.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import plotly.graph_objects as go

from ..model import Status
from ._base import (
    _CURVE_COLOR,
    _TEXT_HOVER,
    GIB,
    _clickable_time_layout,
    _front_traces,
    _ring_selected,
    format_bytes,
)

_SWEEP_AXIS_TITLES = {
    "accelerators": "accelerators",
    "memory": "memory per accelerator (GiB)",
    "bandwidth": "bandwidth factor",
    "speed": "accelerator speed",
    "cpus": "CPU cores",
    "devices": "devices used",
    "total_memory": "memory provisioned (GiB)",
    "price": "price per hour",
    "counts": "devices",
}


_PARETO_ATTRS = {"devices": "devices_used", "memory": "total_memory", "price": "price_per_hour"}


def _sweep_x(point, parameter: str) -> float | None:
    """The x coordinate of a sweep point on its own curve (GiB for memory; None if not plottable)."""
    value = point.value
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    value = float(value)
    if not math.isfinite(value):
        return None
    return value / _memory_scale([point])[0] if parameter == "memory" else value


def _memory_scale(points: Sequence[Any]) -> tuple[float, str]:
    """Bytes per axis unit and the unit's name for memory values: GiB, or MiB when all are under 1 GiB."""
    values = [float(p.value) for p in points if isinstance(p.value, (int, float)) and math.isfinite(float(p.value))]
    if values and max(values) < GIB:
        return 2.0**20, "MiB"
    return GIB, "GiB"


def _point_hover(point) -> str:
    price = f"{point.price_per_hour:,.4g}" if point.price_per_hour else "0"
    memory = format_bytes(point.total_memory)
    return (
        f"{point.label}<br>time per sample {point.time_per_sample:.6g} ms<br>devices used {point.devices_used} "
        f"({point.accelerators_used} accelerators, {point.cpus_used} CPU cores)<br>memory provisioned {memory}"
        f"<br>price per hour {price}"
    )


def sweep_figure(
    points: Sequence[Any],
    parameter: str | None = None,
    title: str | None = None,
    selected: int | None = None,
    sensitivity: Any = None,
    log_x: bool = False,
) -> go.Figure:
    """Time per sample against the swept parameter.

    Parameters
    ----------
    points : sequence of placement.explore.sweep.SweepPoint
        One sweep; points without a plan are listed as "no plan" markers on the x axis.
    parameter : str, optional
        The swept parameter (default: the points' own); memory is drawn in GiB.
    title : str, optional
        Figure title.
    selected : int, optional
        ``index`` of a point to ring.
    sensitivity : placement.explore.sweep.Sensitivity, optional
        Adds markers where the current plan stops being optimal (see :func:`add_sensitivity_markers`).
    log_x : bool
        Logarithmic x axis (for memory and bandwidth factors).
    """
    parameter = parameter or (points[0].parameter if points else "")
    scale, unit = _memory_scale(points)

    def x_of(point):
        x = _sweep_x(point, "")
        return x / scale if parameter == "memory" and x is not None else x

    good = [(p, x_of(p)) for p in points if p.ok]
    good = [(p, x) for p, x in good if x is not None]
    bad = [(p, x_of(p)) for p in points if not p.ok]
    bad = [(p, x) for p, x in bad if x is not None]
    axis_title = (
        f"memory per accelerator ({unit})" if parameter == "memory" else _SWEEP_AXIS_TITLES.get(parameter, parameter)
    )
    figure = go.Figure()
    figure.add_trace(
        go.Scatter(
            x=[x for _, x in good],
            y=[float(p.time_per_sample) for p, _ in good],
            mode="lines+markers",
            line_shape="hv" if parameter == "memory" else "linear",
            name="optimal time per sample",
            customdata=[[p.index] for p, _ in good],
            text=[_point_hover(p) for p, _ in good],
            hovertemplate=_TEXT_HOVER,
            marker={"size": 10, "color": _CURVE_COLOR},
            line={"color": _CURVE_COLOR},
        )
    )
    if bad:
        # No plan means no time per sample: the markers sit on their own hidden axis at the bottom of the plot
        # (not at a time of 0), over a grey band.
        for _, x in bad:
            figure.add_vline(x=x, line={"color": "rgba(127,127,127,0.35)", "width": 6})
        figure.add_trace(
            go.Scatter(
                x=[x for _, x in bad],
                y=[0.04] * len(bad),
                yaxis="y2",
                mode="markers",
                name="no plan fits",
                customdata=[[p.index] for p, _ in bad],
                text=[f"{p.label}<br>{p.status}: {p.result.reason or ''}" for p, _ in bad],
                hovertemplate=_TEXT_HOVER,
                marker={"symbol": "x", "size": 10, "color": "#7f7f7f"},
            )
        )
    _ring_selected(figure, good, selected, 18)
    _clickable_time_layout(
        figure,
        title or f"time per sample vs {axis_title}",
        {"title": axis_title, "type": "log" if log_x else "linear"},
        yaxis2={"overlaying": "y", "range": [0, 1], "visible": False, "fixedrange": True},
    )
    if sensitivity is not None:
        add_sensitivity_markers(figure, sensitivity)
    return figure


def add_sensitivity_markers(figure: go.Figure, sensitivity: Any) -> go.Figure:
    """Mark the current value and where the plan changes (dashed lines) on a :func:`sweep_figure`.

    ``sensitivity`` is a :class:`placement.explore.sweep.Sensitivity`; memory values are drawn in GiB.
    Returns the same figure.
    """
    scale = 1.0
    if sensitivity.parameter == "memory":
        unit = str(figure.layout.xaxis.title.text or "")
        scale = 2.0**20 if unit.endswith("(MiB)") else GIB
    # "now" at the top; the change points at the bottom, outside the interval they bound: labels never overlap.
    marks = [(sensitivity.value, "now", "solid", "#2ca02c", "top right")]
    if sensitivity.down is not None:
        marks.append((sensitivity.down.value, "plan changes", "dash", "#ff7f0e", "bottom left"))
    if sensitivity.up is not None:
        marks.append((sensitivity.up.value, "plan changes", "dash", "#ff7f0e", "bottom right"))
    xs = (
        [float(x) for trace in figure.data for x in (trace.x or ()) if x is not None]
        if sensitivity.parameter == "memory"
        else []
    )
    right = max(xs) * 1.05 if xs else None
    if right is not None:
        figure.update_xaxes(range=[min(0.0, min(xs)), right])  # the data's range: a far-off mark never squashes it
    for value, label, dash, color, position in marks:
        if value is None or not math.isfinite(value):
            continue
        if right is not None and float(value) / scale > right:  # beyond the grid: say so at the right edge
            figure.add_annotation(
                x=1.0,
                xref="paper",
                y=1.0,
                yref="paper",
                xanchor="right",
                yanchor="top",
                showarrow=False,
                font={"color": color},
                text=f"{label}: {format_bytes(float(value))} →",
            )
            continue
        # Labels inside the plot, at the bottom, so they never collide with the title or legend above.
        figure.add_vline(
            x=float(value) / scale,
            line={"dash": dash, "color": color, "width": 1.5},
            annotation={"text": label, "font": {"color": color}, "bgcolor": "rgba(255,255,255,0.8)"},
            annotation_position=position,
        )
    return figure


def pareto_figure(
    points: Sequence[Any],
    x: str = "devices",
    front: Sequence[Any] | None = None,
    title: str | None = None,
    selected: int | None = None,
) -> go.Figure:
    """Time per sample against a cost axis; the Pareto frontier drawn as a highlighted step line.

    Parameters
    ----------
    points : sequence of SweepPoint
        All points (those without a plan, or with an infinite cost, are left out).
    x : str
        ``"devices"`` (devices used), ``"memory"`` (memory provisioned, in GiB) or ``"price"``.
    front : sequence of SweepPoint, optional
        The frontier (default: :func:`placement.explore.sweep.pareto_front` of ``points`` on ``x``).
    title : str, optional
        Figure title.
    selected : int, optional
        ``index`` of a point to ring.
    """
    from ..explore.sweep import pareto_front

    attr = _PARETO_ATTRS.get(x, x)
    scale = GIB if x == "memory" else 1.0
    if front is None:
        front = pareto_front(points, x=x)
    on_front = {p.index for p in front}

    def coords(items):
        kept = [p for p in items if p.ok and math.isfinite(float(getattr(p, attr)))]
        return kept, [float(getattr(p, attr)) / scale for p in kept], [float(p.time_per_sample) for p in kept]

    others, ox, oy = coords([p for p in points if p.index not in on_front])
    best, fx, fy = coords(front)
    figure = go.Figure()
    for trace in _front_traces(
        (ox, oy, [_point_hover(p) for p in others], [[p.index] for p in others]),
        (fx, fy, [_point_hover(p) for p in best], [[p.index] for p in best]),
        ("other configurations", "Pareto frontier"),
        (9, 12),
    ):
        figure.add_trace(trace)
    _ring_selected(figure, [(p, float(getattr(p, attr)) / scale) for p in [*others, *best]], selected, 20)
    axis = {"devices": "devices used", "memory": "memory provisioned (GiB)", "price": "price per hour"}.get(x, x)
    _clickable_time_layout(figure, title or f"Pareto frontier: time per sample vs {axis}", {"title": axis})
    return figure


def sweep_rows(points: Sequence[Any]) -> list[dict[str, Any]]:
    """One row per sweep point: value, status, time per sample, devices used, memory, price."""
    rows = []
    for p in points:
        value = p.value
        if p.parameter == "memory" and isinstance(value, (int, float)):
            value = format_bytes(float(value))
        elif isinstance(value, tuple):
            value = p.label
        rows.append(
            {
                "#": p.index,
                p.parameter: value if isinstance(value, str) else float(value),
                "status": p.status,
                "time per sample (ms)": p.time_per_sample,
                "devices used": p.devices_used,
                "accelerators used": p.accelerators_used,
                "CPU cores used": p.cpus_used,
                "memory provisioned": format_bytes(p.total_memory),
                "price per hour": p.price_per_hour,
            }
        )
    return rows


def sweep_summary(points: Sequence[Any]) -> str:
    """One line counting a sweep's solves: how many found an optimal plan, another plan, or none."""
    optimal = sum(1 for p in points if p.ok and p.status == Status.OPTIMAL)
    other = sum(1 for p in points if p.ok and p.status != Status.OPTIMAL)
    none = sum(1 for p in points if not p.ok)
    parts = [f"{len(points)} points: {optimal} optimal"]
    if other:
        parts.append(f"{other} with a plan not proven optimal")
    if none:
        parts.append(f"{none} where no plan fits (drawn at the bottom, they have no time per sample)")
    return ", ".join(parts) + "."
