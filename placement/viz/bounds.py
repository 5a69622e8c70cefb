"""The Tradeoffs page's first chart: the band the optimal time per sample lies in, per accelerator count.

A plain function returning a Plotly figure (no Streamlit); the band comes from
:func:`placement.explore.bounds.count_band`, exact points (already solved) are drawn on top.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import plotly.graph_objects as go

#: Trace names (the page's tests read them).
LOWER_NAME = "lower bound"
UPPER_NAME = "a valid plan (PipeDream-style split)"
EXACT_NAME = "exact optimum (solved)"


def band_figure(band: Sequence[Any], exact: Sequence[Any] = (), title: str | None = None) -> go.Figure:
    """Time per sample (ms) against the accelerator count: lower bound, a valid plan, exact points.

    Parameters
    ----------
    band : sequence of placement.explore.bounds.BandPoint
        The lower bound and the valid plan's time per count; the optimum lies between them.
    exact : sequence of placement.explore.sweep.SweepPoint, optional
        Exact optima already solved (drawn as markers; those without a plan are skipped).
    title : str, optional
        Figure title.
    """
    xs = [p.value for p in band]
    lower = [p.lower if math.isfinite(p.lower) else None for p in band]
    upper = [p.upper for p in band]
    fig = go.Figure()
    fig.add_trace(
        go.Scatter(
            x=xs,
            y=lower,
            name=LOWER_NAME,
            mode="lines+markers",
            line={"dash": "dot", "color": "#888888"},
            hovertext=[p.lower_reason for p in band],
            hovertemplate="%{x} accelerators: at least %{y:.6g} ms<br>%{hovertext}<extra></extra>",
        )
    )
    fig.add_trace(
        go.Scatter(
            x=xs,
            y=upper,
            name=UPPER_NAME,
            mode="lines+markers",
            fill="tonexty",
            fillcolor="rgba(99, 110, 250, 0.15)",
            line={"color": "#636efa"},
            hovertemplate="%{x} accelerators: a plan takes %{y:.6g} ms<extra></extra>",
        )
    )
    solved = [p for p in exact if p.ok]
    if solved:
        fig.add_trace(
            go.Scatter(
                x=[p.value for p in solved],
                y=[p.time_per_sample for p in solved],
                name=EXACT_NAME,
                mode="markers",
                marker={"size": 10, "color": "#d62728", "symbol": "diamond"},
                hovertemplate="%{x} accelerators: optimum %{y:.6g} ms<extra></extra>",
            )
        )
    fig.update_layout(
        title=title,
        xaxis_title="accelerators",
        yaxis_title="time per sample (ms)",
        height=380,
        legend={"orientation": "h", "y": -0.2},
    )
    return fig
