"""Figures of the meeting summary (plain functions returning Plotly figures).

* :func:`memory_breakdown_figure` - each device's peak split into weights, gradients, optimizer
  state and activations, with the memory left free on top, in GiB;
* :func:`worth_figure` - today against n more cards of each kind: time per sample (ms) and cost
  per million samples, side by side.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ..explore.purchase import Worth
from ..pipeline.memory import MemoryBreakdown

GIB = 2.0**30
#: Part name -> bar color (free memory is drawn light).
PART_COLORS = {
    "weights": "#1f77b4",
    "gradients": "#ff7f0e",
    "optimizer": "#2ca02c",
    "activations": "#d62728",
    "free": "#d9d9d9",
}


def memory_breakdown_figure(breakdowns: Sequence[MemoryBreakdown], title: str = "Memory per device") -> go.Figure:
    """Stacked bars (GiB) of each device's peak parts, the free memory on top (none for unlimited or negative)."""
    devices = [str(b.device) for b in breakdowns]
    fig = go.Figure()
    for part, color in PART_COLORS.items():
        if part == "free":
            values = [b.free / GIB if math.isfinite(b.free) and b.free > 0 else 0.0 for b in breakdowns]
        else:
            values = [getattr(b, part) / GIB for b in breakdowns]
        fig.add_bar(
            x=devices,
            y=values,
            name=part,
            marker_color=color,
            hovertemplate=f"%{{x}}: {part} %{{y:,.3f}} GiB<extra></extra>",
        )
    fig.update_layout(
        barmode="stack",
        title=title,
        yaxis_title="GiB",
        height=360,
        margin={"l": 50, "r": 10, "t": 50, "b": 40},
        legend={"orientation": "h", "y": -0.2},
    )
    return fig


def worth_figure(worths: Sequence[Worth], currency: str = "USD") -> go.Figure:
    """Today vs each ``+n kind``: time per sample (ms, left) and cost per million samples (right)."""
    labels = ["today"] + [f"+{w.added} {w.kind}" for w in worths]
    options = [worths[0].before] + [w.after for w in worths] if worths else []
    times = [o.time_per_sample if o.ok else None for o in options]
    costs = [o.cost_per_sample * 1e6 if o.ok and o.cost_per_sample is not None else None for o in options]
    fig = make_subplots(rows=1, cols=2, subplot_titles=("Time per sample (ms)", f"Cost per 1M samples ({currency})"))
    colors = ["#7f7f7f"] + ["#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd"][: max(0, len(labels) - 1)] * 4
    for col, values, text in (
        (1, times, [f"{t:.4g}" if t is not None else "no plan" for t in times]),
        (2, costs, [f"{c:,.4g}" if c is not None else "—" for c in costs]),
    ):
        fig.add_bar(
            x=labels,
            y=values,
            marker_color=colors[: len(labels)],
            text=text,
            textposition="auto",
            showlegend=False,
            row=1,
            col=col,
        )
    fig.update_layout(height=320, margin={"l": 50, "r": 10, "t": 40, "b": 40})
    return fig
