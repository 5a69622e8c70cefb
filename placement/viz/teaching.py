"""Figures of teaching mode: the graph being taught, drawn next to the lattice of ideals.

:func:`teaching_graph_figure` draws the DAG with every node named (and its group number, the
numbers the lattice's labels use), coloured by its part in the current step of the DP's
recurrence (:class:`placement.explore.teaching.DPTrace`): the nodes of the ideal I tried, the
stage J \\ I, and the nodes outside J.
"""

from __future__ import annotations

from typing import Any

import plotly.graph_objects as go

from ..model import Graph
from ._base import _at, _segments
from .graph import dag_layout
from .lattice import label_sides, teaching_layout

#: Colours shared with :func:`placement.viz.lattice_figure` (I blue, J orange, not reached grey).
PART_COLORS = {
    "in I (already split)": "#1f77b4",
    "stage J \\ I": "#ff7f0e",
    "outside J": "#c7c7c7",
}


def node_parts(trace: Any, step: int | None) -> dict[int, str]:
    """Node id -> its part at ``step`` (a key of :data:`PART_COLORS`); all "outside J" when ``step`` is None."""
    group_of = {n: g for g, members in enumerate(trace.groups) for n in members}
    if step is None or not trace.steps:
        return {n: "outside J" for n in group_of}
    item = trace.steps[step]
    in_i = trace.masks[item.previous]
    in_j = trace.masks[item.ideal]
    parts = {}
    for node, group in group_of.items():
        if in_i >> group & 1:
            parts[node] = "in I (already split)"
        elif in_j >> group & 1:
            parts[node] = "stage J \\ I"
        else:
            parts[node] = "outside J"
    return parts


def teaching_graph_figure(graph: Graph, trace: Any, step: int | None = None, font_size: int = 14) -> go.Figure:
    """The DAG left to right, every node labelled ``g<group>: <name>``, coloured by its part at ``step``.

    Parameters
    ----------
    graph : Graph
        The graph the trace was made from.
    trace : DPTrace
        :func:`placement.explore.teaching.trace_dp` of this graph.
    step : int, optional
        The step shown (None: no step, every node grey).
    font_size : int
        Label size in px (larger for a projector).
    """
    layout = dag_layout(graph)
    group_of = {n: g for g, members in enumerate(trace.groups) for n in members}
    parts = node_parts(trace, step)
    side = label_sides(layout)
    figure = go.Figure()
    figure.add_trace(
        _segments(
            [(layout[e.source], layout[e.target]) for e in graph.edges], "rgba(120,120,120,0.6)", 1.2, name="edges"
        )
    )
    for part, color in PART_COLORS.items():
        members = [n.id for n in graph.nodes if parts.get(n.id) == part]
        if not members:
            continue
        figure.add_trace(
            _at(
                layout,
                members,
                mode="markers+text",
                name=part,
                text=[f"g{group_of[n]}: {graph.node_by_id[n].name or n}" for n in members],
                textposition=[side[n] for n in members],
                textfont={"size": font_size},
                marker={"size": 14 * font_size / 14, "color": color, "line": {"width": 1, "color": "#333"}},
                hovertext=[f"node {n} ({graph.node_by_id[n].name or n}), group {group_of[n]}: {part}" for n in members],
                hoverinfo="text",
                customdata=members,
            )
        )
    xs = [x for x, _ in layout.values()] or [0.0]
    ys = [y for _, y in layout.values()] or [0.0]
    spread = max(abs(y) for y in ys) + 0.8
    title = "The graph (g = group, as in the lattice)"
    teaching_layout(
        figure,
        font_size,
        title,
        spread,
        xaxis={"visible": False, "range": [min(xs) - 1.3, max(xs) + 1.3]},
        yaxis={"visible": False, "range": [-spread - 0.3, spread + 0.3]},
    )
    figure.update_layout(margin={"b": 20 + 2 * font_size}, legend={"y": -0.02})
    return figure
