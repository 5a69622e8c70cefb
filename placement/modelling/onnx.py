"""Import an ONNX model as an operator graph with roofline costs, and coarsen graphs into layers.

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
  cost per source node) and its ``cost = size / link bandwidth`` of the reference kind;
* latencies by the roofline model of :mod:`placement.modelling.roofline` from per-node FLOPs and
  bytes (``bytes read`` = all input tensors incl. weights, ``bytes written`` = outputs).

FLOPs are **computed by this module** (onnx-tool's per-op MAC conventions differ between
ops, and it needs initializer values; its MatMul/Conv MACs are used in the tests as an
independent check). Counting rules (a multiply-add = 2 FLOPs):

=====================================  ======================================================
op                                     FLOPs
=====================================  ======================================================
MatMul (A[..., M, K] @ B[..., K, N])   2 * K * elements(Y)
Gemm (M x K @ K x N [+ C])             2 * M * N * K (+ M * N with C)
Conv                                   2 * elements(Y) * C_in/group * prod(kernel) (+ elements(Y) with bias)
ConvTranspose                          2 * elements(X) * C_out/group * prod(kernel) (+ elements(Y) with bias)
Einsum                                 2 * (inputs - 1) * prod(size of every index letter)
elementwise / activations              1 per output element (Add, Mul, Relu, Gelu, Erf, Cast, ...)
Softmax, LogSoftmax                    5 per element (max, subtract, exp, sum, divide)
LayerNormalization, Group/InstanceNorm 8 per element (mean, subtract, square, mean, rsqrt, scale, shift)
BatchNormalization                     2 per element (folded scale and shift)
Reduce*, GlobalAverage/MaxPool         1 per input element
MaxPool, AveragePool                   elements(Y) * prod(kernel)
data movement (Transpose, Concat,      0 FLOPs, bytes only
Gather, Slice, Split, Pad, Expand...)
views (Reshape, Flatten, Squeeze,      0 FLOPs and 0 bytes (no data moves)
Unsqueeze, Identity, Shape, Dropout)
anything else                          1 per output element (*estimated*, listed in the notes)
=====================================  ======================================================

Symbolic input dimensions are bound (``dims`` by name, else ``default_dim``) before
``onnx.shape_inference.infer_shapes``; tensors whose shape stays unknown count 0 bytes
(also listed in the notes).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ..condense import condense
from ..errors import InvalidGraphError, PlacementError, TooManyIdealsError, quote
from ..exact.ideals import count_ideals
from ..model import Edge, Graph, Node
from .roofline import CostModel, OpCost

#: Largest ONNX model accepted (bytes); the Streamlit uploader's default limit.
MAX_ONNX_BYTES = 200 * 1024 * 1024

#: Default cap on ideals counted for the before/after report.
REPORT_MAX_IDEALS = 200_000

_BITS = {
    "FLOAT": 32,
    "UINT8": 8,
    "INT8": 8,
    "UINT16": 16,
    "INT16": 16,
    "INT32": 32,
    "INT64": 64,
    "STRING": 0,
    "BOOL": 8,
    "FLOAT16": 16,
    "DOUBLE": 64,
    "UINT32": 32,
    "UINT64": 64,
    "COMPLEX64": 64,
    "COMPLEX128": 128,
    "BFLOAT16": 16,
    "FLOAT8E4M3FN": 8,
    "FLOAT8E4M3FNUZ": 8,
    "FLOAT8E5M2": 8,
    "FLOAT8E5M2FNUZ": 8,
    "UINT4": 4,
    "INT4": 4,
    "FLOAT4E2M1": 4,
    "FLOAT8E8M0": 8,
    "UINT2": 2,
    "INT2": 2,
    "FLOAT6E2M3": 6,
    "FLOAT6E3M2": 6,
}
_HALF = {
    "FLOAT16": "fp16",
    "BFLOAT16": "bf16",
    "INT8": "int8",
    "UINT8": "int8",
    "FLOAT8E4M3FN": "fp8",
    "FLOAT8E4M3FNUZ": "fp8",
    "FLOAT8E5M2": "fp8",
    "FLOAT8E5M2FNUZ": "fp8",
}

VIEW_OPS = frozenset({"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity", "Shape", "Size", "Dropout"})
MOVE_OPS = frozenset(
    {
        "Transpose",
        "Concat",
        "Gather",
        "GatherElements",
        "GatherND",
        "Slice",
        "Split",
        "Pad",
        "Expand",
        "Tile",
        "ScatterND",
        "ScatterElements",
        "DepthToSpace",
        "SpaceToDepth",
        "Resize",
        "Upsample",
        "ConstantOfShape",
        "Range",
        "NonZero",
        "OneHot",
        "Trilu",
        "CastLike",
    }
)
ELEMENTWISE_OPS = frozenset(
    {
        "Add",
        "Sub",
        "Mul",
        "Div",
        "Pow",
        "Max",
        "Min",
        "Mean",
        "Sum",
        "Where",
        "Equal",
        "Less",
        "Greater",
        "LessOrEqual",
        "GreaterOrEqual",
        "And",
        "Or",
        "Xor",
        "Not",
        "Mod",
        "BitShift",
        "PRelu",
        "Relu",
        "LeakyRelu",
        "Elu",
        "Selu",
        "Celu",
        "Sigmoid",
        "HardSigmoid",
        "HardSwish",
        "Tanh",
        "Gelu",
        "Erf",
        "Exp",
        "Log",
        "Sqrt",
        "Reciprocal",
        "Neg",
        "Abs",
        "Clip",
        "Softplus",
        "Softsign",
        "Sign",
        "Floor",
        "Ceil",
        "Round",
        "Cast",
        "IsNaN",
        "IsInf",
        "Sin",
        "Cos",
        "Tan",
        "Mish",
        "ThresholdedRelu",
        "QuantizeLinear",
        "DequantizeLinear",
    }
)
NORM_OPS = frozenset(
    {
        "LayerNormalization",
        "GroupNormalization",
        "InstanceNormalization",
        "SimplifiedLayerNormalization",
        "SkipLayerNormalization",
        "RMSNormalization",
    }
)
REDUCE_OPS = frozenset(
    {
        "ReduceMean",
        "ReduceSum",
        "ReduceMax",
        "ReduceMin",
        "ReduceProd",
        "ReduceL1",
        "ReduceL2",
        "ReduceSumSquare",
        "ReduceLogSum",
        "ReduceLogSumExp",
        "GlobalAveragePool",
        "GlobalMaxPool",
        "ArgMax",
        "ArgMin",
    }
)


@dataclass(frozen=True)
class TensorInfo:
    """Shape (None where unknown) and element type name of one tensor."""

    shape: tuple[int, ...] | None
    elem: str

    @property
    def elements(self) -> int | None:
        return None if self.shape is None else math.prod(self.shape)

    @property
    def nbytes(self) -> int | None:
        n = self.elements
        return None if n is None else (n * _BITS.get(self.elem, 32) + 7) // 8


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


def _einsum_flops(equation: str, inputs: Sequence[TensorInfo | None]) -> float | None:
    lhs = equation.replace(" ", "").split("->")[0]
    terms = lhs.split(",")
    if len(terms) != len(inputs) or "..." in lhs:
        return None
    sizes: dict[str, int] = {}
    for term, info in zip(terms, inputs):
        if info is None or info.shape is None or len(term) != len(info.shape):
            return None
        sizes.update(zip(term, info.shape))
    return float(max(len(terms) - 1, 1) * 2 * math.prod(sizes.values()))


def op_flops(
    op: str, inputs: Sequence[TensorInfo | None], outputs: Sequence[TensorInfo | None], attrs: Mapping[str, Any]
) -> tuple[float, bool]:
    """FLOPs of one ONNX operator by the table in the module docstring.

    Returns
    -------
    (float, bool)
        FLOPs and whether the value is a fallback estimate (unknown op or unknown shapes).
    """

    def elements(info: TensorInfo | None) -> int | None:
        return None if info is None else info.elements

    # Unknown tensors, shapes or element counts raise TypeError, caught below as a fallback estimate.
    def shape(info: TensorInfo | None) -> tuple[int, ...]:
        if info is None or info.shape is None:
            raise TypeError("unknown shape")
        return info.shape

    def known(count: int | None) -> int:
        if count is None:
            raise TypeError("unknown element count")
        return count

    out = elements(outputs[0]) if outputs else None
    first = elements(inputs[0]) if inputs else None
    try:
        if op in VIEW_OPS or op in MOVE_OPS:
            return 0.0, False
        if op == "MatMul" or op == "MatMulInteger":
            k = shape(inputs[0])[-1]
            return float(2 * k * known(out)), False
        if op == "Gemm":
            a, b = shape(inputs[0]), shape(inputs[1])
            m, k = (a[1], a[0]) if attrs.get("transA", 0) else (a[0], a[1])
            n = b[0] if attrs.get("transB", 0) else b[1]
            extra = m * n if len(inputs) > 2 and inputs[2] is not None else 0
            return float(2 * m * n * k + extra), False
        if op in ("Conv", "ConvInteger", "ConvTranspose"):
            w = shape(inputs[1])
            # Conv weights are (C_out, C_in/group, k...), one sum per output element; ConvTranspose weights
            # are (C_in, C_out/group, k...), one scatter per input element: w[1] is the other side per group.
            positions = known(first) if op == "ConvTranspose" else known(out)
            flops = 2 * positions * w[1] * math.prod(w[2:])
            if len(inputs) > 2 and inputs[2] is not None:
                flops += known(out)
            return float(flops), False
        if op == "Einsum":
            equation = attrs.get("equation", b"")
            equation = equation.decode() if isinstance(equation, bytes) else str(equation)
            value = _einsum_flops(equation, inputs)
            if value is not None:
                return value, False
            return float(out or 0), True
        if op in ELEMENTWISE_OPS:
            return float(known(out)), False
        if op in ("Softmax", "LogSoftmax"):
            return float(5 * known(out)), False
        if op in NORM_OPS:
            return float(8 * known(out)), False
        if op == "BatchNormalization":
            return float(2 * known(out)), False
        if op in REDUCE_OPS:
            return float(known(first)), False
        if op in ("MaxPool", "AveragePool", "LpPool"):
            return float(known(out) * math.prod(attrs.get("kernel_shape", [1]))), False
    except (TypeError, IndexError, AttributeError):
        return float(out or 0), True
    return float(out or 0), True


def _dtype_of(infos: Sequence[TensorInfo | None]) -> str:
    for info in infos:
        if info is not None and info.elem not in ("INT64", "INT32", "BOOL"):
            return _HALF.get(info.elem, "fp32")
    return "fp32"


def _constant_nodes(graph) -> tuple[set[int], set[str]]:
    """Positions of the nodes computing constants (every input a weight or constant) and all weight names."""
    weights = {t.name for t in graph.initializer}
    folded: set[int] = set()
    for position, node in enumerate(graph.node):
        if all(name in weights for name in node.input if name):
            folded.add(position)
            weights.update(name for name in node.output if name)
    return folded, weights


def _node_costs(model) -> tuple[list[Any], list[OpCost], list[str], list[str], set[str]]:
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
        costs.append(OpCost(flops, read, written, params, 0.0, _dtype_of(outs + ins)))
    return kept, costs, estimated, sorted(unknown), weights


def onnx_graph(
    model, cost_model: CostModel, name: str = "", notes: list[str] | None = None, source: str = "<model>"
) -> Graph:
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
        cost = replace(cost, output_bytes=out_bytes)
        label = node.name or f"{node.op_type}_{index}"
        nodes.append(cost_model.node(index, label, cost, extra={"op": node.op_type}))
        for target in sorted(targets[index]):
            edges.append(cost_model.edge(index, target, out_bytes))
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
    cost_model: CostModel | None = None,
    dims: Mapping[str, int] | None = None,
    default_dim: int = 1,
    coarsen_depth: int | None = None,
    separators: str = "/.",
    max_bytes: int = MAX_ONNX_BYTES,
    max_ideals: int = REPORT_MAX_IDEALS,
) -> ImportReport:
    """Read an ONNX model (bytes) into an operator graph with roofline latencies.

    Parameters
    ----------
    data : bytes
        The model file's content (e.g. from ``st.file_uploader``).
    source : str
        Name used in error messages.
    cost_model : CostModel
        Device kinds for the latencies (default: A100 reference, CPU core, other presets).
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
    cost_model = cost_model or CostModel.with_presets()
    model = load_onnx(data, source, max_bytes)
    notes: list[str] = []
    _bind_dims(model, dims or {}, int(default_dim), notes)
    try:
        model = onnx.shape_inference.infer_shapes(model, check_type=False, strict_mode=True, data_prop=True)
    except Exception as exc:  # onnx raises InferenceError / ValidationError / RuntimeError
        message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise InvalidGraphError(f"{source}: shape inference failed ({message})") from None
    try:
        graph = onnx_graph(model, cost_model, name=model.graph.name or source, notes=notes, source=source)
    except (OverflowError, ValueError) as exc:  # astronomically large shapes in the model
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
    return ImportReport(graph, tuple(notes), n_before, before, after)


# ----------------------------------------------------------------------------- coarsening
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
