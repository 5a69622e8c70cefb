"""Model builders: transformers (GPT/BERT style) and ResNet-like CNNs as placement problems.

Each builder makes the operator graph with FLOPs and bytes per operator written out below,
prices it with the roofline model (:class:`placement.modelling.roofline.CostModel`), optionally merges
operators into layers (:func:`placement.modelling.onnx.coarsen`, summing latencies) and turns it
into a training graph (:func:`placement.modelling.training.training_graph`).

Notation: batch ``b``, sequence ``s``, hidden ``h``, heads ``a``, FFN width ``f`` (4h),
vocabulary ``V``, bytes per element ``e``. A multiply-add is 2 FLOPs; elementwise ops 1
FLOP per element, softmax 5, layer norm 8 (as in :mod:`placement.modelling.onnx`).

Transformer layer (GPT = pre-LN, BERT = post-LN)::

    op        FLOPs              bytes read                 bytes written  weights
    ln1/ln2   8bsh               bsh e + 2h e               bsh e          2h e
    q, k, v   2bsh^2 + bsh each  bsh e + (h^2+h) e          bsh e          (h^2+h) e
    scores    2bs^2h             2bsh e                     bas^2 e        -
    softmax   5bas^2             bas^2 e                    bas^2 e        -
    context   2bs^2h             bas^2 e + bsh e            bsh e          -
    proj      2bsh^2 + bsh       bsh e + (h^2+h) e          bsh e          (h^2+h) e
    add1/add2 bsh                2bsh e                     bsh e          -
    fc1       2bshf + bsf        bsh e + (hf+f) e           bsf e          (hf+f) e
    gelu      bsf                bsf e                      bsf e          -
    fc2       2bsfh + bsh        bsf e + (fh+h) e           bsh e          (fh+h) e

plus an ``embedding`` (token + position tables, ``(V+s)h e`` weights, bsh FLOPs) and a
``head`` (final layer norm for GPT, then the ``h x V`` output projection, untied).

CNN (bottleneck ResNet, batch norm folded into the convolutions): a conv with ``c_in``
inputs, ``c_out`` outputs, ``k x k`` kernel and output ``H x W`` costs
``2 b H W c_out c_in k^2 + b H W c_out`` FLOPs (bias) and reads input + weights
``(c_out c_in k^2 + c_out) e``; ReLU and residual adds are elementwise; the stem max-pool
costs ``9`` per output element; the global average pool 1 per input element; the classifier
is a ``c x classes`` matrix product.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..errors import InvalidGraphError
from ..model import Graph, Problem
from .onnx import coarsen, name_prefix
from .roofline import DTYPE_BYTES, CostModel, OpCost
from .training import training_graph

GRANULARITIES = ("layer", "operator")


def _positive(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidGraphError(f"{what} must be a positive integer (got {value!r})")
    return value


def _dtype(dtype: str) -> int:
    if dtype not in DTYPE_BYTES:
        raise InvalidGraphError(f"unknown dtype {dtype!r}; choose one of: {', '.join(DTYPE_BYTES)}")
    return DTYPE_BYTES[dtype]


@dataclass(frozen=True)
class TransformerConfig:
    """A GPT- or BERT-style transformer.

    Parameters
    ----------
    style : str
        ``"gpt"`` (pre-LN, final layer norm) or ``"bert"`` (post-LN).
    layers, hidden, heads, seq_len, batch : int
        Shape of the model and of one sample (a pipeline sample is one batch).
    dtype : str
        Element type of weights and activations (``fp16``, ``bf16``, ``fp32``, ...).
    vocab : int
        Vocabulary size (embedding and output head).
    ffn_mult : int
        FFN width as a multiple of ``hidden``.
    """

    style: str = "gpt"
    layers: int = 12
    hidden: int = 768
    heads: int = 12
    seq_len: int = 1024
    batch: int = 1
    dtype: str = "fp16"
    vocab: int = 50257
    ffn_mult: int = 4

    def __post_init__(self) -> None:
        if self.style not in ("gpt", "bert"):
            raise InvalidGraphError(f"transformer style must be 'gpt' or 'bert' (got {self.style!r})")
        for name in ("layers", "hidden", "heads", "seq_len", "batch", "vocab", "ffn_mult"):
            _positive(getattr(self, name), name)
        if self.hidden % self.heads:
            raise InvalidGraphError(f"hidden size {self.hidden} is not a multiple of heads {self.heads}")
        _dtype(self.dtype)


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
    """Accumulates nodes and edges with roofline costs (ids in insertion order)."""

    def __init__(self, cost_model: CostModel, dtype: str) -> None:
        self.cost_model = cost_model
        self.dtype = dtype
        self.e = DTYPE_BYTES[dtype]
        self.costs: list[tuple[str, OpCost, str]] = []
        self.preds: list[list[int]] = []

    def add(
        self,
        name: str,
        op: str,
        flops: float,
        read_elems: float,
        write_elems: float,
        param_elems: float,
        inputs: list[int],
    ) -> int:
        e = self.e
        self.costs.append(
            (
                name,
                OpCost(float(flops), read_elems * e, write_elems * e, param_elems * e, write_elems * e, self.dtype),
                op,
            )
        )
        self.preds.append(list(inputs))
        return len(self.costs) - 1

    def graph(self, name: str) -> Graph:
        nodes = [
            self.cost_model.node(i, label, cost, extra={"op": op}) for i, (label, cost, op) in enumerate(self.costs)
        ]
        edges = [
            self.cost_model.edge(p, i, self.costs[p][1].output_bytes)
            for i, preds in enumerate(self.preds)
            for p in preds
        ]
        return Graph(tuple(nodes), tuple(edges), name=name)


def _finish(graph: Graph, granularity: str, training: bool) -> Graph:
    if granularity not in GRANULARITIES:
        raise InvalidGraphError(f"granularity must be one of {GRANULARITIES} (got {granularity!r})")
    if granularity == "layer":
        graph = coarsen(graph, lambda node: name_prefix(node.name, 1, "/"))
    return training_graph(graph) if training else graph


def transformer_graph(
    config: TransformerConfig, cost_model: CostModel | None = None, granularity: str = "layer", training: bool = False
) -> Graph:
    """The transformer's graph (operators named ``layer<i>/<op>``; layers merge by that prefix)."""
    cm = cost_model or CostModel.with_presets()
    b, s, h, a, V = config.batch, config.seq_len, config.hidden, config.heads, config.vocab
    f = config.ffn_mult * h
    bsh, bsf, bas2 = b * s * h, b * s * f, b * a * s * s
    g = _GraphBuilder(cm, config.dtype)

    def ln(name: str, x: int) -> int:
        return g.add(name, "LayerNormalization", 8 * bsh, bsh + 2 * h, bsh, 2 * h, [x])

    x = g.add("embedding/lookup", "Embedding", bsh, 2 * bsh, bsh, (V + s) * h, [])
    for layer in range(config.layers):
        p = f"layer{layer}/"
        attn_in = ln(p + "ln1", x) if config.style == "gpt" else x
        q, k, v = (
            g.add(p + part, "MatMul", 2 * bsh * h + bsh, bsh + h * h + h, bsh, h * h + h, [attn_in])
            for part in ("q", "k", "v")
        )
        scores = g.add(p + "scores", "MatMul", 2 * b * s * s * h, 2 * bsh, bas2, 0, [q, k])
        soft = g.add(p + "softmax", "Softmax", 5 * bas2, bas2, bas2, 0, [scores])
        context = g.add(p + "context", "MatMul", 2 * b * s * s * h, bas2 + bsh, bsh, 0, [soft, v])
        proj = g.add(p + "proj", "MatMul", 2 * bsh * h + bsh, bsh + h * h + h, bsh, h * h + h, [context])
        add1 = g.add(p + "add1", "Add", bsh, 2 * bsh, bsh, 0, [proj, x])
        mlp_in = ln(p + "ln2", add1) if config.style == "gpt" else ln(p + "ln1", add1)
        fc1 = g.add(p + "fc1", "MatMul", 2 * bsh * f + bsf, bsh + h * f + f, bsf, h * f + f, [mlp_in])
        gelu = g.add(p + "gelu", "Gelu", bsf, bsf, bsf, 0, [fc1])
        fc2 = g.add(p + "fc2", "MatMul", 2 * bsf * h + bsh, bsf + f * h + h, bsh, f * h + h, [gelu])
        residual = add1 if config.style == "gpt" else mlp_in
        add2 = g.add(p + "add2", "Add", bsh, 2 * bsh, bsh, 0, [fc2, residual])
        x = add2 if config.style == "gpt" else ln(p + "ln2", add2)
    if config.style == "gpt":
        x = ln("head/ln_f", x)
    g.add("head/lm_head", "MatMul", 2 * bsh * V, bsh + h * V, b * s * V, h * V, [x])
    name = f"{config.style.upper()} {config.layers}x{h} ({granularity}{', training' if training else ''})"
    return _finish(g.graph(name), granularity, training)


def cnn_graph(
    config: CnnConfig, cost_model: CostModel | None = None, granularity: str = "layer", training: bool = False
) -> Graph:
    """The ResNet-like CNN's graph (operators named ``<block>/<op>``; blocks merge by that prefix)."""
    cm = cost_model or CostModel.with_presets()
    b = config.batch
    g = _GraphBuilder(cm, config.dtype)

    def conv(name: str, x: int | None, c_in: int, c_out: int, k: int, size_out: int, size_in: int) -> int:
        out = b * size_out * size_out * c_out
        weights = c_out * c_in * k * k + c_out
        return g.add(
            name,
            "Conv",
            2 * out * c_in * k * k + out,
            b * size_in * size_in * c_in + weights,
            out,
            weights,
            [] if x is None else [x],
        )

    def eltwise(name: str, op: str, inputs: list[int], elems: int) -> int:
        return g.add(name, op, elems, elems * len(inputs), elems, 0, inputs)

    size = config.image // 2
    x = conv("stem/conv", None, 3, config.width, 7, size, config.image)
    x = eltwise("stem/relu", "Relu", [x], b * size * size * config.width)
    pooled = (size + 1) // 2
    x = g.add(
        "stem/maxpool",
        "MaxPool",
        9 * b * pooled * pooled * config.width,
        b * size * size * config.width,
        b * pooled * pooled * config.width,
        0,
        [x],
    )
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
    x = g.add(
        "head/avgpool",
        "GlobalAveragePool",
        b * size * size * channels,
        b * size * size * channels,
        b * channels,
        0,
        [x],
    )
    g.add(
        "head/fc",
        "Gemm",
        2 * b * channels * config.classes + b * config.classes,
        b * channels + channels * config.classes + config.classes,
        b * config.classes,
        channels * config.classes + config.classes,
        [x],
    )
    name = f"ResNet-{sum(config.blocks) * 3 + 2} ({granularity}{', training' if training else ''})"
    return _finish(g.graph(name), granularity, training)


def _problem_builder(graph_of: Callable[..., Graph], name: str, doc: str) -> Callable[..., Problem]:
    """A public ``build_*`` function: the graph ``graph_of`` makes, on the cost model's devices."""

    def build(
        config: Any,
        cost_model: CostModel | None = None,
        *,
        accelerators: int = 4,
        cpus: int = 1,
        granularity: str = "layer",
        training: bool = False,
        memory: float | None = None,
    ) -> Problem:
        cm = cost_model or CostModel.with_presets()
        return Problem(graph_of(config, cm, granularity, training), cm.devices(accelerators, cpus, memory=memory))

    build.__name__ = build.__qualname__ = name
    build.__doc__ = doc
    return build


build_transformer = _problem_builder(
    transformer_graph,
    "build_transformer",
    """A transformer problem: its graph on ``accelerators`` devices of the reference kind + ``cpus`` cores.

    ``build_transformer(config, cost_model=None, *, accelerators=4, cpus=1, granularity="layer",
    training=False, memory=None)``; ``memory`` overrides the reference kind's bytes per device.
    """,
)
build_cnn = _problem_builder(
    cnn_graph, "build_cnn", "A ResNet-like CNN problem (same arguments as :func:`build_transformer`)."
)
