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

The per-layer, embedding and output-layer seconds are :mod:`placement.perf.layer_cost`; this module composes
them into stages, the pipeline and the iteration.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

from .calibration import CALIBRATION_FILE, CalibrationBand, CalibrationResult, load_calibration
from .collectives import (
    GroupKind,
    Links,
    allgather_seconds,
    allreduce_seconds,
    megatron_group,
    p2p_seconds,
    reduce_scatter_seconds,
    strided_group,
)
from .coverage import outside_calibration
from .framework_kernels import float8_gathered, float8_products, selective_recomputed
from .hardware import Cluster, Dtype
from .kernels import streaming_seconds
from .layer_cost import (
    _layer_cost,
    _LayerCost,
    _recompute_fraction,
    layer_forward_flops,
    layer_ops,
)
from .layout import Kernels, Layout, Recompute, check_layout, stage_layers
from .memory import MemoryBreakdown, memory_breakdown, stage_parameters
from .params import DEFAULT_PARAMS, PerfParams
from .transformer import TransformerSpec

if TYPE_CHECKING:
    from .error_statement import ErrorStatement

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
    """What :func:`predict` returns (times in seconds, memory in bytes, FLOP/s in TFLOP/s).

    ``band`` is the model's error on the published runs; ``outside_calibration`` lists, in words, each property
    of this run that none of those runs shares (:func:`placement.perf.coverage.outside_calibration`): there the
    band is not evidence, the model extrapolates.
    """

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
    outside_calibration: tuple[str, ...] = ()
    framework: str = "megatron"

    @property
    def error(self) -> ErrorStatement:
        """What the model's error is known to be for this run (:func:`~placement.perf.error_statement.error_statement`)."""
        from .error_statement import error_statement

        return error_statement(self)

    def as_dict(self) -> dict[str, object]:
        """A JSON-ready dictionary (the CLI's ``--json`` object): ``calibration_band`` only where it applies
        (null for a run outside the calibration runs), and ``error`` (:meth:`ErrorStatement.as_dict`)."""
        error = self.error
        band = error.band if error.kind == "calibrated" else None
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
            "error": error.as_dict(),
            "notes": list(self.notes),
            "outside_calibration": list(self.outside_calibration),
        }


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
        fwd += cost.embedding
    if last:
        fwd, bwd = fwd + cost.head_fwd, bwd + cost.head_bwd
    rec_frac = _recompute_fraction(model, layout, n)
    recompute = n * (rec_frac * (cost.fwd + cost.tp_fwd + cost.cp_fwd + cost.ep_fwd))
    if layout.recompute is Recompute.SELECTIVE:  # core attention (Megatron-LM), or torchtitan's per-op policy
        recompute = n * cost.selective
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
    shard = layout.fsdp_shard  # HSDP: gathers and reduce-scatters within one replica's shard group
    groups = [(dense, megatron_group(GroupKind.DATA, cluster, t, cp, shard, layout.pipeline))]
    if expert > 0:
        groups.append((expert, strided_group(max(1, d * cp // ep), t * ep, cluster.gpus_per_node)))
    low, tensors = _float8_gathered(model, layout, stage_index, layers)
    reduce = gather = step_once = across = 0.0
    for index, (count, group) in enumerate(groups):
        if group.size <= 1:
            continue
        if layout.zero_stage == 0:
            reduce += allreduce_seconds(count * e_g, group, links)
        else:
            reduce += reduce_scatter_seconds(count * e_g, group, links)
            if index == 0 and layout.replicate > 1:  # HSDP: each reduced shard all-reduced across the replicas
                replicas = strided_group(layout.replicate, t * cp * shard, cluster.gpus_per_node)
                across = allreduce_seconds(count * e_g / (shard * cp), replicas, links)
            if index == 0 and low > 0 and layout.float8 is not None:  # the dense weights torchao gathers in float8
                gather += allgather_seconds(count * e_w - low * (e_w - 1.0), group, links)
                amax = allreduce_seconds(4.0 * tensors, group, links)  # the weights' scales, one reduction
                if layout.float8.precompute_scale:
                    step_once += amax
                else:  # one reduction of one amax per weight at every gather
                    gather += tensors * allreduce_seconds(4.0, group, links)
            else:
                gather += allgather_seconds(count * e_w, group, links)
    if layout.torchtitan_fsdp:
        if layers is None:
            layers = stage_layers(model, layout)[stage_index] if layout.uneven else model.layers / layout.pipeline
        return _fsdp2_seconds(layout, stage, layers, gather, reduce, across) + step_once
    if layout.zero_stage == 3:  # weights gathered for forward and backward, gradients scattered, per micro-batch
        per_mb = 2 * gather + reduce + across
        exposed = max(0.0, per_mb - stage.total) * layout.microbatches
        return exposed + params.grad_bucket_fraction * per_mb
    bucket = params.grad_bucket_fraction
    if layout.overlap_grad_reduce:
        reduce = max(bucket * reduce, reduce - stage.bwd)
    if layout.overlap_param_gather:
        gather = max(bucket * gather, gather - stage.fwd)
    return reduce + gather


def _fsdp2_seconds(
    layout: Layout, stage: _StageTime, layers: float, gather: float, reduce: float, across: float = 0.0
) -> float:
    """Exposed seconds of torchtitan's FSDP2 on a rank of ``layers`` layers whose weights take ``gather`` seconds
    to all-gather and whose gradients ``reduce`` seconds to reduce-scatter (and, HSDP, ``across`` seconds to
    all-reduce the reduced shards across the replicas), layer by layer with prefetch.

    Each layer's gather runs while the layer before it computes (FSDP2 issues it ahead), so a forward exposes the
    first layer's gather and, per later layer, what of its gather its predecessor's compute does not cover; a
    backward that gathers again (weights resharded after the forward) the same with each layer's reduce-scatter
    sharing the link, plus the last layer's reduce-scatter. HSDP's all-reduce of a layer runs on its own stream
    after that layer's reduce-scatter (``foreach_reduce``), beside the next layer's gather and reduce-scatter:
    a layer waits for the longer of the two, and the last layer exposes both. Under pipelining
    (``Layout.fsdp_accumulates_unsharded``) the reduction runs once after the last micro-batch, after all the
    rank's compute: exposed whole (the two streams pipelined over the layers); with the weights kept gathered
    (``Layout.fsdp_keeps_gathered``) the forward gathers in the first micro-batch only.
    """
    n = max(1.0, layers)
    ag, rs, ar = gather / n, reduce / n, across / n
    cf, cb = stage.fwd / n, stage.bwd / n
    forward = ag + (n - 1) * max(0.0, ag - cf)
    if layout.fsdp_accumulates_unsharded:
        tail, rs_mb, ar_mb = max(reduce, across) + min(rs, ar), 0.0, 0.0
    else:
        tail, rs_mb, ar_mb = 0.0, rs, ar
    ag_b = 0.0 if layout.fsdp_keeps_gathered else ag
    backward = ag_b + (n - 1) * max(0.0, max(ag_b + rs_mb, ar_mb) - cb) + rs_mb + ar_mb
    m = layout.microbatches
    forwards = 1 if layout.fsdp_keeps_gathered and layout.pipeline > 1 else m
    return forwards * forward + m * backward + tail


def _float8_gathered(
    model: TransformerSpec, layout: Layout, stage_index: int, layers: float | None
) -> tuple[float, int]:
    """(parameters, weight tensors) of one GPU of rank ``stage_index`` that FSDP2 gathers in float8."""
    low, tensors = float8_gathered(model, layout)
    if low == 0 or layout.float8 is None:
        return 0.0, 0
    if layers is None:
        layers = stage_layers(model, layout)[stage_index] if layout.uneven else model.layers / layout.pipeline
    low, count = low * layers, tensors * layers
    if stage_index == layout.pipeline - 1 and "output" in float8_products(model, layout):
        low += model.padded_vocab(layout.tensor) * model.hidden / layout.tensor
        count += 1
    return low, round(count)


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
        shard = layout.fsdp_shard * layout.context
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
    elif layout.recompute is Recompute.SELECTIVE and layout.kernels is Kernels.FUSED:
        recompute_flops = core
    elif layout.recompute is Recompute.SELECTIVE:  # torchtitan's per-op policy: every second product of a layer
        per_gpu = sum(w.flops for op in selective_recomputed(layer_ops(model, layout)) for w in op[2])
        recompute_flops = per_gpu * layout.tensor * layout.context / layout.micro_batch
    return model_flops, model_flops + layout.global_batch * model.layers * recompute_flops


def predict(
    model: TransformerSpec,
    cluster: Cluster,
    layout: Layout,
    params: PerfParams = DEFAULT_PARAMS,
    *,
    check: bool = True,
    with_band: bool = True,
    framework: str = "megatron",
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
        Attach the calibration band (computed once per ``params`` from the published runs) and the run's
        properties outside those runs.
    framework : str
        The framework that launches the layout (a search space's name: ``megatron``, ``torchtitan``, ...): the
        numbers do not depend on it, whether the calibration runs cover the run does.

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
    outside: tuple[str, ...] = ()
    if with_band:
        band = calibration_band(params)
        outside = outside_calibration(model, cluster, layout, framework=framework) if band is not None else ()
    notes = []
    if layout.dtype is Dtype.FP8:
        notes.append("fp8: GEMMs at the fp8 peak, attention and weights in bf16; MFU against the fp8 peak")
    if layout.float8 is not None:
        f8, names = layout.float8, sorted(float8_products(model, layout))
        notes.append(
            f"torchtitan float8 ({f8.recipe}{', float8 all-gather' if f8.all_gather else ''}): products "
            f"{', '.join(names) or 'none'} at the fp8 peak with torchao's casts; MFU against the bf16 peak"
        )
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
        outside_calibration=outside,
        framework=framework,
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
