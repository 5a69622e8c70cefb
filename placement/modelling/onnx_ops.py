"""FLOPs of ONNX operators, from tensor shapes and attributes alone (no tensor values).

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
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..perf.kernels import Work

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


def op_work(
    op: str,
    inputs: Sequence[TensorInfo | None],
    outputs: Sequence[TensorInfo | None],
    attrs: Mapping[str, Any],
    nbytes: float,
    element_bytes: float,
) -> tuple[Work, ...]:
    """The kernels of one ONNX operator: matrix products and convolutions (implicit GEMMs) by shape, the rest
    streaming its ``nbytes`` (inputs read + outputs written); shapes unknown: streaming too."""
    stream = (Work("stream", nbytes=float(nbytes), launches=1, element_bytes=element_bytes),)
    if op in VIEW_OPS:
        return (Work("stream", nbytes=0.0, launches=0, element_bytes=element_bytes),)
    try:
        gemm = _gemm_shape(op, inputs, outputs, attrs)
    except (TypeError, IndexError, AttributeError, ValueError, ZeroDivisionError):
        return stream
    if gemm is None:
        return stream
    m, n, k, batch = (float(x) for x in gemm)
    return (Work("gemm", m, n, k, batch, element_bytes=element_bytes),)


def _gemm_shape(
    op: str, inputs: Sequence[TensorInfo | None], outputs: Sequence[TensorInfo | None], attrs: Mapping[str, Any]
) -> tuple[int, int, int, int] | None:
    """(m, n, k, batch) of a product or convolution; None for other operators (TypeError: unknown shapes)."""

    def shape(info: TensorInfo | None) -> tuple[int, ...]:
        if info is None or info.shape is None:
            raise TypeError("unknown shape")
        return info.shape

    if op in ("MatMul", "MatMulInteger"):
        a, y = shape(inputs[0]), shape(outputs[0])
        m = y[-2] if len(y) >= 2 else 1
        return m, y[-1], a[-1], math.prod(y[:-2])
    if op == "Gemm":
        a, b = shape(inputs[0]), shape(inputs[1])
        m, k = (a[1], a[0]) if attrs.get("transA", 0) else (a[0], a[1])
        n = b[0] if attrs.get("transB", 0) else b[1]
        return m, n, k, 1
    if op in ("Conv", "ConvInteger", "ConvTranspose"):
        x, w, y = shape(inputs[0]), shape(inputs[1]), shape(outputs[0])
        group = int(attrs.get("group", 1))
        kernel = math.prod(w[2:])
        if op == "ConvTranspose":  # weights (C_in, C_out/group, k...): per input position, a scatter
            return math.prod(x) // x[1], w[1] * kernel, x[1] // group, group
        return math.prod(y) // y[1], y[1] // group, w[1] * kernel, group
    return None
