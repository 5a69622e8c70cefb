"""Seeded random small graphs and an independent brute force over placements, for property tests.

The brute force shares no code with the solvers: it enumerates every assignment of colour
classes to devices, checks contiguity straight from the definition (some order of the
used devices makes every prefix of forward nodes down-closed), and scores with the
evaluator.
"""

from __future__ import annotations

import itertools
import math
import random

from placement import AcceleratorKind, Devices, Edge, Graph, Node, Placement, Problem, Stage, evaluate
from placement.model import CPU_KIND, DeviceSlot


def random_problem(seed: int, *, training: bool = False, max_forward: int = 5) -> Problem:
    """A random DAG with zero-latency nodes, unsupported nodes, multi-node classes and tight memory."""
    rng = random.Random(seed)
    n = rng.randint(2, max_forward)
    nodes, edges = [], []
    classes = list(range(n))
    if n >= 3 and rng.random() < 0.3:  # a multi-node colour class among forward nodes
        a, b = rng.sample(range(n), 2)
        classes[b] = classes[a]
    for i in range(n):
        zero = rng.random() < 0.15
        nodes.append(Node(
            id=i, cpu_latency=0.0 if zero else round(rng.uniform(1, 20), 2),
            accelerator_latency=0.0 if zero else round(rng.uniform(0.5, 6), 2),
            supported_on_accelerator=rng.random() > 0.15, is_backward=False,
            color_class=classes[i], size=float(rng.choice([0, 1, 2, 3, 5])), name=f"f{i}",
        ))
    cost = {i: round(rng.choice([0.0, rng.uniform(0.1, 4)]), 2) for i in range(2 * n)}
    for j in range(1, n):
        for i in range(j):
            if rng.random() < 0.45:
                edges.append(Edge(i, j, cost[i]))
    if training:
        for i in range(n):
            nodes.append(Node(
                id=n + i, cpu_latency=round(rng.uniform(0, 30), 2), accelerator_latency=round(rng.uniform(0, 8), 2),
                supported_on_accelerator=nodes[i].supported_on_accelerator, is_backward=True,
                color_class=classes[i], size=float(rng.choice([0, 1, 2])), name=f"b{i}",
            ))
        for edge in list(edges):
            edges.append(Edge(n + edge.target, n + edge.source, cost[n + edge.target]))
        for i in range(n):
            if rng.random() < 0.4 and (i, n + i) not in {(e.source, e.target) for e in edges}:
                edges.append(Edge(i, n + i, cost[i]))
    # Sources of edges must share one cost: rebuild with the first cost seen per source.
    first: dict[int, float] = {}
    edges = [Edge(e.source, e.target, first.setdefault(e.source, e.cost)) for e in edges]
    graph = Graph(tuple(nodes), tuple(edges), name=f"random{seed}")
    total = sum(node.size for node in nodes)
    memory = rng.choice([math.inf, max(total / 2, 1.0), max(total / 3, 1.0), 4.0])
    devices = Devices.paper(rng.randint(1, 3), rng.randint(0, 2), memory)
    return Problem(graph, devices)


def _units(graph: Graph) -> list[tuple[int, ...]]:
    """Nodes that must share a device (colour classes; classless nodes alone)."""
    parent = {node.id: node.id for node in graph.nodes}

    def find(x):
        while parent[x] != x:
            x = parent[x]
        return x

    for members in graph.color_classes.values():
        for other in members[1:]:
            parent[find(other)] = find(members[0])
    units: dict[int, list[int]] = {}
    for node in graph.nodes:
        units.setdefault(find(node.id), []).append(node.id)
    return [tuple(v) for v in units.values()]


def _down_closed(graph: Graph, nodes: set[int]) -> bool:
    for edge in graph.edges:
        if graph.node_by_id[edge.source].is_backward or graph.node_by_id[edge.target].is_backward:
            continue
        if edge.target in nodes and edge.source not in nodes:
            return False
    return True


def contiguous_orders(graph: Graph, stages: dict[DeviceSlot, set[int]]):
    """Every order of the devices whose forward prefixes are down-closed (each is a valid pipeline)."""
    forward = {d: {n for n in s if not graph.node_by_id[n].is_backward} for d, s in stages.items()}
    for order in itertools.permutations(stages):
        prefix: set[int] = set()
        ok = True
        for device in order:
            prefix |= forward[device]
            if not _down_closed(graph, prefix):
                ok = False
                break
        if ok:
            yield order


def _contiguous_order(graph: Graph, stages: dict[DeviceSlot, set[int]]) -> list[DeviceSlot] | None:
    order = next(contiguous_orders(graph, stages), None)
    return list(order) if order is not None else None


def placements(problem: Problem, contiguous: bool):
    """Every valid placement (contiguous ones only if asked), with its evaluation."""
    graph, devices = problem.graph, problem.devices
    slots = list(devices.slots())
    units = _units(graph)
    for choice in itertools.product(range(len(slots)), repeat=len(units)):
        stages: dict[DeviceSlot, set[int]] = {}
        for unit, index in zip(units, choice):
            stages.setdefault(slots[index], set()).update(unit)
        # Symmetry: devices of one kind are interchangeable - keep used indices 0..m-1 per kind.
        used: dict[str, list[int]] = {}
        for slot in stages:
            used.setdefault(slot.kind, []).append(slot.index)
        if any(sorted(v) != list(range(len(v))) for v in used.values()):
            continue
        order = _contiguous_order(graph, stages) if contiguous else list(stages)
        if order is None:
            continue
        placement = Placement(tuple(Stage(d, tuple(stages[d])) for d in order))
        evaluation = evaluate(problem, placement)
        if evaluation.feasible:
            yield placement, evaluation


def brute_force(problem: Problem, contiguous: bool) -> tuple[float, Placement | None]:
    """Minimum max-load over every valid placement (contiguous ones only if asked)."""
    best, best_placement = math.inf, None
    for placement, evaluation in placements(problem, contiguous):
        if evaluation.max_load < best:
            best, best_placement = evaluation.max_load, placement
    return best, best_placement


__all__ = ["random_problem", "brute_force", "placements", "CPU_KIND", "AcceleratorKind"]
