"""Timeline figures: Gantt charts of pipeline schedules, memory over time and the schedules side by side."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import plotly.graph_objects as go

from ..model import EventKind, ScheduleKind
from ._base import (
    _LEGEND_LEFT,
    GIB,
    _layout,
    _span_bars,
    device_colors,
    format_bytes,
)

#: Colors of the schedule's event kinds and of idle time.
EVENT_COLORS = {"forward": "#1f77b4", "backward": "#ff7f0e", "transfer": "#9e9e9e", "recompute": "#9467bd"}


IDLE_COLOR = "rgba(214, 39, 40, 0.18)"


def _idle_intervals(schedule, device) -> list[tuple[float, float]]:
    """Gaps between a device's events within [0, makespan]."""
    spans = sorted((e.start, e.end) for e in schedule.events_of(device))
    gaps, t = [], 0.0
    for start, end in spans:
        if start > t + 1e-12 * max(1.0, schedule.makespan):
            gaps.append((t, start))
        t = max(t, end)
    if schedule.makespan > t + 1e-12 * max(1.0, schedule.makespan):
        gaps.append((t, schedule.makespan))
    return gaps


def timeline_figure(schedule, title: str | None = None, show_idle: bool = True) -> go.Figure:
    """Gantt chart of a pipeline schedule: one row per device (see :func:`schedule_figure`, which draws it)."""
    return schedule_figure(schedule, title=title, show_idle=show_idle)


def memory_timeline_figure(profile, title: str | None = None) -> go.Figure:
    """Bytes held by every device over time (GiB step lines) against its cap, first OOM marked.

    Takes a :class:`~placement.pipeline.memory.MemoryProfile`. Each device's cap is a dotted line of
    the device's color; the peak of each device is a dot, and a device's first time over its
    cap a red cross labelled "OOM".
    """
    colors = device_colors(d.device for d in profile.devices)
    figure = go.Figure()
    caps_drawn: set[float] = set()
    end = max((d.times[-1] for d in profile.devices if d.times), default=0.0)
    for entry in profile.devices:
        color = colors[entry.device]
        figure.add_trace(
            go.Scatter(
                x=[float(t) for t in entry.times],
                y=[float(b) / GIB for b in entry.bytes],
                mode="lines",
                line={"shape": "hv", "color": color, "width": 2},
                name=str(entry.device),
                hovertemplate=f"{entry.device}<br>t %{{x:.6g}}<br>%{{y:.4g}} GiB<extra></extra>",
            )
        )
        figure.add_trace(
            go.Scatter(
                x=[float(entry.peak_time)],
                y=[float(entry.peak) / GIB],
                mode="markers",
                showlegend=False,
                marker={"color": color, "size": 8},
                name=f"{entry.device} peak",
                hovertemplate=f"{entry.device} peak %{{y:.4g}} GiB at t %{{x:.6g}}<extra></extra>",
            )
        )
        if math.isfinite(entry.cap) and entry.cap not in caps_drawn:
            caps_drawn.add(entry.cap)
            figure.add_trace(
                go.Scatter(
                    x=[0.0, float(end)],
                    y=[entry.cap / GIB] * 2,
                    mode="lines",
                    name=f"cap {format_bytes(entry.cap)}",
                    line={"dash": "dot", "color": "black", "width": 1.5},
                    hovertemplate=f"cap {format_bytes(entry.cap)}<extra></extra>",
                )
            )
    oom = [(d.first_oom, d) for d in profile.devices if d.first_oom is not None]
    if oom:
        figure.add_trace(
            go.Scatter(
                x=[float(t) for t, _ in oom],
                y=[float(d.cap) / GIB for _, d in oom],
                mode="markers+text",
                name="first OOM",
                text=[f"OOM {d.device}" for _, d in oom],
                textposition="top center",
                marker={"symbol": "x", "size": 14, "color": "#d62728", "line": {"width": 2}},
                hovertemplate="OOM at t %{x:.6g}<extra></extra>",
            )
        )
    _layout(
        figure,
        90,
        legend=_LEGEND_LEFT,
        title=title or f"memory over time ({profile.schedule}, {profile.microbatches} microbatches)",
        height=400,
        xaxis={"title": "time", "type": "linear"},
        yaxis={"title": "GiB", "rangemode": "tozero"},
    )
    return figure


def peak_memory_rows(profile) -> list[dict[str, Any]]:
    """One row per device: weights, optimizer, activations per microbatch, in flight, peak, when, cap, OOM."""
    return [
        {
            "device": str(d.device),
            "weights (GiB)": d.static.weights / GIB,
            "optimizer (GiB)": d.static.optimizer / GIB,
            "activations / microbatch (GiB)": d.static.activation / GIB,
            "in flight": d.in_flight,
            "peak (GiB)": d.peak / GIB,
            "peak at": d.peak_time,
            "cap (GiB)": d.cap / GIB if math.isfinite(d.cap) else None,
            "first OOM at": d.first_oom,
        }
        for d in profile.devices
    ]


def memory_breakdown_rows(breakdowns) -> list[dict[str, Any]]:
    """One row per device of :func:`placement.pipeline.memory.memory_breakdown`: the peak's parts, cap and free memory (GiB).

    Cap and free memory are text ("unlimited" for a CPU core), never an empty "None" cell.
    """
    return [
        {
            "device": str(b.device),
            "weights (GiB)": round(b.weights / GIB, 3),
            "gradients (GiB)": round(b.gradients / GIB, 3),
            "optimizer (GiB)": round(b.optimizer / GIB, 3),
            "activations (GiB)": round(b.activations / GIB, 3),
            "peak (GiB)": round(b.peak / GIB, 3),
            "cap (GiB)": f"{b.cap / GIB:,.3f}" if math.isfinite(b.cap) else "unlimited",
            "free (GiB)": f"{b.free / GIB:,.3f}" if math.isfinite(b.free) else "unlimited",
            "peak bytes": b.peak,
            "fits": b.fits,
        }
        for b in breakdowns
    ]


SCHEDULE_EVENT_COLORS = {**EVENT_COLORS, "weight": "#2ca02c"}


_OP_LETTER = {"forward": "F", "backward": "B", "weight": "W"}


def schedule_figure(
    schedule, title: str | None = None, show_idle: bool = True, height: int | None = None, time_unit: str = "ms"
) -> go.Figure:
    """Gantt chart of any :class:`~placement.pipeline.schedule.Schedule`: one row per device.

    ``time_unit`` names the graph's time unit in the default title (the period) and on the time axis.

    Like :func:`timeline_figure` (traces named by event kind, idle time shaded, makespan
    marked, first device on top), plus the ``"weight"`` units of ZB-H1 and rows that name
    every stage a device runs (interleaved schedules). Bars of interleaved schedules are
    labelled ``<stage>F<microbatch>`` like the action lists; others by the microbatch.
    """
    devices = list(schedule.devices)
    labels = {
        d: f"{d} (stage{'s' if len(schedule.stages_of(d)) > 1 else ''} {', '.join(map(str, schedule.stages_of(d)))})"
        for d in devices
    }
    interleaved = schedule.virtual > 1
    figure = go.Figure()
    for kind in ("forward", "backward", "weight", "recompute", "transfer"):
        events = [e for e in schedule.events if e.kind == kind]
        if not events:
            continue
        if kind in _OP_LETTER:
            op = {"backward": "I" if schedule.kind == ScheduleKind.ZBH1 else "B"}.get(kind, _OP_LETTER[kind])
            text = [f"{e.stage}{op}{e.microbatch}" if interleaved else str(e.microbatch) for e in events]
        else:
            text = ["" for _ in events]
        hover = [
            f"{e.device} · stage {e.stage} · {kind}{' ' + e.direction if e.direction else ''} ({e.phase}) · "
            f"microbatch {e.microbatch}<br>{e.start:.6g} → {e.end:.6g} (duration {e.duration:.6g})"
            for e in events
        ]
        figure.add_trace(
            _span_bars(
                [labels[e.device] for e in events],
                [float(e.start) for e in events],
                [float(e.duration) for e in events],
                name="weight gradient" if kind == EventKind.WEIGHT else kind,
                marker={"color": SCHEDULE_EVENT_COLORS[kind], "line": {"width": 0.5, "color": "white"}},
                text=text,
                textposition="inside",
                insidetextanchor="middle",
                hovertext=hover,
                hoverinfo="text",
            )
        )
    if show_idle:
        idle_y, idle_x, idle_base = [], [], []
        for device in devices:
            for start, end in _idle_intervals(schedule, device):
                idle_y.append(labels[device])
                idle_x.append(float(end - start))
                idle_base.append(float(start))
        if idle_y:
            figure.add_trace(
                _span_bars(
                    idle_y,
                    idle_base,
                    idle_x,
                    name="idle (bubble)",
                    marker={"color": IDLE_COLOR, "pattern": {"shape": "/", "fgcolor": "rgba(214, 39, 40, 0.5)"}},
                    hovertext=[f"idle {x:.6g}" for x in idle_x],
                    hoverinfo="text",
                )
            )
    figure.add_vline(
        x=float(schedule.makespan),
        line_dash="dash",
        line_color="black",
        annotation_text=f"makespan {schedule.makespan:.6g}",
        annotation_position="top",
    )
    _layout(
        figure,
        90,
        legend=_LEGEND_LEFT,
        barmode="overlay",
        height=height or max(260, 70 + 48 * len(devices)),
        title=title
        or (
            f"{schedule.kind} schedule, {schedule.microbatches} microbatch"
            f"{'es' if schedule.microbatches != 1 else ''}: period {schedule.period:.4g} {time_unit}, "
            f"bubble {schedule.bubble_fraction:.1%}"
        ),
        xaxis={"title": f"time ({time_unit})", "type": "linear", "range": [0, float(schedule.makespan) * 1.02 or 1.0]},
        yaxis={"title": "", "categoryorder": "array", "categoryarray": [labels[d] for d in reversed(devices)]},
        bargap=0.25,
    )
    return figure


def schedule_comparison_rows(entries: Sequence[tuple[str, Any, Any, str]]) -> list[dict[str, Any]]:
    """One row per schedule from ``(label, Schedule or None, MemoryProfile or None, reason)``.

    Columns: schedule, makespan, steady-state period, bubble (fraction), peak memory (GiB, the
    highest device), fits (every device within its cap), devices and the reason a schedule
    does not apply (blank otherwise).
    """
    rows: list[dict[str, Any]] = []
    for label, schedule, profile, reason in entries:
        if schedule is None:
            rows.append(
                {
                    "schedule": label,
                    "makespan": None,
                    "period": None,
                    "bubble": None,
                    "peak memory (GiB)": None,
                    "fits": None,
                    "devices": None,
                    "note": reason,
                }
            )
            continue
        peak = max((d.peak for d in profile.devices), default=0.0) if profile is not None else None
        rows.append(
            {
                "schedule": label,
                "makespan": schedule.makespan,
                "period": schedule.period,
                "bubble": schedule.bubble_fraction,
                "peak memory (GiB)": None if peak is None else peak / GIB,
                "fits": None if profile is None else profile.fits,
                "devices": len(schedule.devices),
                "note": reason,
            }
        )
    return rows


def schedule_comparison_figure(rows: Sequence[Mapping[str, Any]], title: str | None = None) -> go.Figure:
    """Bubble fraction and peak memory per schedule, side by side (two bar panels).

    Takes :func:`schedule_comparison_rows`; schedules that do not apply are left out.
    """
    from plotly.subplots import make_subplots

    shown = [r for r in rows if r.get("bubble") is not None]
    names = [str(r["schedule"]) for r in shown]
    figure = make_subplots(
        rows=1, cols=2, subplot_titles=("bubble (idle share of device time)", "peak memory of the fullest device (GiB)")
    )
    bubbles = [100.0 * float(r["bubble"]) for r in shown]
    peaks = [float(r["peak memory (GiB)"] or 0.0) for r in shown]
    panels = (
        (bubbles, "bubble %", "#d62728", [f"{b:.1f}%" for b in bubbles], "bubble %{y:.2f}%", "%"),
        (peaks, "peak memory", "#1f77b4", [f"{p:.3g}" for p in peaks], "peak %{y:.4g} GiB", "GiB"),
    )
    for col, (values, name, color, texts, hover, unit) in enumerate(panels, start=1):
        bar = go.Bar(
            x=names,
            y=values,
            name=name,
            marker_color=color,
            text=texts,
            textposition="outside",
            hovertemplate=f"%{{x}}: {hover}<extra></extra>",
        )
        figure.add_trace(bar, row=1, col=col)
        figure.update_yaxes(title_text=unit, row=1, col=col, rangemode="tozero")
    _layout(figure, 80, title=title or "schedules side by side", showlegend=False, height=380)
    return figure
