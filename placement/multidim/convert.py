"""Options (TMPCs) for the package's own graphs: paper format, model builders and ONNX imports.

:func:`options_from_graph` turns a :class:`~placement.model.Graph` (or a :class:`~placement.model.Problem`)
into a :class:`~.model.MultiProblem` of Piper's model. The formulas, with units, are in the docs page
``docs/models/piper.md`` (section "Our graphs in Piper's model"); in short:

* **Training.** Piper's model is a training model (p is forward + backward, edges are charged twice, weights
  are resynchronised). A forward-only graph is first turned into its training graph
  (:func:`placement.modelling.training.training_graph`: backward = ``backward_factor`` x forward, gradient
  bytes = weight bytes). Every color class (a forward node with its backward node) becomes one node of the
  model; classes whose forward edges form a cycle are merged (strongly connected components). Only forward
  edges order and connect the model's nodes (Piper doubles them for the gradient); a backward node with no
  forward node in its class is a node of its own without edges.
* **Per node (t = 1, "vanilla").** ``p = F + Bw`` ms (F, Bw: summed reference-kind latencies in ms of
  the forward and backward members), ``w`` = forward ``size`` (bytes of weights), memory constant
  ``b`` = all members' ``size`` (weights + gradients), memory per microbatch in flight ``a`` = the forward
  members' ``bytesWritten`` (every activation kept for the backward; roofline graphs) or else the node's
  output bytes X. The constant also holds the optimizer state, ``optimizer_multiplier`` x ``w`` (default:
  mixed-precision Adam for the graph's weight type, the app's training memory model).
* **Tensor parallel (t > 1, roofline graphs only).** A node is split Megatron-style when one of its operators
  is a matrix product or an embedding (:data:`TP_OPS`): ``p_t = p / t + 2 * AR_t`` with the ring all-reduce
  ``AR_t = 1000 * 2 (t - 1) / t * X / bandwidth`` ms (one in the forward, one in the backward, X = the node's output
  bytes), ``w_t = w / t``, ``b_t = b / t``, ``a_t = a / t`` (sequence parallelism splits the rest of the
  layer too). Any other node is replicated on the t devices with its full time and memory.
* **Activation recompute (roofline graphs only).** Keep only the node's input (``a_r = I``, I = bytes of
  its forward inputs); the forward runs again in the backward: ``p_r = p_t + F / t + AR_t`` (the
  replicated nodes: ``+ F``); the working memory of one recomputation goes to the constant:
  ``b_r = b_t + (a_t - I)``. Offered only where ``I < a_t``.
* **Paper-format graphs** (no roofline data: no ``flops`` in ``node.extra``): the only option is t = 1,
  vanilla; d comes from replication (each replica holds ``b`` and resynchronises ``w``).

Edge bytes are the edge's ``size`` when known, else ``cost / 1000 * bandwidth`` (the bytes that take
``cost`` ms on the link). The bandwidth (bytes/s) defaults to the one the graph's edges imply
(median of size / cost), else :data:`DEFAULT_BANDWIDTH`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from ..condense import condense
from ..errors import InvalidDevicesError, InvalidGraphError, PlacementError
from ..model import Graph, Node, Problem, Recompute
from .model import MS_PER_S, DeviceKind, MultiProblem, NodeOption, PEdge, PNode

#: Operators that Megatron-style tensor parallelism splits (matrix products, attention, embeddings).
TP_OPS = frozenset({"MatMul", "Gemm", "Einsum", "Attention", "MultiHeadAttention", "Embedding", "MatMulInteger"})

#: Tensor-parallel degrees generated for roofline graphs (Piper's workloads use the same).
DEFAULT_DEGREES = (1, 2, 4, 8)

#: Link bandwidth (bytes/s) when neither the caller nor the graph's edges give one (Piper's BERT setting).
DEFAULT_BANDWIDTH = 25e9

#: Microbatches per batch N when the caller gives none.
DEFAULT_MICROBATCHES = 512

#: Memory per device (bytes) standing for "unlimited" (the model needs a finite cap).
UNLIMITED_MEMORY = float(2**80)

#: Names of the two kinds of option.
VANILLA, RECOMPUTE = "vanilla", "activation recomp"


def _ops(node: Node) -> set[str]:
    ops = {str(o) for o in node.extra.get("ops", ()) or ()}
    if "op" in node.extra:
        ops.add(str(node.extra["op"]))
    return ops


def _is_roofline(graph: Graph) -> bool:
    """Whether the graph carries roofline data (every node has ``flops``): builders and ONNX imports."""
    return all("flops" in node.extra for node in graph.nodes)


def _groups(graph: Graph) -> list[list[int]]:
    """Node ids per model node: color classes (forward + backward), merged along forward cycles.

    Returned in a topological order of the forward edges between groups (ties: first node position).
    """
    label: dict[int, object] = {}
    first: dict[object, int] = {}  # label -> position of its first node (graph.nodes order)
    for position, node in enumerate(graph.nodes):
        label[node.id] = ("class", node.color_class) if node.color_class is not None else ("node", node.id)
        first.setdefault(label[node.id], position)
    node_of = graph.node_by_id
    forward = [
        (label[e.source], label[e.target])
        for e in graph.edges
        if not (node_of[e.source].is_backward or node_of[e.target].is_backward)
    ]
    group_of, _ = condense(first, forward, first.__getitem__)
    members: list[list[int]] = [[] for _ in range(len(set(group_of.values())))]
    for node in graph.nodes:  # in position order: each group's members come out sorted by position
        members[group_of[label[node.id]]].append(node.id)
    return members


def _bandwidth_of(graph: Graph) -> float | None:
    """The link bandwidth (bytes/s) the edges imply: median of size / (cost in s), None without both."""
    ratios = [e.size / (e.cost / 1000.0) for e in graph.edges if e.size and e.cost > 0]
    from statistics import median  # noqa: PLC0415 - graphs without sizes never need it (start-up of the CLI)

    return float(median(ratios)) if ratios else None


def options_from_graph(
    source: Graph | Problem,
    *,
    devices: int | None = None,
    memory: float | None = None,
    bandwidth: float | None = None,
    microbatches: int = DEFAULT_MICROBATCHES,
    degrees: Iterable[int] = DEFAULT_DEGREES,
    recompute: Recompute | str | bool = Recompute.PER_STAGE,
    backward_factor: float = 2.0,
    optimizer_multiplier: float | None = None,
) -> MultiProblem:
    """The multidimensional (Piper) model of one of our graphs, with options generated per node.

    Parameters
    ----------
    source : Graph or Problem
        A paper-format graph, a builder graph or an ONNX import (forward-only or training). With a
        Problem, its first accelerator kind gives the default device count and memory.
    devices : int, optional
        Total devices (default: the Problem's accelerators of the first kind, else 8).
    memory : float, optional
        Bytes per device (default: the Problem's first kind; unlimited stands as :data:`UNLIMITED_MEMORY`).
    bandwidth : float, optional
        Bytes/s of each device's link: prices edges, resyncs and the tensor-parallel all-reduce
        (default: implied by the graph's edges, else :data:`DEFAULT_BANDWIDTH`).
    microbatches : int
        N, microbatches per batch.
    degrees : iterable of int
        Tensor-parallel degrees to generate (roofline graphs only; 1 is always included).
    recompute : Recompute, str or bool
        ``"per-stage"`` (the default; or True): add the "activation recomp" option where it saves memory
        (roofline graphs only), so the planner chooses per node; ``"none"`` (or False): no such option.
        ``"always"`` is refused (Piper's model has no forced recomputation).
    backward_factor : float
        Backward / forward latency used when ``source`` is forward-only.
    optimizer_multiplier : float, optional
        Optimizer state per byte of forward weights, added to the memory constant ``b`` (default: Adam with
        mixed precision for the graph's weight type, as every page's training memory model:
        :func:`placement.pipeline.memory.default_optimizer_multiplier`; 0 leaves it out).

    Returns
    -------
    MultiProblem
        Nodes numbered in a topological order; ``PNode.name`` lists the member names.

    Raises
    ------
    InvalidGraphError, InvalidDevicesError, PlacementError
        One line naming the parameter and the rule broken.
    """
    from ..modelling.training import training_graph  # noqa: PLC0415
    from ..pipeline.memory import resolve_optimizer_multiplier  # noqa: PLC0415

    # Piper chooses recomputation per node; True (offer it) is that choice, not "always".
    choice = Recompute.PER_STAGE if recompute is True else Recompute.of(recompute)
    if choice is Recompute.ALWAYS:
        raise PlacementError("recompute must be 'per-stage' or 'none' here (Piper's model chooses per node)")
    graph, kind, devices, memory, bandwidth = _checked_devices(source, devices, memory, bandwidth)
    if isinstance(microbatches, bool) or not isinstance(microbatches, int) or microbatches < 1:
        raise InvalidGraphError(f"microbatches must be a positive integer (got {microbatches!r})")
    ts = sorted({1, *degrees})
    for t in ts:
        if isinstance(t, bool) or not isinstance(t, int) or t < 1:
            raise InvalidGraphError(f"tensor-parallel degrees must be positive integers (got {t!r})")
    if optimizer_multiplier is not None and (
        isinstance(optimizer_multiplier, bool)
        or not isinstance(optimizer_multiplier, (int, float))
        or not math.isfinite(optimizer_multiplier)
        or optimizer_multiplier < 0
    ):
        raise InvalidGraphError(f"optimizer multiplier must be a finite number >= 0 (got {optimizer_multiplier!r})")
    opt_mult = resolve_optimizer_multiplier(graph, optimizer_multiplier)
    roofline = _is_roofline(graph)
    if not graph.is_training:
        graph = training_graph(graph, backward_factor)
    groups = _groups(graph)
    flow = _Flow(graph, groups, bandwidth)
    node_of = graph.node_by_id
    any_split = roofline and any(_ops(node_of[v]) & TP_OPS for vs in groups for v in vs)
    use_ts = ts if any_split else [1]
    offer = roofline and choice is Recompute.PER_STAGE
    nodes = [
        _node(g, [node_of[v] for v in vs], flow, use_ts, roofline, offer, opt_mult, bandwidth)
        for g, vs in enumerate(groups)
    ]
    kinds = (DeviceKind(kind.name if kind is not None else "accelerator", int(devices), memory, float(bandwidth)),)
    return MultiProblem(tuple(nodes), tuple(flow.edges), kinds, microbatches)


def _checked_devices(source, devices, memory, bandwidth) -> tuple[Graph, Any, int, float, float]:
    """The graph, the Problem's first accelerator kind (or None) and the checked devices, memory, bandwidth."""
    graph = source.graph if isinstance(source, Problem) else source
    if not isinstance(graph, Graph):
        raise InvalidGraphError(f"options_from_graph: expected a Graph or Problem (got {type(source).__name__})")
    kind = source.devices.accelerators[0] if isinstance(source, Problem) and source.devices.accelerators else None
    if devices is None:
        devices = kind.count if kind is not None else 8
    if isinstance(devices, bool) or not isinstance(devices, int) or devices < 0:
        raise InvalidDevicesError(f"devices must be a non-negative integer (got {devices!r})")
    if memory is None:
        memory = kind.memory if kind is not None else math.inf
    if isinstance(memory, bool) or not isinstance(memory, (int, float)) or math.isnan(memory) or memory <= 0:
        raise InvalidDevicesError(f"memory must be a positive number of bytes (got {memory!r})")
    memory = min(float(memory), UNLIMITED_MEMORY)
    if bandwidth is None:
        bandwidth = _bandwidth_of(graph) or DEFAULT_BANDWIDTH
    if (
        isinstance(bandwidth, bool)
        or not isinstance(bandwidth, (int, float))
        or not math.isfinite(bandwidth)
        or bandwidth <= 0
    ):
        raise InvalidDevicesError(f"bandwidth must be a positive finite number of bytes/s (got {bandwidth!r})")
    return graph, kind, devices, memory, bandwidth


class _Flow:
    """The model's edges between groups and the bytes around each group (forward edges only).

    ``out_bytes[v]``: bytes of forward node v's output (largest of its edges); ``edges``: one
    :class:`~.model.PEdge` per pair of groups (each source node's bytes counted once per target group);
    ``in_bytes[g]``: bytes entering group g; ``leaving[g]``: its nodes whose output leaves it.
    """

    def __init__(self, graph: Graph, groups: list[list[int]], bandwidth: float) -> None:
        node_of = graph.node_by_id
        group_of = {v: g for g, vs in enumerate(groups) for v in vs}

        def edge_bytes(cost: float, size: float | None) -> float:
            return float(size) if size is not None else cost / 1000.0 * bandwidth

        self.out_bytes: dict[int, float] = {}
        for e in graph.edges:
            if not node_of[e.source].is_backward:
                self.out_bytes[e.source] = max(self.out_bytes.get(e.source, 0.0), edge_bytes(e.cost, e.size))
        pairs: dict[tuple[int, int], set[int]] = {}
        for e in graph.edges:
            if node_of[e.source].is_backward or node_of[e.target].is_backward:
                continue
            gu, gv = group_of[e.source], group_of[e.target]
            if gu != gv:
                pairs.setdefault((gu, gv), set()).add(e.source)
        self.in_bytes = [0.0] * len(groups)
        self.leaving: list[set[int]] = [set() for _ in groups]
        self.edges = []
        for (gu, gv), sources in sorted(pairs.items()):
            nbytes = sum(self.out_bytes[u] for u in sources)
            self.edges.append(PEdge(gu, gv, nbytes))
            self.in_bytes[gv] += nbytes
            self.leaving[gu] |= sources


def _node(
    g: int, members: list[Node], flow: _Flow, use_ts, roofline: bool, offer: bool, opt_mult: float, bandwidth: float
) -> PNode:
    """Model node g (its members: a color class) with its options at every degree of ``use_ts`` (times in ms)."""
    forward = [n for n in members if not n.is_backward]
    backward = [n for n in members if n.is_backward]
    f_ms = sum(n.accelerator_latency for n in forward)
    b_ms = sum(n.accelerator_latency for n in backward)
    weights = sum(n.size for n in forward)
    constant = weights + sum(n.size for n in backward) + opt_mult * weights
    x = sum(flow.out_bytes.get(v, 0.0) for v in flow.leaving[g])  # output bytes leaving the node
    if roofline and forward and all("bytesWritten" in n.extra for n in forward):
        stored = float(sum(n.extra["bytesWritten"] for n in forward))
    else:
        stored = x
    split = roofline and any(_ops(n) & TP_OPS for n in forward)
    options = {}
    for t in use_ts:
        k = t if split else 1
        allreduce = MS_PER_S * 2 * (t - 1) / t * x / bandwidth if split else 0.0  # ms
        vanilla = NodeOption(VANILLA, (f_ms + b_ms) / k + 2 * allreduce, weights / k, stored / k, constant / k)
        opts = [vanilla]
        checkpoint = flow.in_bytes[g]
        if offer and forward and checkpoint < stored / k:
            opts.append(
                NodeOption(
                    RECOMPUTE,
                    vanilla.time + f_ms / k + allreduce,
                    weights / k,
                    checkpoint,
                    constant / k + stored / k - checkpoint,
                )
            )
        options[t] = tuple(opts)
    name = " + ".join(dict.fromkeys(n.label.removesuffix(" (grad)") for n in forward or backward))
    return PNode(g, name, tuple(options.items()))


def inventory_kinds(source: Problem, bandwidth: float) -> tuple[DeviceKind, ...]:
    """The inventory's accelerator kinds as device kinds of Piper's model (counts, memory, speed, bandwidth).

    Parameters
    ----------
    source : Problem
        The graph and the inventory (:class:`~placement.model.Devices`); CPU cores are left out.
    bandwidth : float
        Bytes/s of the reference link (the one :func:`options_from_graph` prices edges with); each kind gets
        ``bandwidth x devices.bandwidth x kind.bandwidth`` (the inventory's multipliers).

    Returns
    -------
    tuple of DeviceKind
        One per accelerator kind with devices, in inventory order. ``speed`` is the kind's speed relative to
        the reference times of :func:`options_from_graph`: the sum of the graph's reference latencies over
        the sum of its latencies on the kind (:meth:`~placement.model.Node.latency_on`: the graph's own
        latency for the kind where a builder or import gives one, divided by the inventory's speed).
        Unlimited memory stands as :data:`UNLIMITED_MEMORY`.

    Raises
    ------
    InvalidDevicesError
        When the inventory has no accelerator, or the bandwidth is not a positive finite number.
    """
    if not math.isfinite(bandwidth) or bandwidth <= 0:
        raise InvalidDevicesError(f"bandwidth must be a positive finite number of bytes/s (got {bandwidth!r})")
    devices = source.devices
    kinds = [k for k in devices.accelerators if k.count > 0]
    if not kinds:
        raise InvalidDevicesError("devices: the inventory has no accelerator (Piper's model plans accelerators)")
    nodes = [n for n in source.graph.nodes if n.supported_on_accelerator]
    reference = sum(n.accelerator_latency for n in nodes)
    out = []
    for k in kinds:
        on_kind = sum(n.latency_on(k) for n in nodes)
        speed = reference / on_kind if reference > 0 and on_kind > 0 else k.speed
        memory = min(float(k.memory), UNLIMITED_MEMORY)
        out.append(DeviceKind(k.name, int(k.count), memory, float(bandwidth) * devices.bandwidth * k.bandwidth, speed))
    return tuple(out)
