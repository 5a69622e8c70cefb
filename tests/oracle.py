"""The brute-force oracle of the property tests: it shares no code with the package under test.

It reads the model's plain data (nodes, edges, device kinds) and recomputes everything from
the definitions in docs/models/paper.md, by itself: which nodes must share a device (color classes,
joined through shared members), which placements are valid (support, allowed kinds, memory,
device counts), which are contiguous (some order of the used devices makes every prefix of
forward nodes closed under predecessors), and every device's load (compute on its kind, plus
the cost of every node with an edge crossing its boundary, once, scaled by the bandwidths;
``overlap`` takes the max; CPU cores pay communication only with ``cpu_bandwidth``). It calls
no solver, not the evaluator, not :mod:`placement.exact.ideals`; the only package names it uses are
the result containers (:class:`Placement`, :class:`Stage`, :class:`DeviceSlot`) it returns.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator

from placement.model import DeviceSlot, Graph, Placement, Problem, Stage

CPU = "cpu"


def must_share(graph: Graph) -> list[tuple[int, ...]]:
    """Node sets that must share a device: color classes joined through shared members; others alone."""
    nodes = graph.nodes
    parent = {node.id: node.id for node in nodes}

    def root(x: int) -> int:
        while parent[x] != x:
            x = parent[x]
        return x

    first_of_class: dict[int, int] = {}
    for node in nodes:
        if node.color_class is None:
            continue
        if node.color_class in first_of_class:
            parent[root(node.id)] = root(first_of_class[node.color_class])
        else:
            first_of_class[node.color_class] = node.id
    units: dict[int, list[int]] = {}
    for node in nodes:
        units.setdefault(root(node.id), []).append(node.id)
    return [tuple(members) for members in units.values()]


def _latency_on(node, kind) -> float:
    overrides = dict(node.kind_latency)
    # Issue 26: the inventory's speed divides a per-kind override too (the override is the time at speed 1).
    return (overrides[kind.name] if kind.name in overrides else node.accelerator_latency) / kind.speed


def _may_run(node, kind) -> bool:
    return bool(node.supported_on_accelerator) and (node.allowed_kinds is None or kind.name in node.allowed_kinds)


def _crossing_terms(problem: Problem, members: set[int], scale: float) -> list[float]:
    """``cost(u) * scale`` of every node u with an edge (either direction) crossing the boundary of ``members``."""
    cost_of = {edge.source: edge.cost for edge in problem.graph.edges}
    crossing = {edge.source for edge in problem.graph.edges if (edge.source in members) != (edge.target in members)}
    return [cost_of[u] * scale for u in crossing]


def load(problem: Problem, device: DeviceSlot, members: set[int]) -> float | None:
    """The device's load per sample, or None when the nodes may not run there or do not fit its memory.

    The model's definition of a load: the correctly rounded sum (``math.fsum``) of the per-node
    compute terms and the communication terms ``cost(u) * scale`` with ``scale = 1 / (global
    bandwidth * the device's bandwidth)``; with overlap, the larger of the two sums.
    """
    devices = problem.devices
    by_id = {node.id: node for node in problem.graph.nodes}
    if device.kind == CPU:
        compute = [by_id[n].cpu_latency for n in members]
        if devices.cpu_bandwidth is None:
            return math.fsum(compute)
        communication = _crossing_terms(problem, members, 1.0 / (devices.bandwidth * devices.cpu_bandwidth))
    else:
        kind = next(k for k in devices.accelerators if k.name == device.kind)
        if not all(_may_run(by_id[n], kind) for n in members):
            return None
        if math.fsum(by_id[n].size for n in members) > kind.memory:
            return None
        compute = [_latency_on(by_id[n], kind) for n in members]
        communication = _crossing_terms(problem, members, 1.0 / (devices.bandwidth * kind.bandwidth))
    if devices.overlap:
        return max(math.fsum(compute), math.fsum(communication))
    return math.fsum(compute + communication)


def _closed_under_predecessors(graph: Graph, nodes: set[int]) -> bool:
    backward = {node.id for node in graph.nodes if node.is_backward}
    return all(
        edge.source in nodes
        for edge in graph.edges
        if edge.target in nodes and edge.source not in backward and edge.target not in backward
    )


def contiguous_orders(graph: Graph, stages: dict[DeviceSlot, set[int]]) -> Iterator[tuple[DeviceSlot, ...]]:
    """Every order of the devices whose forward prefixes are all closed under predecessors (valid pipelines)."""
    backward = {node.id for node in graph.nodes if node.is_backward}
    for order in itertools.permutations(stages):
        prefix: set[int] = set()
        for device in order:
            prefix |= stages[device] - backward
            if not _closed_under_predecessors(graph, prefix):
                break
        else:
            yield order


def pipeline_order(graph: Graph, stages: dict[DeviceSlot, set[int]]) -> list[DeviceSlot] | None:
    """The first of :func:`contiguous_orders`, or None when the stages are not contiguous."""
    order = next(contiguous_orders(graph, stages), None)
    return list(order) if order is not None else None


def slots(problem: Problem) -> list[DeviceSlot]:
    """Every device: accelerators kind by kind, then CPU cores."""
    out = [DeviceSlot(kind.name, i) for kind in problem.devices.accelerators for i in range(kind.count)]
    return out + [DeviceSlot(CPU, i) for i in range(problem.devices.cpus)]


def _assignments(problem: Problem) -> Iterator[tuple[dict[DeviceSlot, set[int]], list[float]]]:
    """Every assignment of the must-share units to devices whose loads are all defined, with those loads.

    Devices of one kind are interchangeable: only assignments using indices 0..m-1 of each kind.
    """
    devices = slots(problem)
    units = must_share(problem.graph)
    for choice in itertools.product(range(len(devices)), repeat=len(units)):
        stages: dict[DeviceSlot, set[int]] = {}
        for unit, index in zip(units, choice):
            stages.setdefault(devices[index], set()).update(unit)
        used: dict[str, list[int]] = {}
        for device in stages:
            used.setdefault(device.kind, []).append(device.index)
        if any(sorted(indices) != list(range(len(indices))) for indices in used.values()):
            continue
        loads = [load(problem, device, members) for device, members in stages.items()]
        if all(value is not None for value in loads):
            yield stages, loads


def _placement(problem: Problem, stages: dict[DeviceSlot, set[int]], contiguous: bool) -> Placement | None:
    order = pipeline_order(problem.graph, stages) if contiguous else list(stages)
    if order is None:
        return None
    return Placement(tuple(Stage(device, tuple(stages[device])) for device in order))


def valid_placements(problem: Problem, contiguous: bool) -> Iterator[Placement]:
    """Every valid placement (contiguous ones only if asked; one per symmetric choice of device indices)."""
    for stages, _ in _assignments(problem):
        placement = _placement(problem, stages, contiguous)
        if placement is not None:
            yield placement


def brute_force(problem: Problem, contiguous: bool) -> tuple[float, Placement | None]:
    """Minimum max-load over every valid placement (contiguous ones only if asked), and one placement reaching it.

    ``(inf, None)`` when no placement is valid.
    """
    best, best_placement = math.inf, None
    for stages, loads in _assignments(problem):
        if max(loads) >= best:
            continue
        placement = _placement(problem, stages, contiguous)
        if placement is not None:
            best, best_placement = max(loads), placement
    return best, best_placement


def max_load(problem: Problem, placement: Placement) -> float | None:
    """The oracle's max-load of a given placement (None when it breaks a rule)."""
    values = [load(problem, stage.device, set(stage.nodes)) for stage in placement.stages]
    return None if any(v is None for v in values) else max(values, default=0.0)
