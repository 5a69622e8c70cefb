"""Placement figures and tables: per-device loads and memory, placement and device rows, the methods comparison."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import plotly.graph_objects as go

from ..evaluate import Evaluation
from ..model import DeviceSlot, Objective, Placement, Problem
from ._base import (
    _LEGEND_RIGHT,
    GIB,
    _add_bars,
    _finite,
    _layout,
)


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
