"""Iteration time, throughput and memory of one training layout: :func:`predict`.

The iteration of a pipeline rank is ``m`` micro-batches of forward, backward (and recomputation) of its
``L/p`` layers, plus the first rank's embedding and the last rank's output layer and loss. Per layer and
micro-batch (closed form, see :mod:`placement.perf.kernels` and :mod:`placement.perf.collectives`):

* the GEMMs (QKV, attention projection, FFN or routed experts) forward and backward (dgrad + wgrad);
* core attention: fused (flash) or unfused (two batched GEMMs and a materialised softmax);
* streaming kernels (norms, activation, dropout + residual, rotary, softmax) at HBM speed;
* tensor-parallel all-reduces (or all-gathers + reduce-scatters with sequence parallelism), exposed, or hidden
  behind the GEMMs with ``tp_comm_overlap``; context-parallel K/V exchange hidden behind attention when it
  can be; expert all-to-alls exposed;
* recomputation: the whole forward again (full) or core attention (selective).

Then ``T = m * max_stage + bubble + exposed data-parallel reduction + optimizer step + fixed overhead`` with
``bubble = (p-1)/v * mean_stage`` (1F1B, GPipe, interleaved) or a third of it (ZB-H1; ZB-V with v = 2), pipeline sends
(scatter/gather over the tensor group) on the critical path, and a synchronisation term: every pipelined step
waits for the slowest of ``p`` ranks, ``stage_jitter * sqrt(2 ln p)`` of the step.

Reported TFLOP/s per GPU count recomputation (as Narayanan et al. 2021 do); MFU does not.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from .calibration import CALIBRATION_FILE, CalibrationBand, CalibrationResult, load_calibration
from .collectives import (
    GroupKind,
    Links,
    allgather_seconds,
    allreduce_seconds,
    alltoall_seconds,
    megatron_group,
    p2p_seconds,
    reduce_scatter_seconds,
    strided_group,
)
from .hardware import Cluster, Dtype
from .kernels import flash_attention_seconds, gemm_seconds, streaming_seconds, training_gemm_seconds
from .layout import Attention, Layout, Recompute, RecomputeMethod, check_layout, stage_layers
from .memory import MemoryBreakdown, memory_breakdown, stage_parameters
from .params import DEFAULT_PARAMS, PerfParams
from .transformer import TransformerSpec

#: Identifier of this model's equations and constants (changes whenever a prediction would change).
MODEL_ID = "perf-v1"


@dataclass(frozen=True)
class TimeBreakdown:
    """Seconds of one iteration on the critical pipeline rank, by cause (they add up to the iteration)."""

    compute: float
    recompute: float
    tp_comm: float
    cp_comm: float
    ep_comm: float
    pipeline_bubble: float
    pipeline_p2p: float
    pipeline_sync: float
    dp_comm: float
    optimizer: float
    overhead: float
    offload: float = 0.0  #: exposed PCIe transfers of offloaded optimizer state / weights (DeepSpeed)

    @property
    def total(self) -> float:
        """The iteration time, seconds."""
        return sum(self.as_dict().values())

    def as_dict(self) -> dict[str, float]:
        """Seconds by part."""
        return {k: float(getattr(self, k)) for k in self.__dataclass_fields__}


@dataclass(frozen=True)
class Prediction:
    """What :func:`predict` returns (times in seconds, memory in bytes, FLOP/s in TFLOP/s)."""

    iteration_seconds: float
    tokens_per_second: float
    tflops_per_gpu: float
    mfu: float
    memory: MemoryBreakdown
    memory_capacity: float
    fits: bool
    time: TimeBreakdown
    microbatches: int
    model_flops: float
    hardware_flops: float
    model_id: str
    band: CalibrationBand | None
    notes: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, object]:
        """A JSON-ready dictionary (the CLI's ``--json`` object)."""
        band = self.band
        return {
            "model_id": self.model_id,
            "iteration_seconds": self.iteration_seconds,
            "tokens_per_second": self.tokens_per_second,
            "tflops_per_gpu": self.tflops_per_gpu,
            "mfu": self.mfu,
            "memory": self.memory.as_dict(),
            "memory_capacity": self.memory_capacity,
            "fits": self.fits,
            "time": self.time.as_dict(),
            "microbatches": self.microbatches,
            "model_flops_per_iteration": self.model_flops,
            "hardware_flops_per_iteration": self.hardware_flops,
            "calibration_band": None
            if band is None
            else {
                "max_abs_error": band.max_abs_error,
                "mean_abs_error": band.mean_abs_error,
                "rows": band.rows,
                "source": band.source,
            },
            "notes": list(self.notes),
        }


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


@dataclass(frozen=True)
class _StageTime:
    compute: float
    recompute: float
    tp: float
    cp: float
    ep: float
    p2p: float
    fwd: float  # forward of the stage (for overlap of parameter gathering)
    bwd: float

    @property
    def total(self) -> float:
        return self.compute + self.recompute + self.tp + self.cp + self.ep + self.p2p


def _stage_time(model: TransformerSpec, cluster: Cluster, layout: Layout, params: PerfParams, links: Links,
                cost: _LayerCost, first: bool, last: bool, layers: float | None = None) -> _StageTime:  # fmt: skip
    """One micro-batch through one pipeline rank (all its chunks, ``layers`` layers, default ``L / p``)."""
    n = model.layers / layout.pipeline if layers is None else layers
    fwd, bwd = n * cost.fwd, n * cost.bwd
    if first:
        fwd += _embedding_seconds(model, cluster, layout, params)
    if last:
        of, ob = _output_layer_seconds(model, cluster, layout, params)
        fwd, bwd = fwd + of, bwd + ob
    rec_frac = _recompute_fraction(model, layout, n)
    recompute = n * (rec_frac * (cost.fwd + cost.tp_fwd + cost.cp_fwd + cost.ep_fwd))
    if layout.recompute is Recompute.SELECTIVE:
        recompute = n * cost.attn_fwd
    p2p = 0.0
    if layout.pipeline > 1:
        e = 4.0 if layout.dtype in (Dtype.FP32, Dtype.TF32) else 2.0
        tokens = layout.micro_batch * model.seq_length / layout.context
        # scatter/gather: each tensor rank sends 1/t of the activation, then the group all-gathers it
        nbytes = tokens * model.hidden * e / layout.tensor
        pp_group = megatron_group(GroupKind.PIPELINE, cluster, layout.tensor, layout.context, layout.data,
                                  layout.pipeline)  # fmt: skip
        one = p2p_seconds(nbytes, pp_group.per_node > 1, links)
        if not layout.sequence_parallel and layout.tensor > 1:
            tp_group = megatron_group(GroupKind.TENSOR, cluster, layout.tensor, layout.context, layout.data,
                                      layout.pipeline)  # fmt: skip
            one += allgather_seconds(nbytes * layout.tensor, tp_group, links)
        p2p = 2 * layout.virtual_stages * one
    return _StageTime(
        compute=fwd + bwd,
        recompute=recompute,
        tp=n * (cost.tp_fwd + cost.tp_bwd),
        cp=n * (cost.cp_fwd + cost.cp_bwd),
        ep=n * (cost.ep_fwd + cost.ep_bwd),
        p2p=p2p,
        fwd=fwd,
        bwd=bwd + recompute,
    )


def _dp_seconds(model: TransformerSpec, cluster: Cluster, layout: Layout, params: PerfParams, links: Links,
                stage: _StageTime, stage_index: int, layers: float | None = None) -> float:  # fmt: skip
    """Exposed data-parallel gradient reduction and parameter gathering of one iteration (``layers``: the
    rank's count instead of the layout's)."""
    dense, expert = stage_parameters(model, layout, stage_index, layers)
    t, cp, d, ep = layout.tensor, layout.context, layout.data, layout.expert
    e_w = 4.0 if layout.dtype in (Dtype.FP32, Dtype.TF32) else 2.0
    e_g = 4.0 if layout.fp32_grads() else 2.0
    groups = [(dense, megatron_group(GroupKind.DATA, cluster, t, cp, d, layout.pipeline))]
    if expert > 0:
        groups.append((expert, strided_group(max(1, d * cp // ep), t * ep, cluster.gpus_per_node)))
    reduce = gather = 0.0
    for count, group in groups:
        if group.size <= 1:
            continue
        if layout.zero_stage == 0:
            reduce += allreduce_seconds(count * e_g, group, links)
        else:
            reduce += reduce_scatter_seconds(count * e_g, group, links)
            gather += allgather_seconds(count * e_w, group, links)
    if layout.zero_stage == 3:  # weights gathered for forward and backward, gradients scattered, per micro-batch
        per_mb = 2 * gather + reduce
        exposed = max(0.0, per_mb - stage.total) * layout.microbatches
        return exposed + params.grad_bucket_fraction * per_mb
    bucket = params.grad_bucket_fraction
    if layout.overlap_grad_reduce:
        reduce = max(bucket * reduce, reduce - stage.bwd)
    if layout.overlap_param_gather:
        gather = max(bucket * gather, gather - stage.fwd)
    return reduce + gather


def iteration_time(
    model: TransformerSpec, cluster: Cluster, layout: Layout, params: PerfParams = DEFAULT_PARAMS,
    cost: _LayerCost | None = None,
) -> TimeBreakdown:  # fmt: skip
    """Seconds of one iteration by cause, for a layout already checked (no validation here).

    ``cost``: the layout's per-layer cost when the caller has it (recompute variants of one layout share it:
    it does not depend on the recomputation).
    """
    links = Links.of(cluster, params)
    if cost is None:
        cost = _layer_cost(model, cluster, layout, params, links)
    p, v, m = layout.pipeline, layout.virtual_stages, layout.microbatches
    counts: tuple[float, ...] = stage_layers(model, layout) if layout.uneven else (model.layers / p,) * p
    first = _stage_time(model, cluster, layout, params, links, cost, True, p == 1, counts[0])
    last = first if p == 1 else _stage_time(model, cluster, layout, params, links, cost, False, True, counts[-1])
    if layout.free_split:
        # every rank its own count (a middle rank's step depends on its count only)
        steps = {
            n: _stage_time(model, cluster, layout, params, links, cost, False, False, n) for n in set(counts[1:-1])
        }
        ranks = [(0, first), (p - 1, last)] + [(i, steps[counts[i]]) for i in range(1, p - 1)]
        critical = max((st for _, st in ranks), key=lambda st: st.total)
        mean = sum(st.total for _, st in ranks) / p
    else:
        middle = _stage_time(model, cluster, layout, params, links, cost, False, False, counts[1]) if p > 2 else first
        critical = max((first, last, middle), key=lambda st: st.total)
        mean = (first.total + last.total + (p - 2) * middle.total) / p if p > 1 else first.total
        # the middle ranks hold no embedding, so only an uneven split can make one of them the heaviest
        ranks = [(0, first), (p - 1, last)] + ([(1, middle)] if layout.uneven and p > 2 else [])
    bubble = (p - 1) / v * mean
    if layout.schedule.zero_bubble:  # ZB-H1: a third of 1F1B's; ZB-V: the same over its 2 chunks
        bubble /= 3.0
    # the rank with the most parameters (the first of the order 0, p - 1, 1, 2, ... on ties) waits longest
    # for its gradients and optimizer step
    heavy, heavy_time = ranks[0]
    heavy_params = stage_parameters(model, layout, 0)
    for rank, st in ranks[1:]:
        params_of = stage_parameters(model, layout, rank)
        if sum(params_of) > sum(heavy_params):
            heavy, heavy_time, heavy_params = rank, st, params_of
    dp, optimizer, offload = _tail_seconds(model, cluster, layout, params, links, heavy_time, heavy, heavy_params)
    return TimeBreakdown(
        compute=m * critical.compute,
        recompute=m * critical.recompute,
        tp_comm=m * critical.tp,
        cp_comm=m * critical.cp,
        ep_comm=m * critical.ep,
        pipeline_bubble=bubble,
        pipeline_p2p=m * critical.p2p,
        pipeline_sync=m * critical.total * params.stage_jitter * math.sqrt(2 * math.log(p)),
        dp_comm=dp,
        optimizer=optimizer,
        overhead=params.iteration_overhead_s,
        offload=offload,
    )


def _tail_seconds(
    model: TransformerSpec, cluster: Cluster, layout: Layout, params: PerfParams, links: Links,
    heavy_time: _StageTime, heavy: int, heavy_params: tuple[float, float], layers: float | None = None,
) -> tuple[float, float, float]:  # fmt: skip
    """(data-parallel, optimizer, offload) seconds of the iteration, set by its heaviest rank ``heavy`` (its step
    ``heavy_time``, parameters ``heavy_params``; ``layers``: its count instead of the layout's)."""
    m, p = layout.microbatches, layout.pipeline
    dp = _dp_seconds(model, cluster, layout, params, links, heavy_time, heavy, layers)
    if p > 1 and model.tied_embeddings:  # embedding gradients of the first and last ranks are summed
        e_g = 4.0 if layout.fp32_grads() else 2.0
        nbytes = model.padded_vocab(layout.tensor) * model.hidden / layout.tensor * e_g
        dp += allreduce_seconds(nbytes, strided_group(2, layout.gpus // p * (p - 1), cluster.gpus_per_node), links)
    dense, expert = heavy_params
    if layout.zero_stage >= 1:  # the distributed optimizer updates its shard only
        shard = layout.data * layout.context
        dense, expert = dense / shard, expert / max(1, shard // layout.expert)
    optimizer = streaming_seconds((dense + expert) * params.optimizer_bytes_per_param, cluster.accelerator, params, 20)
    offload = 0.0
    if layout.offload_optimizer:
        # ZeRO-Offload: the gradient shard goes down and the updated weight shard comes back over PCIe, the
        # Adam step runs on the CPU; neither is overlapped here (an upper bound of DeepSpeed's overlap)
        e_w = 4.0 if layout.dtype in (Dtype.FP32, Dtype.TF32) else 2.0
        pcie = cluster.accelerator.pcie_bytes_per_s
        offload = (dense + expert) * (e_w + e_w) / pcie
        optimizer = (dense + expert) * params.host_adam_seconds_per_param
    if layout.offload_params:
        # the weight shard is fetched for every forward and backward of every micro-batch, prefetched
        # under the rank's compute of that micro-batch
        e_w = 4.0 if layout.dtype in (Dtype.FP32, Dtype.TF32) else 2.0
        fetch = 2 * (dense + expert) * e_w / cluster.accelerator.pcie_bytes_per_s
        offload += m * max(0.0, fetch - heavy_time.total)
    return dp, optimizer, offload


def stage_seconds(
    model: TransformerSpec, cluster: Cluster, layout: Layout, params: PerfParams = DEFAULT_PARAMS
) -> list[tuple[float, float]]:
    """Per pipeline rank, seconds of one micro-batch's (forward, backward) through all its layers.

    The backward includes recomputation; the exposed communication of a rank (tensor, context, expert,
    pipeline sends) is shared between the two in proportion to their compute. Their sum is the rank's step
    of :func:`iteration_time` (for :mod:`placement.perf.timeline`).
    """
    links = Links.of(cluster, params)
    cost = _layer_cost(model, cluster, layout, params, links)
    p = layout.pipeline
    counts: tuple[float, ...] = stage_layers(model, layout) if layout.uneven else (model.layers / p,) * p
    out = []
    for i, n in enumerate(counts):
        st = _stage_time(model, cluster, layout, params, links, cost, i == 0, i == p - 1, n)
        share = st.fwd / (st.fwd + st.bwd) if st.fwd + st.bwd > 0 else 0.5
        out.append((st.total * share, st.total * (1 - share)))
    return out


def iteration_flops(model: TransformerSpec, layout: Layout) -> tuple[float, float]:
    """(model, hardware) FLOPs of one iteration: forward and backward; hardware adds recomputation.

    For a GPT with full recomputation, the hardware count is Narayanan et al.'s Eq. 3 (padded vocabulary).
    """
    layer, core, logits = layer_forward_flops(model, 1.0, model.padded_vocab(layout.tensor))
    model_flops = layout.global_batch * 3.0 * (model.layers * layer + logits)
    recompute_flops = 0.0
    if layout.recompute is Recompute.FULL and layout.uneven:
        recomputed = sum(n * _recompute_fraction(model, layout, n) for n in stage_layers(model, layout))
        recompute_flops = recomputed / model.layers * layer
    elif layout.recompute is Recompute.FULL:
        recompute_flops = _recompute_fraction(model, layout) * layer
    elif layout.recompute is Recompute.SELECTIVE:
        recompute_flops = core
    return model_flops, model_flops + layout.global_batch * model.layers * recompute_flops


def predict(
    model: TransformerSpec,
    cluster: Cluster,
    layout: Layout,
    params: PerfParams = DEFAULT_PARAMS,
    *,
    check: bool = True,
    with_band: bool = True,
) -> Prediction:
    """Predict one training iteration of ``model`` on ``cluster`` split as ``layout``.

    Parameters
    ----------
    model, cluster, layout : TransformerSpec, Cluster, Layout
        The run.
    params : PerfParams
        The model's physical constants (default: the calibrated ones).
    check : bool
        Validate the layout first (:func:`~placement.perf.layout.check_layout`); a search that already
        enumerates valid layouts may skip it.
    with_band : bool
        Attach the calibration band (computed once per ``params`` from the published runs).

    Returns
    -------
    Prediction
        Iteration seconds, tokens/s, TFLOP/s per GPU (recomputation counted), MFU, memory of the most loaded
        GPU and whether it fits, the time by cause.

    Raises
    ------
    InvalidLayoutError
        If ``check`` and the layout breaks a rule (one line naming it).
    """
    if check:
        check_layout(model, cluster, layout)
    time = iteration_time(model, cluster, layout, params)
    seconds = time.total
    model_flops, hardware_flops = iteration_flops(model, layout)
    memory = memory_breakdown(model, layout, params)
    capacity = cluster.accelerator.memory_bytes
    host_fits = memory.host <= cluster.host_memory_per_gpu
    peak = cluster.accelerator.peak_flops(layout.dtype)
    band = None
    if with_band:
        band = calibration_band(params)
    notes = []
    if layout.dtype is Dtype.FP8:
        notes.append("fp8: GEMMs at the fp8 peak, attention and weights in bf16; MFU against the fp8 peak")
    if not host_fits:
        notes.append(f"offloaded state {memory.host / 2**30:.1f} GiB exceeds the host memory per GPU")
    return Prediction(
        iteration_seconds=seconds,
        tokens_per_second=layout.global_batch * model.seq_length / seconds,
        tflops_per_gpu=hardware_flops / (seconds * cluster.gpus) / 1e12,
        mfu=model_flops / (seconds * cluster.gpus * peak),
        memory=memory,
        memory_capacity=capacity,
        fits=memory.total <= capacity and host_fits,
        time=time,
        microbatches=layout.microbatches,
        model_flops=model_flops,
        hardware_flops=hardware_flops,
        model_id=MODEL_ID,
        band=band,
        notes=tuple(notes),
    )


def calibration_results(params: PerfParams = DEFAULT_PARAMS, path: Path | str | None = None) -> list[CalibrationResult]:
    """Every published run with the model's prediction."""
    results = []
    for row in load_calibration(path):
        pred = predict(row.model, row.cluster, row.layout, params, with_band=False)
        results.append(
            CalibrationResult(row, pred.iteration_seconds, pred.tflops_per_gpu, pred.memory.total, pred.fits)
        )
    return results


@lru_cache(maxsize=8)
def calibration_band(params: PerfParams = DEFAULT_PARAMS) -> CalibrationBand | None:
    """Max and mean ``|predicted / measured - 1|`` of the iteration time over the published runs.

    ``None`` when the table is not installed beside the package.
    """
    if not CALIBRATION_FILE.is_file():
        return None
    results = calibration_results(params)
    errors = [abs(r.ratio - 1.0) for r in results]
    return CalibrationBand(max(errors), sum(errors) / len(errors), len(errors), CALIBRATION_FILE.name)
