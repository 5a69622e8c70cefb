"""Figures of the transformer performance model and the launchable-layout planner (plain Plotly figures).

Every function takes plain values (dicts of bytes or seconds by part) and returns a ``plotly`` figure; no
Streamlit here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import plotly.graph_objects as go

from ..perf.timeline import Block

GIB = 2.0**30


def memory_figure(breakdowns: Mapping[str, Mapping[str, float]], capacity: float | None = None) -> go.Figure:
    """Stacked bars of memory per GPU (GiB) by part, one bar per layout; a line at the GPU's capacity.

    Parameters
    ----------
    breakdowns : mapping of str to mapping of str to float
        Layout label -> bytes by part (``MemoryBreakdown.as_dict()``; a ``total`` key is skipped).
    capacity : float or None
        GPU memory in bytes (drawn as a dashed line).
    """
    labels = list(breakdowns)
    parts = [k for k in next(iter(breakdowns.values()), {}) if k != "total"]
    fig = go.Figure()
    for part in parts:
        fig.add_trace(
            go.Bar(name=part.replace("_", " "), x=labels, y=[breakdowns[lab].get(part, 0.0) / GIB for lab in labels])
        )
    if capacity is not None:
        fig.add_hline(y=capacity / GIB, line_dash="dash", annotation_text="GPU memory")
    fig.update_layout(barmode="stack", yaxis_title="GiB per GPU (most loaded)", legend_title="part", height=380)
    return fig


def time_figure(breakdowns: Mapping[str, Mapping[str, float]]) -> go.Figure:
    """Stacked horizontal bars of one iteration's seconds by cause, one bar per layout."""
    labels = list(breakdowns)
    parts = list(next(iter(breakdowns.values()), {}))
    fig = go.Figure()
    for part in parts:
        values = [breakdowns[lab].get(part, 0.0) for lab in labels]
        if any(v > 0 for v in values):
            fig.add_trace(go.Bar(name=part.replace("_", " "), y=labels, x=values, orientation="h"))
    fig.update_layout(barmode="stack", xaxis_title="seconds per iteration", legend_title="cause", height=300)
    return fig


def schedule_figure(blocks: Sequence[Block], title: str = "", recompute: bool = True) -> go.Figure:
    """Gantt chart of a pipeline schedule: one row per pipeline rank, forward and backward blocks by
    micro-batch (text), the gaps are the bubble; zero-bubble V draws the backward's input-gradient (B) and
    weight-gradient (W) passes apart.

    Parameters
    ----------
    blocks : sequence of Block
        :func:`placement.perf.timeline.schedule_blocks` (times in seconds; drawn in ms).
    title : str
        Figure title.
    recompute : bool
        Whether the layout recomputes activations in the backward (the legend says so only then).
    """
    fig = go.Figure()
    colours = {"F": "#4C78A8", "B": "#F58518", "W": "#54A24B"}
    split = any(b.kind == "W" for b in blocks)  # zero-bubble: the backward split in input and weight gradients
    names = {
        "F": "forward",
        "B": "backward, input gradient" if split else "backward (with recomputation)" if recompute else "backward",
        "W": "backward, weight gradient",
    }
    ranks = sorted({b.rank for b in blocks})
    for kind in ("F", "B", "W"):
        mine = [b for b in blocks if b.kind == kind]
        if not mine:
            continue
        fig.add_trace(
            go.Bar(
                name=names[kind],
                orientation="h",
                y=[f"rank {b.rank}" for b in mine],
                x=[(b.end - b.start) * 1e3 for b in mine],
                base=[b.start * 1e3 for b in mine],
                text=[str(b.microbatch) for b in mine],
                marker_color=colours[kind],
                marker_line_width=0.5,
                customdata=[[b.microbatch, b.chunk, b.start * 1e3, (b.end - b.start) * 1e3] for b in mine],
                hovertemplate="micro-batch %{customdata[0]}, chunk %{customdata[1]}<br>"
                "start %{customdata[2]:.2f} ms, %{customdata[3]:.2f} ms<extra>%{fullData.name}</extra>",
            )
        )
    span = max((b.end for b in blocks), default=0.0) * 1e3
    fig.update_layout(
        barmode="overlay",
        title=title or None,
        xaxis_title=f"ms (makespan {span:.1f} ms; gaps are the pipeline bubble)",
        yaxis={"categoryorder": "array", "categoryarray": [f"rank {r}" for r in reversed(ranks)]},
        height=190 + 30 * len(ranks),
        legend={"orientation": "h", "yanchor": "bottom", "y": 1.02, "x": 0, "title": "block "},
        margin={"t": 90 if title else 60},
    )
    return fig


def run_figure(
    labels: Sequence[str], days: Sequence[float], costs: Sequence[float | None], currency: str = "USD"
) -> go.Figure:
    """Days and cost of one training run per option (GPU kind or count): bars of days, a line of cost.

    Parameters
    ----------
    labels : sequence of str
        One per option (e.g. ``1,024 x H100``).
    days, costs : sequences of float
        The run's days and cost per option (a cost of None: no price, not drawn).
    """
    fig = go.Figure()
    fig.add_trace(go.Bar(name="days per run", x=list(labels), y=list(days), yaxis="y"))
    priced = [(lab, c) for lab, c in zip(labels, costs, strict=True) if c is not None]
    if priced:
        fig.add_trace(
            go.Scatter(
                name=f"{currency} per run",
                x=[lab for lab, _ in priced],
                y=[c for _, c in priced],
                yaxis="y2",
                mode="lines+markers",
            )
        )
    fig.update_layout(
        yaxis={"title": "days per run"},
        yaxis2={"title": f"{currency} per run", "overlaying": "y", "side": "right", "rangemode": "tozero"},
        height=360,
        legend={"orientation": "h"},
    )
    return fig
