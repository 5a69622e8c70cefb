"""Model builders: transformers (a :class:`~placement.perf.transformer.TransformerSpec`) and ResNet-like CNNs.

Each builder records every operator's kernels (:class:`placement.perf.kernels.Work`: GEMM shapes, fused
attention, streaming bytes), optionally merges operators into layers (:func:`placement.modelling.coarsen.coarsen`),
turns the graph into a training graph (:func:`placement.modelling.training.training_graph`: the backward
nodes keep the kernels) and prices it on catalogue kinds (:func:`placement.modelling.pricing.price_graph`).

**Transformer**: the operators of a layer are those of the performance model
(:func:`placement.perf.layer_cost.layer_ops`: norm, QKV, rotary, fused attention, projection, residual, norm,
router and permute for MoE, FC1, activation, FC2, residual), the embedding and the output layer (``head``: final norm,
output product, cross-entropy) those of :func:`~placement.perf.layer_cost.embedding_ops` and
:func:`~placement.perf.layer_cost.output_ops`, for one micro-batch of ``micro_batch`` sequences on one GPU.
So a layer's nodes (forward and backward) sum to the layer's time in :func:`placement.perf.predict`. A node's
``size`` is its weights in bytes (a tied output layer holds its own copy, as Megatron's last pipeline stage
does); an edge carries its source's output activation.

**CNN** (bottleneck ResNet, batch norm folded into the convolutions): a convolution with ``c_in`` inputs,
``c_out`` outputs, a ``k x k`` kernel and an ``H x W`` output is the implicit GEMM ``(b H W) x c_out x
(c_in k^2)``; ReLU, residual adds and the pools stream their inputs and outputs; the classifier is a
``b x classes x c`` GEMM.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ..errors import InvalidGraphError
from ..model import Graph, Node, Problem
from ..perf.hardware import Dtype
from ..perf.kernels import Work
from ..perf.layer_cost import Op, embedding_ops, layer_ops, output_ops
from ..perf.layout import Attention, Layout
from ..perf.transformer import TransformerSpec
from .coarsen import coarsen, name_prefix
from .pricing import DTYPE_BYTES, KindLike, devices_for, price_graph, work_edge, work_extra
from .training import training_graph

GRANULARITIES = ("layer", "operator")
#: Graph ``extra`` key: tokens in one pipeline sample of a built transformer (micro-batch x sequence length).
TOKENS_KEY = "tokensPerSample"

#: Default kinds the builders price (the reference first).
DEFAULT_KINDS = ("H100",)

#: Largest transformer the builders accept (layers) and largest sequence x micro-batch: graphs stay small.
MAX_LAYERS = 4096


def _positive(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidGraphError(f"{what} must be a positive integer (got {value!r})")
    return value


def _dtype(dtype: str) -> int:
    if dtype not in DTYPE_BYTES:
        raise InvalidGraphError(f"unknown dtype {dtype!r}; choose one of: {', '.join(DTYPE_BYTES)}")
    return DTYPE_BYTES[dtype]


@dataclass(frozen=True)
class CnnConfig:
    """A ResNet-like CNN of bottleneck blocks.

    Parameters
    ----------
    blocks : tuple of int
        Blocks per stage (ResNet-50: (3, 4, 6, 3)).
    width : int
        Channels of the first stage's 3x3 convolutions (64); stages double it.
    image : int
        Input height = width in pixels.
    batch : int
        Images per sample.
    dtype : str
        Element type.
    classes : int
        Outputs of the classifier.
    """

    blocks: tuple[int, ...] = (3, 4, 6, 3)
    width: int = 64
    image: int = 224
    batch: int = 1
    dtype: str = "fp16"
    classes: int = 1000

    def __post_init__(self) -> None:
        object.__setattr__(self, "blocks", tuple(self.blocks))
        if not self.blocks:
            raise InvalidGraphError("a CNN needs at least one stage")
        for i, n in enumerate(self.blocks):
            _positive(n, f"blocks of stage {i + 1}")
        for name in ("width", "image", "batch", "classes"):
            _positive(getattr(self, name), name)
        if self.image < 32:
            raise InvalidGraphError(f"image must be at least 32 pixels (got {self.image})")
        _dtype(self.dtype)


class _GraphBuilder:
    """Accumulates operator nodes (their kernels, output and weight bytes) and edges (ids in insertion order)."""

    def __init__(self, dtype: str) -> None:
        self.dtype = dtype
        self.nodes: list[Node] = []
        self.inputs: list[list[int]] = []

    def add(self, name: str, op: str, works: Sequence[Work], output_bytes: float, weight_bytes: float,
            inputs: list[int]) -> int:  # fmt: skip
        node_id = len(self.nodes)
        extra = work_extra(works, self.dtype, output_bytes, op=op)
        self.nodes.append(Node(node_id, 0.0, 0.0, size=float(weight_bytes), name=name, extra=extra))
        self.inputs.append(list(inputs))
        return node_id

    def graph(self, name: str) -> Graph:
        edges = [
            work_edge(p, i, self.nodes[p].extra["bytesWritten"])
            for i, preds in enumerate(self.inputs)
            for p in sorted(set(preds))
        ]
        return Graph(tuple(self.nodes), tuple(edges), name=name)


def _finish(
    graph: Graph, granularity: str, training: bool, kinds: Sequence[KindLike], reference: KindLike | None
) -> Graph:
    if granularity not in GRANULARITIES:
        raise InvalidGraphError(f"granularity must be one of {GRANULARITIES} (got {granularity!r})")
    if granularity == "layer":
        graph = coarsen(graph, lambda node: name_prefix(node.name, 1, "/"))
    if training:
        graph = training_graph(graph)
    return price_graph(graph, kinds, reference)


def _op_output(model: TransformerSpec, layout: Layout, name: str, works: tuple[Work, ...], previous: float) -> float:
    """Bytes of an operator's output: a product's result, else the activation it streams."""
    last = works[-1]
    e = last.element_bytes
    if last.kind == "gemm":
        return last.m * last.n * last.batch * e
    if last.kind == "attention":
        return last.batch * last.m * last.k * e
    tokens = layout.micro_batch * model.seq_length
    if name == "activation":
        return tokens * model.ffn * (model.moe_topk if model.moe else 1) * e
    if name == "permute":
        return tokens * model.moe_topk * model.hidden * e
    if name == "rope":
        return previous
    return tokens * model.hidden * e


def _layer_weights(model: TransformerSpec, name: str) -> int:
    """Weights of one operator of a layer (they sum to ``model.layer_parameters()``)."""
    h, d, a, g, f, E = model.hidden, model.head_dim, model.heads, model.groups, model.ffn, model.num_experts
    bias = 1 if model.bias else 0
    fc1 = 2 * f if model.swiglu else f
    return {
        "input_norm": model.norm_parameters(),
        "post_norm": model.norm_parameters(),
        "qkv": h * (a + 2 * g) * d + bias * (a + 2 * g) * d,
        "proj": a * d * h + bias * h,
        "router": h * E if model.moe else 0,
        "fc1": E * (h * fc1 + bias * fc1),
        "fc2": E * (f * h + bias * h),
    }.get(name, 0)


def transformer_graph(
    model: TransformerSpec,
    kinds: Sequence[KindLike] = DEFAULT_KINDS,
    *,
    micro_batch: int = 1,
    dtype: str = "bf16",
    granularity: str = "layer",
    training: bool = False,
    reference: KindLike | None = None,
    attention: str = "flash",
) -> Graph:
    """The transformer's graph priced on catalogue ``kinds`` (operators ``layer<i>/<op>``; layers by prefix).

    Parameters
    ----------
    model : TransformerSpec
        The model (its ``seq_length`` is the sequence of a sample).
    kinds : sequence of str or Accelerator
        Catalogue kinds to price, or measured devices (the first, or ``reference``, is ``accelerator_latency``).
    micro_batch : int
        Sequences per pipeline sample.
    dtype : str
        Type of the products and activations: ``bf16``, ``fp16``, ``fp32``, ``fp8``.
    granularity : str
        ``"layer"`` (embedding, one node per layer, output) or ``"operator"``.
    training : bool
        Add backward nodes (priced by the kernels' backward times).
    attention : str
        ``"flash"`` (fused) or ``"unfused"``.

    Returns
    -------
    Graph
        Latencies in milliseconds; ``extra["costSource"]`` names the model and ``extra["tokensPerSample"]``
        (:data:`TOKENS_KEY`) is ``micro_batch x seq_length``.
    """
    if not isinstance(model, TransformerSpec):
        raise InvalidGraphError(f"transformer_graph needs a TransformerSpec (got {type(model).__name__})")
    if model.layers > MAX_LAYERS:
        raise InvalidGraphError(f"{model.name}: {model.layers:,} layers is over the builder's {MAX_LAYERS:,}")
    batch = _positive(micro_batch, "micro_batch")
    if dtype not in ("bf16", "fp16", "fp32", "fp8"):
        raise InvalidGraphError(f"dtype {dtype!r}: must be one of bf16, fp16, fp32, fp8")
    if attention not in ("flash", "unfused"):
        raise InvalidGraphError(f"attention {attention!r}: must be flash or unfused")
    layout = Layout(micro_batch=batch, dtype=Dtype(dtype), attention=Attention(attention))
    e = 4.0 if layout.dtype in (Dtype.FP32, Dtype.TF32) else 2.0
    builder = _GraphBuilder(layout.dtype.value)

    def add_ops(prefix: str, ops: list[Op], first_inputs: list[int], weights: Any) -> int:
        x, out, residual = first_inputs, 0.0, first_inputs
        for name, op, works in ops:
            out = _op_output(model, layout, name, works, out)
            inputs = x + (residual if name.startswith("residual") else [])
            node = builder.add(prefix + name, op, works, out, weights(name) * e, inputs)
            if name.startswith("residual"):
                residual = [node]
            x = [node]
        return x[0]

    tokens = micro_batch * model.seq_length
    vocab = model.padded_vocab()
    ((name, op, works),) = embedding_ops(model, layout)
    x = builder.add("embedding/" + name, op, works, tokens * model.hidden * e,
                    model.embedding_parameters(vocab) * e, [])  # fmt: skip
    for layer in range(model.layers):
        x = add_ops(f"layer{layer}/", layer_ops(model, layout), [x], lambda op: _layer_weights(model, op))
    out_weights = {"final_norm": model.norm_parameters(), "lm_head": vocab * model.hidden}
    add_ops("head/", output_ops(model, layout), [x], lambda op: out_weights.get(op, 0))
    label = f"{model.name} ({granularity}{', training' if training else ''}, micro-batch {micro_batch})"
    graph = _finish(builder.graph(label), granularity, training, kinds, reference)
    return replace(graph, extra={**graph.extra, TOKENS_KEY: tokens})  # tokens/s on the Meeting summary


def cnn_graph(
    config: CnnConfig,
    kinds: Sequence[KindLike] = DEFAULT_KINDS,
    granularity: str = "layer",
    training: bool = False,
    reference: KindLike | None = None,
) -> Graph:
    """The ResNet-like CNN's graph priced on ``kinds`` (operators ``<block>/<op>``; blocks merge by prefix)."""
    b, e = config.batch, float(_dtype(config.dtype))
    g = _GraphBuilder(config.dtype)

    def stream(name: str, op: str, inputs: list[int], read: float, written: float) -> int:
        works = (Work("stream", nbytes=(read + written) * e, launches=1, element_bytes=e),)
        return g.add(name, op, works, written * e, 0.0, inputs)

    def conv(name: str, x: int | None, c_in: int, c_out: int, k: int, size_out: int, size_in: int) -> int:
        works = (Work("gemm", b * size_out * size_out, c_out, c_in * k * k, element_bytes=e),)
        weights = c_out * c_in * k * k + c_out
        return g.add(name, "Conv", works, b * size_out * size_out * c_out * e, weights * e, [] if x is None else [x])

    def eltwise(name: str, op: str, inputs: list[int], elems: int) -> int:
        return stream(name, op, inputs, elems * len(inputs), elems)

    size = config.image // 2
    x = conv("stem/conv", None, 3, config.width, 7, size, config.image)
    x = eltwise("stem/relu", "Relu", [x], b * size * size * config.width)
    pooled = (size + 1) // 2
    x = stream("stem/maxpool", "MaxPool", [x], b * size * size * config.width, b * pooled * pooled * config.width)
    size, channels = pooled, config.width
    for stage, count in enumerate(config.blocks):
        width = config.width * 2**stage
        for block in range(count):
            stride = 2 if (block == 0 and stage > 0) else 1
            out_size = (size + stride - 1) // stride
            p = f"stage{stage + 1}.block{block + 1}/"
            y = conv(p + "conv1", x, channels, width, 1, size, size)
            y = eltwise(p + "relu1", "Relu", [y], b * size * size * width)
            y = conv(p + "conv2", y, width, width, 3, out_size, size)
            y = eltwise(p + "relu2", "Relu", [y], b * out_size * out_size * width)
            y = conv(p + "conv3", y, width, 4 * width, 1, out_size, out_size)
            shortcut = x
            if stride != 1 or channels != 4 * width:
                shortcut = conv(p + "downsample", x, channels, 4 * width, 1, out_size, size)
            elems = b * out_size * out_size * 4 * width
            y = eltwise(p + "add", "Add", [y, shortcut], elems)
            x = eltwise(p + "relu3", "Relu", [y], elems)
            size, channels = out_size, 4 * width
    x = stream("head/avgpool", "GlobalAveragePool", [x], b * size * size * channels, b * channels)
    fc = (Work("gemm", b, config.classes, channels, element_bytes=e),)
    g.add("head/fc", "Gemm", fc, b * config.classes * e, (channels * config.classes + config.classes) * e, [x])
    name = f"ResNet-{sum(config.blocks) * 3 + 2} ({granularity}{', training' if training else ''})"
    return _finish(g.graph(name), granularity, training, kinds, reference)


def _kinds_of(kinds: Mapping[str, int]) -> list[str]:
    if not isinstance(kinds, Mapping) or not kinds:
        raise InvalidGraphError("give the inventory as {catalogue kind: count}, e.g. {'H100': 4}")
    return list(kinds)


def build_transformer(
    model: TransformerSpec,
    kinds: Mapping[str, int] | None = None,
    *,
    cpus: int = 1,
    granularity: str = "layer",
    training: bool = False,
    micro_batch: int = 1,
    dtype: str = "bf16",
    memory: Mapping[str, float] | None = None,
) -> Problem:
    """A transformer problem: its graph priced on the inventory ``kinds`` (default 4 H100) + ``cpus`` cores.

    ``memory`` overrides bytes per device by kind (:func:`placement.modelling.pricing.devices_for`).
    """
    kinds = dict(kinds or {"H100": 4})
    graph = transformer_graph(model, _kinds_of(kinds), micro_batch=micro_batch, dtype=dtype,
                              granularity=granularity, training=training)  # fmt: skip
    return Problem(graph, devices_for(kinds, cpus, memory=memory))


def build_cnn(
    config: CnnConfig,
    kinds: Mapping[str, int] | None = None,
    *,
    cpus: int = 1,
    granularity: str = "layer",
    training: bool = False,
    memory: Mapping[str, float] | None = None,
) -> Problem:
    """A ResNet-like CNN problem on the inventory ``kinds`` (default 4 H100) + ``cpus`` cores."""
    kinds = dict(kinds or {"H100": 4})
    graph = cnn_graph(config, _kinds_of(kinds), granularity, training)
    return Problem(graph, devices_for(kinds, cpus, memory=memory))
