"""The editable per-node cost table of built and imported graphs (the Graph page's estimates editor).

Times in milliseconds, weights in bytes.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any

from ..errors import InvalidGraphError
from ..model import Graph, Node
from .pricing import COST_SOURCE_KEY, cost_source

#: Columns of :func:`cost_rows` that :func:`apply_cost_rows` reads back.
EDITABLE_COLUMNS = ("accelerator ms", "CPU ms", "weights (bytes)")


def cost_rows(graph: Graph) -> list[dict[str, Any]]:
    """One row per node: estimated work (read-only columns) and the editable latencies and size.

    Columns: ``id``, ``name``, ``op``, ``GFLOP``, ``MB moved`` (read + written), then
    :data:`EDITABLE_COLUMNS`: ``accelerator ms`` (reference kind), ``CPU ms`` and
    ``weights (bytes)``.
    """
    rows = []
    for node in graph.nodes:
        moved = node.extra.get("bytesRead", 0.0) + node.extra.get("bytesWritten", 0.0)
        rows.append(
            {
                "id": node.id,
                "name": node.name,
                "op": str(node.extra.get("op", "")),
                "GFLOP": float(node.extra.get("flops", 0.0)) / 1e9,
                "MB moved": float(moved) / 1e6,
                "accelerator ms": node.accelerator_latency,
                "CPU ms": node.cpu_latency,
                "weights (bytes)": node.size,
            }
        )
    return rows


def apply_cost_rows(graph: Graph, rows: Iterable[Mapping[str, Any]]) -> Graph:
    """A copy of ``graph`` with the editable columns of ``rows`` (matched by ``id``) applied.

    Other accelerator kinds' latencies (``kind_latency``) are scaled by the same factor as
    the reference latency (set to the new value when the old one was 0). Unknown ids or
    bad numbers raise :class:`~placement.errors.InvalidGraphError` (one line).
    """
    by_id = {node.id: node for node in graph.nodes}
    changes: dict[int, Node] = {}
    for row in rows:
        try:
            node_id = int(row["id"])
        except (KeyError, TypeError, ValueError):
            raise InvalidGraphError(f"cost table: row {dict(row)!r} has no valid 'id'") from None
        if node_id not in by_id:
            raise InvalidGraphError(f"cost table: no node with id {node_id}")
        node = changes.get(node_id, by_id[node_id])
        values = {}
        for column in EDITABLE_COLUMNS:
            if column not in row:
                continue
            value = row[column]
            try:
                number = float(value)
            except (TypeError, ValueError):
                raise InvalidGraphError(
                    f"cost table: node {node_id}: {column} must be a number (got {value!r})"
                ) from None
            if math.isnan(number) or math.isinf(number) or number < 0:
                raise InvalidGraphError(
                    f"cost table: node {node_id}: {column} must be a finite number >= 0 (got {value!r})"
                )
            values[column] = number
        acc = values.get("accelerator ms", node.accelerator_latency)
        if acc != node.accelerator_latency:
            old = node.accelerator_latency
            kinds = tuple((k, v * acc / old if old > 0 else acc) for k, v in node.kind_latency)
        else:
            kinds = node.kind_latency
        changes[node_id] = replace(
            node,
            accelerator_latency=acc,
            cpu_latency=values.get("CPU ms", node.cpu_latency),
            size=values.get("weights (bytes)", node.size),
            kind_latency=kinds,
        )
    extra = dict(graph.extra)
    edited = [i for i, n in changes.items() if n != by_id[i]]
    if edited:
        base = cost_source(graph).split("; edited by hand")[0]
        extra[COST_SOURCE_KEY] = f"{base}; edited by hand"
    return Graph(tuple(changes.get(n.id, n) for n in graph.nodes), graph.edges, name=graph.name, extra=extra)
