"""Uncertainty figures: Monte Carlo histogram of the time per sample and bottleneck shares."""

from __future__ import annotations

from typing import Any

import plotly.graph_objects as go

from ._base import (
    _CURVE_COLOR,
    _LEGEND_LEFT,
    _layout,
    _top_title,
)


def monte_carlo_figure(mc: Any, time_unit: str = "ms", title: str | None = None) -> go.Figure:
    """Histogram of the time per sample over the draws of a :class:`placement.explore.uncertainty.MonteCarlo`.

    The chosen plan's times and (when present) the re-optimised optima are overlaid; dashed
    lines mark the chosen plan's P10, P50 and P90.
    """
    figure = go.Figure()
    reopt = [t for t in mc.reopt_times if t is not None]
    every = list(mc.plan_times) + reopt
    low, high = min(every), max(every)
    bins = {"start": low, "end": high + (high - low) * 1e-9 + 1e-12, "size": (high - low) / 30 or 1.0}
    figure.add_trace(
        go.Histogram(x=list(mc.plan_times), name="chosen plan", opacity=0.65, marker_color=_CURVE_COLOR, xbins=bins)
    )
    if reopt:  # the same bins, so that the two distributions compare bar by bar
        figure.add_trace(
            go.Histogram(x=reopt, name="re-optimised for each draw", opacity=0.55, marker_color="#2ca02c", xbins=bins)
        )
    for label, value in zip(("P10", "P50", "P90"), mc.plan_quantiles):
        figure.add_vline(
            x=value,
            line={"dash": "dash", "color": "#444", "width": 1.2},
            annotation={"text": label, "bgcolor": "rgba(255,255,255,0.8)"},
            annotation_position="top right",
        )
    _layout(
        figure,
        90,
        legend=_LEGEND_LEFT,
        barmode="overlay",
        height=400,
        title=_top_title(title or f"Time per sample over {mc.samples} draws (seed {mc.seed})"),
        xaxis={"title": f"time per sample ({time_unit})"},
        yaxis={"title": "draws"},
    )
    return figure


def bottleneck_figure(mc: Any, title: str | None = None) -> go.Figure:
    """Bar chart: share of draws in which each device is the chosen plan's bottleneck."""
    shares = mc.bottleneck_shares
    figure = go.Figure(
        go.Bar(
            x=[device for device, _ in shares],
            y=[share * 100 for _, share in shares],
            text=[f"{share:.0%}" for _, share in shares],
            textposition="outside",
            marker_color="#d62728",
            hovertemplate="%{x}: bottleneck in %{y:.1f} % of draws<extra></extra>",
        )
    )
    _layout(
        figure,
        60,
        height=360,
        title={"text": title or "Which device is the bottleneck (share of draws)", "y": 0.96, "yanchor": "top"},
        xaxis={"title": "device", "type": "category"},
        yaxis={"title": "% of draws", "range": [0, 110]},
    )
    return figure
