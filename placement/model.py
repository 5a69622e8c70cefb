"""The data model: graphs of operators, device inventories, placements and results.

Everything here is a frozen dataclass validated at construction; results are plain,
picklable values. Vocabulary used across the package:

* **node** - one operator of the DNN graph, with a CPU latency, an accelerator latency,
  a memory ``size`` and (on its outgoing edges) a transfer ``cost``;
* **device** - one accelerator or one CPU core, named by a :class:`DeviceSlot`;
* **stage** - the set of nodes one device runs (:class:`Stage`);
* **placement** - the stages of all devices, in pipeline order when contiguous;
* **load** - the time a device spends per sample (compute + communication);
  the max-load over devices is the time per sample of the pipeline.
"""

from __future__ import annotations

import json
import math
import sys
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    import networkx as nx

# The enums live in placement.enums (the vocabulary's own module); re-exported here, where they always were.
from .condense import longest_path_levels
from .enums import STATUSES, Objective, Status
from .enums import EventKind as EventKind
from .enums import Recompute as Recompute
from .enums import ScheduleKind as ScheduleKind
from .enums import TieBreak as TieBreak
from .errors import InvalidDevicesError, InvalidGraphError, InvalidSplitError, quote

CPU_KIND = "cpu"

#: Most devices of one accelerator kind, and most CPU cores, an inventory may hold. Every method
#: allocates per device (the DP's device-count states, the integer programs' variables, the
#: baselines' tables), so larger counts are refused at construction with this limit named.
MAX_DEVICE_COUNT = 256


def _check_number(value: Any, what: str, error=InvalidGraphError, allow_inf: bool = False) -> float:
    """Return ``value`` as a float if it is a finite (or +inf if allowed) number >= 0."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise error(f"{what} must be a number (got {value!r})")
    try:
        number = float(value)
    except OverflowError:  # an integer literal beyond the largest float
        raise error(
            f"{what} is too large (over {sys.float_info.max:.4g}, the largest float; "
            f"got a {cast(int, value).bit_length()}-bit integer)"
        ) from None
    if math.isnan(number) or (math.isinf(number) and not (allow_inf and number > 0)):
        raise error(f"{what} must be finite (got {value!r})")
    if number < 0:
        raise error(f"{what} must be non-negative (got {value!r})")
    return number


@dataclass(frozen=True)
class Node:
    """One operator.

    Parameters
    ----------
    id : int
        Unique id within its graph.
    cpu_latency, accelerator_latency : float
        Time to run the node on one CPU core / one accelerator of the reference kind.
    supported_on_accelerator : bool
        False forces the node onto a CPU core.
    is_backward : bool
        True for the backward (gradient) nodes of a training graph.
    color_class : int or None
        Nodes sharing a color class must share a device.
    size : float
        Bytes the node occupies in accelerator memory (weights).
    name : str
        Human-readable name.
    kind_latency : tuple of (str, float)
        Per accelerator-kind latency overrides (extended format).
    allowed_kinds : tuple of str or None
        Accelerator kinds the node may run on (None: every kind).
    """

    id: int
    cpu_latency: float
    accelerator_latency: float
    supported_on_accelerator: bool = True
    is_backward: bool = False
    color_class: int | None = None
    size: float = 0.0
    name: str = ""
    kind_latency: tuple[tuple[str, float], ...] = ()
    allowed_kinds: tuple[str, ...] | None = None
    extra: Mapping[str, Any] = field(default_factory=dict, compare=False, hash=False, repr=False)

    def __post_init__(self) -> None:
        if isinstance(self.id, bool) or not isinstance(self.id, int):
            raise InvalidGraphError(f"node {quote(self.id, 40)}: field 'id' must be an integer")
        if not -(2**63) <= self.id < 2**63:
            raise InvalidGraphError(
                f"nodes: field 'id' must fit in 64 bits (got an integer of {len(str(self.id))} digits)"
            )
        where = f"node {self.id}"
        object.__setattr__(self, "cpu_latency", _check_number(self.cpu_latency, f"{where}: field 'cpuLatency'"))
        object.__setattr__(
            self, "accelerator_latency", _check_number(self.accelerator_latency, f"{where}: field 'fpgaLatency'")
        )
        object.__setattr__(self, "size", _check_number(self.size, f"{where}: field 'size'"))
        if self.color_class is not None and (
            isinstance(self.color_class, bool) or not isinstance(self.color_class, int)
        ):
            raise InvalidGraphError(f"{where}: field 'colorClass' must be an integer (got {self.color_class!r})")
        if self.color_class is not None and not -(2**63) <= self.color_class < 2**63:
            raise InvalidGraphError(f"{where}: field 'colorClass' must fit in 64 bits")
        for kind, latency in self.kind_latency:
            _check_number(latency, f"{where}: latency for kind {kind!r}")
        object.__setattr__(self, "kind_latency", tuple((str(k), float(v)) for k, v in self.kind_latency))
        if self.allowed_kinds is not None:
            object.__setattr__(self, "allowed_kinds", tuple(str(k) for k in self.allowed_kinds))

    @property
    def label(self) -> str:
        """The name if the node has one, else ``#id``."""
        return self.name or f"#{self.id}"

    def latency_on(self, kind: AcceleratorKind) -> float:
        """Latency of this node on one accelerator of ``kind``: (the kind's override, else the reference) / speed.

        The inventory's ``speed`` applies to every graph: a per-kind override (model builders, ONNX
        imports) is the time at speed 1, so a V100 set to speed 0.5 takes twice its modelled time.
        """
        for name, latency in self.kind_latency:
            if name == kind.name:
                return latency / kind.speed
        return self.accelerator_latency / kind.speed

    def runs_on(self, kind: AcceleratorKind) -> bool:
        """Whether the node may be placed on an accelerator of ``kind``."""
        if not self.supported_on_accelerator:
            return False
        return self.allowed_kinds is None or kind.name in self.allowed_kinds


@dataclass(frozen=True)
class Edge:
    """A data dependency ``source -> target``; ``cost`` is the time to transfer the source's output."""

    source: int
    target: int
    cost: float
    size: float | None = None
    extra: Mapping[str, Any] = field(default_factory=dict, compare=False, hash=False, repr=False)

    def __post_init__(self) -> None:
        where = f"edge {self.source!r}->{self.target!r}"
        for end, value in (("sourceId", self.source), ("destId", self.target)):
            if isinstance(value, bool) or not isinstance(value, int):
                raise InvalidGraphError(f"{where}: field '{end}' must be an integer")
        object.__setattr__(self, "cost", _check_number(self.cost, f"{where}: field 'cost'"))
        if self.size is not None:
            object.__setattr__(self, "size", _check_number(self.size, f"{where}: field 'size'"))


def smallest_first_order(items: Iterable[int], edges: Iterable[tuple[int, int]]) -> list[int] | None:
    """Topological order of ``items`` taking the smallest ready one first; None when ``edges`` make a cycle.

    ``networkx.lexicographical_topological_sort`` on the graph of ``items`` and ``edges``.

    >>> smallest_first_order([3, 1, 2], [(3, 1)])
    [2, 3, 1]
    """
    import networkx as nx  # noqa: PLC0415 - deferred: the multidim CLI path never needs networkx

    digraph = nx.DiGraph()
    digraph.add_nodes_from(items)
    digraph.add_edges_from(edges)
    try:
        return list(nx.lexicographical_topological_sort(digraph))
    except nx.NetworkXUnfeasible:
        return None


def _acyclic(nodes: Iterable[int], edges: Iterable[Edge]) -> bool:
    """Whether ``edges`` (between ``nodes``) make no directed cycle; Kahn's algorithm, O(nodes + edges)."""
    index = {node: k for k, node in enumerate(nodes)}
    return longest_path_levels(len(index), [(index[e.source], index[e.target]) for e in edges]) is not None


@dataclass(frozen=True)
class Graph:
    """A validated DAG of operators.

    Rules checked at construction: unique node ids; edges between known nodes; no self
    loops or duplicate edges; no cycle; no edge from a backward node to a forward node;
    all edges leaving one node carry the same cost.
    """

    nodes: tuple[Node, ...]
    edges: tuple[Edge, ...]
    name: str = field(default="", compare=False)
    extra: Mapping[str, Any] = field(default_factory=dict, compare=False, hash=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "nodes", tuple(self.nodes))
        object.__setattr__(self, "edges", tuple(self.edges))
        if not self.nodes:
            raise InvalidGraphError("the graph has no nodes")
        by_id: dict[int, Node] = {}
        for node in self.nodes:
            if node.id in by_id:
                raise InvalidGraphError(f"node {node.id}: duplicate id")
            by_id[node.id] = node
        seen: set[tuple[int, int]] = set()
        cost_of: dict[int, float] = {}
        for edge in self.edges:
            where = f"edge {edge.source}->{edge.target}"
            for end in (edge.source, edge.target):
                if end not in by_id:
                    raise InvalidGraphError(f"{where}: unknown node {end}")
            if edge.source == edge.target:
                raise InvalidGraphError(f"{where}: self loop")
            if (edge.source, edge.target) in seen:
                raise InvalidGraphError(f"{where}: duplicate edge")
            seen.add((edge.source, edge.target))
            if by_id[edge.source].is_backward and not by_id[edge.target].is_backward:
                raise InvalidGraphError(f"{where}: edge from a backward node to a forward node")
            previous = cost_of.setdefault(edge.source, edge.cost)
            if previous != edge.cost:
                raise InvalidGraphError(
                    f"{where}: cost {edge.cost!r} differs from {previous!r} on another edge leaving node {edge.source}"
                    " (all edges leaving one node must have the same cost)"
                )
        if not _acyclic(by_id, self.edges):  # plain Kahn: a refusal need not import networkx (~0.1 s)
            import networkx as nx  # noqa: PLC0415 - deferred: only to name the cycle

            cycle = nx.find_cycle(self.networkx)
            path = " -> ".join(str(u) for u, _ in cycle) + f" -> {cycle[0][0]}"
            raise InvalidGraphError(f"cycle through nodes {path}")

    # ----- derived views (cached; the object is immutable) -----
    @cached_property
    def node_by_id(self) -> dict[int, Node]:
        return {node.id: node for node in self.nodes}

    @cached_property
    def networkx(self) -> nx.DiGraph:
        """The graph as a ``networkx.DiGraph`` (node ids; edge attribute ``cost``)."""
        import networkx as nx  # noqa: PLC0415 - deferred: the multidim CLI path never needs networkx

        digraph = nx.DiGraph()
        digraph.add_nodes_from(node.id for node in self.nodes)
        digraph.add_edges_from((e.source, e.target, {"cost": e.cost}) for e in self.edges)
        return digraph

    @cached_property
    def successors(self) -> dict[int, tuple[int, ...]]:
        out: dict[int, list[int]] = {node.id: [] for node in self.nodes}
        for edge in self.edges:
            out[edge.source].append(edge.target)
        return {key: tuple(value) for key, value in out.items()}

    @cached_property
    def predecessors(self) -> dict[int, tuple[int, ...]]:
        into: dict[int, list[int]] = {node.id: [] for node in self.nodes}
        for edge in self.edges:
            into[edge.target].append(edge.source)
        return {key: tuple(value) for key, value in into.items()}

    @cached_property
    def output_cost(self) -> dict[int, float]:
        """Transfer cost of each node's output (0 for nodes without outgoing edges)."""
        cost = {node.id: 0.0 for node in self.nodes}
        for edge in self.edges:
            cost[edge.source] = edge.cost
        return cost

    @cached_property
    def topological_order(self) -> tuple[int, ...]:
        """Node ids in topological order, the smallest ready id first (networkx's lexicographical order)."""
        import networkx as nx  # noqa: PLC0415 - deferred: the multidim CLI path never needs networkx

        return tuple(nx.lexicographical_topological_sort(self.networkx))  # acyclic: checked at construction

    @property
    def is_training(self) -> bool:
        return any(node.is_backward for node in self.nodes)

    @cached_property
    def color_classes(self) -> dict[int, tuple[int, ...]]:
        """Color class -> ids of its nodes."""
        classes: dict[int, list[int]] = {}
        for node in self.nodes:
            if node.color_class is not None:
                classes.setdefault(node.color_class, []).append(node.id)
        return {key: tuple(value) for key, value in classes.items()}

    @cached_property
    def color_groups(self) -> tuple[tuple[int, ...], ...]:
        """The groups before contraction: node sets that must share a device (color classes linked through shared members, else single nodes).

        Ordered by the first topological position of a member; ids sorted within a set.
        """
        if not self.color_classes:  # every node is a group of its own
            return tuple((node_id,) for node_id in self.topological_order)
        import networkx as nx  # noqa: PLC0415 - deferred: the multidim CLI path never needs networkx

        linked = nx.utils.UnionFind(node.id for node in self.nodes)
        for members in self.color_classes.values():
            linked.union(*members)
        groups: dict[int, list[int]] = {}
        for node_id in self.topological_order:
            groups.setdefault(linked[node_id], []).append(node_id)
        return tuple(tuple(sorted(m)) for m in groups.values())

    def to_dict(self) -> dict[str, Any]:
        """The graph in the paper's JSON format (unknown keys kept; no device fields).

        :func:`placement.io.graph_to_dict` adds the devices; :attr:`digest` hashes this.
        """
        out: dict[str, Any] = dict(self.extra)
        nodes = []
        for node in self.nodes:
            raw: dict[str, Any] = dict(node.extra)
            raw.update(
                id=node.id,
                supportedOnFpga=int(node.supported_on_accelerator),
                cpuLatency=node.cpu_latency,
                fpgaLatency=node.accelerator_latency,
                isBackwardNode=int(node.is_backward),
                size=node.size,
            )
            if node.name:
                raw["name"] = node.name
            if node.color_class is not None:
                raw["colorClass"] = node.color_class
            if node.kind_latency:
                raw["latencies"] = dict(node.kind_latency)
            if node.allowed_kinds is not None:
                raw["kinds"] = list(node.allowed_kinds)
            nodes.append(raw)
        edges = []
        for edge in self.edges:
            raw = dict(edge.extra)
            raw.update(sourceId=edge.source, destId=edge.target, cost=edge.cost)
            if edge.size is not None:
                raw["size"] = edge.size
            edges.append(raw)
        out["nodes"] = nodes
        out["edges"] = edges
        return out

    @cached_property
    def digest(self) -> str:
        """A stable content hash of :meth:`to_dict` (a cache key of the app, and the id in shared links).

        Invariant: the value of a given graph never changes (links in the wild name graphs by it).
        """
        import hashlib  # noqa: PLC0415 - here, not at import: 3 ms of every command line's start-up

        text = json.dumps(self.to_dict(), sort_keys=True, default=str)
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def with_latency_scale(self, pattern: str, factor: float, *, accelerator: bool = True, cpu: bool = True) -> Graph:
        """Return a copy whose nodes with a name matching ``pattern`` run ``factor`` x as long.

        Parameters
        ----------
        pattern : str
            A case-insensitive glob matched anywhere in node names (``attention|softmax``,
            ``layer.1[0-9]``, ``^embed``; see :mod:`placement.patterns`), matched in bounded time.
        factor : float
            Multiplier on latency (0.6 means 40 % faster).
        """
        from .patterns import compile_pattern

        factor = _check_number(factor, "latency factor", InvalidGraphError)
        matcher = compile_pattern(pattern)
        nodes = []
        for node in self.nodes:
            if matcher.matches(node.name):
                node = replace(
                    node,
                    cpu_latency=node.cpu_latency * factor if cpu else node.cpu_latency,
                    accelerator_latency=node.accelerator_latency * factor if accelerator else node.accelerator_latency,
                    kind_latency=tuple((k, v * factor) for k, v in node.kind_latency)
                    if accelerator
                    else node.kind_latency,
                )
            nodes.append(node)
        return replace(self, nodes=tuple(nodes))


@dataclass(frozen=True)
class AcceleratorKind:
    """One kind of accelerator in the inventory.

    Parameters
    ----------
    name : str
        Unique name (not ``"cpu"``).
    count : int
        How many devices of this kind exist.
    memory : float
        Bytes per device (``inf`` for unlimited).
    speed : float
        Throughput multiplier: a node runs ``accelerator_latency / speed``, or the graph's latency
        for this kind / speed where the graph gives one (model builders, ONNX imports).
    bandwidth : float
        Link-bandwidth multiplier: transfers to/from this kind take ``cost / bandwidth``.
    price_per_hour : float
        Optional price of one device per hour.
    """

    name: str = "accelerator"
    count: int = 1
    memory: float = math.inf
    speed: float = 1.0
    bandwidth: float = 1.0
    price_per_hour: float = 0.0

    def __post_init__(self) -> None:
        where = f"accelerator kind {quote(self.name, 40)}"
        if not isinstance(self.name, str) or not self.name or self.name == CPU_KIND:
            raise InvalidDevicesError(f"{where}: name must be a non-empty string other than 'cpu'")
        if isinstance(self.count, bool) or not isinstance(self.count, int) or self.count < 0:
            raise InvalidDevicesError(f"{where}: count must be a non-negative integer (got {self.count!r})")
        if self.count > MAX_DEVICE_COUNT:
            raise InvalidDevicesError(f"{where}: count must be at most {MAX_DEVICE_COUNT:,} (got {self.count:,})")
        object.__setattr__(self, "memory", _check_number(self.memory, f"{where}: memory", InvalidDevicesError, True))
        for attr in ("speed", "bandwidth"):
            value = _check_number(getattr(self, attr), f"{where}: {attr}", InvalidDevicesError)
            if value == 0:
                raise InvalidDevicesError(f"{where}: {attr} must be positive")
            object.__setattr__(self, attr, value)
        object.__setattr__(
            self, "price_per_hour", _check_number(self.price_per_hour, f"{where}: price_per_hour", InvalidDevicesError)
        )


@dataclass(frozen=True)
class Devices:
    """The device inventory: accelerator kinds plus CPU cores.

    Parameters
    ----------
    accelerators : tuple of AcceleratorKind
        The accelerator kinds (the paper's model has exactly one).
    cpus : int
        Number of CPU cores (each runs nodes at ``cpu_latency``; pays no communication unless
        ``cpu_bandwidth`` is set).
    bandwidth : float
        Global link-bandwidth multiplier (transfers take ``cost / (bandwidth * kind.bandwidth)``).
    overlap : bool
        If True an accelerator's load is ``max(compute, communication)`` instead of their sum
        (the paper's appendix variant).
    cpu_price_per_hour : float
        Optional price of one CPU core per hour.
    cpu_bandwidth : float or None
        None (default, the paper's model): CPU cores pay no communication. A positive number:
        a CPU core pays communication like an accelerator - the cost of every node with an
        edge crossing the boundary of its node set, once per core, divided by
        ``bandwidth * cpu_bandwidth`` - and with ``overlap`` its load is
        ``max(compute, communication)``. Single-sample latency ignores it (see
        :mod:`placement.evaluate`).
    """

    accelerators: tuple[AcceleratorKind, ...] = (AcceleratorKind(),)
    cpus: int = 0
    bandwidth: float = 1.0
    overlap: bool = False
    cpu_price_per_hour: float = 0.0
    cpu_bandwidth: float | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "accelerators", tuple(self.accelerators))
        names = [kind.name for kind in self.accelerators]
        if len(set(names)) != len(names):
            duplicate = next(name for name in names if names.count(name) > 1)
            raise InvalidDevicesError(f"accelerator kinds: duplicate kind name {quote(duplicate, 40)}")
        if isinstance(self.cpus, bool) or not isinstance(self.cpus, int) or self.cpus < 0:
            raise InvalidDevicesError(f"cpus must be a non-negative integer (got {self.cpus!r})")
        if self.cpus > MAX_DEVICE_COUNT:
            raise InvalidDevicesError(f"cpus must be at most {MAX_DEVICE_COUNT:,} CPU cores (got {self.cpus:,})")
        bandwidth = _check_number(self.bandwidth, "bandwidth factor", InvalidDevicesError)
        if bandwidth == 0:
            raise InvalidDevicesError("bandwidth factor must be positive")
        object.__setattr__(self, "bandwidth", bandwidth)
        if self.cpu_bandwidth is not None:
            cpu_bandwidth = _check_number(self.cpu_bandwidth, "CPU bandwidth", InvalidDevicesError)
            if cpu_bandwidth == 0:
                raise InvalidDevicesError("CPU bandwidth must be positive (or None: CPU cores pay no communication)")
            object.__setattr__(self, "cpu_bandwidth", cpu_bandwidth)

    @classmethod
    def paper(cls, accelerators: int, cpus: int, memory: float = math.inf) -> Devices:
        """The paper's inventory: ``accelerators`` identical devices of ``memory`` bytes and ``cpus`` cores."""
        return cls(accelerators=(AcceleratorKind("accelerator", accelerators, memory),), cpus=cpus)

    @property
    def accelerator_count(self) -> int:
        return sum(kind.count for kind in self.accelerators)

    def kind(self, name: str) -> AcceleratorKind:
        for kind in self.accelerators:
            if kind.name == name:
                return kind
        raise InvalidDevicesError(f"no accelerator kind named {quote(name, 40)}")

    def slots(self) -> tuple[DeviceSlot, ...]:
        """Every device of the inventory: accelerators kind by kind, then CPU cores."""
        slots = [DeviceSlot(kind.name, i) for kind in self.accelerators for i in range(kind.count)]
        slots += [DeviceSlot(CPU_KIND, i) for i in range(self.cpus)]
        return tuple(slots)

    def transfer_scale(self, kind: AcceleratorKind) -> float:
        """Factor applied to transfer costs on an accelerator of ``kind``."""
        return 1.0 / (self.bandwidth * kind.bandwidth)

    @property
    def cpu_transfer_scale(self) -> float:
        """Factor applied to transfer costs on a CPU core: 0 when ``cpu_bandwidth`` is None (no communication)."""
        if self.cpu_bandwidth is None:
            return 0.0
        return 1.0 / (self.bandwidth * self.cpu_bandwidth)

    def with_changes(self, **changes: Any) -> Devices:
        """A copy with fields replaced (``accelerators=``, ``cpus=``, ``bandwidth=``, ``overlap=``, ``cpu_bandwidth=``)."""
        return replace(self, **changes)

    def with_kind(self, name: str, **changes: Any) -> Devices:
        """A copy with one accelerator kind's fields replaced (``count=``, ``memory=``, ``speed=``, ...)."""
        self.kind(name)
        kinds = tuple(replace(kind, **changes) if kind.name == name else kind for kind in self.accelerators)
        return replace(self, accelerators=kinds)


@dataclass(frozen=True)
class Problem:
    """A graph and the devices to place it on.

    Rule checked at construction: no sum of the numbers that make up loads, latencies or
    memory (all compute times of the nodes on one kind of device, all transfer costs at the
    slowest link, all sizes) overflows to infinity, so that every load a solver or the
    evaluator computes is a finite number.
    """

    graph: Graph
    devices: Devices

    def __post_init__(self) -> None:
        _check_sums(self.graph, self.devices)


def _check_sums(graph: Graph, devices: Devices) -> None:
    largest = f"{sys.float_info.max:.4g}"
    scales = [devices.transfer_scale(kind) for kind in devices.accelerators] + [devices.cpu_transfer_scale]
    communication = sum(graph.output_cost.values()) * max(scales)
    totals = [("cpuLatency", "on a CPU core", sum(node.cpu_latency for node in graph.nodes))]
    totals += [
        (
            "fpgaLatency",
            f"on accelerator kind {quote(kind.name, 40)} (speed {kind.speed:g})",
            sum(node.latency_on(kind) for node in graph.nodes),
        )
        for kind in devices.accelerators
    ]
    for field_name, where, compute in totals:
        if math.isinf(compute) or math.isinf(compute + communication):
            what = "latencies" if math.isinf(compute) else "latencies plus transfer costs"
            raise InvalidGraphError(
                f"graph: the nodes' {what} ('{field_name}', 'cost') sum to more than {largest} {where}: a load "
                "would overflow to infinity; express times in a larger unit"
            )
    if math.isinf(communication):
        raise InvalidGraphError(
            f"graph: the edges' transfer costs ('cost') sum to more than {largest}: a load would "
            "overflow to infinity; express times in a larger unit"
        )
    if math.isinf(sum(node.size for node in graph.nodes)):
        raise InvalidGraphError(
            f"graph: the nodes' sizes ('size') sum to more than {largest}: memory would overflow "
            "to infinity; express sizes in a larger unit"
        )


@dataclass(frozen=True, order=True)
class DeviceSlot:
    """One device: its kind (``"cpu"`` for a CPU core) and index within the kind."""

    kind: str
    index: int

    @property
    def is_cpu(self) -> bool:
        return self.kind == CPU_KIND

    def __str__(self) -> str:
        return f"{self.kind} {self.index}"


@dataclass(frozen=True)
class Stage:
    """The nodes one device runs.

    ``calls`` (optional, accelerators only) splits the nodes into subgraphs run one after
    another as separate calls, in order; used by the latency model. Without it the device
    runs its nodes as one call.
    """

    device: DeviceSlot
    nodes: tuple[int, ...]
    calls: tuple[tuple[int, ...], ...] | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "nodes", tuple(sorted(self.nodes)))
        if self.calls is not None:
            calls = tuple(tuple(sorted(call)) for call in self.calls if call)
            flat = sorted(n for call in calls for n in call)
            if flat != list(self.nodes):
                raise InvalidSplitError(f"{self.device}: its calls do not partition its nodes")
            object.__setattr__(self, "calls", calls)


@dataclass(frozen=True)
class Placement:
    """Stages for (some of) the devices; for contiguous splits, in pipeline order."""

    stages: tuple[Stage, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "stages", tuple(self.stages))
        seen: dict[int, DeviceSlot] = {}
        devices: set[DeviceSlot] = set()
        for stage in self.stages:
            if stage.device in devices:
                raise InvalidSplitError(f"{stage.device}: listed twice")
            devices.add(stage.device)
            for node in stage.nodes:
                if node in seen:
                    raise InvalidSplitError(f"node {node}: placed on both {seen[node]} and {stage.device}")
                seen[node] = stage.device

    @cached_property
    def device_of(self) -> dict[int, DeviceSlot]:
        return {node: stage.device for stage in self.stages for node in stage.nodes}

    def stage_of(self, device: DeviceSlot) -> Stage | None:
        for stage in self.stages:
            if stage.device == device:
                return stage
        return None

    @classmethod
    def from_assignment(
        cls, assignment: Mapping[int, DeviceSlot], order: Iterable[DeviceSlot] | None = None
    ) -> Placement:
        """Build a placement from ``node -> device``; stages follow ``order`` (else sorted devices)."""
        groups: dict[DeviceSlot, list[int]] = {}
        for node, device in assignment.items():
            groups.setdefault(device, []).append(node)
        keys = list(order) if order is not None else sorted(groups)
        keys += [device for device in sorted(groups) if device not in keys]
        return cls(tuple(Stage(device, tuple(groups[device])) for device in keys if device in groups))


@dataclass(frozen=True)
class Result:
    """The outcome of one solve: plain values only.

    ``status`` is one of ``"optimal"`` (proven), ``"feasible"`` (a solution, optimality not
    proven: see ``bound`` and ``gap``), ``"infeasible"`` (proven: see ``reason``),
    ``"no solution"`` (none found within the limits) or ``"error"``.
    ``objective`` is the time per sample (throughput) or the single-sample latency.
    """

    status: str
    method: str
    objective: float | None
    placement: Placement | None
    seconds: float
    objective_kind: str = "throughput"
    reason: str | None = None
    bound: float | None = None
    gap: float | None = None
    stats: tuple[tuple[str, Any], ...] = ()

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"unknown status {self.status!r}")
        object.__setattr__(self, "status", Status(self.status))
        if self.objective_kind in tuple(Objective):
            object.__setattr__(self, "objective_kind", Objective(self.objective_kind))
        object.__setattr__(self, "stats", tuple(self.stats))

    @property
    def ok(self) -> bool:
        """True when a placement is available."""
        return self.placement is not None and self.status in (Status.OPTIMAL, Status.FEASIBLE)

    def stat(self, key: str, default: Any = None) -> Any:
        return dict(self.stats).get(key, default)


def make_result(
    method: str,
    status: str,
    *,
    started: float | None = None,
    seconds: float | None = None,
    objective: float | None = None,
    placement: Placement | None = None,
    objective_kind: str = "throughput",
    reason: str | None = None,
    bound: float | None = None,
    gap: float | None = None,
    stats: Mapping[str, Any] | Iterable[tuple[str, Any]] = (),
) -> Result:
    """Build a :class:`Result`, timing it from ``started`` (a :func:`time.perf_counter` reading).

    The one builder of results: ``seconds`` is measured here from ``started``, or given as
    ``seconds`` (a result rebuilt from stored values); ``stats`` may be a dict.

    Examples
    --------
    >>> import time
    >>> result = make_result("dp", "infeasible", started=time.perf_counter(), reason="no accelerator")
    >>> result.status == "infeasible", result.status is Status.INFEASIBLE, result.ok
    (True, True, False)
    """
    if (started is None) == (seconds is None):
        raise TypeError("make_result takes exactly one of started and seconds")
    if seconds is None:
        seconds = time.perf_counter() - cast(float, started)
    if isinstance(stats, Mapping):
        stats = tuple(stats.items())
    return Result(status, method, objective, placement, seconds, objective_kind, reason, bound, gap, tuple(stats))
