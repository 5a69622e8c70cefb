"""Figures of the transformer performance model and the launchable-layout planner (plain Plotly figures).

Every function takes plain values (dicts of bytes or seconds by part) and returns a ``plotly`` figure; no
Streamlit here.
"""

from __future__ import annotations

from collections.abc import Mapping

import plotly.graph_objects as go

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
