"""The graph page's figures: DAG layout, the graph figure, node labels, statistics and the node table."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import plotly.graph_objects as go

from ..model import DeviceSlot, Graph
from ._base import (
    DEVICE_COLORS,
    UNPLACED_COLOR,
    _at,
    _layout,
    _segments,
    device_colors,
    format_bytes,
)

#: Characters of a node's name shown in its hover text: a graph of 4,000 nodes with 10 kB names (an upload near
#: the size limit) drew a 40 MB figure that the server serialised and sent whole (the Graph page's node table cuts long names too).
HOVER_NAME_CHARS = 120


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
    label = node.label if len(node.label) <= HOVER_NAME_CHARS else node.label[: HOVER_NAME_CHARS - 1] + "…"
    lines = [
        f"<b>{label}</b> (id {node.id})",
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
