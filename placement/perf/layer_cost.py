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
from .hardware import Cluster, Dtype
from .kernels import flash_attention_seconds, gemm_seconds, streaming_seconds, training_gemm_seconds
from .layout import Attention, Layout, Recompute, RecomputeMethod
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
    attn_fwd: float  # core attention forward (what selective recomputation repeats)
    tp_fwd: float  # exposed tensor-parallel communication of one forward pass
    tp_bwd: float
    cp_fwd: float
    cp_bwd: float
    ep_fwd: float
    ep_bwd: float


def _exposed(comm: float, hiding: float, overlap: bool, params: PerfParams) -> float:
    """Communication left on the critical path when it may run under ``hiding`` seconds of compute."""
    if not overlap:
        return comm
    return max(0.0, comm - hiding) + params.tp_overlap_slowdown * min(comm, hiding)


def _layer_cost(
    model: TransformerSpec, cluster: Cluster, layout: Layout, params: PerfParams, links: Links
) -> _LayerCost:
    acc, dt = cluster.accelerator, layout.dtype
    t, cp = layout.tensor, layout.context
    e = 4.0 if dt in (Dtype.FP32, Dtype.TF32) else 2.0
    s, b, h, a, g, d, f = (model.seq_length, layout.micro_batch, model.hidden, model.heads, model.groups,
                           model.head_dim, model.ffn)  # fmt: skip
    T = b * s / cp  # tokens per GPU
    sp = t if layout.sequence_parallel else 1
    # Linear layers.
    fwd, bwd = 0.0, 0.0
    shapes = [(T, (a + 2 * g) * d / t, h, 1.0), (T, h, a * d / t, 1.0)]
    fc1_width = (2 * f if model.swiglu else f) / t
    if model.moe:
        local = model.num_experts / layout.expert
        m_expert = T * model.moe_topk * layout.expert / model.num_experts
        shapes += [(m_expert, fc1_width, h, local), (m_expert, h, f / t, local), (T, model.num_experts, h, 1.0)]
    else:
        shapes += [(T, fc1_width, h, 1.0), (T, h, f / t, 1.0)]
    wgrad_col = 0.0  # weight-gradient GEMMs of the column-parallel layers (QKV, fc1): (k, n, m)
    for i, (m_, n_, k_, batch) in enumerate(shapes):
        gf, gb = training_gemm_seconds(m_, n_, k_, acc, dt, params, batch, e)
        fwd, bwd = fwd + gf, bwd + gb
        if i in (0, 2):
            wgrad_col += gemm_seconds(k_, n_, m_, acc, dt, params, batch, e)
    gemm_fwd, gemm_bwd = fwd, bwd
    # Core attention.
    heads = b * a / t
    if layout.attention is Attention.FLASH:
        attn_fwd, attn_bwd = flash_attention_seconds(heads, s / cp, s, d, True, acc, dt, params)
    else:
        qk_f, qk_b = training_gemm_seconds(s / cp, s, d, acc, dt, params, heads, e)
        av_f, av_b = training_gemm_seconds(s / cp, d, s, acc, dt, params, heads, e)
        softmax_bytes = (2 * e + ((2 * e + 1) if model.dropout else 0.0)) * heads * s / cp * s
        sm = streaming_seconds(softmax_bytes, acc, params, 2)
        attn_fwd = qk_f + av_f + sm
        attn_bwd = qk_b + av_b + streaming_seconds(softmax_bytes * params.elementwise_bwd_factor, acc, params, 2)
    # Streaming kernels: two norms, two (dropout +) residual adds, the activation, rotary, MoE permutes.
    stream = 2 * 2 * e * T * h / sp + 2 * (3 * e + (1 if model.dropout else 0)) * T * h / sp
    stream += (3 if model.swiglu else 2) * e * T * f / t * (model.moe_topk if model.moe else 1)
    if model.rope:
        stream += 2 * e * T * (a + g) * d / t
    if model.moe:
        stream += 4 * e * T * model.moe_topk * h / sp
    fwd += attn_fwd + streaming_seconds(stream, acc, params, 8)
    bwd += attn_bwd + streaming_seconds(stream * params.elementwise_bwd_factor, acc, params, 8)
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
    if layout.tp_comm_overlap:
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
    return _LayerCost(fwd, bwd, attn_fwd, tp_fwd, tp_bwd, cp_fwd, cp_bwd, ep_fwd, ep_bwd)


def _output_layer_seconds(
    model: TransformerSpec, cluster: Cluster, layout: Layout, params: PerfParams
) -> tuple[float, float]:
    """(forward, backward) of the final norm, the vocabulary-parallel output GEMM and the cross-entropy."""
    acc, dt, t = cluster.accelerator, layout.dtype, layout.tensor
    e = 4.0 if dt in (Dtype.FP32, Dtype.TF32) else 2.0
    T = layout.micro_batch * model.seq_length / layout.context
    vocab = model.padded_vocab(t) / t
    gf, gb = training_gemm_seconds(T, vocab, model.hidden, acc, dt, params, 1.0, e)
    ce = T * vocab * (e + 8.0)
    norm = 2 * e * T * model.hidden
    fwd = gf + streaming_seconds(ce + norm, acc, params, 4)
    bwd = gb + streaming_seconds((ce + norm) * params.elementwise_bwd_factor, acc, params, 4)
    return fwd, bwd


def _embedding_seconds(model: TransformerSpec, cluster: Cluster, layout: Layout, params: PerfParams) -> float:
    """Forward + backward of the embedding lookup (and its dropout), streaming."""
    e = 4.0 if layout.dtype in (Dtype.FP32, Dtype.TF32) else 2.0
    T = layout.micro_batch * model.seq_length / layout.context
    return streaming_seconds((3 * e + 1) * T * model.hidden, cluster.accelerator, params, 3)


def _recompute_fraction(model: TransformerSpec, layout: Layout, per_rank: float | None = None) -> float:
    """Fraction of a rank's ``per_rank`` layers (default ``L / p``) whose forward runs twice under full recomputation."""
    if layout.recompute is not Recompute.FULL:
        return 0.0
    if layout.recompute_method is RecomputeMethod.BLOCK and layout.recompute_layers is not None:
        chunk = (model.layers / layout.pipeline if per_rank is None else per_rank) / layout.virtual_stages
        return min(1.0, layout.recompute_layers / chunk)
    return 1.0
