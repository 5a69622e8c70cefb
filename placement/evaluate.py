"""The independent evaluator: loads, memory, rule checks and single-sample latency of any placement.

Written from the model's definitions, node by node and edge by edge, sharing no code with
the solvers, so that it can check them.

* Load of an accelerator = its compute (sum of its nodes' latencies on its kind) + its
  communication: the cost of every node u with an edge crossing the boundary of the
  device's node set, in either direction, counted once per device (scaled by the
  bandwidth factors). With ``overlap`` the load is max(compute, communication).
* Every sum is exact and rounded once (:func:`math.fsum` of the per-node terms; the
  communication term of node u is ``cost(u) * scale``, one rounded product): the load is
  ``fsum(latencies + communication terms)`` (with ``overlap``,
  ``max(fsum(latencies), fsum(communication terms))``), and memory is ``fsum(sizes)``.
  A sum that overflows is ``inf``. The exact DP (:mod:`placement.exact.kernel`) computes the same
  numbers, so its objective equals this max-load bit for bit.
* Load of a CPU core = sum of its nodes' ``cpu_latency``; CPU cores pay no communication,
  unless ``devices.cpu_bandwidth`` is set: then a core also pays the cost of every node with
  an edge crossing its node set's boundary, once per core, divided by
  ``bandwidth * cpu_bandwidth`` (with ``overlap``, load = max(compute, communication)).
* Latency: CPU nodes start when their inputs are ready (unbounded cores); an accelerator
  runs each of its calls (by default its whole node set is one call) as one unit that
  starts when its outside inputs are ready and its previous call has ended, and lasts
  incoming transfers + compute + outgoing transfers. ``cpu_bandwidth`` does not change the
  latency model: a CPU node's duration stays its ``cpu_latency`` (its transfers are
  counted only where an accelerator call sends or receives them). This keeps the latency
  integer program (:func:`placement.ip.solve_latency_ip`) exact whatever ``cpu_bandwidth`` is.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .model import CPU_KIND, DeviceSlot, Placement, Problem


@dataclass(frozen=True)
class DeviceLoad:
    """One device's share of the work per sample."""

    device: DeviceSlot
    nodes: tuple[int, ...]
    compute: float
    communication: float
    load: float
    memory: float
    memory_cap: float


@dataclass(frozen=True)
class Evaluation:
    """Everything the evaluator recomputes for a placement."""

    max_load: float
    latency: float
    devices: tuple[DeviceLoad, ...]
    feasible: bool
    violations: tuple[str, ...]

    @property
    def throughput(self) -> float:
        """Samples per time unit of the pipeline (1 / max-load)."""
        return 1.0 / self.max_load if self.max_load > 0 else math.inf

    def load_of(self, device: DeviceSlot) -> DeviceLoad | None:
        for entry in self.devices:
            if entry.device == device:
                return entry
        return None


def _exact_sum(terms) -> float:
    """``math.fsum`` of ``terms``; ``inf`` when the sum overflows."""
    try:
        return math.fsum(terms)
    except OverflowError:
        return math.inf


def _crossing_terms(problem: Problem, nodes: set[int], scale: float) -> list[float]:
    """The communication term ``cost(u) * scale`` of every node u with an edge crossing the set's boundary."""
    graph = problem.graph
    counted: set[int] = set()
    for edge in graph.edges:
        inside_source, inside_target = edge.source in nodes, edge.target in nodes
        if inside_source != inside_target:
            counted.add(edge.source)
    return [graph.output_cost[u] * scale for u in counted]


def _crossing_cost(problem: Problem, nodes: set[int], scale: float) -> float:
    return _exact_sum(_crossing_terms(problem, nodes, scale))


def _load(compute_terms: list[float], comm_terms: list[float], overlap: bool) -> tuple[float, float, float]:
    """(compute, communication, load), each an exact sum rounded once (module docstring)."""
    compute, communication = _exact_sum(compute_terms), _exact_sum(comm_terms)
    load = max(compute, communication) if overlap else _exact_sum(compute_terms + comm_terms)
    return compute, communication, load


def device_loads(problem: Problem, placement: Placement) -> tuple[DeviceLoad, ...]:
    """Compute, communication, load and memory of every device in ``placement``."""
    graph, devices = problem.graph, problem.devices
    kinds = {kind.name: kind for kind in devices.accelerators}
    out = []
    for stage in placement.stages:
        nodes = set(stage.nodes)
        memory = _exact_sum([graph.node_by_id[n].size for n in stage.nodes if n in graph.node_by_id])
        if stage.device.kind == CPU_KIND:
            cpu_terms = [graph.node_by_id[n].cpu_latency for n in stage.nodes if n in graph.node_by_id]
            if devices.cpu_bandwidth is None:  # the paper's model: no communication on CPU cores
                compute = _exact_sum(cpu_terms)
                out.append(DeviceLoad(stage.device, stage.nodes, compute, 0.0, compute, memory, math.inf))
                continue
            compute, communication, load = _load(
                cpu_terms, _crossing_terms(problem, nodes, devices.cpu_transfer_scale), devices.overlap
            )
            out.append(DeviceLoad(stage.device, stage.nodes, compute, communication, load, memory, math.inf))
            continue
        kind = kinds.get(stage.device.kind)
        if kind is None:
            out.append(DeviceLoad(stage.device, stage.nodes, math.inf, 0.0, math.inf, memory, 0.0))
            continue
        compute, communication, load = _load(
            [graph.node_by_id[n].latency_on(kind) for n in stage.nodes if n in graph.node_by_id],
            _crossing_terms(problem, nodes, devices.transfer_scale(kind)),
            devices.overlap,
        )
        out.append(DeviceLoad(stage.device, stage.nodes, compute, communication, load, memory, kind.memory))
    return tuple(out)


def check(problem: Problem, placement: Placement) -> tuple[str, ...]:
    """Every rule ``placement`` breaks, one message each (empty when it is valid)."""
    graph, devices = problem.graph, problem.devices
    problems: list[str] = []
    device_of = placement.device_of
    for node in graph.nodes:
        if node.id not in device_of:
            problems.append(f"node {node.label} is not placed")
    for node_id in device_of:
        if node_id not in graph.node_by_id:
            problems.append(f"node {node_id} is not in the graph")
    counts = {kind.name: kind.count for kind in devices.accelerators}
    counts[CPU_KIND] = devices.cpus
    kinds = {kind.name: kind for kind in devices.accelerators}
    for stage in placement.stages:
        device = stage.device
        if device.kind not in counts:
            problems.append(f"{device}: no such device kind")
            continue
        if not 0 <= device.index < counts[device.kind]:
            problems.append(f"{device}: only {counts[device.kind]} device(s) of kind {device.kind!r}")
        if device.kind != CPU_KIND:
            kind = kinds[device.kind]
            for n in stage.nodes:
                stage_node = graph.node_by_id.get(n)
                if stage_node is not None and not stage_node.runs_on(kind):
                    problems.append(f"node {stage_node.label} cannot run on {device}")
            memory = _exact_sum([graph.node_by_id[n].size for n in stage.nodes if n in graph.node_by_id])
            if memory > kind.memory:
                problems.append(f"{device}: needs {memory:,.0f} bytes, holds {kind.memory:,.0f}")
    for color, members in graph.color_classes.items():
        placed = {device_of.get(n) for n in members}
        if len(placed) > 1:
            problems.append(f"color class {color} is split over {len(placed)} devices")
    return tuple(problems)


def is_contiguous(problem: Problem, placement: Placement) -> bool:
    """Whether the stages, in the given order, are consecutive differences of a chain of ideals.

    Checked on the forward nodes: every forward edge goes to the same or a later stage.
    """
    graph = problem.graph
    position = {n: k for k, stage in enumerate(placement.stages) for n in stage.nodes}
    for edge in graph.edges:
        source, target = graph.node_by_id[edge.source], graph.node_by_id[edge.target]
        if source.is_backward or target.is_backward:
            continue
        if position.get(edge.source, 0) > position.get(edge.target, 0):
            return False
    return True


def latency(problem: Problem, placement: Placement) -> float:
    """Single-sample latency of ``placement`` (``inf`` if its calls depend on each other cyclically)."""
    graph, devices = problem.graph, problem.devices
    kinds = {kind.name: kind for kind in devices.accelerators}
    # Units: one per CPU node, one per accelerator call.
    unit_of: dict[int, int] = {}
    units: list[tuple[DeviceSlot, tuple[int, ...]]] = []
    for stage in placement.stages:
        if stage.device.kind == CPU_KIND:
            for n in stage.nodes:
                unit_of[n] = len(units)
                units.append((stage.device, (n,)))
        else:
            for call in stage.calls or (stage.nodes,):
                for n in call:
                    unit_of[n] = len(units)
                units.append((stage.device, tuple(call)))
    if any(node.id not in unit_of for node in graph.nodes):
        return math.inf
    depends: list[set[int]] = [set() for _ in units]
    for edge in graph.edges:
        a, b = unit_of[edge.source], unit_of[edge.target]
        if a != b:
            depends[b].add(a)
    previous_call: dict[DeviceSlot, int] = {}
    for k, (device, _) in enumerate(units):
        if device.kind != CPU_KIND:
            if device in previous_call:
                depends[k].add(previous_call[device])
            previous_call[device] = k
    duration = []
    for device, nodes in units:
        if device.kind == CPU_KIND:
            duration.append(graph.node_by_id[nodes[0]].cpu_latency)
            continue
        kind = kinds.get(device.kind)
        if kind is None:
            return math.inf
        members = set(nodes)
        transfers = _crossing_cost(problem, members, devices.transfer_scale(kind))
        duration.append(transfers + sum(graph.node_by_id[n].latency_on(kind) for n in nodes))
    # Longest path over the unit DAG (Kahn's algorithm; a leftover unit means a cycle).
    indegree = [len(d) for d in depends]
    users: list[list[int]] = [[] for _ in units]
    for k, deps in enumerate(depends):
        for d in deps:
            users[d].append(k)
    ready = [k for k, d in enumerate(indegree) if d == 0]
    start = [0.0] * len(units)
    finish = [0.0] * len(units)
    done = 0
    while ready:
        k = ready.pop()
        finish[k] = start[k] + duration[k]
        done += 1
        for user in users[k]:
            start[user] = max(start[user], finish[k])
            indegree[user] -= 1
            if indegree[user] == 0:
                ready.append(user)
    if done < len(units):
        return math.inf
    return max(finish, default=0.0)


#: Why a training plan may have no single-sample latency: each accelerator runs its nodes as one call,
#: and the backward pass flows back to devices that fed the forward pass, so their calls can wait on
#: each other. The latency objective (as in the paper) is for inference graphs.
LATENCY_INFERENCE_ONLY = (
    "latency is defined for inference graphs only (this graph has backward nodes; in this "
    "plan devices wait on each other's forward and backward passes)"
)


def latency_note(problem: Problem, evaluation: Evaluation | None = None) -> str | None:
    """Why the latency of a placement is not a finite number (None when it is finite).

    Parameters
    ----------
    problem : Problem
    evaluation : Evaluation, optional
        The placement's evaluation (its ``latency`` and ``violations`` are read).
    """
    if evaluation is not None and math.isfinite(evaluation.latency):
        return None
    if problem.graph.is_training:
        return LATENCY_INFERENCE_ONLY
    if evaluation is not None and evaluation.violations:
        return "the placement breaks a rule: " + evaluation.violations[0]
    return "the accelerator calls depend on each other in a cycle (no call can start first)"


def evaluate(problem: Problem, placement: Placement) -> Evaluation:
    """Recompute max-load, per-device loads, memory, rule violations and latency of ``placement``.

    Never raises for a bad placement: what it breaks is listed in ``violations``.

    Examples
    --------
    Two nodes ``a -> b`` (transfer cost 0.5) on two accelerators: each device computes its
    node and pays the crossing transfer once.

    >>> from placement import Devices, Edge, Graph, Node, Placement, Problem, Stage, evaluate
    >>> from placement.model import DeviceSlot
    >>> graph = Graph((Node(1, cpu_latency=9.0, accelerator_latency=2.0), Node(2, 9.0, 3.0)), (Edge(1, 2, 0.5),))
    >>> problem = Problem(graph, Devices.paper(accelerators=2, cpus=0))
    >>> split = Placement((Stage(DeviceSlot("accelerator", 0), (1,)), Stage(DeviceSlot("accelerator", 1), (2,))))
    >>> result = evaluate(problem, split)
    >>> result.max_load, result.latency, result.feasible
    (3.5, 6.0, True)
    """
    loads = device_loads(problem, placement)
    violations = check(problem, placement)
    max_load = max((entry.load for entry in loads), default=0.0)
    return Evaluation(
        max_load=max_load,
        latency=latency(problem, placement),
        devices=loads,
        feasible=not violations,
        violations=violations,
    )
