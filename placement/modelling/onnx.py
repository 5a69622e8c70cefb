"""Import an ONNX model as an operator graph priced by the performance model's kernels, and coarsen it.

Safety: models are read **from bytes only** (``onnx.load_model_from_string``, the same as
``onnx.load(..., load_external_data=False)``), with a size cap. A model whose tensors live in
external files (any initializer, sparse initializer or tensor attribute with
``data_location == EXTERNAL``, in the main graph or a subgraph) is refused with a one-line
:class:`~placement.errors.InvalidGraphError` naming the file and the tensor; no path stored
in a model is ever opened.

Graph construction:

* one node per ONNX node, except nodes that compute constants (``Constant``, and any node
  whose inputs are all initializers or constants, e.g. ``ConstantOfShape`` or a transposed
  weight): their outputs count as weights of their consumers;
* ``size`` = bytes of the weights (initializers and constants) the node reads, each
  counted once at its first consumer in file order;
* an edge ``u -> v`` for every tensor produced by ``u`` and read by ``v``; its ``size`` is
  the bytes of all of ``u``'s outputs read by other nodes (the model requires one transfer
  cost per source node), priced on the reference kind's link;
* latencies by :func:`placement.modelling.pricing.price_graph`: matrix products (MatMul, Gemm) and
  convolutions (as implicit GEMMs) by shape with the perf model's GEMM efficiency, every other operator
  as streaming its bytes (``bytes read`` = all input tensors incl. weights, ``bytes written`` = outputs)
  at the achievable copy bandwidth (:func:`placement.modelling.onnx_ops.op_work`).

FLOPs per operator: :mod:`placement.modelling.onnx_ops` (the counting rules are tabled there);
merging operators into layers: :mod:`placement.modelling.coarsen` (both re-exported here).

Symbolic input dimensions are bound (``dims`` by name, else ``default_dim``) before
``onnx.shape_inference.infer_shapes``; tensors whose shape stays unknown count 0 bytes
(also listed in the notes).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import InvalidGraphError, PlacementError, TooManyIdealsError, quote
from ..exact.ideals import count_ideals
from ..model import Graph, Node
from .coarsen import coarsen, coarsen_by_prefix, name_prefix
from .onnx_ops import (
    ELEMENTWISE_OPS,
    MOVE_OPS,
    NORM_OPS,
    REDUCE_OPS,
    VIEW_OPS,
    TensorInfo,
    _dtype_of,
    op_flops,
    op_work,
)
from .pricing import DTYPE_BYTES, price_graph, work_edge, work_extra

__all__ = [
    "ELEMENTWISE_OPS",
    "MAX_DIM",
    "MAX_ONNX_BYTES",
    "MOVE_OPS",
    "NORM_OPS",
    "REDUCE_OPS",
    "REPORT_MAX_IDEALS",
    "VIEW_OPS",
    "ImportReport",
    "TensorInfo",
    "coarsen",
    "coarsen_by_prefix",
    "import_onnx",
    "load_onnx",
    "name_prefix",
    "onnx_graph",
    "op_flops",
    "safe_count_ideals",
    "symbolic_dims",
]

#: Largest ONNX model accepted (bytes); the Streamlit uploader's default limit.
MAX_ONNX_BYTES = 200 * 1024 * 1024


#: Default cap on ideals counted for the before/after report.
REPORT_MAX_IDEALS = 200_000


@dataclass(frozen=True)
class ImportReport:
    """The result of :func:`import_onnx`.

    Attributes
    ----------
    graph : Graph
        The (possibly coarsened) operator graph; ``node.extra`` holds ``flops``, ``bytesRead``,
        ``bytesWritten``, ``dtype`` and ``op``.
    notes : tuple of str
        What was assumed or estimated (bound dimensions, estimated ops, unknown shapes).
    nodes_before : int
        Operator count before coarsening.
    ideals_before, ideals_after : int or None
        Ideal counts of the operator graph and of the coarsened graph (None: over the cap).
    """

    graph: Graph
    notes: tuple[str, ...]
    nodes_before: int
    ideals_before: int | None
    ideals_after: int | None


#: Largest value a symbolic dimension may be bound to (batch, sequence length...).
MAX_DIM = 10_000_000


def _onnx():
    try:
        import onnx  # noqa: PLC0415 - optional heavy dependency, imported on use
    except ImportError as exc:  # pragma: no cover - onnx is in requirements
        raise PlacementError(f"ONNX import needs the 'onnx' package ({exc})") from None
    return onnx


def _iter_graphs(graph) -> Iterable[Any]:
    """The graph and all its subgraphs (If/Loop/Scan bodies), depth first."""
    onnx = _onnx()
    stack = [graph]
    while stack:
        g = stack.pop()
        yield g
        for node in g.node:
            for attr in node.attribute:
                if attr.type == onnx.AttributeProto.GRAPH:
                    stack.append(attr.g)
                elif attr.type == onnx.AttributeProto.GRAPHS:
                    stack.extend(attr.graphs)


def _external_tensors(model) -> Iterable[tuple[str, str]]:
    """(tensor name, external location) of every tensor stored outside the model."""
    onnx = _onnx()
    external = onnx.TensorProto.EXTERNAL

    def location(tensor) -> str:
        for entry in tensor.external_data:
            if entry.key == "location":
                return entry.value
        return "?"

    # Node lists: the main graph and its subgraphs, and every local function (whose nodes may
    # carry tensor attributes and subgraphs of their own).
    graphs = list(_iter_graphs(model.graph))
    node_lists = [list(g.node) for g in graphs]
    for function in model.functions:
        node_lists.append(list(function.node))
        for node in function.node:
            for attr in node.attribute:
                if attr.type == onnx.AttributeProto.GRAPH:
                    bodies = [attr.g]
                elif attr.type == onnx.AttributeProto.GRAPHS:
                    bodies = list(attr.graphs)
                else:
                    continue
                for body in bodies:
                    for g in _iter_graphs(body):
                        graphs.append(g)
                        node_lists.append(list(g.node))
    for g in graphs:
        tensors = list(g.initializer)
        for sparse in g.sparse_initializer:
            tensors += [sparse.values, sparse.indices]
        for tensor in tensors:
            if tensor.data_location == external or len(tensor.external_data):
                yield tensor.name or "<unnamed>", location(tensor)
    for nodes in node_lists:
        tensors = []
        for node in nodes:
            for attr in node.attribute:
                if attr.type == onnx.AttributeProto.TENSOR:
                    tensors.append(attr.t)
                elif attr.type == onnx.AttributeProto.TENSORS:
                    tensors.extend(attr.tensors)
                elif attr.type == onnx.AttributeProto.SPARSE_TENSOR:
                    tensors += [attr.sparse_tensor.values, attr.sparse_tensor.indices]
        for tensor in tensors:
            if tensor.data_location == external or len(tensor.external_data):
                yield tensor.name or "<unnamed>", location(tensor)


def load_onnx(data: bytes, source: str = "<upload>", max_bytes: int = MAX_ONNX_BYTES):
    """Parse ONNX bytes into a ``ModelProto`` without touching the file system.

    Raises
    ------
    InvalidGraphError
        Over ``max_bytes``, not an ONNX model, or tensors in external data.
    """
    onnx = _onnx()
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise InvalidGraphError(f"{source}: expected the model's bytes (got {type(data).__name__})")
    data = bytes(data)
    if len(data) > max_bytes:
        raise InvalidGraphError(f"{source}: file is {len(data):,} bytes, over the {max_bytes:,}-byte limit")
    try:
        model = onnx.load_model_from_string(data)
    except Exception as exc:  # protobuf raises DecodeError and friends
        raise InvalidGraphError(f"{source}: not an ONNX model ({type(exc).__name__})") from None
    if not model.graph.node:
        raise InvalidGraphError(f"{source}: not an ONNX model (no graph nodes)")
    for name, where in _external_tensors(model):
        raise InvalidGraphError(
            f"{source}: tensor {name!r} is stored in external data file {where!r}; "
            "external data is not supported (save the model with all tensors inside one file)"
        )
    return model


def _open_dims(model):
    """(key, dim) for every symbolic or unknown dim of the graph inputs (not initializers), in order.

    ``key`` is the dim's name, else ``"<input>[<axis>]"``.
    """
    initializers = {t.name for t in model.graph.initializer}
    for value in model.graph.input:
        if value.name in initializers or not value.type.HasField("tensor_type"):
            continue
        tensor_type = value.type.tensor_type
        if not tensor_type.HasField("shape"):
            continue
        for i, dim in enumerate(tensor_type.shape.dim):
            if not (dim.HasField("dim_value") and dim.dim_value > 0):
                yield dim.dim_param or f"{value.name}[{i}]", dim


def _bind_dims(model, dims: Mapping[str, int], default_dim: int, notes: list[str]) -> None:
    """Replace symbolic/unknown dims of the graph inputs (in place) by values."""
    bound: dict[str, int] = {}
    for key, dim in list(_open_dims(model)):  # listed first: binding a dim changes what is open
        size = int(dims.get(key, dims.get(dim.dim_param, default_dim))) if dims else default_dim
        if not 0 < size <= MAX_DIM:
            raise InvalidGraphError(
                f"dimension {quote(key, 40)} must be an integer from 1 to {MAX_DIM:,} (got {size:,})"
            )
        dim.Clear()
        dim.dim_value = size
        bound[key] = size
    if bound:
        notes.append("bound input dimensions: " + ", ".join(f"{k}={v}" for k, v in sorted(bound.items())))


def _tensor_infos(model) -> dict[str, TensorInfo]:
    onnx = _onnx()
    infos: dict[str, TensorInfo] = {}
    names = onnx.TensorProto.DataType.Name

    def elem_name(elem: int) -> str:
        try:
            return names(elem)
        except ValueError:
            return "FLOAT"

    graph = model.graph
    for value in list(graph.value_info) + list(graph.input) + list(graph.output):
        if not value.type.HasField("tensor_type"):
            continue
        tt = value.type.tensor_type
        shape: tuple[int, ...] | None = None
        if tt.HasField("shape"):
            dims = [d.dim_value if d.HasField("dim_value") else -1 for d in tt.shape.dim]
            shape = tuple(dims) if all(d >= 0 for d in dims) else None
        known = infos.get(value.name)
        if known is not None and known.shape is not None and shape is None:
            continue  # a declared output without a shape does not hide an inferred one
        infos[value.name] = TensorInfo(
            shape, elem_name(tt.elem_type) if tt.elem_type else (known.elem if known else "FLOAT")
        )
    for init in graph.initializer:
        infos[init.name] = TensorInfo(tuple(int(d) for d in init.dims), elem_name(init.data_type))
    for node in graph.node:
        if node.op_type == "Constant" and not node.input:
            for attr in node.attribute:
                if attr.name == "value" and attr.type == onnx.AttributeProto.TENSOR:
                    infos[node.output[0]] = TensorInfo(tuple(int(d) for d in attr.t.dims), elem_name(attr.t.data_type))
    return infos


def _attrs(node) -> dict[str, Any]:
    onnx = _onnx()
    return {
        a.name: onnx.helper.get_attribute_value(a)
        for a in node.attribute
        if a.type not in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS)
    }


def _constant_nodes(graph) -> tuple[set[int], set[str]]:
    """Positions of the nodes computing constants (every input a weight or constant) and all weight names."""
    weights = {t.name for t in graph.initializer}
    folded: set[int] = set()
    for position, node in enumerate(graph.node):
        if all(name in weights for name in node.input if name):
            folded.add(position)
            weights.update(name for name in node.output if name)
    return folded, weights


@dataclass(frozen=True)
class _OpCost:
    """One kept operator's kernels, FLOPs, bytes read and written, weight bytes and tensor type."""

    works: tuple[Any, ...]
    flops: float
    read: float
    written: float
    params: float
    dtype: str


def _node_costs(model) -> tuple[list[Any], list[_OpCost], list[str], list[str], set[str]]:
    """Kept ONNX nodes, their costs, ops whose FLOPs were estimated, unknown tensors, weight names."""
    infos = _tensor_infos(model)
    graph = model.graph
    folded, weights = _constant_nodes(graph)
    kept, costs, estimated = [], [], []
    unknown: set[str] = set()
    counted: set[str] = set()
    for position, node in enumerate(graph.node):
        if position in folded:
            continue
        ins = [infos.get(name) if name else None for name in node.input]
        outs = [infos.get(name) if name else None for name in node.output]
        for name, info in zip(list(node.input) + list(node.output), ins + outs):
            if name and (info is None or info.shape is None):
                unknown.add(name)
        flops, guess = op_flops(node.op_type, ins, outs, _attrs(node))
        if guess:
            estimated.append(node.op_type)
        if node.op_type in VIEW_OPS:
            read = written = 0.0
        else:
            read = float(sum((i.nbytes or 0) for i in ins if i is not None))
            written = float(sum((o.nbytes or 0) for o in outs if o is not None))
        params = 0.0
        for name in node.input:
            if name in weights and name not in counted:
                counted.add(name)
                info = infos.get(name)
                params += float(info.nbytes or 0) if info else 0.0
        kept.append(node)
        dtype = _dtype_of(outs + ins)
        works = op_work(node.op_type, ins, outs, _attrs(node), read + written, float(DTYPE_BYTES[dtype]))
        costs.append(_OpCost(works, flops, read, written, params, dtype))
    return kept, costs, estimated, sorted(unknown), weights


def onnx_graph(model, name: str = "", notes: list[str] | None = None, source: str = "<model>") -> Graph:
    """The operator graph of a shape-inferred ``ModelProto`` (see the module docstring)."""
    notes = notes if notes is not None else []
    kept, costs, estimated, unknown, weights = _node_costs(model)
    if not kept:
        raise InvalidGraphError(f"{source}: no operators left (every node only computes constants)")
    folded = sum(1 for n in model.graph.node if n.op_type != "Constant") - len(kept)
    if folded:
        notes.append(
            f"{folded} nodes computing constants from weights only (e.g. ConstantOfShape) were folded "
            "into their consumers' weights"
        )
    infos = _tensor_infos(model)
    producer: dict[str, int] = {}
    for index, node in enumerate(kept):
        for out in node.output:
            if out:
                producer[out] = index
    targets: dict[int, set[int]] = {i: set() for i in range(len(kept))}
    consumed: dict[int, set[str]] = {i: set() for i in range(len(kept))}
    for index, node in enumerate(kept):
        for tensor in node.input:
            if tensor in producer and tensor not in weights and producer[tensor] != index:
                source_index = producer[tensor]
                targets[source_index].add(index)
                consumed[source_index].add(tensor)
    nodes, edges = [], []
    for index, (node, cost) in enumerate(zip(kept, costs)):
        out_bytes = float(sum((infos[t].nbytes or 0) if t in infos else 0 for t in consumed[index]))
        label = node.name or f"{node.op_type}_{index}"
        extra = work_extra(cost.works, cost.dtype, cost.written, op=node.op_type, flops=cost.flops,
                           bytesRead=cost.read)  # fmt: skip
        nodes.append(Node(index, 0.0, 0.0, size=cost.params, name=label, extra=extra))
        for target in sorted(targets[index]):
            edges.append(work_edge(index, target, out_bytes))
    if estimated:
        counts: dict[str, int] = {}
        for op in estimated:
            counts[op] = counts.get(op, 0) + 1
        notes.append(
            "FLOPs estimated as 1 per output element for: "
            + ", ".join(f"{op} x{n}" for op, n in sorted(counts.items()))
        )
    if unknown:
        shown = ", ".join(unknown[:5]) + (" ..." if len(unknown) > 5 else "")
        notes.append(f"{len(unknown)} tensors of unknown shape count 0 bytes ({shown})")
    return Graph(tuple(nodes), tuple(edges), name=name)


def safe_count_ideals(graph: Graph, max_ideals: int = REPORT_MAX_IDEALS) -> int | None:
    """Ideal count of ``graph``, or None past ``max_ideals``."""
    try:
        return count_ideals(graph, max_ideals)
    except TooManyIdealsError:
        return None


def import_onnx(
    data: bytes,
    source: str = "<upload>",
    *,
    kinds: Sequence[str] = ("H100",),
    dims: Mapping[str, int] | None = None,
    default_dim: int = 1,
    coarsen_depth: int | None = None,
    separators: str = "/.",
    max_bytes: int = MAX_ONNX_BYTES,
    max_ideals: int = REPORT_MAX_IDEALS,
) -> ImportReport:
    """Read an ONNX model (bytes) into an operator graph priced on catalogue ``kinds``.

    Parameters
    ----------
    data : bytes
        The model file's content (e.g. from ``st.file_uploader``).
    source : str
        Name used in error messages.
    kinds : sequence of str
        Catalogue kinds for the latencies (the first is the reference; the CPU core is always priced).
    dims : mapping
        Values for symbolic input dimensions (by ``dim_param`` name).
    default_dim : int
        Value for symbolic dimensions not in ``dims``.
    coarsen_depth : int or None
        Merge nodes whose names share their first ``coarsen_depth`` components (split on
        ``separators``) into one node; None keeps operators.
    max_bytes : int
        Size cap on ``data``.
    max_ideals : int
        Cap for the ideal counts of the report.
    """
    onnx = _onnx()
    model = load_onnx(data, source, max_bytes)
    notes: list[str] = []
    _bind_dims(model, dims or {}, int(default_dim), notes)
    try:
        model = onnx.shape_inference.infer_shapes(model, check_type=False, strict_mode=True, data_prop=True)
    except Exception as exc:  # onnx raises InferenceError / ValidationError / RuntimeError
        message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise InvalidGraphError(f"{source}: shape inference failed ({message})") from None
    try:
        graph = onnx_graph(model, name=model.graph.name or source, notes=notes, source=source)
    except InvalidGraphError:
        raise
    except (OverflowError, ValueError, PlacementError) as exc:  # astronomically large shapes in the model
        raise InvalidGraphError(
            f"{source}: tensor sizes too large to cost ({type(exc).__name__}: "
            f"{str(exc).splitlines()[0][:80] if str(exc) else ''})"
        ) from None
    before = safe_count_ideals(graph, max_ideals)
    after = before
    n_before = len(graph.nodes)
    if coarsen_depth:
        graph = coarsen_by_prefix(graph, int(coarsen_depth), separators)
        after = safe_count_ideals(graph, max_ideals)
    try:
        graph = price_graph(graph, kinds)
    except InvalidGraphError as exc:
        raise InvalidGraphError(f"{source}: {exc}") from None
    return ImportReport(graph, tuple(notes), n_before, before, after)


def symbolic_dims(data: bytes, source: str = "<upload>") -> tuple[str, ...]:
    """Names of the symbolic (or unknown) dimensions of a model's graph inputs, in input order.

    These are the keys :func:`import_onnx` reads from ``dims``: the ``dim_param`` name (e.g.
    ``"batch"``, ``"sequence"``), or ``"<input>[<axis>]"`` for an unnamed unknown dimension.

    Raises
    ------
    InvalidGraphError
        As :func:`load_onnx`.
    """
    model = load_onnx(data, source)
    names: list[str] = []
    for key, _ in _open_dims(model):
        if key not in names:
            names.append(key)
    return tuple(names)
