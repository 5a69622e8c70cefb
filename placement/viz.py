"""Plotly figures and plain tables for the app (figures only: pages place them).

Every function takes model values (graphs, placements, evaluations) and returns a
``plotly.graph_objects.Figure`` or plain Python rows; nothing here imports Streamlit or
computes a cost the evaluator does not already give. Coordinates and values are plain
Python lists (not NumPy arrays) so that the figure JSON stays readable.

Sections (append new figures to the section they belong to, or add a section at the end):

* common helpers (colors, units);
* graph: DAG layout, graph figure, graph statistics and node table;
* placement: per-device load and memory figures, placement tables;
* compare: the methods-comparison bar chart;
* timeline and memory figures (Gantt chart of a pipeline schedule, memory over time);
* sweep and Pareto figures (tradeoff curves, Pareto frontier).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import plotly.graph_objects as go

from .evaluate import Evaluation
from .model import DeviceSlot, Graph, Objective, Placement, Problem, Status

# ============================================================================ common helpers

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


# ============================================================================ graph


def dag_layout(graph: Graph, sweeps: int = 4) -> dict[int, tuple[float, float]]:
    """Layered left-to-right layout: node id -> (x, y).

    ``x`` is the layer: sinks sit at their longest-path layer, every other node just left
    of its first consumer (as late as possible; every edge points right). Chains keep
    their longest-path layers, while inputs and side branches (weights, gradients) sit
    next to the node that uses them instead of piling up in the first columns;
    ``y`` is the position within the layer, ordered by a few barycenter sweeps
    (alternately on predecessors and successors) to reduce crossings, and centred on 0.

    Parameters
    ----------
    graph : Graph
        The DAG.
    sweeps : int
        Number of barycenter passes (each pass goes left-to-right then right-to-left).
    """
    order = graph.topological_order
    layer: dict[int, int] = {}
    for node in order:
        layer[node] = max((layer[p] + 1 for p in graph.predecessors[node]), default=0)
    for node in reversed(order):
        if graph.successors[node]:
            layer[node] = min(layer[s] for s in graph.successors[node]) - 1
    layers: list[list[int]] = [[] for _ in range(max(layer.values(), default=-1) + 1)]
    for node in order:  # topological order gives a sensible start within each layer
        layers[layer[node]].append(node)
    position = {node: float(i) for nodes in layers for i, node in enumerate(nodes)}

    def centred(nodes: list[int]) -> None:
        offset = (len(nodes) - 1) / 2.0
        for i, node in enumerate(nodes):
            position[node] = i - offset

    for nodes in layers:
        centred(nodes)

    def reorder(nodes: list[int], neighbours: Mapping[int, Sequence[int]]) -> None:
        if len(nodes) < 2:
            return
        keys = {}
        for i, node in enumerate(nodes):
            around = neighbours[node]
            keys[node] = (sum(position[m] for m in around) / len(around), i) if around else (position[node], i)
        nodes.sort(key=keys.__getitem__)
        centred(nodes)

    for _ in range(sweeps):
        for nodes in layers[1:]:
            reorder(nodes, graph.predecessors)
        for nodes in reversed(layers[:-1]):
            reorder(nodes, graph.successors)
    return {node: (float(layer[node]), float(position[node])) for node in order}


def node_hover(graph: Graph, node_id: int, device: DeviceSlot | None = None) -> str:
    """Hover text of one node: name, latencies, size (and its device when placed)."""
    node = graph.node_by_id[node_id]
    lines = [
        f"<b>{node.label}</b> (id {node.id})",
        f"accelerator latency: {node.accelerator_latency:.6g}",
        f"CPU latency: {node.cpu_latency:.6g}",
        f"size: {format_bytes(node.size)}",
        f"output transfer cost: {graph.output_cost[node.id]:.6g}",
    ]
    if node.is_backward:
        lines.append("backward node")
    if node.color_class is not None:
        lines.append(f"color class {node.color_class}")
    if not node.supported_on_accelerator:
        lines.append("CPU only")
    if device is not None:
        lines.append(f"device: {device}")
    return "<br>".join(lines)


def graph_figure(
    graph: Graph,
    device_of: Mapping[int, DeviceSlot] | None = None,
    layout: Mapping[int, tuple[float, float]] | None = None,
    device_order: Sequence[DeviceSlot] | None = None,
    title: str | None = None,
    height: int | None = None,
    window_layers: int = 60,
) -> go.Figure:
    """The DAG, left to right; nodes colored by device when ``device_of`` is given.

    Parameters
    ----------
    graph : Graph
        The DAG to draw.
    device_of : mapping of node id to DeviceSlot, optional
        A placement (``Placement.device_of``); one legend entry per device, pipeline order.
    layout : mapping of node id to (x, y), optional
        Precomputed :func:`dag_layout` (pass it to avoid recomputing on every redraw).
    device_order : sequence of DeviceSlot, optional
        Legend order of the devices (default: sorted).
    window_layers : int
        Graphs with more than 1.5 x this many layers open on their first ``window_layers`` layers, with a
        range slider (an overview of the whole graph) to scroll: hundreds of nodes stay readable.
    """
    layout = layout if layout is not None else dag_layout(graph)
    many = len(graph.nodes) > 150
    figure = go.Figure()
    segments = [(layout[edge.source], layout[edge.target]) for edge in graph.edges]
    figure.add_trace(_segments(segments, "rgba(120,120,120,0.45)", 0.7 if many else 1.0, name="edges"))
    marker_size = 6 if many else 11
    if device_of is None:
        groups: list[tuple[str, str, list[int]]] = [("nodes", DEVICE_COLORS[0], [n.id for n in graph.nodes])]
    else:
        order = list(device_order) if device_order is not None else sorted(set(device_of.values()))
        order += sorted(set(device_of.values()) - set(order))
        colors = device_colors(order)
        members: dict[DeviceSlot, list[int]] = {slot: [] for slot in order}
        unplaced: list[int] = []
        for node in graph.nodes:
            slot = device_of.get(node.id)
            (members[slot] if slot is not None else unplaced).append(node.id)
        groups = [(str(slot), colors[slot], members[slot]) for slot in order if members[slot]]
        if unplaced:
            groups.append(("unplaced", UNPLACED_COLOR, unplaced))
    for label, color, ids in groups:
        figure.add_trace(
            _at(
                layout,
                ids,
                mode="markers",
                name=label,
                marker={
                    "size": marker_size,
                    "color": color,
                    "line": {"width": 0.5, "color": "#333"},
                    "symbol": ["diamond" if graph.node_by_id[n].is_backward else "circle" for n in ids],
                },
                hovertext=[node_hover(graph, n, device_of.get(n) if device_of else None) for n in ids],
                hoverinfo="text",
                customdata=ids,
            )
        )
    label_chars = node_label_chars(layout, window_layers)
    if label_chars:  # node labels where they fit: one text-only trace after the node traces
        figure.add_trace(
            go.Scatter(
                x=[layout[n.id][0] for n in graph.nodes],
                y=[layout[n.id][1] for n in graph.nodes],
                mode="text",
                text=[node_label(graph, n.id, label_chars) for n in graph.nodes],
                textposition="top center",
                textfont={"size": 9, "color": "#333"},
                hoverinfo="skip",
                showlegend=False,
                name="node labels",
            )
        )
    n_layers = int(max((x for x, _ in layout.values()), default=0)) + 1
    half_height = max((abs(y) for _, y in layout.values()), default=0.0)
    half_height = max(half_height, 2.0) + 0.8
    window = n_layers if n_layers <= 1.5 * window_layers else window_layers
    xaxis: dict[str, Any] = {"visible": False, "range": [-0.5, window - 0.5]}
    if window < n_layers:
        # Long graphs: show a window of layers; the range slider below gives the whole graph and scrolls.
        xaxis.update(
            rangeslider={"visible": True, "thickness": 0.12, "range": [-0.5, n_layers - 0.5]},
            visible=True,
            showticklabels=False,
            showgrid=False,
            zeroline=False,
            title={"text": f"layers 1-{window} of {n_layers}: drag the overview below to scroll", "font": {"size": 11}},
        )
    _layout(
        figure,
        40 if title else 10,
        legend={"orientation": "v", "x": 1.0, "xanchor": "left", "y": 1.0, "title": {"text": "device"}},
        title=title,
        height=height or int(min(640, max(340, 200 + 70 * half_height))),
        showlegend=device_of is not None,
        hovermode="closest",
        plot_bgcolor="white",
        xaxis=xaxis,
        yaxis={"visible": False, "range": [-half_height, half_height], "fixedrange": False},
        dragmode="pan",
    )
    return figure


def graph_stats(graph: Graph) -> dict[str, Any]:
    """Counts and totals of a graph (plain sums of node and edge attributes)."""
    return {
        "nodes": len(graph.nodes),
        "edges": len(graph.edges),
        "forward nodes": sum(1 for n in graph.nodes if not n.is_backward),
        "backward nodes": sum(1 for n in graph.nodes if n.is_backward),
        "color classes": len(graph.color_classes),
        "CPU-only nodes": sum(1 for n in graph.nodes if not n.supported_on_accelerator),
        "total accelerator compute": sum(n.accelerator_latency for n in graph.nodes),
        "total CPU compute": sum(n.cpu_latency for n in graph.nodes),
        "total memory (bytes)": sum(n.size for n in graph.nodes),
        "total transfer cost": sum(graph.output_cost.values()),
    }


def node_rows(graph: Graph, device_of: Mapping[int, DeviceSlot] | None = None) -> list[dict[str, Any]]:
    """One row per node (id, name, latencies, size, output cost, flags), for a table."""
    rows = []
    for node in graph.nodes:
        row: dict[str, Any] = {
            "id": node.id,
            "name": node.name,
            "accelerator latency": node.accelerator_latency,
            "CPU latency": node.cpu_latency,
            "size (MiB)": node.size / 2**20,
            "output cost": graph.output_cost[node.id],
            "backward": node.is_backward,
            "color class": node.color_class,
            "on accelerator": node.supported_on_accelerator,
        }
        if device_of is not None:
            slot = device_of.get(node.id)
            row["device"] = str(slot) if slot is not None else ""
        rows.append(row)
    return rows


# ============================================================================ placement


def load_figure(
    evaluation: Evaluation, slots: Sequence[DeviceSlot] | None = None, overlap: bool = False, title: str | None = None
) -> go.Figure:
    """Per-device stacked bar of compute and communication, with the max-load line.

    Parameters
    ----------
    evaluation : Evaluation
        From :func:`placement.evaluate`.
    slots : sequence of DeviceSlot, optional
        Devices to show, in this order (unused ones appear with zero load); default: the
        devices of the evaluation, in pipeline order.
    overlap : bool
        If the devices overlap compute and communication, each device's load
        (max of the two) is marked with a diamond.
    """
    by_slot = {entry.device: entry for entry in evaluation.devices}
    order = list(slots) if slots is not None else [entry.device for entry in evaluation.devices]
    order += [slot for slot in by_slot if slot not in order]
    labels = [str(slot) for slot in order]
    compute = [float(by_slot[s].compute) if s in by_slot else 0.0 for s in order]
    communication = [float(by_slot[s].communication) if s in by_slot else 0.0 for s in order]
    loads = [float(by_slot[s].load) if s in by_slot else 0.0 for s in order]
    figure = go.Figure()
    _add_bars(
        figure,
        labels,
        (compute, "compute", "#1f77b4", "compute"),
        (communication, "communication", "#ff7f0e", "communication"),
    )
    if overlap:
        diamond = {"symbol": "diamond", "size": 11, "color": "black"}
        figure.add_trace(go.Scatter(x=labels, y=loads, mode="markers", name="load (overlapped)", marker=diamond))
    max_load = _finite(evaluation.max_load)
    if max_load is not None:
        figure.add_hline(
            y=max_load,
            line_dash="dash",
            line_color="#d62728",
            annotation_text=f"max load {max_load:.6g}",
            annotation_position="top left",
        )
    _layout(
        figure,
        60,
        legend={**_LEGEND_RIGHT, "traceorder": "normal"},
        barmode="stack",
        title=title,
        height=360,
        yaxis_title="time per sample (ms)",
    )
    return figure


def memory_figure(
    evaluation: Evaluation, slots: Sequence[DeviceSlot] | None = None, title: str | None = None
) -> go.Figure:
    """Memory used on each accelerator against its cap (GiB); CPU cores are left out."""
    by_slot = {entry.device: entry for entry in evaluation.devices}
    order = list(slots) if slots is not None else [entry.device for entry in evaluation.devices]
    order += [slot for slot in by_slot if slot not in order]
    order = [slot for slot in order if not slot.is_cpu]
    labels = [str(slot) for slot in order]
    used = [float(by_slot[s].memory) / GIB if s in by_slot else 0.0 for s in order]
    caps = [(_finite(by_slot[s].memory_cap) if s in by_slot else None) for s in order]
    over = [s in by_slot and by_slot[s].memory > by_slot[s].memory_cap for s in order]
    figure = go.Figure()
    figure.add_trace(
        go.Bar(
            x=labels,
            y=used,
            name="memory used",
            marker_color=["#d62728" if o else "#2ca02c" for o in over],
            hovertemplate="%{x}<br>used %{y:.4g} GiB<extra></extra>",
        )
    )
    cap_x = [label for label, cap in zip(labels, caps) if cap is not None]
    cap_y = [cap / GIB for cap in caps if cap is not None]
    if cap_x:
        figure.add_trace(
            go.Scatter(
                x=cap_x,
                y=cap_y,
                mode="markers",
                name="cap",
                marker={"symbol": "line-ew", "size": 40, "line": {"width": 3, "color": "black"}},
                hovertemplate="%{x}<br>cap %{y:.4g} GiB<extra></extra>",
            )
        )
    default_title = "Memory per accelerator vs cap" if cap_x else "Memory per accelerator (unlimited)"
    _layout(figure, 60, legend=_LEGEND_RIGHT, title=title or default_title, height=360, yaxis_title="GiB")
    return figure


def placement_rows(problem: Problem, placement: Placement) -> list[dict[str, Any]]:
    """One row per node: node id, name, device kind and index, pipeline stage (for CSV downloads)."""
    rows = []
    for stage_index, stage in enumerate(placement.stages):
        for node_id in stage.nodes:
            node = problem.graph.node_by_id.get(node_id)
            rows.append(
                {
                    "node": node_id,
                    "name": node.name if node is not None else "",
                    "device kind": stage.device.kind,
                    "device index": stage.device.index,
                    "stage": stage_index,
                }
            )
    return rows


def device_rows(evaluation: Evaluation) -> list[dict[str, Any]]:
    """One row per used device: nodes, compute, communication, load, memory and cap."""
    return [
        {
            "device": str(entry.device),
            "nodes": len(entry.nodes),
            "compute": entry.compute,
            "communication": entry.communication,
            "load": entry.load,
            "memory (GiB)": entry.memory / GIB,
            "cap (GiB)": entry.memory_cap / GIB if math.isfinite(entry.memory_cap) else None,
        }
        for entry in evaluation.devices
    ]


# ============================================================================ compare


def compare_figure(rows: Sequence[Mapping[str, Any]], objective: str = "throughput") -> go.Figure:
    """Bar chart of each method's objective (rows with ``method``, ``objective``, ``status``).

    Methods without a value are listed with an empty bar and their status as text.
    """
    methods = [str(row.get("method")) for row in rows]
    values = [_finite(row.get("objective")) for row in rows]
    best = min((v for v in values if v is not None), default=None)
    colors = ["#2ca02c" if v is not None and best is not None and v <= best * (1 + 1e-9) else "#1f77b4" for v in values]
    text = [
        (f"{v:.5g}" + (f" (+{(v / best - 1) * 100:.2f} %)" if best and v > best * (1 + 1e-9) else ""))
        if v is not None
        else str(row.get("status", ""))
        for v, row in zip(values, rows)
    ]
    figure = go.Figure(
        go.Bar(
            x=methods,
            y=[v if v is not None else 0.0 for v in values],
            marker_color=colors,
            text=text,
            textposition="outside",
            hovertemplate="%{x}<br>%{y:.6g}<extra></extra>",
        )
    )
    _layout(
        figure,
        30,
        height=360,
        yaxis_title="time per sample (ms)" if objective == Objective.THROUGHPUT else "latency (ms)",
    )
    return figure


# --- timeline and memory figures ---
# (owned by the schedule helper: Gantt chart of a pipeline schedule, memory over time)

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


# --- sweep and Pareto figures ---
# Figures of placement.explore.sweep results: a tradeoff curve (time per sample against the swept
# parameter, with optional sensitivity markers) and a Pareto figure (time per sample against
# a cost axis, frontier highlighted). Every point carries ``customdata = [point.index]`` so a
# page can map a Plotly selection back to its SweepPoint.

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
_FRONT_COLOR = "#d62728"
_CURVE_COLOR = "#1f77b4"


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
    from .explore.sweep import pareto_front

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


# --- schedule comparison figures ---
# Gantt charts that know every schedule of placement.pipeline.schedule (interleaved stages, ZB-H1's
# weight-gradient units) and a side-by-side comparison of bubble and peak memory per schedule.

SCHEDULE_EVENT_COLORS = {**EVENT_COLORS, "weight": "#2ca02c"}
_OP_LETTER = {"forward": "F", "backward": "B", "weight": "W"}


def schedule_figure(schedule, title: str | None = None, show_idle: bool = True, height: int | None = None) -> go.Figure:
    """Gantt chart of any :class:`~placement.pipeline.schedule.Schedule`: one row per device.

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
            op = {"backward": "I" if schedule.kind == "zbh1" else "B"}.get(kind, _OP_LETTER[kind])
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
                name="weight gradient" if kind == "weight" else kind,
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
            f"{'es' if schedule.microbatches != 1 else ''}: period {schedule.period:.6g}, "
            f"bubble {schedule.bubble_fraction:.1%}"
        ),
        xaxis={"title": "time", "type": "linear", "range": [0, float(schedule.makespan) * 1.02 or 1.0]},
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


# --- purchase figures ---


def purchase_figure(
    options: Sequence[Any],
    front: Sequence[Any] | None = None,
    answer: Any = None,
    title: str | None = None,
    time_unit: str = "ms",
) -> go.Figure:
    """Time per sample against price per hour of every candidate inventory; the frontier as a step line.

    Parameters
    ----------
    options : sequence of placement.explore.purchase.Option
        Every candidate (those without a plan are left out).
    front : sequence of Option, optional
        The frontier (default: :func:`placement.explore.purchase.price_frontier` of ``options``).
    answer : Option, optional
        A candidate to ring (the answer to the question asked).
    title : str, optional
        Figure title.
    time_unit : str
        Unit of the times (for the axis title).
    """
    from .explore.purchase import price_frontier

    if front is None:
        front = price_frontier(options)
    on_front = {o.counts for o in front}

    def hover(o) -> str:
        per_million = o.cost_per_sample * 1e6 if o.cost_per_sample is not None else 0.0
        return (
            f"{o.label}<br>time per sample {o.time_per_sample:.6g} {time_unit}<br>price per hour "
            f"{o.price_per_hour:,.4g}<br>cost per million samples {per_million:,.4g}"
        )

    others = [o for o in options if o.ok and o.counts not in on_front]
    best = [o for o in front if o.ok]
    figure = go.Figure()
    for trace in _front_traces(
        ([o.price_per_hour for o in others], [o.time_per_sample for o in others], [hover(o) for o in others], None),
        ([o.price_per_hour for o in best], [o.time_per_sample for o in best], [hover(o) for o in best], None),
        ("other inventories", "frontier (cheapest for its speed)"),
        (8, 11),
    ):
        figure.add_trace(trace)
    if answer is not None and answer.ok:
        figure.add_trace(
            _ring(
                answer.price_per_hour,
                answer.time_per_sample,
                22,
                name="answer",
                text=[hover(answer)],
                hovertemplate=_TEXT_HOVER,
            )
        )
    _layout(
        figure,
        90,
        legend=_LEGEND_LEFT,
        title=_top_title(title or "Time per sample vs price per hour of every candidate inventory"),
        height=440,
        xaxis={"title": "price per hour (all devices of the inventory)", "rangemode": "tozero"},
        yaxis={"title": f"time per sample ({time_unit})", "rangemode": "tozero"},
    )
    times = [o.time_per_sample for o in options if o.ok and o.time_per_sample > 0]
    if times and max(times) > 20 * min(times):  # e.g. CPU only next to many cards: a log axis shows both
        figure.update_yaxes(type="log", rangemode=None, title=f"time per sample ({time_unit}, log scale)")
    return figure


def purchase_rows(options: Sequence[Any], time_unit: str = "ms") -> list[dict[str, Any]]:
    """One row per candidate inventory: counts, cards to buy, price, time and cost per sample."""
    rows = []
    for o in options:
        rows.append(
            {
                "inventory": o.label,
                "cards to buy": " + ".join(
                    f"{n} x {k.name}" for n, k in zip(o.added, o.point.problem.devices.accelerators) if n
                )
                or "none",
                "price per hour": o.price_per_hour,
                f"time per sample ({time_unit})": o.time_per_sample,
                "cost per million samples": o.cost_per_sample * 1e6 if o.cost_per_sample is not None else None,
                "status": o.point.status,
            }
        )
    return rows


# --- uncertainty figures ---


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


# --- node labels on the graph figure ---


def node_label_chars(
    layout: Mapping[int, tuple[float, float]], window_layers: int = 60, width_px: int = 1100, height_px: int = 640
) -> int:
    """How many characters of a node label fit next to each node of a :func:`graph_figure` (0 = no labels).

    Labels fit when a layer column is wide enough for at least 4 characters (about 6 px each at
    9 pt, over ``width_px`` split among the visible layers) and neighbouring nodes of one layer are
    at least 16 px apart vertically (the layout puts them one unit apart within the figure height).
    """
    if not layout:
        return 0
    n_layers = int(max(x for x, _ in layout.values())) + 1
    visible = n_layers if n_layers <= 1.5 * window_layers else window_layers
    chars = int(width_px / max(visible, 1) / 6) - 1
    half_height = max(max(abs(y) for _, y in layout.values()), 2.0) + 0.8
    figure_height = min(height_px, max(340, 200 + 70 * half_height))
    row_px = figure_height / (2 * half_height)
    return min(chars, 24) if chars >= 4 and row_px >= 16 else 0


def node_label(graph: Graph, node_id: int, chars: int) -> str:
    """A node's short label: the last part of its name (after '/'), cut to ``chars`` characters."""
    name = graph.node_by_id[node_id].name or str(node_id)
    short = [part for part in name.replace("\\", "/").split("/") if part]
    text = short[-1] if short else name
    return text if len(text) <= chars else text[: max(chars - 1, 1)] + "…"


# ----------------------------------------------------------------------------- linked plan views and plan diff
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


# ----------------------------------------------------------------------------- teaching mode
def label_sides(where: Mapping[int, tuple[float, float]]) -> dict[int, str]:
    """Where to write each point's label so that labels of neighbours in a row never share a line.

    Points in a row (same y) take turns left to right: the first is labelled on the outer side
    (above in the upper half, below in the lower half and on the middle line), the next on the
    inner side, and so on.
    """
    rows: dict[float, list[tuple[float, int]]] = {}
    for i, (x, y) in where.items():
        rows.setdefault(round(y, 6), []).append((x, i))
    side = {}
    for y, members in rows.items():
        outer, inner = ("top center", "bottom center") if y > 0 else ("bottom center", "top center")
        for rank, (_, i) in enumerate(sorted(members)):
            side[i] = outer if rank % 2 == 0 else inner
    return side


def lattice_figure(trace, step: int | None = None, font_size: int = 14) -> go.Figure:
    """The lattice of ideals of a :class:`placement.explore.teaching.DPTrace`, at one step of the recurrence.

    Ideals are drawn left to right by size (number of groups), cover edges as lines. At step
    ``step``: finished ideals are green, the ideal being finished (J) orange, the ideal it is
    tried with (I) blue, the stage J \\ I written in the title; ideals not reached yet are grey.
    ``font_size`` (px) sets the labels and title (larger for a projector).
    """
    levels: dict[int, list[int]] = {}
    for index, mask in enumerate(trace.masks):
        levels.setdefault(bin(mask).count("1"), []).append(index)
    position = {}
    for size, members in levels.items():
        for k, index in enumerate(members):
            position[index] = (size, k - (len(members) - 1) / 2)
    side = label_sides(position)
    current = trace.steps[step] if step is not None and trace.steps else None
    figure = go.Figure()
    figure.add_trace(_segments([(position[a], position[b]) for a, b in trace.covers], "rgba(120,120,120,0.5)", 1))

    def label(index: int) -> str:
        groups = trace.groups_of(index)
        return "{" + ",".join(str(g) for g in groups) + "}" if groups else "∅"

    finished_up_to = current.ideal if current is not None else len(trace.masks)
    categories = [
        (
            "finished",
            "#2ca02c",
            [i for i in position if i < finished_up_to and (current is None or i != current.previous)],
        ),
        ("not reached", "#c7c7c7", [i for i in position if current is not None and i > current.ideal]),
    ]
    if current is not None:
        categories += [("J (being finished)", "#ff7f0e", [current.ideal]), ("I (tried)", "#1f77b4", [current.previous])]
    for name, color, members in categories:
        if not members:
            continue
        figure.add_trace(
            _at(
                position,
                members,
                mode="markers+text",
                name=name,
                text=[label(i) for i in members],
                textposition=[side[i] for i in members],
                textfont={"size": font_size},
                marker={
                    "size": (16 if name.startswith(("J", "I")) else 11) * font_size / 14,
                    "color": color,
                    "line": {"width": 1, "color": "#333"},
                },
                hovertext=[f"ideal {i}: groups {label(i)}" for i in members],
                hoverinfo="text",
            )
        )
    spread = max((abs(y) for _, y in position.values()), default=0.0) + 0.8
    title = "Lattice of ideals (left to right by number of groups)"
    if current is not None:
        title = f"Finishing J = {label(current.ideal)}, I = {label(current.previous)}"
    _layout(
        figure,
        40 + font_size,
        legend=_LEGEND_BELOW,
        title={"text": title, "font": {"size": font_size + 2}},
        font={"size": font_size},
        height=int(min(560, max(320, 160 + 60 * spread)) * max(1.0, font_size / 14)),
        plot_bgcolor="white",
        xaxis={"title": "groups in the ideal", "dtick": 1, "range": [-0.9, len(levels) - 0.1], "zeroline": False},
        yaxis={"visible": False, "range": [-spread, spread]},
    )
    figure.update_layout(margin={"b": 40 + 4 * font_size}, legend={"y": -0.3})  # axis title, then the legend
    return figure


# ----------------------------------------------------------------------------- multidimensional plans
def _stage_parts_ms(stage: Any, cost: Any) -> tuple[float, float]:
    """(compute, communication) ms per sample of an evaluated multidim stage (the model's times are seconds).

    Compute is ``C / d`` (the d replicas share the samples); communication is the rest of the stage time:
    edge transfers ``E / d`` and the weight resync ``R`` at the link bandwidth (``sample_graphs/piper/README.md``).
    """
    compute = cost.compute / stage.d
    return 1000.0 * compute, 1000.0 * max(cost.time - compute, 0.0)


def multidim_stage_rows(problem: Any, plan: Any, evaluation: Any) -> list[dict[str, Any]]:
    """One row per stage of a multidimensional plan: nodes, d x t, kind, options, memory vs cap, times in ms.

    ``problem``/``plan``/``evaluation`` are :mod:`placement.multidim` values (a
    :class:`~placement.multidim.model.MultiProblem`, a plan and :func:`~placement.multidim.evaluate.evaluate_plan`'s
    result). The model's seconds are shown as ms: ``time per sample (ms)`` = ``compute (ms)`` +
    ``communication (ms)``.
    """
    rows = []
    for k, (stage, cost) in enumerate(zip(plan.stages, evaluation.stages)):
        names = [problem.nodes[v].name for v in stage.nodes]
        counts: dict[str, int] = {}
        for option in stage.options:
            counts[option] = counts.get(option, 0) + 1
        compute_ms, communication_ms = _stage_parts_ms(stage, cost)
        rows.append(
            {
                "stage": k,
                "nodes": f"{names[0]} .. {names[-1]}" if len(names) > 1 else names[0],
                "d x t": f"{stage.d} x {stage.t}",
                "kind": stage.kind,
                "time per sample (ms)": 1000.0 * cost.time,
                "compute (ms)": compute_ms,
                "communication (ms)": communication_ms,
                "node count": len(stage.nodes),
                "devices": stage.d * stage.t,
                "options": ", ".join(f"{n} {o}" for o, n in sorted(counts.items())),
                "in flight (y)": cost.y,
                "memory": format_bytes(cost.memory),
                "memory cap": format_bytes(cost.memory_cap),
                "memory used": f"{cost.memory / cost.memory_cap:.0%}",
            }
        )
    return rows


def multidim_curve_figure(
    points: Sequence[tuple[int, float | None]], selected: int | None = None, title: str | None = None
) -> go.Figure:
    """Optimal time per sample (ms) against the total device count (log-2 x axis); None = infeasible.

    ``points`` are ``(devices, ms per sample)``: convert the model's seconds before (x 1000).
    """
    xs = [int(n) for n, v in points if v is not None and math.isfinite(v)]
    ys = [float(v) for n, v in points if v is not None and math.isfinite(v)]
    figure = go.Figure(
        go.Scatter(
            x=xs,
            y=ys,
            mode="lines+markers",
            name="optimal plan",
            hovertemplate="%{x} devices<br>time per sample %{y:.4g} ms<extra></extra>",
        )
    )
    missing = [int(n) for n, v in points if v is None or not math.isfinite(v)]
    if missing:
        figure.add_trace(
            go.Scatter(
                x=missing,
                y=[min(ys) if ys else 1.0] * len(missing),
                mode="markers",
                name="infeasible (drawn at the lowest time)",
                marker={"symbol": "x", "color": "red", "size": 10},
            )
        )
    if selected is not None and selected in xs:
        figure.add_trace(_ring(selected, ys[xs.index(selected)], 16, name="this plan"))
    _layout(
        figure,
        60,
        title=title or "Time per sample vs devices (each point a proven optimum)",
        height=380,
        xaxis={"title": "devices", "type": "log", "dtick": math.log10(2)},
        yaxis={"title": "time per sample (ms, log scale)", "type": "log"},
    )
    return figure


def multidim_timeline_figure(plan: Any, evaluation: Any, microbatches: int = 6, title: str | None = None) -> go.Figure:
    """Pipeline timeline of a multidimensional plan in ms: one row per stage, compute and communication parts.

    A stage of d replicas (each of t devices) is one row, labelled ``stage k: d x t kind``. Sample m enters
    stage i when stage i - 1 has finished it and stage i has finished sample m - 1; each takes the stage's
    time per sample (the evaluation's seconds, shown as ms), drawn as its compute part (``C / d``) then its
    communication part (edge transfers and weight resync). Every block says which sample it is; the hover
    gives the stage, d x t, the part, its start and duration with units.
    """
    labels = [f"stage {k}: {s.d} x {s.t}" + (f" {s.kind}" if s.kind else "") for k, s in enumerate(plan.stages)]
    parts = [_stage_parts_ms(s, c) for s, c in zip(plan.stages, evaluation.stages)]
    ends = [[0.0] * microbatches for _ in parts]
    spans: dict[str, tuple[list, list, list, list]] = {"compute": ([], [], [], []), "communication": ([], [], [], [])}
    for m in range(microbatches):
        for i, (compute, communication) in enumerate(parts):
            begin = max(ends[i - 1][m] if i else 0.0, ends[i][m - 1] if m else 0.0)
            ends[i][m] = begin + compute + communication
            for part, base, width in (("compute", begin, compute), ("communication", begin + compute, communication)):
                rows, bases, widths, texts = spans[part]
                rows.append(labels[i])
                bases.append(base)
                widths.append(width)
                texts.append(f"sample {m}")
    figure = go.Figure()
    colors = {"compute": DEVICE_COLORS[0], "communication": DEVICE_COLORS[1]}
    for part, (rows, bases, widths, texts) in spans.items():
        figure.add_trace(
            _span_bars(
                rows,
                bases,
                widths,
                name=f"{part} (ms)",
                marker={"color": colors[part], "line": {"color": "white", "width": 1}},
                text=texts if part == "compute" else None,
                textposition="inside",
                insidetextanchor="middle",
                # Plotly's %{x} of a bar with a base is its end: the duration and start go in customdata
                customdata=[[text, width, base] for text, width, base in zip(texts, widths, bases)],
                hovertemplate="%{y}<br>%{customdata[0]}: "
                + part
                + " %{customdata[1]:.4g} ms, from %{customdata[2]:.4g} ms<extra></extra>",
            )
        )
    _layout(
        figure,
        60,
        title=title or "Pipeline timeline: samples through the stages (d x t = data x tensor replicas per stage)",
        barmode="overlay",
        height=max(260, 40 * len(parts) + 140),
        xaxis={"title": "time (ms; a stage's time per sample: its d replicas share the samples)"},
        yaxis={"autorange": "reversed"},
        legend={"orientation": "h", "y": -0.35},
        showlegend=True,
    )
    return figure
