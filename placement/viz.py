"""Plotly figures and plain tables for the app (figures only: pages place them).

Every function takes model values (graphs, placements, evaluations) and returns a
``plotly.graph_objects.Figure`` or plain Python rows; nothing here imports Streamlit or
computes a cost the evaluator does not already give. Coordinates and values are plain
Python lists (not NumPy arrays) so that the figure JSON stays readable.

Sections (append new figures to the section they belong to, or add a section at the end):

* common helpers (colours, units);
* graph: DAG layout, graph figure, graph statistics and node table;
* placement: per-device load and memory figures, placement tables;
* compare: the methods-comparison bar chart;
* timeline and memory figures (Gantt chart of a pipeline schedule, memory over time);
* sweep and Pareto figures (tradeoff curves, Pareto frontier).
"""

from __future__ import annotations

import math
from typing import Any, Iterable, Mapping, Sequence

import plotly.graph_objects as go

from .evaluate import Evaluation
from .model import DeviceSlot, Graph, Placement, Problem

# ============================================================================ common helpers

#: Colours for devices (accelerators first); CPU cores get :data:`CPU_COLOURS`.
DEVICE_COLOURS = (
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22",
    "#393b79", "#ad494a", "#637939", "#8c6d31", "#7b4173", "#3182bd", "#e6550d",
)
CPU_COLOURS = ("#7f7f7f", "#a0a0a0", "#5f5f5f", "#c0c0c0")
UNPLACED_COLOUR = "#d0d0d0"
GIB = float(2**30)


def device_colours(slots: Iterable[DeviceSlot]) -> dict[DeviceSlot, str]:
    """A stable colour per device: accelerators cycle :data:`DEVICE_COLOURS`, CPU cores greys."""
    colours: dict[DeviceSlot, str] = {}
    accelerator = cpu = 0
    for slot in slots:
        if slot in colours:
            continue
        if slot.is_cpu:
            colours[slot] = CPU_COLOURS[cpu % len(CPU_COLOURS)]
            cpu += 1
        else:
            colours[slot] = DEVICE_COLOURS[accelerator % len(DEVICE_COLOURS)]
            accelerator += 1
    return colours


def format_bytes(value: float) -> str:
    """``1.5 GiB``-style text; ``unlimited`` for infinity."""
    if value is None or math.isinf(value):
        return "unlimited"
    for unit, scale in (("GiB", 2.0**30), ("MiB", 2.0**20), ("KiB", 2.0**10)):
        if abs(value) >= scale:
            return f"{value / scale:,.2f} {unit}"
    return f"{value:,.0f} B"


def _finite(value: float) -> float | None:
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
        lines.append(f"colour class {node.color_class}")
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
    """The DAG, left to right; nodes coloured by device when ``device_of`` is given.

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
    edge_x: list[float | None] = []
    edge_y: list[float | None] = []
    for edge in graph.edges:
        (x0, y0), (x1, y1) = layout[edge.source], layout[edge.target]
        edge_x += [x0, x1, None]
        edge_y += [y0, y1, None]
    many = len(graph.nodes) > 150
    figure = go.Figure()
    figure.add_trace(go.Scatter(x=edge_x, y=edge_y, mode="lines", hoverinfo="skip", showlegend=False,
                                line={"color": "rgba(120,120,120,0.45)", "width": 0.7 if many else 1.0},
                                name="edges"))
    marker_size = 6 if many else 11
    if device_of is None:
        groups: list[tuple[str, str, list[int]]] = [("nodes", DEVICE_COLOURS[0], [n.id for n in graph.nodes])]
    else:
        order = list(device_order) if device_order is not None else sorted(set(device_of.values()))
        order += sorted(set(device_of.values()) - set(order))
        colours = device_colours(order)
        members: dict[DeviceSlot, list[int]] = {slot: [] for slot in order}
        unplaced = []
        for node in graph.nodes:
            slot = device_of.get(node.id)
            (members[slot] if slot is not None else unplaced).append(node.id)
        groups = [(str(slot), colours[slot], members[slot]) for slot in order if members[slot]]
        if unplaced:
            groups.append(("unplaced", UNPLACED_COLOUR, unplaced))
    for label, colour, ids in groups:
        figure.add_trace(go.Scatter(
            x=[layout[n][0] for n in ids], y=[layout[n][1] for n in ids], mode="markers", name=label,
            marker={"size": marker_size, "color": colour, "line": {"width": 0.5, "color": "#333"},
                    "symbol": ["diamond" if graph.node_by_id[n].is_backward else "circle" for n in ids]},
            hovertext=[node_hover(graph, n, device_of.get(n) if device_of else None) for n in ids],
            hoverinfo="text", customdata=ids,
        ))
    n_layers = int(max((x for x, _ in layout.values()), default=0)) + 1
    half_height = max((abs(y) for _, y in layout.values()), default=0.0)
    half_height = max(half_height, 2.0) + 0.8
    window = n_layers if n_layers <= 1.5 * window_layers else window_layers
    xaxis: dict[str, Any] = {"visible": False, "range": [-0.5, window - 0.5]}
    if window < n_layers:
        # Long graphs: show a window of layers; the range slider below gives the whole graph and scrolls.
        xaxis.update(rangeslider={"visible": True, "thickness": 0.12, "range": [-0.5, n_layers - 0.5]},
                     visible=True, showticklabels=False, showgrid=False, zeroline=False,
                     title={"text": f"layers 1-{window} of {n_layers}: drag the overview below to scroll",
                            "font": {"size": 11}})
    figure.update_layout(
        title=title, height=height or int(min(640, max(340, 200 + 70 * half_height))),
        margin={"l": 10, "r": 10, "t": 40 if title else 10, "b": 10},
        showlegend=device_of is not None, hovermode="closest", plot_bgcolor="white",
        legend={"orientation": "v", "x": 1.0, "xanchor": "left", "y": 1.0, "title": {"text": "device"}},
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
        "colour classes": len(graph.color_classes),
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
            "id": node.id, "name": node.name, "accelerator latency": node.accelerator_latency,
            "CPU latency": node.cpu_latency, "size (MiB)": node.size / 2**20,
            "output cost": graph.output_cost[node.id], "backward": node.is_backward,
            "colour class": node.color_class, "on accelerator": node.supported_on_accelerator,
        }
        if device_of is not None:
            slot = device_of.get(node.id)
            row["device"] = str(slot) if slot is not None else ""
        rows.append(row)
    return rows


# ============================================================================ placement

def load_figure(evaluation: Evaluation, slots: Sequence[DeviceSlot] | None = None,
                overlap: bool = False, title: str | None = None) -> go.Figure:
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
    figure.add_trace(go.Bar(x=labels, y=compute, name="compute", marker_color="#1f77b4",
                            hovertemplate="%{x}<br>compute %{y:.6g}<extra></extra>"))
    figure.add_trace(go.Bar(x=labels, y=communication, name="communication", marker_color="#ff7f0e",
                            hovertemplate="%{x}<br>communication %{y:.6g}<extra></extra>"))
    if overlap:
        figure.add_trace(go.Scatter(x=labels, y=loads, mode="markers", name="load (overlapped)",
                                    marker={"symbol": "diamond", "size": 11, "color": "black"}))
    max_load = _finite(evaluation.max_load)
    if max_load is not None:
        figure.add_hline(y=max_load, line_dash="dash", line_color="#d62728",
                         annotation_text=f"max load {max_load:.6g}", annotation_position="top left")
    figure.update_layout(barmode="stack", title=title, height=360, yaxis_title="time per sample",
                         margin={"l": 10, "r": 10, "t": 60, "b": 10},
                         legend={"orientation": "h", "yanchor": "bottom", "y": 1.02, "x": 1.0, "xanchor": "right",
                                 "traceorder": "normal"})
    return figure


def memory_figure(evaluation: Evaluation, slots: Sequence[DeviceSlot] | None = None,
                  title: str | None = None) -> go.Figure:
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
    figure.add_trace(go.Bar(x=labels, y=used, name="memory used",
                            marker_color=["#d62728" if o else "#2ca02c" for o in over],
                            hovertemplate="%{x}<br>used %{y:.4g} GiB<extra></extra>"))
    cap_x = [label for label, cap in zip(labels, caps) if cap is not None]
    cap_y = [cap / GIB for cap in caps if cap is not None]
    if cap_x:
        figure.add_trace(go.Scatter(x=cap_x, y=cap_y, mode="markers", name="cap",
                                    marker={"symbol": "line-ew", "size": 40, "line": {"width": 3, "color": "black"}},
                                    hovertemplate="%{x}<br>cap %{y:.4g} GiB<extra></extra>"))
    default_title = "Memory per accelerator vs cap" if cap_x else "Memory per accelerator (unlimited)"
    figure.update_layout(title=title or default_title,
                         height=360, yaxis_title="GiB", margin={"l": 10, "r": 10, "t": 60, "b": 10},
                         legend={"orientation": "h", "yanchor": "bottom", "y": 1.02, "x": 1.0, "xanchor": "right"})
    return figure


def placement_rows(problem: Problem, placement: Placement) -> list[dict[str, Any]]:
    """One row per node: node id, name, device kind and index, pipeline stage (for CSV downloads)."""
    rows = []
    for stage_index, stage in enumerate(placement.stages):
        for node_id in stage.nodes:
            node = problem.graph.node_by_id.get(node_id)
            rows.append({"node": node_id, "name": node.name if node is not None else "",
                         "device kind": stage.device.kind, "device index": stage.device.index,
                         "stage": stage_index})
    return rows


def device_rows(evaluation: Evaluation) -> list[dict[str, Any]]:
    """One row per used device: nodes, compute, communication, load, memory and cap."""
    return [
        {"device": str(entry.device), "nodes": len(entry.nodes), "compute": entry.compute,
         "communication": entry.communication, "load": entry.load, "memory (GiB)": entry.memory / GIB,
         "cap (GiB)": entry.memory_cap / GIB if math.isfinite(entry.memory_cap) else None}
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
    colours = ["#2ca02c" if v is not None and best is not None and v <= best * (1 + 1e-9) else "#1f77b4"
               for v in values]
    text = [(f"{v:.5g}" + (f" (+{(v / best - 1) * 100:.2f} %)" if best and v > best * (1 + 1e-9) else ""))
            if v is not None else str(row.get("status", "")) for v, row in zip(values, rows)]
    figure = go.Figure(go.Bar(x=methods, y=[v if v is not None else 0.0 for v in values], marker_color=colours,
                              text=text, textposition="outside",
                              hovertemplate="%{x}<br>%{y:.6g}<extra></extra>"))
    figure.update_layout(height=360, yaxis_title="time per sample" if objective == "throughput" else "latency",
                         margin={"l": 10, "r": 10, "t": 30, "b": 10})
    return figure


# --- timeline and memory figures ---
# (owned by the schedule helper: Gantt chart of a pipeline schedule, memory over time)

#: Colours of the schedule's event kinds and of idle time.
EVENT_COLOURS = {"forward": "#1f77b4", "backward": "#ff7f0e", "transfer": "#9e9e9e", "recompute": "#9467bd"}
IDLE_COLOUR = "rgba(214, 39, 40, 0.18)"


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
    """Gantt chart of a :class:`~placement.schedule.Schedule`: one row per device, numeric time axis.

    Horizontal ``go.Bar`` traces with ``base=start`` and ``x=duration`` (one trace per event
    kind: forward, backward, transfer, recompute), the microbatch number written in each bar,
    idle time (bubbles) shaded red, and the makespan marked. The first pipeline stage is the
    top row.
    """
    devices = list(schedule.devices)
    labels = {d: f"{d} (stage {k})" for k, d in enumerate(devices)}
    figure = go.Figure()
    for kind in ("forward", "backward", "recompute", "transfer"):
        events = [e for e in schedule.events if e.kind == kind]
        if not events:
            continue
        hover = [f"{e.device} · {kind}{' ' + e.direction if e.direction else ''} ({e.phase}) · microbatch {e.microbatch}"
                 f"<br>{e.start:.6g} → {e.end:.6g} (duration {e.duration:.6g})" for e in events]
        figure.add_trace(go.Bar(
            y=[labels[e.device] for e in events], x=[float(e.duration) for e in events],
            base=[float(e.start) for e in events], orientation="h", name=kind,
            marker={"color": EVENT_COLOURS[kind], "line": {"width": 0.5, "color": "white"}},
            text=[str(e.microbatch) if kind in ("forward", "backward") else "" for e in events],
            textposition="inside", insidetextanchor="middle", hovertext=hover, hoverinfo="text",
        ))
    if show_idle:
        idle_y, idle_x, idle_base = [], [], []
        for device in devices:
            for start, end in _idle_intervals(schedule, device):
                idle_y.append(labels[device])
                idle_x.append(float(end - start))
                idle_base.append(float(start))
        if idle_y:
            figure.add_trace(go.Bar(
                y=idle_y, x=idle_x, base=idle_base, orientation="h", name="idle (bubble)",
                marker={"color": IDLE_COLOUR, "pattern": {"shape": "/", "fgcolor": "rgba(214, 39, 40, 0.5)"}},
                hovertext=[f"idle {x:.6g}" for x in idle_x], hoverinfo="text",
            ))
    figure.add_vline(x=float(schedule.makespan), line_dash="dash", line_color="black",
                     annotation_text=f"makespan {schedule.makespan:.6g}", annotation_position="top")
    figure.update_layout(
        barmode="overlay", height=max(260, 70 + 48 * len(devices)),
        title=title or (f"{schedule.kind} schedule, {schedule.microbatches} microbatch"
                        f"{'es' if schedule.microbatches != 1 else ''}: period {schedule.period:.6g}, "
                        f"bubble {schedule.bubble_fraction:.1%}"),
        xaxis={"title": "time", "type": "linear", "range": [0, float(schedule.makespan) * 1.02 or 1.0]},
        yaxis={"title": "", "categoryorder": "array",
               "categoryarray": [labels[d] for d in reversed(devices)]},
        margin={"l": 10, "r": 10, "t": 90, "b": 10},
        legend={"orientation": "h", "yanchor": "bottom", "y": 1.02, "x": 0},
        bargap=0.25,
    )
    return figure


def memory_timeline_figure(profile, title: str | None = None) -> go.Figure:
    """Bytes held by every device over time (GiB step lines) against its cap, first OOM marked.

    Takes a :class:`~placement.memory.MemoryProfile`. Each device's cap is a dotted line of
    the device's colour; the peak of each device is a dot, and a device's first time over its
    cap a red cross labelled "OOM".
    """
    colours = device_colours(d.device for d in profile.devices)
    figure = go.Figure()
    caps_drawn: set[float] = set()
    end = max((d.times[-1] for d in profile.devices if d.times), default=0.0)
    for entry in profile.devices:
        colour = colours[entry.device]
        figure.add_trace(go.Scatter(
            x=[float(t) for t in entry.times], y=[float(b) / GIB for b in entry.bytes], mode="lines",
            line={"shape": "hv", "color": colour, "width": 2}, name=str(entry.device),
            hovertemplate=f"{entry.device}<br>t %{{x:.6g}}<br>%{{y:.4g}} GiB<extra></extra>",
        ))
        figure.add_trace(go.Scatter(
            x=[float(entry.peak_time)], y=[float(entry.peak) / GIB], mode="markers", showlegend=False,
            marker={"color": colour, "size": 8}, name=f"{entry.device} peak",
            hovertemplate=f"{entry.device} peak %{{y:.4g}} GiB at t %{{x:.6g}}<extra></extra>",
        ))
        if math.isfinite(entry.cap) and entry.cap not in caps_drawn:
            caps_drawn.add(entry.cap)
            figure.add_trace(go.Scatter(
                x=[0.0, float(end)], y=[entry.cap / GIB] * 2, mode="lines", name=f"cap {format_bytes(entry.cap)}",
                line={"dash": "dot", "color": "black", "width": 1.5},
                hovertemplate=f"cap {format_bytes(entry.cap)}<extra></extra>",
            ))
    oom = [(d.first_oom, d) for d in profile.devices if d.first_oom is not None]
    if oom:
        figure.add_trace(go.Scatter(
            x=[float(t) for t, _ in oom], y=[float(d.cap) / GIB for _, d in oom], mode="markers+text",
            name="first OOM", text=[f"OOM {d.device}" for _, d in oom], textposition="top center",
            marker={"symbol": "x", "size": 14, "color": "#d62728", "line": {"width": 2}},
            hovertemplate="OOM at t %{x:.6g}<extra></extra>",
        ))
    figure.update_layout(
        title=title or f"memory over time ({profile.schedule}, {profile.microbatches} microbatches)",
        height=400, xaxis={"title": "time", "type": "linear"}, yaxis={"title": "GiB", "rangemode": "tozero"},
        margin={"l": 10, "r": 10, "t": 90, "b": 10},
        legend={"orientation": "h", "yanchor": "bottom", "y": 1.02, "x": 0},
    )
    return figure


def peak_memory_rows(profile) -> list[dict[str, Any]]:
    """One row per device: weights, optimizer, activations per microbatch, in flight, peak, when, cap, OOM."""
    return [
        {"device": str(d.device), "weights (GiB)": d.static.weights / GIB, "optimizer (GiB)": d.static.optimizer / GIB,
         "activations / microbatch (GiB)": d.static.activation / GIB, "in flight": d.in_flight,
         "peak (GiB)": d.peak / GIB, "peak at": d.peak_time,
         "cap (GiB)": d.cap / GIB if math.isfinite(d.cap) else None,
         "first OOM at": d.first_oom}
        for d in profile.devices
    ]


# --- sweep and Pareto figures ---
# Figures of placement.sweep results: a tradeoff curve (time per sample against the swept
# parameter, with optional sensitivity markers) and a Pareto figure (time per sample against
# a cost axis, frontier highlighted). Every point carries ``customdata = [point.index]`` so a
# page can map a Plotly selection back to its SweepPoint.

_SWEEP_AXIS_TITLES = {
    "accelerators": "accelerators", "memory": "memory per accelerator (GiB)", "bandwidth": "bandwidth factor",
    "speed": "accelerator speed", "cpus": "CPU cores", "devices": "devices used",
    "total_memory": "memory provisioned (GiB)", "price": "price per hour", "counts": "devices",
}
_PARETO_ATTRS = {"devices": "devices_used", "memory": "total_memory", "price": "price_per_hour"}
_FRONT_COLOUR = "#d62728"
_CURVE_COLOUR = "#1f77b4"


def _sweep_x(point, parameter: str) -> float | None:
    """The x coordinate of a sweep point on its own curve (GiB for memory; None if not plottable)."""
    value = point.value
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    value = float(value)
    if not math.isfinite(value):
        return None
    return value / GIB if parameter == "memory" else value


def _point_hover(point) -> str:
    price = f"{point.price_per_hour:,.4g}" if point.price_per_hour else "0"
    memory = format_bytes(point.total_memory)
    return (f"{point.label}<br>time per sample {point.time_per_sample:.6g}<br>devices used {point.devices_used} "
            f"({point.accelerators_used} accelerators, {point.cpus_used} CPU cores)<br>memory provisioned {memory}"
            f"<br>price per hour {price}")


def sweep_figure(points: Sequence[Any], parameter: str | None = None, title: str | None = None,
                 selected: int | None = None, sensitivity: Any = None, log_x: bool = False) -> go.Figure:
    """Time per sample against the swept parameter.

    Parameters
    ----------
    points : sequence of placement.sweep.SweepPoint
        One sweep; points without a plan are listed as "no plan" markers on the x axis.
    parameter : str, optional
        The swept parameter (default: the points' own); memory is drawn in GiB.
    title : str, optional
        Figure title.
    selected : int, optional
        ``index`` of a point to ring.
    sensitivity : placement.sweep.Sensitivity, optional
        Adds markers where the current plan stops being optimal (see :func:`add_sensitivity_markers`).
    log_x : bool
        Logarithmic x axis (for memory and bandwidth factors).
    """
    parameter = parameter or (points[0].parameter if points else "")
    good = [(p, _sweep_x(p, parameter)) for p in points if p.ok]
    good = [(p, x) for p, x in good if x is not None]
    bad = [(p, _sweep_x(p, parameter)) for p in points if not p.ok]
    bad = [(p, x) for p, x in bad if x is not None]
    figure = go.Figure()
    figure.add_trace(go.Scatter(
        x=[x for _, x in good], y=[float(p.time_per_sample) for p, _ in good], mode="lines+markers",
        name="optimal time per sample", customdata=[[p.index] for p, _ in good],
        text=[_point_hover(p) for p, _ in good], hovertemplate="%{text}<extra></extra>",
        marker={"size": 10, "color": _CURVE_COLOUR}, line={"color": _CURVE_COLOUR},
    ))
    if bad:
        figure.add_trace(go.Scatter(
            x=[x for _, x in bad], y=[0.0] * len(bad), mode="markers", name="no plan fits",
            customdata=[[p.index] for p, _ in bad],
            text=[f"{p.label}<br>{p.status}: {p.result.reason or ''}" for p, _ in bad],
            hovertemplate="%{text}<extra></extra>", marker={"symbol": "x", "size": 10, "color": "#7f7f7f"},
        ))
    if selected is not None:
        chosen = [(p, x) for p, x in good if p.index == selected]
        if chosen:
            figure.add_trace(go.Scatter(
                x=[chosen[0][1]], y=[float(chosen[0][0].time_per_sample)], mode="markers", name="selected",
                customdata=[[chosen[0][0].index]], hoverinfo="skip",
                marker={"size": 18, "color": "rgba(0,0,0,0)", "line": {"color": "black", "width": 2.5}},
            ))
    figure.update_layout(
        title=title or f"time per sample vs {_SWEEP_AXIS_TITLES.get(parameter, parameter)}",
        height=400, xaxis={"title": _SWEEP_AXIS_TITLES.get(parameter, parameter), "type": "log" if log_x else "linear"},
        yaxis={"title": "time per sample", "rangemode": "tozero"}, margin={"l": 10, "r": 10, "t": 80, "b": 10},
        legend={"orientation": "h", "yanchor": "bottom", "y": 1.0, "x": 0}, clickmode="event+select",
    )
    if sensitivity is not None:
        add_sensitivity_markers(figure, sensitivity)
    return figure


def add_sensitivity_markers(figure: go.Figure, sensitivity: Any) -> go.Figure:
    """Mark the current value and where the plan changes (dashed lines) on a :func:`sweep_figure`.

    ``sensitivity`` is a :class:`placement.sweep.Sensitivity`; memory values are drawn in GiB.
    Returns the same figure.
    """
    scale = GIB if sensitivity.parameter == "memory" else 1.0
    marks = [(sensitivity.value, "now", "solid", "#2ca02c")]
    if sensitivity.down is not None:
        marks.append((sensitivity.down.value, "plan changes", "dash", "#ff7f0e"))
    if sensitivity.up is not None:
        marks.append((sensitivity.up.value, "plan changes", "dash", "#ff7f0e"))
    for value, label, dash, colour in marks:
        if value is None or not math.isfinite(value):
            continue
        figure.add_vline(x=float(value) / scale, line={"dash": dash, "color": colour, "width": 1.5},
                         annotation={"text": label, "textangle": -90, "font": {"color": colour}},
                         annotation_position="top left")
    return figure


def pareto_figure(points: Sequence[Any], x: str = "devices", front: Sequence[Any] | None = None,
                  title: str | None = None, selected: int | None = None) -> go.Figure:
    """Time per sample against a cost axis; the Pareto frontier drawn as a highlighted step line.

    Parameters
    ----------
    points : sequence of SweepPoint
        All points (those without a plan, or with an infinite cost, are left out).
    x : str
        ``"devices"`` (devices used), ``"memory"`` (memory provisioned, in GiB) or ``"price"``.
    front : sequence of SweepPoint, optional
        The frontier (default: :func:`placement.sweep.pareto_front` of ``points`` on ``x``).
    title : str, optional
        Figure title.
    selected : int, optional
        ``index`` of a point to ring.
    """
    from .sweep import pareto_front

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
    figure.add_trace(go.Scatter(
        x=ox, y=oy, mode="markers", name="other configurations", customdata=[[p.index] for p in others],
        text=[_point_hover(p) for p in others], hovertemplate="%{text}<extra></extra>",
        marker={"size": 9, "color": "#b0b0b0"},
    ))
    figure.add_trace(go.Scatter(
        x=fx, y=fy, mode="lines+markers", name="Pareto frontier", customdata=[[p.index] for p in best],
        text=[_point_hover(p) for p in best], hovertemplate="%{text}<extra></extra>",
        line={"shape": "hv", "color": _FRONT_COLOUR, "width": 2}, marker={"size": 12, "color": _FRONT_COLOUR},
    ))
    if selected is not None:
        chosen = [p for p in list(others) + list(best) if p.index == selected]
        if chosen:
            figure.add_trace(go.Scatter(
                x=[float(getattr(chosen[0], attr)) / scale], y=[float(chosen[0].time_per_sample)], mode="markers",
                name="selected", customdata=[[chosen[0].index]], hoverinfo="skip",
                marker={"size": 20, "color": "rgba(0,0,0,0)", "line": {"color": "black", "width": 2.5}},
            ))
    axis = {"devices": "devices used", "memory": "memory provisioned (GiB)", "price": "price per hour"}.get(x, x)
    figure.update_layout(
        title=title or f"Pareto frontier: time per sample vs {axis}", height=420,
        xaxis={"title": axis}, yaxis={"title": "time per sample", "rangemode": "tozero"},
        margin={"l": 10, "r": 10, "t": 80, "b": 10}, clickmode="event+select",
        legend={"orientation": "h", "yanchor": "bottom", "y": 1.0, "x": 0},
    )
    return figure


def sweep_rows(points: Sequence[Any]) -> list[dict[str, Any]]:
    """One row per sweep point: value, status, time per sample, devices used, memory, price."""
    rows = []
    for p in points:
        value = p.value
        if p.parameter == "memory" and isinstance(value, (int, float)):
            value = format_bytes(float(value))
        elif isinstance(value, tuple):
            value = " + ".join(str(v) for v in value)
        rows.append({
            "#": p.index, p.parameter: value if isinstance(value, str) else float(value), "status": p.status,
            "time per sample": p.time_per_sample, "devices used": p.devices_used,
            "accelerators used": p.accelerators_used, "CPU cores used": p.cpus_used,
            "memory provisioned": format_bytes(p.total_memory), "price per hour": p.price_per_hour,
        })
    return rows


# ----------------------------------------------------------------------------- multidimensional plans
def multidim_stage_rows(problem: Any, plan: Any, evaluation: Any) -> list[dict[str, Any]]:
    """One row per stage of a multidimensional plan: nodes, d x t, kind, options, memory vs cap, time.

    ``problem``/``plan``/``evaluation`` are :mod:`placement.multidim` values (a
    :class:`~placement.multidim.model.MultiProblem`, a plan and :func:`~placement.multidim.evaluate.evaluate_plan`'s
    result).
    """
    rows = []
    for k, (stage, cost) in enumerate(zip(plan.stages, evaluation.stages)):
        names = [problem.nodes[v].name for v in stage.nodes]
        counts: dict[str, int] = {}
        for option in stage.options:
            counts[option] = counts.get(option, 0) + 1
        rows.append({
            "stage": k, "nodes": f"{names[0]} .. {names[-1]}" if len(names) > 1 else names[0],
            "node count": len(stage.nodes), "d x t": f"{stage.d} x {stage.t}", "devices": stage.d * stage.t,
            "kind": stage.kind, "options": ", ".join(f"{n} {o}" for o, n in sorted(counts.items())),
            "in flight (y)": cost.y, "memory": format_bytes(cost.memory), "memory cap": format_bytes(cost.memory_cap),
            "memory used": f"{cost.memory / cost.memory_cap:.0%}", "time per sample": cost.time,
        })
    return rows


def multidim_curve_figure(points: Sequence[tuple[int, float | None]], selected: int | None = None,
                          title: str | None = None) -> go.Figure:
    """Optimal time per sample against the total device count (log-2 x axis); None = infeasible."""
    xs = [int(n) for n, v in points if v is not None and math.isfinite(v)]
    ys = [float(v) for n, v in points if v is not None and math.isfinite(v)]
    figure = go.Figure(go.Scatter(x=xs, y=ys, mode="lines+markers", name="optimal plan",
                                  hovertemplate="%{x} devices<br>time per sample %{y:.4g} s<extra></extra>"))
    missing = [int(n) for n, v in points if v is None or not math.isfinite(v)]
    if missing:
        figure.add_trace(go.Scatter(x=missing, y=[min(ys) if ys else 1.0] * len(missing), mode="markers",
                                    name="infeasible (drawn at the lowest time)",
                                    marker={"symbol": "x", "color": "red", "size": 10}))
    if selected is not None and selected in xs:
        figure.add_trace(go.Scatter(x=[selected], y=[ys[xs.index(selected)]], mode="markers", name="this plan",
                                    marker={"size": 16, "color": "rgba(0,0,0,0)",
                                            "line": {"color": "black", "width": 2.5}}))
    figure.update_layout(title=title or "Time per sample vs devices (each point a proven optimum)", height=380,
                         xaxis={"title": "devices", "type": "log", "dtick": math.log10(2)},
                         yaxis={"title": "time per sample (s, log scale)", "type": "log"},
                         margin={"l": 10, "r": 10, "t": 60, "b": 10})
    return figure


def multidim_timeline_figure(plan: Any, evaluation: Any, microbatches: int = 6, title: str | None = None) -> go.Figure:
    """Pipeline timeline of a multidimensional plan: one row per stage, labelled with its d x t.

    A stage of d replicas (each of t devices) is one row. Microbatch m enters stage i when stage i - 1 has
    finished it and stage i has finished microbatch m - 1; each takes the stage's time per sample
    (times are per sample, so the axis is in units of one sample's processing).
    """
    times = [c.time for c in evaluation.stages]
    labels = [f"stage {k}: {s.d} x {s.t}" + (f" {s.kind}" if s.kind else "") for k, s in enumerate(plan.stages)]
    ends = [[0.0] * microbatches for _ in times]
    figure = go.Figure()
    for m in range(microbatches):
        xs, bases, ys = [], [], []
        for i, duration in enumerate(times):
            begin = max(ends[i - 1][m] if i else 0.0, ends[i][m - 1] if m else 0.0)
            ends[i][m] = begin + duration
            xs.append(duration)
            bases.append(begin)
            ys.append(labels[i])
        figure.add_trace(go.Bar(x=xs, base=bases, y=ys, orientation="h", name=f"microbatch {m}",
                                hovertemplate="%{y}<br>start %{base:.4g} s, %{x:.4g} s<extra>microbatch " + str(m)
                                + "</extra>"))
    figure.update_layout(title=title or "Pipeline timeline (a stage of d replicas is one row)", barmode="overlay",
                         height=max(260, 28 * len(times) + 120), xaxis={"title": "time (s per sample)"},
                         yaxis={"autorange": "reversed"}, margin={"l": 10, "r": 10, "t": 60, "b": 10},
                         showlegend=False)
    return figure
