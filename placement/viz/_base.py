"""Shared pieces of the figures: device colors, units, legends, margins and small trace builders."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import plotly.graph_objects as go

from ..model import DeviceSlot

#: Colors for devices (accelerators first); CPU cores get :data:`CPU_COLORS`.
DEVICE_COLORS = (
    "#1f77b4",
    "#ff7f0e",
    "#2ca02c",
    "#d62728",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#17becf",
    "#bcbd22",
    "#393b79",
    "#ad494a",
    "#637939",
    "#8c6d31",
    "#7b4173",
    "#3182bd",
    "#e6550d",
)


CPU_COLORS = ("#7f7f7f", "#a0a0a0", "#5f5f5f", "#c0c0c0")


UNPLACED_COLOR = "#d0d0d0"


GIB = float(2**30)


#: Legends in one row above the plot, from its left or its right edge.
_LEGEND_LEFT = {"orientation": "h", "yanchor": "bottom", "y": 1.02, "x": 0}


_LEGEND_RIGHT = {"orientation": "h", "yanchor": "bottom", "y": 1.02, "x": 1.0, "xanchor": "right"}


#: A horizontal legend under the plot (for narrow charts whose title takes the top).
_LEGEND_BELOW = {"orientation": "h", "yanchor": "top", "y": -0.18, "x": 0.0, "xanchor": "left"}


_FRONT_COLOR = "#d62728"


_CURVE_COLOR = "#1f77b4"


def _margin(top: float) -> dict[str, float]:
    """The figures' margins: ``top`` pixels above the plot (title and legend), 10 elsewhere."""
    return {"l": 10, "r": 10, "t": top, "b": 10}


def _layout(figure: go.Figure, top: float, **layout: Any) -> None:
    """``figure.update_layout(**layout)`` with the figures' shared margins, ``top`` pixels above the plot."""
    figure.update_layout(margin=_margin(top), **layout)


#: Hover showing the point's ``text``.
_TEXT_HOVER = "%{text}<extra></extra>"


def _ring(x: Any, y: Any, size: float, color: str = "black", width: float = 2.5, **trace: Any) -> go.Scatter:
    """An empty circle of ``size`` px around the point (x, y): marks the chosen point of a chart."""
    ring = {"size": size, "color": "rgba(0,0,0,0)", "line": {"color": color, "width": width}}
    return go.Scatter(x=[x], y=[y], mode="markers", marker=ring, **trace)


def _front_traces(others: tuple, front: tuple, names: tuple[str, str], sizes: tuple[float, float]) -> list[go.Scatter]:
    """Grey markers for the points off a frontier, then the frontier as a step line.

    ``others`` and ``front`` are (x, y, hover texts, customdata or None).
    """
    grey = go.Scatter(mode="markers", marker={"size": sizes[0], "color": "#b0b0b0"})
    line = go.Scatter(
        mode="lines+markers",
        line={"shape": "hv", "color": _FRONT_COLOR, "width": 2},
        marker={"size": sizes[1], "color": _FRONT_COLOR},
    )
    for trace, (x, y, texts, custom), name in zip((grey, line), (others, front), names):
        trace.update(x=x, y=y, name=name, customdata=custom, text=texts, hovertemplate=_TEXT_HOVER)
    return [grey, line]


def _segments(segments: Iterable[tuple[Any, Any]], color: str, width: float, **trace: Any) -> go.Scatter:
    """One line trace drawing every segment ((x0, y0), (x1, y1)), without hover or legend entry."""
    xs: list[float | None] = []
    ys: list[float | None] = []
    for (x0, y0), (x1, y1) in segments:
        xs += [x0, x1, None]
        ys += [y0, y1, None]
    line = {"color": color, "width": width}
    return go.Scatter(x=xs, y=ys, mode="lines", hoverinfo="skip", showlegend=False, line=line, **trace)


def _add_bars(figure: go.Figure, labels: Sequence[str], *series: tuple[Sequence[float], str, str, str]) -> None:
    """One bar trace per (values, name, color, hover word) over the categories ``labels``."""
    for values, name, color, word in series:
        hover = f"%{{x}}<br>{word} %{{y:.6g}}<extra></extra>"
        figure.add_trace(go.Bar(x=labels, y=values, name=name, marker_color=color, hovertemplate=hover))


def _at(where: Mapping[int, tuple[float, float]], ids: Sequence[int], **trace: Any) -> go.Scatter:
    """A scatter trace of the points ``ids``, each drawn at ``where[id]``."""
    return go.Scatter(x=[where[i][0] for i in ids], y=[where[i][1] for i in ids], **trace)


def _ring_selected(figure: go.Figure, points: Iterable[tuple[Any, float]], selected: int | None, size: float) -> None:
    """Ring the sweep point whose ``index`` is ``selected``: ``points`` are (point, x), y its time per sample."""
    chosen = [(p, x) for p, x in points if selected is not None and p.index == selected]
    if chosen:
        point, x = chosen[0]
        y = float(point.time_per_sample)
        figure.add_trace(_ring(x, y, size, name="selected", customdata=[[point.index]], hoverinfo="skip"))


def _clickable_time_layout(figure: go.Figure, title: str, xaxis: dict[str, Any], **layout: Any) -> None:
    """Layout of a chart of time per sample (ms) whose points a click selects (sweeps, Pareto fronts)."""
    _layout(
        figure,
        90,
        legend=_LEGEND_LEFT,
        title=_top_title(title),
        height=420,
        xaxis=xaxis,
        yaxis={"title": "time per sample (ms)", "rangemode": "tozero"},
        clickmode="event+select",
        **layout,
    )


def _span_bars(rows: Sequence[str], starts: Sequence[float], widths: Sequence[float], **trace: Any) -> go.Bar:
    """Horizontal bars: on row ``rows[i]``, from ``starts[i]`` for ``widths[i]`` (a Gantt chart's spans)."""
    return go.Bar(y=rows, x=widths, base=starts, orientation="h", **trace)


def _top_title(text: str) -> dict[str, Any]:
    """A title pinned near the top edge (above a legend row)."""
    return {"text": text, "y": 0.97, "yanchor": "top"}


def device_colors(slots: Iterable[DeviceSlot]) -> dict[DeviceSlot, str]:
    """A stable color per device: accelerators cycle :data:`DEVICE_COLORS`, CPU cores greys."""
    colors: dict[DeviceSlot, str] = {}
    accelerator = cpu = 0
    for slot in slots:
        if slot in colors:
            continue
        if slot.is_cpu:
            colors[slot] = CPU_COLORS[cpu % len(CPU_COLORS)]
            cpu += 1
        else:
            colors[slot] = DEVICE_COLORS[accelerator % len(DEVICE_COLORS)]
            accelerator += 1
    return colors


def format_bytes(value: float) -> str:
    """``1.5 GiB``-style text; ``unlimited`` for infinity."""
    if value is None or math.isinf(value):
        return "unlimited"
    for unit, scale in (("GiB", 2.0**30), ("MiB", 2.0**20), ("KiB", 2.0**10)):
        if abs(value) >= scale:
            return f"{value / scale:,.2f} {unit}"
    return f"{value:,.0f} B"


def _finite(value: float | None) -> float | None:
    return float(value) if value is not None and math.isfinite(value) else None
