"""Coarsening: merge operators into layers (by name prefix or any key), keeping the graph acyclic."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from ..condense import condense
from ..errors import InvalidGraphError, quote
from ..model import Edge, Graph, Node


def name_prefix(name: str, depth: int, separators: str = "/.") -> str:
    """The first ``depth`` non-empty components of ``name`` split on any of ``separators``."""
    if not separators:
        return name
    parts = [p for p in re.split("[" + re.escape(separators) + "]", name) if p]
    return "/".join(parts[:depth]) if parts else name


def coarsen_by_prefix(graph: Graph, depth: int, separators: str = "/.") -> Graph:
    """Merge nodes whose names share a prefix of ``depth`` components (see :func:`coarsen`)."""
    if depth < 1:
        raise InvalidGraphError(f"coarsening depth must be at least 1 (got {depth})")
    return coarsen(graph, lambda node: name_prefix(node.name, depth, separators) if node.name else f"#{node.id}")


def coarsen(graph: Graph, key: Callable[[Node], str]) -> Graph:
    """Merge the nodes with equal ``key(node)`` into one node each (layers from operators).

    Groups whose merge would create a cycle (A -> B -> A through different members) are
    merged further, as one node. A merged node sums its members' latencies (per kind only
    for kinds every member names; others fall back to ``accelerator_latency / speed``),
    sizes and the FLOPs/bytes in ``extra`` (``extra["ops"]``: the members' operator types); it runs on
    an accelerator only if all members do. Its output cost (and edge ``size``) is the sum over members
    with an edge leaving the group of their output cost (size): each member's output is sent once.
    Only forward graphs can be coarsened (build the training graph afterwards).

    Returns
    -------
    Graph
        Nodes numbered 0.. in topological order, named after their key.
    """
    if graph.is_training:
        raise InvalidGraphError("coarsen the forward graph, then build the training graph")
    label_of = {node.id: key(node) for node in graph.nodes}
    first_position: dict[str, int] = {}
    for position, node in enumerate(graph.nodes):
        first_position.setdefault(label_of[node.id], position)
    group_of_label, _ = condense(
        first_position, ((label_of[e.source], label_of[e.target]) for e in graph.edges), first_position.__getitem__
    )
    group_of = {n: group_of_label[label_of[n]] for n in label_of}
    n_groups = len(set(group_of_label.values()))
    members: dict[int, list[Node]] = {i: [] for i in range(n_groups)}
    for node in graph.nodes:
        members[group_of[node.id]].append(node)
    sizes = {e.source: (e.size if e.size is not None else 0.0) for e in graph.edges}
    nodes, edges = [], []
    for g in range(n_groups):
        group = members[g]
        names = sorted({label_of[n.id] for n in group}, key=lambda s: first_position[s])
        kinds = set.intersection(*({k for k, _ in n.kind_latency} for n in group))
        kind_latency = tuple(
            (k, sum(dict(n.kind_latency)[k] for n in group))
            for k in [k for k, _ in group[0].kind_latency if k in kinds]
        )
        classes = {n.color_class for n in group if n.color_class is not None}
        if len(classes) > 1:
            raise InvalidGraphError(f"group {quote(names[0], 40)}: merges color classes {sorted(classes)}")
        allowed = [set(n.allowed_kinds) for n in group if n.allowed_kinds is not None]
        extra: dict[str, Any] = {"members": len(group)}
        for field_name in ("flops", "bytesRead", "bytesWritten"):
            if all(field_name in n.extra for n in group):
                extra[field_name] = float(sum(n.extra[field_name] for n in group))
        ops = {str(n.extra["op"]) for n in group if "op" in n.extra} | {
            str(o) for n in group for o in n.extra.get("ops", ())
        }
        if all("work" in n.extra for n in group):  # the members' kernels (re-pricing on other kinds)
            extra["work"] = [w for n in group for w in n.extra["work"]]
        if ops:  # the member operator types (the multidim planner splits matrix products)
            extra["ops"] = sorted(ops)
        dtypes = {n.extra["dtype"] for n in group if n.size > 0 and isinstance(n.extra.get("dtype"), str)}
        if len(dtypes) == 1:  # the weights' element type (the memory model's optimizer default)
            extra["dtype"] = dtypes.pop()
        nodes.append(
            Node(
                id=g,
                name=" + ".join(names),
                cpu_latency=sum(n.cpu_latency for n in group),
                accelerator_latency=sum(n.accelerator_latency for n in group),
                supported_on_accelerator=all(n.supported_on_accelerator for n in group),
                color_class=classes.pop() if classes else None,
                size=sum(n.size for n in group),
                kind_latency=kind_latency,
                allowed_kinds=tuple(sorted(set.intersection(*allowed))) if allowed else None,
                extra=extra,
            )
        )
        leaving = [n.id for n in group if any(group_of[s] != g for s in graph.successors[n.id])]
        cost = sum(graph.output_cost[n] for n in leaving)
        size = sum(sizes.get(n, 0.0) for n in leaving)
        for target in sorted({group_of[s] for n in leaving for s in graph.successors[n] if group_of[s] != g}):
            edges.append(Edge(g, target, cost, size))
    return Graph(tuple(nodes), tuple(edges), name=graph.name, extra=dict(graph.extra))
