"""Memory of one GPU during training: weights, gradients, optimizer state, activations, reserve.

**Activations** follow Korthikanti et al., *Reducing Activation Recomputation in Large Transformer Models*
(2022), per layer and per micro-batch, with 2-byte activations and 1-byte dropout masks (s: sequence per
context rank, b: micro-batch, h: hidden, a: heads, t: tensor parallel size):

* no sequence parallelism: ``sbh (10 + 24/t + 5as/(ht))``;
* sequence parallelism: ``sbh (34/t + 5as/(ht))``;
* selective recomputation (core attention recomputed) drops the ``5as/(ht)`` term: ``34 sbh / t`` with SP;
* full recomputation keeps the layer input only: ``2 sbh`` (``2 sbh / t`` with SP, whose input is split).

Under torchtitan's kernels (``layout.kernels`` eager or compiled), selective recomputation is torchtitan's per-op
policy instead: :func:`placement.perf.framework_kernels.selective_saved_bytes`.

The same accounting, tensor by tensor, generalises them: grouped-query attention stores K and V at
``g/a`` of Q's size, SwiGLU stores ``6 sbf/t`` instead of GeLU's ``4 sbf/t``, no dropout drops the masks,
and fused (flash) attention stores no ``s x s`` tensor (only its output and a 4-byte log-sum-exp per row
and head). MoE layers store the routed copies of their tokens (``topk`` per token).

Micro-batches in flight on pipeline rank i of p (m micro-batches, v chunks): GPipe m; 1F1B and ZB-H1
``min(m, p - i)`` micro-batches of ``L/p`` layers; interleaved ``min(mv, 2(p-i-1) + (v-1)p + 1)`` chunks of
``L/(pv)`` layers (so rank 0 holds ``L (1 + (p-1)/(pv))`` layers' worth, as the paper states).

**Weights and optimizer** (mixed-precision Adam): 2-byte weights, gradients 4 bytes (fp32 accumulation,
Megatron's default for bf16) or 2, fp32 master weights and two fp32 moments (12 bytes). The distributed
optimizer / ZeRO-1 shards the 12 bytes over the data x context group, ZeRO-2 also the gradients, ZeRO-3
(FSDP) also the weights. Expert weights are sharded over ``d cp / ep`` ranks. A fixed reserve
(:attr:`PerfParams.reserve_bytes`) covers the CUDA context, communication workspaces and fragmentation.
"""

from __future__ import annotations

from dataclasses import dataclass

from .framework_kernels import float8_gathered, selective_saved_bytes
from .hardware import Dtype
from .layout import Attention, Kernels, Layout, Recompute, RecomputeMethod, Schedule, stage_layers
from .params import DEFAULT_PARAMS, PerfParams
from .transformer import TransformerSpec


@dataclass(frozen=True)
class MemoryBreakdown:
    """Bytes on the most loaded GPU, by part; ``total`` is their sum."""

    weights: float
    gradients: float
    optimizer_state: float
    activations: float
    output_layer: float
    reserve: float
    stage: int = 0
    layers_in_flight: float = 0.0
    host: float = 0.0  #: bytes offloaded to CPU memory (not in ``total``, which is GPU memory)

    @property
    def total(self) -> float:
        """Sum of every part, bytes."""
        return (
            self.weights + self.gradients + self.optimizer_state + self.activations + self.output_layer + self.reserve
        )

    def as_dict(self) -> dict[str, float]:
        """Bytes by part and ``total`` (for JSON)."""
        return {
            "weights": self.weights,
            "gradients": self.gradients,
            "optimizer_state": self.optimizer_state,
            "activations": self.activations,
            "output_layer": self.output_layer,
            "reserve": self.reserve,
            "total": self.total,
        }


def _act_bytes(layout: Layout) -> int:
    return 4 if layout.dtype in (Dtype.FP32, Dtype.TF32) else 2


def layer_activation_bytes(model: TransformerSpec, layout: Layout, recompute: Recompute | None = None) -> float:
    """Bytes one layer keeps for its backward pass, per micro-batch, on one GPU.

    Parameters
    ----------
    model, layout : TransformerSpec, Layout
        Shapes and parallel layout (``sequence_parallel``, ``attention``, ``micro_batch``, t, cp).
    recompute : Recompute or None
        Override of ``layout.recompute``.

    Returns
    -------
    float
        Bytes; equals Korthikanti et al.'s formulas for a GPT layer with unfused attention.
    """
    recompute = layout.recompute if recompute is None else Recompute(recompute)
    if recompute is Recompute.SELECTIVE and layout.kernels is not Kernels.FUSED:  # torchtitan's per-op policy
        return selective_saved_bytes(model, layout)
    e = _act_bytes(layout)
    t = layout.tensor
    s = model.seq_length / layout.context
    b, h, a, d, g, f = layout.micro_batch, model.hidden, model.heads, model.head_dim, model.groups, model.ffn
    sbh = s * b * h
    sp = t if layout.sequence_parallel else 1
    mask = 1.0 if model.dropout else 0.0
    if recompute is Recompute.FULL:
        return e * sbh / sp
    norms = 2 * e * sbh / sp  # inputs of the two norms
    # Attention block: QKV input (norm output), Q, K, V, projection input, dropout mask after the projection.
    attention = e * sbh / sp + e * s * b * (a + 2 * g) * d / t + e * sbh / t + mask * sbh / sp
    if layout.attention is Attention.UNFUSED:
        if recompute is not Recompute.SELECTIVE:
            # softmax output (2 bytes) and, with dropout, its mask (1) and output (2): 5as^2b/t (2as^2b/t without)
            attention += ((2 * e + 1) if model.dropout else e) * a * s * s * b / t
    elif recompute is not Recompute.SELECTIVE:
        attention += 4.0 * a * s * b / t  # fp32 log-sum-exp per row and head
    # FFN: input (norm output), fc1 output(s), activation output, dropout mask after fc2.
    ffn_inner = (3 if model.swiglu else 2) * e * s * b * f / t
    ffn = e * sbh / sp + mask * sbh / sp
    if model.moe:
        ffn += model.moe_topk * (e * sbh / sp + ffn_inner)
    else:
        ffn += ffn_inner
    return norms + attention + ffn


def korthikanti_layer_bytes(s: float, b: float, h: float, a: float, t: int, sp: bool, recompute: Recompute) -> float:
    """The published per-layer formulas (GPT layer, 2-byte activations), for tests and documentation."""
    sbh = s * b * h
    if recompute is Recompute.FULL:
        return 2 * sbh / (t if sp else 1)
    if recompute is Recompute.SELECTIVE:
        return sbh * (34 / t if sp else 10 + 24 / t)
    if sp:
        return sbh * (34 / t + 5 * a * s / (h * t))
    return sbh * (10 + 24 / t + 5 * a * s / (h * t))


def rank_layers(model: TransformerSpec, layout: Layout, stage: int) -> int:
    """Transformer layers of pipeline rank ``stage`` (:func:`~placement.perf.layout.stage_layers`)."""
    if not layout.uneven:
        return model.layers // layout.pipeline
    return stage_layers(model, layout)[stage]


def microbatches_in_flight(layout: Layout, stage: int = 0) -> float:
    """Micro-batches whose activations pipeline rank ``stage`` holds at its peak (chunks / v when interleaved)."""
    p, v, m = layout.pipeline, layout.virtual_stages, layout.microbatches
    if layout.schedule is Schedule.GPIPE:
        return float(m)
    if layout.schedule is Schedule.ZBV:  # the V keeps 1F1B's peak, p micro-batches, on every rank
        return float(min(m, p))
    if layout.schedule is Schedule.INTERLEAVED:
        return min(m * v, 2 * (p - stage - 1) + (v - 1) * p + 1) / v
    return float(min(m, p - stage))


def layers_in_flight(model: TransformerSpec, layout: Layout, stage: int = 0, layers: float | None = None) -> float:
    """Layers' worth of micro-batch activations pipeline rank ``stage`` holds at its peak (``layers``: the
    rank's layer count instead of the layout's)."""
    if layers is not None:
        per_rank = layers
    else:
        per_rank = model.layers / layout.pipeline if not layout.uneven else rank_layers(model, layout, stage)
    return per_rank * microbatches_in_flight(layout, stage)


def recompute_working_bytes(model: TransformerSpec, layout: Layout) -> float:
    """Extra bytes while recomputed activations exist: one group of layers (full), one layer's ``s x s``
    attention tensors (selective, unfused attention); under torchtitan's per-op policy, one layer's recomputed
    tensors (what it does not save)."""
    if layout.recompute is Recompute.SELECTIVE and layout.kernels is not Kernels.FUSED:
        saved = layer_activation_bytes(model, layout, Recompute.SELECTIVE)
        return max(0.0, layer_activation_bytes(model, layout, Recompute.NONE) - saved)
    if layout.recompute is Recompute.SELECTIVE:
        if layout.attention is not Attention.UNFUSED:
            return 0.0
        s = model.seq_length / layout.context
        per = (2 * _act_bytes(layout) + 1) if model.dropout else _act_bytes(layout)
        return per * model.heads * s * s * layout.micro_batch / layout.tensor
    if layout.recompute is not Recompute.FULL:
        return 0.0
    group = layout.recompute_layers or 1
    if layout.recompute_method is RecomputeMethod.BLOCK:
        group = 1  # block recomputation runs one checkpointed layer at a time
    return group * layer_activation_bytes(model, layout, Recompute.NONE)


def stored_activation_bytes(
    model: TransformerSpec, layout: Layout, stage: int = 0, per_layer: tuple[float, float] | None = None,
    layers: float | None = None,
) -> float:  # fmt: skip
    """Activations of every micro-batch in flight on ``stage`` plus the recomputation working set.

    ``per_layer``: :func:`layer_activation_bytes` of the layout without and with full recomputation, when
    the caller has them (they do not depend on the layout's own recomputation). ``layers``: the rank's layer
    count instead of the layout's (the free-split search sizes a rank before the layout exists).
    """
    in_flight = layers_in_flight(model, layout, stage, layers)
    if per_layer is None:
        full = layer_activation_bytes(model, layout, Recompute.NONE)
        checkpoint = layer_activation_bytes(model, layout, Recompute.FULL)
    else:
        full, checkpoint = per_layer
    if layout.recompute is Recompute.FULL:
        if layers is not None:
            per_rank = layers
        else:
            per_rank = model.layers / layout.pipeline if not layout.uneven else rank_layers(model, layout, stage)
        chunk = per_rank / layout.virtual_stages
        n = layout.recompute_layers
        if layout.recompute_method is RecomputeMethod.BLOCK:
            recomputed = chunk if n is None else min(n, chunk)
            per_layer_bytes = (recomputed * checkpoint + (chunk - recomputed) * full) / chunk
            working = full  # block recomputation runs one checkpointed layer at a time
        else:
            group = n or 1
            per_layer_bytes = checkpoint * (-(-chunk // group)) / chunk
            working = group * full
        return in_flight * per_layer_bytes + working
    own = full if layout.recompute is Recompute.NONE else layer_activation_bytes(model, layout)
    return in_flight * own + recompute_working_bytes(model, layout)


def stage_parameters(
    model: TransformerSpec, layout: Layout, stage: int | None = 0, layers: float | None = None
) -> tuple[float, float]:
    """(dense, expert) parameters held by one GPU of pipeline rank ``stage``.

    ``stage=None`` is a middle rank (no embedding, no output layer); ``layers`` overrides its layer count.
    """
    t, p, ep = layout.tensor, layout.pipeline, layout.expert
    if layers is None:
        layers = model.layers / p if not layout.uneven or stage is None else rank_layers(model, layout, stage)
    norms = 2 * model.norm_parameters()
    dense_layer = model.attention_parameters() / t + norms + (model.hidden * model.num_experts if model.moe else 0)
    expert_layer = 0.0
    if model.moe:
        expert_layer = model.num_experts / ep * model.expert_parameters() / t
    else:
        dense_layer += model.expert_parameters() / t
    dense = layers * dense_layer
    vocab = model.padded_vocab(t)
    if stage == 0:
        dense += vocab * model.hidden / t + model.positions * model.hidden
    if stage == p - 1:
        dense += model.norm_parameters()
        if p > 1 or not model.tied_embeddings:
            dense += vocab * model.hidden / t
    return dense, layers * expert_layer


def output_layer_bytes(model: TransformerSpec, layout: Layout) -> float:
    """Logits and the fp32 softmax of the vocabulary-parallel cross-entropy, one micro-batch (last stage)."""
    tokens = layout.micro_batch * model.seq_length / layout.context
    vocab = model.padded_vocab(layout.tensor)
    return tokens * vocab / layout.tensor * (_act_bytes(layout) + 4) + _act_bytes(layout) * tokens * model.hidden


def static_parts(
    model: TransformerSpec, layout: Layout, stage: int | None, layers: float | None = None
) -> tuple[float, float, float]:
    """(weights, gradients, optimizer state) bytes of one GPU of pipeline rank ``stage``.

    ``stage=None`` is a middle rank (no embedding, no output layer) of ``layers`` layers (default ``L / p``).
    """
    dense, expert = stage_parameters(model, layout, stage, layers)
    shard = layout.fsdp_shard * layout.context  # the ranks one shard group spans (HSDP: one replica's)
    expert_shard = max(1, shard // layout.expert)
    weight_bytes = 4 if layout.dtype in (Dtype.FP32, Dtype.TF32) else 2
    grad_bytes = 4 if layout.fp32_grads() else 2
    optim_bytes = 8 if weight_bytes == 4 else 12
    z = layout.zero_stage

    def sharded(nbytes: float, on: bool) -> float:
        return nbytes * (dense / shard + expert / expert_shard) if on else nbytes * (dense + expert)

    weights = 0.0 if layout.offload_params else sharded(weight_bytes, z >= 3)
    gradients = sharded(grad_bytes, z >= 2)
    if z >= 3:
        if layers is None:
            uneven = layout.uneven and stage is not None
            layers = model.layers / layout.pipeline if not uneven else rank_layers(model, layout, stage)  # type: ignore[arg-type]
        low, _ = float8_gathered(model, layout)  # a layer's weights gathered at one byte (float8 all-gather)
        if layout.fsdp_keeps_gathered:  # torchtitan's FSDP2: the stage's gathered weights kept to the step's end
            weights += weight_bytes * (dense + expert) - (weight_bytes - 1) * low * layers
        else:  # FSDP gathers one layer's weights at a time (and prefetches the next)
            layer_dense = (dense + expert) / max(1.0, layers)
            weights += 2 * (weight_bytes * layer_dense - (weight_bytes - 1) * low)
    if layout.fsdp_accumulates_unsharded:  # the micro-batches' gradients summed unsharded, in the reduce type
        gradients = grad_bytes * (dense + expert)
    optimizer = 0.0 if layout.offload_optimizer else sharded(optim_bytes, z >= 1)
    return weights, gradients, optimizer


def host_bytes(model: TransformerSpec, layout: Layout, stage: int | None) -> float:
    """CPU memory of one GPU's offloaded optimizer state (and weight shard): 0 without offload.

    Exactly what :func:`static_parts` no longer counts on the GPU (offload needs ZeRO >= 1, so the optimizer
    state is the shard; offloaded weights need ZeRO 3, so they are the shard too).
    """
    if not (layout.offload_optimizer or layout.offload_params):
        return 0.0
    dense, expert = stage_parameters(model, layout, stage)
    shard = layout.fsdp_shard * layout.context
    owned = dense / shard + expert / max(1, shard // layout.expert)
    weight_bytes = 4 if layout.dtype in (Dtype.FP32, Dtype.TF32) else 2
    optim_bytes = 8 if weight_bytes == 4 else 12
    return owned * (optim_bytes if layout.offload_optimizer else 0) + owned * (
        weight_bytes if layout.offload_params else 0
    )


def memory_breakdown(
    model: TransformerSpec, layout: Layout, params: PerfParams = DEFAULT_PARAMS, stage: int | None = None
) -> MemoryBreakdown:
    """Memory of the most loaded GPU (or of pipeline rank ``stage``).

    Parameters
    ----------
    model, layout : TransformerSpec, Layout
        What runs and how it is split (the layout should pass :func:`~placement.perf.layout.check_layout`).
    params : PerfParams
        Constants (the reserve).
    stage : int or None
        A pipeline rank; ``None`` takes the most loaded of the first, the second (uneven splits: the middle
        rank with the most micro-batches in flight) and the last rank.

    Returns
    -------
    MemoryBreakdown
    """
    if stage is None:
        # Invariant: the middle ranks of a first/last split hold equal layers and rank 1 has the most in
        # flight; with an even split rank 0 dominates every middle rank (same layers, more in flight); a free
        # split's ranks are all sized.
        best = memory_breakdown(model, layout, params, 0)
        others = sizing_ranks(layout)[1:]
        for other in others:
            m = memory_breakdown(model, layout, params, other)
            if m.total > best.total:
                best = m
        return best
    weights, gradients, optimizer = static_parts(model, layout, stage)
    acts, out = _stage_activations(model, layout, stage)
    return MemoryBreakdown(
        weights=weights,
        gradients=gradients,
        optimizer_state=optimizer,
        activations=acts,
        output_layer=out,
        reserve=params.reserve_bytes,
        stage=stage,
        layers_in_flight=layers_in_flight(model, layout, stage),
        host=host_bytes(model, layout, stage),
    )


def sizing_ranks(layout: Layout) -> list[int]:
    """The pipeline ranks whose memory can be the largest: 0, the last, rank 1 of a first/last split (the
    middle rank with the most in flight), every rank of a free split; rank 0 first."""
    p = layout.pipeline
    if layout.free_split:
        return [0, p - 1, *range(1, p - 1)]
    return [0] + ([p - 1] if p > 1 else []) + ([1] if layout.uneven and p > 2 else [])


def rank_bytes(
    model: TransformerSpec, layout: Layout, stage: int, layers: int, params: PerfParams = DEFAULT_PARAMS,
    per_layer: tuple[float, float] | None = None,
) -> float:  # fmt: skip
    """GPU bytes of pipeline rank ``stage`` if it held ``layers`` layers (the rest of ``layout`` as it is),
    summed in :attr:`MemoryBreakdown.total`'s order (so equal to ``memory_breakdown(..., stage).total`` of the
    layout with that count)."""
    weights, gradients, optimizer = static_parts(model, layout, stage, layers)
    acts, out = _stage_activations(model, layout, stage, per_layer, layers)
    return weights + gradients + optimizer + acts + out + params.reserve_bytes


def _stage_activations(
    model: TransformerSpec, layout: Layout, stage: int, per_layer: tuple[float, float] | None = None,
    layers: float | None = None,
) -> tuple[float, float]:  # fmt: skip
    """(activations, output layer) bytes of pipeline rank ``stage`` (``layers``: its count instead of the layout's)."""
    acts = stored_activation_bytes(model, layout, stage, per_layer, layers)
    if stage == 0:  # embedding output (and its dropout mask) of each micro-batch in flight
        tokens = layout.micro_batch * model.seq_length / layout.context
        acts += (1 + _act_bytes(layout)) * tokens * model.hidden * microbatches_in_flight(layout, 0)
    out = output_layer_bytes(model, layout) if stage == layout.pipeline - 1 else 0.0
    return acts, out


class RecomputeMemory:
    """``memory_breakdown(model, layout).total`` for the recompute variants of one layout, fast.

    The static parts of each rank (weights, gradients, optimizer state) and one layer's activations with and
    without full recomputation do not depend on the recomputation, so they are computed once; each total is
    then summed in :attr:`MemoryBreakdown.total`'s order from the same numbers, so it equals
    :func:`memory_breakdown`'s bit for bit (tested).
    """

    def __init__(self, model: TransformerSpec, layout: Layout, params: PerfParams = DEFAULT_PARAMS) -> None:
        self.model, self.reserve = model, params.reserve_bytes
        stages = sizing_ranks(layout)
        self.statics = [(s, static_parts(model, layout, s)) for s in stages]
        self.per_layer = (
            layer_activation_bytes(model, layout, Recompute.NONE),
            layer_activation_bytes(model, layout, Recompute.FULL),
        )

    def total(self, layout: Layout) -> float:
        """Bytes of the most loaded GPU of ``layout`` (a recompute variant of the layout given at construction)."""
        best = -1.0
        for stage, (weights, gradients, optimizer) in self.statics:
            acts, out = _stage_activations(self.model, layout, stage, self.per_layer)
            best = max(best, weights + gradients + optimizer + acts + out + self.reserve)
        return best


def free_split_floor(
    model: TransformerSpec, template: Layout, params: PerfParams, per_layer: tuple[float, float]
) -> float:
    """Bytes below which no free split of ``template`` (a shape with its recomputation mode) gets.

    Every rank holds at least v layers, so the split's memory is at least rank 0's and rank p-1's with v layers;
    some rank holds at least ``n = ceil(L / (p v)) v`` layers, and a rank's bytes grow with its count, so it is
    also at least the least of the ranks' bytes with n layers: rank 0, rank p-1 and rank p-2 (the middle ranks'
    micro-batches in flight never grow with the rank, so p-2 is the leanest middle one). ``per_layer``: one
    layer's activation bytes without and with full recomputation (the same for every mode).
    """
    p, v = template.pipeline, template.virtual_stages
    n = -(-model.layers // (p * v)) * v
    ends = max(rank_bytes(model, template, r, v, params, per_layer) for r in (0, p - 1))
    most = min(rank_bytes(model, template, r, n, params, per_layer) for r in (0, p - 2, p - 1))
    return max(ends, most)
