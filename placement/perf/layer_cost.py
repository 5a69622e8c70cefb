"""Seconds of one transformer layer, one micro-batch, one GPU (:func:`_layer_cost`), and of the embedding and
the output layer: the per-layer terms of :func:`placement.perf.predict.predict` (see its module docstring for
what each term holds), with the FLOP count of a layer (:func:`layer_forward_flops`)."""

from __future__ import annotations

from dataclasses import dataclass

from .collectives import (
    GroupKind,
    Links,
    allgather_seconds,
    allreduce_seconds,
    alltoall_seconds,
    megatron_group,
    p2p_seconds,
    reduce_scatter_seconds,
)
from .eager import HOST_OP_TRIVIAL_OPS
from .framework_kernels import Op, selective_recomputed, torch_layer_ops, torch_output_ops
from .hardware import Accelerator, Cluster, Dtype
from .kernels import Work, gemm_seconds, usable_dtype
from .layout import Attention, Kernels, Layout, Recompute, RecomputeMethod
from .params import PerfParams
from .transformer import TransformerSpec


def layer_forward_flops(
    model: TransformerSpec, sequences: float = 1.0, vocab: int | None = None
) -> tuple[float, float, float]:
    """(layer, core attention, output layer) forward FLOPs for ``sequences`` full sequences.

    Attention counts the full ``s x s`` score matrix (the paper's convention, causal mask or not).
    """
    s, h, d, a, g, f = model.seq_length, model.hidden, model.head_dim, model.heads, model.groups, model.ffn
    tokens = sequences * s
    ffn = (3 if model.swiglu else 2) * h * f * (model.moe_topk if model.moe else 1)
    router = h * model.num_experts if model.moe else 0
    linear = 2 * tokens * (h * (a + 2 * g) * d + a * d * h + ffn + router)
    core = 4 * sequences * s * s * a * d
    logits = 2 * tokens * h * (vocab or model.vocab)
    return linear + core, core, logits


@dataclass(frozen=True)
class _LayerCost:
    """Seconds of one layer, one micro-batch, one GPU."""

    fwd: float  # compute of the forward pass (GEMMs, attention, streaming)
    bwd: float
    attn_fwd: float  # core attention forward (what Megatron-LM's selective recomputation repeats)
    tp_fwd: float  # exposed tensor-parallel communication of one forward pass
    tp_bwd: float
    cp_fwd: float
    cp_bwd: float
    ep_fwd: float
    ep_bwd: float
    embedding: float = 0.0  # forward + backward of the embedding (first pipeline rank), per micro-batch
    head_fwd: float = 0.0  # final norm, output GEMM and cross-entropy (last pipeline rank)
    head_bwd: float = 0.0
    selective_fwd: float | None = None  # what selective recomputation repeats when not core attention (torchtitan)

    @property
    def selective(self) -> float:
        """Seconds selective recomputation adds per layer: core attention (Megatron-LM) or torchtitan's per-op policy."""
        return self.attn_fwd if self.selective_fwd is None else self.selective_fwd


#: The column-parallel products (Megatron-LM's and torchtitan's names): their weight gradients can hide the
#: backward's tensor-parallel reduction of input gradients.
COLUMN_PARALLEL = ("qkv", "fc1", "wq", "wk", "wv", "w1", "w3")


def _exposed(comm: float, hiding: float, overlap: bool, params: PerfParams) -> float:
    """Communication left on the critical path when it may run under ``hiding`` seconds of compute."""
    if not overlap:
        return comm
    return max(0.0, comm - hiding) + params.tp_overlap_slowdown * min(comm, hiding)


def _element_bytes(dtype: Dtype) -> float:
    return 4.0 if dtype in (Dtype.FP32, Dtype.TF32) else 2.0


def layer_ops(model: TransformerSpec, layout: Layout) -> list[Op]:
    """The kernels of one transformer layer, one micro-batch, on one GPU of ``layout``, in execution order.

    Matrix products (QKV, attention projection, FFN or routed experts, router), core attention (fused, or two
    batched products around a materialised softmax) and the streaming kernels (two norms, two (dropout +)
    residual adds, the activation, rotary, MoE permutes; eight launches in all). :func:`_layer_cost` sums
    them and the graph builder makes one node of each, so both give the same time. A layout with torchtitan's
    kernels (``layout.kernels`` eager or compiled) gets :func:`~placement.perf.framework_kernels.torch_layer_ops`.
    """
    if layout.kernels is not Kernels.FUSED:
        return torch_layer_ops(model, layout)
    e = _element_bytes(layout.dtype)
    t, cp = layout.tensor, layout.context
    s, b, h, a, g, d, f = (model.seq_length, layout.micro_batch, model.hidden, model.heads, model.groups,
                           model.head_dim, model.ffn)  # fmt: skip
    T = b * s / cp  # tokens per GPU
    sp = t if layout.sequence_parallel else 1
    topk = model.moe_topk if model.moe else 1

    def gemm(m: float, n: float, k: float, batch: float = 1.0) -> tuple[Work, ...]:
        return (Work("gemm", m, n, k, batch, element_bytes=e),)

    def stream(nbytes: float, launches: int) -> tuple[Work, ...]:
        return (Work("stream", nbytes=nbytes, launches=launches, element_bytes=e),)

    norm = "RMSNormalization" if model.norm.value == "rmsnorm" else "LayerNormalization"
    residual = (3 * e + (1 if model.dropout else 0)) * T * h / sp
    heads = b * a / t
    if layout.attention is Attention.FLASH:
        attention: tuple[Work, ...] = (Work("attention", s / cp, s, d, heads, element_bytes=e, causal=True),)
    else:
        softmax_bytes = (2 * e + ((2 * e + 1) if model.dropout else 0.0)) * heads * s / cp * s
        attention = gemm(s / cp, s, d, heads) + stream(softmax_bytes, 2) + gemm(s / cp, d, s, heads)
    fc1_width = (2 * f if model.swiglu else f) / t
    launches = 8 - 4 - (1 if model.rope else 0) - (1 if model.moe else 0)
    ops: list[Op] = [
        ("input_norm", norm, stream(2 * e * T * h / sp, 1)),
        ("qkv", "MatMul", gemm(T, (a + 2 * g) * d / t, h)),
    ]
    if model.rope:
        ops.append(("rope", "RotaryEmbedding", stream(2 * e * T * (a + g) * d / t, 1)))
    ops += [("attention", "Attention", attention), ("proj", "MatMul", gemm(T, h, a * d / t)),
            ("residual1", "Add", stream(residual, 1)), ("post_norm", norm, stream(2 * e * T * h / sp, 1))]  # fmt: skip
    if model.moe:
        local = model.num_experts / layout.expert
        m_expert = T * model.moe_topk * layout.expert / model.num_experts
        ops += [("router", "MatMul", gemm(T, model.num_experts, h)),
                ("permute", "Gather", stream(4 * e * T * model.moe_topk * h / sp, 1)),
                ("fc1", "MatMul", gemm(m_expert, fc1_width, h, local))]  # fmt: skip
    else:
        ops.append(("fc1", "MatMul", gemm(T, fc1_width, h)))
    act_bytes = (3 if model.swiglu else 2) * e * T * f / t * topk
    ops.append(("activation", "Swiglu" if model.swiglu else "Gelu", stream(act_bytes, launches)))
    if model.moe:
        ops.append(("fc2", "MatMul", gemm(m_expert, h, f / t, local)))
    else:
        ops.append(("fc2", "MatMul", gemm(T, h, f / t)))
    ops.append(("residual2", "Add", stream(residual, 1)))
    return ops


def output_ops(model: TransformerSpec, layout: Layout) -> list[Op]:
    """The final norm, the vocabulary-parallel output product and the cross-entropy of one micro-batch."""
    if layout.kernels is not Kernels.FUSED:
        return torch_output_ops(model, layout)
    e, t = _element_bytes(layout.dtype), layout.tensor
    T = layout.micro_batch * model.seq_length / layout.context
    vocab = model.padded_vocab(t) / t
    norm = "RMSNormalization" if model.norm.value == "rmsnorm" else "LayerNormalization"
    return [
        ("final_norm", norm, (Work("stream", nbytes=2 * e * T * model.hidden, launches=1, element_bytes=e),)),
        ("lm_head", "MatMul", (Work("gemm", T, vocab, model.hidden, element_bytes=e),)),
        (
            "loss",
            "SoftmaxCrossEntropyLoss",
            (Work("stream", nbytes=T * vocab * (e + 8.0), launches=3, element_bytes=e),),
        ),
    ]


def embedding_ops(model: TransformerSpec, layout: Layout) -> list[Op]:
    """The embedding lookup (and its dropout): forward and backward as one streaming kernel of the forward."""
    e = _element_bytes(layout.dtype)
    T = layout.micro_batch * model.seq_length / layout.context
    work = Work("stream", nbytes=(3 * e + 1) * T * model.hidden, launches=3, element_bytes=e, backward_factor=0.0)
    return [("lookup", "Gather", (work,))]


def ops_seconds(ops: list[Op], acc: Accelerator, dtype: Dtype, params: PerfParams) -> tuple[float, float]:
    """(forward, backward) seconds of ``ops`` on ``acc``."""
    fwd = bwd = 0.0
    for _, _, works in ops:
        for work in works:
            f, b = work.seconds(acc, dtype, params)
            fwd, bwd = fwd + f, bwd + b
    return fwd, bwd


def host_seconds(ops: list[Op], params: PerfParams) -> tuple[float, float]:
    """(forward, backward) seconds the host takes to issue ``ops`` in PyTorch eager.

    One aten operation per kernel (a product: one forward, two backward; attention: one each way; a streaming
    kernel: its launches, backward too unless it has no backward), each
    :data:`~placement.perf.eager.HOST_OP_TRIVIAL_OPS` times the launch cost (as :mod:`placement.perf.eager`
    measures it). A layer's time is the larger of its kernels' and its host's: with identical layers the host
    runs ahead of the GPU or the GPU waits on it, layer after layer.
    """
    fwd = bwd = 0
    for _, _, works in ops:
        for work in works:
            if work.kind == "stream":
                fwd += work.launches
                bwd += work.launches if work.backward_factor != 0 else 0
            else:
                fwd, bwd = fwd + 1, bwd + (2 if work.kind == "gemm" else 1)
    per_op = HOST_OP_TRIVIAL_OPS * params.kernel_launch_s
    return fwd * per_op, bwd * per_op


def _layer_cost(
    model: TransformerSpec, cluster: Cluster, layout: Layout, params: PerfParams, links: Links
) -> _LayerCost:
    acc, dt = cluster.accelerator, layout.dtype
    t, cp = layout.tensor, layout.context
    e = _element_bytes(dt)
    s, b, h, g, d = model.seq_length, layout.micro_batch, model.hidden, model.groups, model.head_dim
    T = b * s / cp  # tokens per GPU
    sp = t if layout.sequence_parallel else 1
    ops = layer_ops(model, layout)
    fwd, bwd = ops_seconds(ops, acc, dt, params)
    if layout.kernels is Kernels.EAGER:  # the host issues each eager operation: a small layer can wait on it
        host_fwd, host_bwd = host_seconds(ops, params)
        fwd, bwd = max(fwd, host_fwd), max(bwd, host_bwd)
    linear = [(name, works[0]) for name, op, works in ops if op == "MatMul"]
    gemm_fwd, gemm_bwd = ops_seconds([("", "", (w,)) for _, w in linear], acc, dt, params)
    # weight-gradient GEMMs of the column-parallel layers (QKV, fc1): (k, n, m)
    wgrad_col = sum(
        gemm_seconds(w.k, w.n, w.m, acc, usable_dtype(acc, dt), params, w.batch, e)
        for name, w in linear
        if name in COLUMN_PARALLEL
    )
    attn_fwd, attn_bwd = ops_seconds([op for op in ops if op[0] == "attention"], acc, dt, params)
    selective = None if layout.kernels is Kernels.FUSED else ops_seconds(selective_recomputed(ops), acc, dt, params)[0]
    # Tensor-parallel communication (exposed), per pass.
    tp_group = megatron_group(GroupKind.TENSOR, cluster, t, cp, layout.data, layout.pipeline)
    act = T * h * e
    if t > 1:
        if layout.sequence_parallel:
            comm = 2 * (allgather_seconds(act, tp_group, links) + reduce_scatter_seconds(act, tp_group, links))
        else:
            comm = 2 * allreduce_seconds(act, tp_group, links)
    else:
        comm = 0.0
    tp_fwd = _exposed(comm, gemm_fwd, layout.tp_comm_overlap, params)
    if t > 1 and layout.kernels is not Kernels.FUSED and layout.sequence_parallel:
        gather, scatter = allgather_seconds(act, tp_group, links), reduce_scatter_seconds(act, tp_group, links)
        tp_fwd, tp_bwd = _torchtitan_tp(model, ops, layout, acc, params, gather, scatter)
    elif layout.tp_comm_overlap:
        tp_bwd = _exposed(comm, gemm_bwd, True, params)
    elif layout.tp_async_backward:
        # The column-parallel layers' input-gradient all-reduce (reduce-scatter with SP) runs under their
        # weight-gradient GEMMs: all of the backward's communication without SP, half of it with SP.
        hidden_part = comm / 2 if layout.sequence_parallel else comm
        tp_bwd = comm - hidden_part + _exposed(hidden_part, wgrad_col, True, params)
    else:
        tp_bwd = comm
    # Context parallelism: ring exchange of K and V chunks, hidden behind attention where possible.
    cp_fwd = cp_bwd = 0.0
    if cp > 1:
        cp_group = megatron_group(GroupKind.CONTEXT, cluster, t, cp, layout.data, layout.pipeline)
        kv = 2 * T * g * d / t * e
        step = p2p_seconds(kv, cp_group.nodes == 1, links)
        cp_fwd = max(0.0, (cp - 1) * step - attn_fwd)
        cp_bwd = max(0.0, 2 * (cp - 1) * step - attn_bwd)
    # Expert parallelism: dispatch and combine all-to-alls, exposed.
    ep_fwd = ep_bwd = 0.0
    if model.moe and layout.expert > 1:
        ep_group = megatron_group(GroupKind.EXPERT, cluster, t, cp, layout.data, layout.pipeline, layout.expert)
        ep_fwd = ep_bwd = 2 * alltoall_seconds(T * model.moe_topk * h * e / sp, ep_group, links)
    # The ends of the pipeline, once per shape (a search asks for them on every first and last rank it tries).
    head_fwd, head_bwd = _output_layer_seconds(model, cluster, layout, params)
    embedding = _embedding_seconds(model, cluster, layout, params)
    return _LayerCost(fwd, bwd, attn_fwd, tp_fwd, tp_bwd, cp_fwd, cp_bwd, ep_fwd, ep_bwd, embedding, head_fwd, head_bwd,
                      selective)  # fmt: skip


def _torchtitan_tp(
    model: TransformerSpec, ops: list[Op], layout: Layout, acc: Accelerator, params: PerfParams, gather: float,
    scatter: float,
) -> tuple[float, float]:  # fmt: skip
    """Exposed tensor-parallel communication (forward, backward) of one torchtitan layer with sequence parallelism.

    DTensor's collectives wait where their result is used, and Inductor does not reorder them by default: all
    of it is exposed. With async TP (``layout.tp_comm_overlap``; torchtitan's ``enable_async_tensor_parallel``)
    Inductor's ``micro_pipeline_tp`` pass fuses an all-gather with every product that consumes it and a
    reduce-scatter with the one product that produces it, and runs each fused pair in ``t`` chunks of ``m / t``
    rows, fetching (or sending) one chunk while computing another: ``max(g', c + g'/t)`` for the
    collective's ``c`` and the chunked products' ``g'``, of which the products' unchunked ``g`` is already in
    the layer's compute. Forward: the all-gathers before wq/wk/wv and w1/w3, the reduce-scatters after wo and
    w2. Backward: the all-gathers of the output gradients of wo and w2 with their input-gradient products; the
    reduce-scatters of the summed input gradients of wq+wk+wv and w1+w3 stay exposed (a sum, not one product).
    """
    if not layout.tp_comm_overlap:
        return 2 * (gather + scatter), 2 * (gather + scatter)
    t = layout.tensor
    products = {name: works[0] for name, kind, works in ops if kind == "MatMul" and works[0].kind == "gemm"}

    def fused(comm: float, names: tuple[str, ...], backward: bool) -> float:
        names = tuple(n for n in names if n in products)
        if not names or model.moe and names[0] in ("w1", "w2", "w3"):
            return comm
        whole = chunked = 0.0
        for name in names:
            w = products[name]
            dtype = usable_dtype(acc, Dtype(w.dtype) if w.dtype is not None else layout.dtype)
            n, k = (w.k, w.n) if backward else (w.n, w.k)  # the input gradient's product is (m, k, n)
            whole += gemm_seconds(w.m, n, k, acc, dtype, params, w.batch, w.element_bytes)
            chunked += t * gemm_seconds(w.m / t, n, k, acc, dtype, params, w.batch, w.element_bytes)
        return max(chunked, comm + chunked / t) - whole

    up = ("w1", "w3") if model.swiglu else ("w1",)
    fwd = fused(gather, ("wq", "wk", "wv"), False) + fused(scatter, ("wo",), False)
    fwd += fused(gather, up, False) + fused(scatter, ("w2",), False)
    bwd = fused(gather, ("wo",), True) + fused(gather, ("w2",), True) + scatter  # wq + wk + wv: a sum
    bwd += scatter if len(up) > 1 else fused(scatter, up, True)
    return fwd, bwd


def _output_layer_seconds(
    model: TransformerSpec, cluster: Cluster, layout: Layout, params: PerfParams
) -> tuple[float, float]:
    """(forward, backward) of the final norm, the vocabulary-parallel output GEMM and the cross-entropy."""
    return ops_seconds(output_ops(model, layout), cluster.accelerator, layout.dtype, params)


def _embedding_seconds(model: TransformerSpec, cluster: Cluster, layout: Layout, params: PerfParams) -> float:
    """Forward + backward of the embedding lookup (and its dropout), streaming."""
    return ops_seconds(embedding_ops(model, layout), cluster.accelerator, layout.dtype, params)[0]


def _recompute_fraction(model: TransformerSpec, layout: Layout, per_rank: float | None = None) -> float:
    """Fraction of a rank's ``per_rank`` layers (default ``L / p``) whose forward runs twice under full recomputation."""
    if layout.recompute is not Recompute.FULL:
        return 0.0
    if layout.recompute_method is RecomputeMethod.BLOCK and layout.recompute_layers is not None:
        chunk = (model.layers / layout.pipeline if per_rank is None else per_rank) / layout.virtual_stages
        return min(1.0, layout.recompute_layers / chunk)
    return 1.0
