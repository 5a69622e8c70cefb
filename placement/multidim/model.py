"""Frozen data of the multidimensional model: options, nodes, device kinds, plans.

Units are the package's: times in **ms** per sample, sizes in bytes, bandwidth in bytes per second (a
transfer of b bytes takes ``b / kind.bytes_per_ms`` ms). Piper's files give seconds: :mod:`.io` converts
at that boundary. Every dataclass is validated at construction.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from ..condense import longest_path_levels
from ..errors import InvalidDevicesError, InvalidGraphError, InvalidSplitError, quote


def _check(value: float, where: str, error=InvalidGraphError, positive: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise error(f"{where}: must be a finite number (got {value!r})")
    if value < 0 or (positive and value == 0):
        raise error(f"{where}: must be {'positive' if positive else 'non-negative'} (got {value!r})")
    return float(value)


#: Milliseconds per second (Piper's files give seconds; the package works in ms).
MS_PER_S = 1000.0


@dataclass(frozen=True)
class NodeOption:
    """One way to run a node at a tensor-parallel degree (Piper's TMPC).

    Attributes
    ----------
    name : str
        E.g. ``"vanilla"`` or ``"activation recomp"``.
    time : float
        p: forward + backward compute time for one sample on each of the t devices (ms).
    parameters : float
        w: parameter bytes held by each device (enters the data-parallel resync).
    memory_a, memory_b : float
        Memory per device is ``memory_a * y + memory_b`` with y microbatches in flight.
    sync_fw : tuple of (int, float)
        Predecessor id -> extra bytes on that edge (tensor-parallel gather), forward.
    sync_bw : tuple of (int, float)
        Successor id -> extra bytes on that edge, backward.
    """

    name: str
    time: float
    parameters: float = 0.0
    memory_a: float = 0.0
    memory_b: float = 0.0
    sync_fw: tuple = ()
    sync_bw: tuple = ()

    def __post_init__(self) -> None:
        where = f"option {self.name!r}"
        for attr in ("time", "parameters", "memory_a", "memory_b"):
            object.__setattr__(self, attr, _check(getattr(self, attr), f"{where}: {attr}"))
        for attr in ("sync_fw", "sync_bw"):
            pairs = tuple(
                sorted((int(k), _check(v, f"{where}: {attr}[{k}]")) for k, v in dict(getattr(self, attr)).items())
            )
            object.__setattr__(self, attr, pairs)

    def sync_from(self, pred: int) -> float:
        """Extra forward bytes on the edge from ``pred`` (0 when not listed)."""
        return dict(self.sync_fw).get(pred, 0.0)

    def sync_to(self, succ: int) -> float:
        """Extra backward bytes on the edge to ``succ`` (0 when not listed)."""
        return dict(self.sync_bw).get(succ, 0.0)


@dataclass(frozen=True)
class PNode:
    """A node with its options per tensor-parallel degree t (``options``: tuple of (t, tuple of NodeOption))."""

    id: int
    name: str
    options: tuple

    def __post_init__(self) -> None:
        opts = tuple(sorted((int(t), tuple(o)) for t, o in dict(self.options).items()))
        for t, lst in opts:
            if t < 1:
                raise InvalidGraphError(f"node {self.id}: tensor-parallel degree {t} must be >= 1")
            if not lst:
                raise InvalidGraphError(f"node {self.id}: no option for t = {t}")
        if not opts:
            raise InvalidGraphError(f"node {self.id}: no options at all")
        object.__setattr__(self, "options", opts)

    def options_for(self, t: int) -> tuple:
        """Options at degree t (empty tuple when t is not available for this node)."""
        return dict(self.options).get(t, ())

    @property
    def degrees(self) -> tuple[int, ...]:
        return tuple(t for t, _ in self.options)


@dataclass(frozen=True)
class PEdge:
    """Edge ``source -> target`` carrying ``cost`` bytes per sample (each direction, Piper's doubling applies)."""

    source: int
    target: int
    cost: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "cost", _check(self.cost, f"edge {self.source}->{self.target}: communicationCost"))


@dataclass(frozen=True)
class DeviceKind:
    """A kind of device: ``count`` of them, each with ``memory`` bytes, compute ``speed`` (times are divided
    by it) and ``bandwidth`` bytes/s to the outside (:attr:`bytes_per_ms` in the ms formulas)."""

    name: str
    count: int
    memory: float
    bandwidth: float
    speed: float = 1.0

    def __post_init__(self) -> None:
        where = f"device kind {self.name!r}"
        if isinstance(self.count, bool) or not isinstance(self.count, int) or self.count < 0:
            raise InvalidDevicesError(f"{where}: count must be a non-negative integer (got {self.count!r})")
        _check(self.memory, f"{where}: memory", InvalidDevicesError, positive=True)
        _check(self.bandwidth, f"{where}: bandwidth", InvalidDevicesError, positive=True)
        _check(self.speed, f"{where}: speed", InvalidDevicesError, positive=True)

    @property
    def bytes_per_ms(self) -> float:
        """The bandwidth in bytes per ms: a transfer of b bytes takes ``b / bytes_per_ms`` ms."""
        return self.bandwidth / MS_PER_S


@dataclass(frozen=True)
class MultiProblem:
    """Nodes, edges, device kinds and the number N of microbatches per batch."""

    nodes: tuple
    edges: tuple
    kinds: tuple
    microbatches: int

    def __post_init__(self) -> None:
        object.__setattr__(self, "nodes", tuple(self.nodes))
        object.__setattr__(self, "edges", tuple(self.edges))
        object.__setattr__(self, "kinds", tuple(self.kinds))
        ids = [n.id for n in self.nodes]
        if ids != list(range(len(ids))):
            raise InvalidGraphError("nodes: ids must be 0..n-1 in order")
        if isinstance(self.microbatches, bool) or not isinstance(self.microbatches, int) or self.microbatches < 1:
            raise InvalidGraphError(f"mbsInBatch: must be a positive integer (got {self.microbatches!r})")
        if not self.kinds:
            raise InvalidDevicesError("device kinds: at least one kind is needed")
        names = [k.name for k in self.kinds]
        if len(set(names)) != len(names):
            raise InvalidDevicesError(f"device kinds: duplicate name in {names}")
        seen = set()
        for e in self.edges:
            for end in (e.source, e.target):
                if not 0 <= end < len(ids):
                    raise InvalidGraphError(f"edge {e.source}->{e.target}: unknown node {end}")
            if e.source == e.target:
                raise InvalidGraphError(f"edge {e.source}->{e.target}: self-loop")
            if (e.source, e.target) in seen:
                raise InvalidGraphError(f"edge {e.source}->{e.target}: duplicate edge")
            seen.add((e.source, e.target))
        if longest_path_levels(len(ids), seen) is None:  # acyclicity (Kahn); ``seen``: the distinct edges
            raise InvalidGraphError("edges: the graph has a cycle")

    @property
    def total_devices(self) -> int:
        return sum(k.count for k in self.kinds)

    def kind(self, name: str) -> DeviceKind:
        for k in self.kinds:
            if k.name == name:
                return k
        raise InvalidDevicesError(f"no device kind named {quote(name, 40)}")

    def with_devices(self, count: int, kind: str | None = None) -> MultiProblem:
        """A copy with the device count of ``kind`` (default: the only kind) set to ``count``."""
        from dataclasses import replace

        if kind is None:
            if len(self.kinds) != 1:
                raise InvalidDevicesError("with_devices: name the kind (the problem has several)")
            kind = self.kinds[0].name
        self.kind(kind)
        return replace(self, kinds=tuple(replace(k, count=count) if k.name == kind else k for k in self.kinds))


@dataclass(frozen=True)
class PlanStage:
    """One stage: ``nodes`` on d x t devices of ``kind``; ``options[i]`` is the option name of ``nodes[i]``."""

    nodes: tuple
    d: int
    t: int
    options: tuple
    kind: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "nodes", tuple(int(v) for v in self.nodes))
        object.__setattr__(self, "options", tuple(str(o) for o in self.options))
        if not self.nodes:
            raise InvalidSplitError("stage: no nodes")
        if len(self.options) != len(self.nodes):
            raise InvalidSplitError(f"stage {list(self.nodes)}: one option per node is needed")
        for attr in ("d", "t"):
            value = getattr(self, attr)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise InvalidSplitError(f"stage {list(self.nodes)}: {attr} must be a positive integer")


@dataclass(frozen=True)
class Plan:
    """Stages in pipeline order (the union of the first i stages is an ideal for every i)."""

    stages: tuple = field(default_factory=tuple)

    def __post_init__(self) -> None:
        object.__setattr__(self, "stages", tuple(self.stages))


@dataclass(frozen=True)
class StageCost:
    """Evaluated stage: y microbatches in flight, memory per device (bytes), bytes per sample on its edges
    and for the weights' resync, compute (ms per sample on one replica) and stage time (ms per sample)."""

    y: int
    memory: float
    memory_cap: float
    edge_bytes: float
    resync_bytes: float
    compute: float
    time: float

    @property
    def fits(self) -> bool:
        return self.memory <= self.memory_cap


@dataclass(frozen=True)
class PlanEvaluation:
    """Per-stage costs, the time per sample (max stage time, ms), devices used per kind, and feasibility."""

    stages: tuple
    time_per_sample: float
    devices_used: tuple
    feasible: bool
    violations: tuple
