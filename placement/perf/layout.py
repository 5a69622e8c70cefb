"""A parallel training layout (Megatron-LM's knobs) and the rules it must satisfy on a model and a cluster."""

from __future__ import annotations

import functools
from dataclasses import dataclass, replace
from enum import Enum

from ..enums import TrainingSchedule as Schedule
from ..errors import InvalidLayoutError
from .hardware import Cluster, Dtype
from .transformer import MAX_SIZE, TransformerSpec


class _StrEnum(str, Enum):
    def __str__(self) -> str:
        return str(self.value)


class Recompute(_StrEnum):
    """Activation recomputation (Megatron's ``--recompute-granularity``)."""

    NONE = "none"
    SELECTIVE = "selective"  #: core attention only (Korthikanti et al. 2022)
    FULL = "full"  #: whole layers, keeping only their inputs


class RecomputeMethod(_StrEnum):
    """How ``recompute_layers`` is read under full recomputation (``--recompute-method``)."""

    UNIFORM = "uniform"  #: checkpoint every group of ``recompute_layers`` layers
    BLOCK = "block"  #: recompute the first ``recompute_layers`` layers of each stage chunk, keep the rest


class Attention(_StrEnum):
    """Core attention kernel."""

    FLASH = "flash"  #: fused (FlashAttention / cuDNN): no s^2 tensor in memory
    UNFUSED = "unfused"  #: two batched GEMMs around a materialised softmax (Megatron 2021)


class Kernels(_StrEnum):
    """The kernels a framework launches for a layer's streaming work (norms, rotary, activation, residual, loss).

    The matrix products and the fused attention are the same in every framework; the rest differs by what is
    fused (:mod:`placement.perf.framework_kernels`).
    """

    FUSED = "fused"  #: Megatron-LM with Transformer Engine: fused QKV and fc1, fused norms, rotary and activation
    EAGER = "eager"  #: torchtitan's model in PyTorch eager: every elementwise operation its own kernel
    COMPILED = "compiled"  #: torchtitan's model under torch.compile: each elementwise chain one Inductor kernel


class Float8Recipe(_StrEnum):
    """torchao's float8 training recipe as torchtitan names it (``[quantize.linear.float8] recipe_name``)."""

    TENSORWISE = "tensorwise"  #: one scale per tensor; all three products in float8 (torchtitan's default)
    ROWWISE = "rowwise"  #: one scale per row of each operand along the contraction; all three in float8
    ROWWISE_GW_HP = "rowwise_with_gw_hp"  #: rowwise, the weight gradient's product in bf16


#: The products of a torchtitan llama3 block (their module names) and the output layer (``output``).
FLOAT8_PRODUCTS = ("wq", "wk", "wv", "wo", "w1", "w2", "w3", "output")


@dataclass(frozen=True)
class Float8Training:
    """torchtitan's float8 converter (``--model.converters quantize.linear.float8``): torchao's ``Float8Linear``.

    Parameters
    ----------
    recipe : Float8Recipe
        The scaling recipe.
    all_gather : bool
        FSDP2 gathers the converted weights in float8 (tensorwise only; ``enable_fsdp_float8_all_gather``).
    precompute_scale : bool
        The weights' scales computed once per step after the optimizer (with ``all_gather``), not at every
        gather (``precompute_float8_dynamic_scale_for_fsdp``).
    skip : tuple of str
        Products left in bf16, from :data:`FLOAT8_PRODUCTS` (``filter_fqns`` read against the model's names).
    """

    recipe: Float8Recipe = Float8Recipe.TENSORWISE
    all_gather: bool = False
    precompute_scale: bool = False
    skip: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        try:
            object.__setattr__(self, "recipe", Float8Recipe(self.recipe))
        except ValueError:
            choices = ", ".join(r.value for r in Float8Recipe)
            raise InvalidLayoutError(f"float8 recipe {self.recipe!r}: must be one of {choices}") from None
        if not isinstance(self.skip, tuple) or any(name not in FLOAT8_PRODUCTS for name in self.skip):
            raise InvalidLayoutError(f"float8 skip {self.skip!r}: must be a tuple of {', '.join(FLOAT8_PRODUCTS)}")
        if self.all_gather and self.recipe is not Float8Recipe.TENSORWISE:
            raise InvalidLayoutError(f"float8 all-gather with recipe {self.recipe}: torchtitan gathers in float8 "
                                     "with tensorwise scaling only")  # fmt: skip
        if self.precompute_scale and not self.all_gather:
            raise InvalidLayoutError("float8 precompute_scale: only with the float8 all-gather")


@dataclass(frozen=True)
class Layout:
    """How one training iteration is split over the GPUs.

    Parameters
    ----------
    tensor, pipeline, data, context, expert : int
        Parallel sizes t, p, d, cp, ep (``t * p * cp * d`` GPUs; experts are split over ``ep`` ranks of the
        data x context group).
    virtual_stages : int
        Model chunks per pipeline rank v (interleaved schedule when > 1).
    micro_batch, global_batch : int
        Sequences per micro-batch b and per iteration B (B is a multiple of ``b * d``).
    sequence_parallel : bool
        Megatron's sequence parallelism (norms and dropouts split over the tensor group).
    zero_stage : int
        0: replicated optimizer; 1: distributed optimizer (optimizer state sharded, Megatron's
        ``--use-distributed-optimizer``); 2: gradients sharded too; 3: weights too (FSDP).
    recompute, recompute_method, recompute_layers : Recompute, RecomputeMethod, int or None
        Activation recomputation; ``recompute_layers`` (``None``: 1 for uniform, all for block).
    dtype : Dtype
        Type of the matrix products (bf16/fp16; fp8 runs GEMMs at the fp8 peak with bf16 weights).
    attention : Attention
        Fused (flash) or unfused core attention.
    overlap_grad_reduce, overlap_param_gather, tp_comm_overlap : bool
        Overlap data-parallel gradient reduction / parameter gathering / tensor-parallel communication
        with compute.
    schedule : Schedule
        Pipeline schedule (``virtual_stages > 1`` makes 1F1B interleaved).
    grad_reduce_fp32 : bool or None
        Gradients accumulated and reduced in fp32 (``None``: Megatron's default, fp32 for bf16).
    tp_async_backward : bool
        The backward's tensor-parallel reduction of input gradients runs under the weight-gradient GEMMs
        (Megatron-LM since 2022; ``--no-async-tensor-model-parallel-allreduce`` turns it off; the 2021 runs had
        no such overlap).
    offload_optimizer, offload_params : bool
        DeepSpeed ZeRO-Offload: the optimizer state (fp32 master weights and moments) lives in CPU memory and
        the Adam step runs on the CPU (ZeRO stage >= 1); the weight shard lives in CPU memory too and is
        fetched over PCIe for every forward and backward (ZeRO stage 3).
    first_stage_layers, last_stage_layers : int or None
        Uneven pipeline split (Megatron-Core's ``--decoder-first-pipeline-num-layers`` /
        ``--decoder-last-pipeline-num-layers``): transformer layers of the first / last pipeline rank (which
        also carry the embedding / the output layer); the other ranks split the rest evenly. ``None``: the
        even split (``L / p`` per rank). With ``v`` virtual stages every rank's count is a multiple of ``v``
        (Megatron-Core's rule; each rank's chunks are equal).
    pipeline_layers : tuple of int or None
        A free split (Megatron-Core's ``--pipeline-model-parallel-layout``): the transformer layers of every
        pipeline rank, first rank first (all its virtual chunks; with ``v`` virtual stages each count a multiple
        of ``v`` and the rank's chunks equal); the first rank also holds the embedding, the last the output layer.
        Not with ``first_stage_layers`` / ``last_stage_layers``. A tuple the first/last counts (or the even
        split) can express is stored as them (``pipeline_layers`` stays ``None``), so a layout set here is one
        only the layout string can launch.
    kernels : Kernels
        The framework's kernels for the streaming work of a layer (default Megatron-LM's fused ones).
    float8 : Float8Training or None
        torchtitan's float8 linear layers (eager or compiled kernels, bf16 training); Megatron-LM's fp8 is
        ``dtype`` fp8 instead.
    reshard_after_forward : bool or None
        torchtitan's FSDP2 (ZeRO-3 with eager or compiled kernels) frees the gathered weights after each forward
        (``fsdp_reshard_after_forward`` always) or keeps them to the backward (never); ``None``: torchtitan's
        default, keep them under pipelining only. See :meth:`fsdp_keeps_gathered`.
    replicate : int
        HSDP (ZeRO stage 3 only): the data-parallel group is ``replicate`` replicas of FSDP shard groups of
        ``data / replicate`` ranks each (torchtitan's ``data_parallel_replicate_degree`` beside a
        ``data_parallel_shard_degree`` > 1). Weights, gradients and optimizer state are sharded over one shard
        group (times the context group); each reduced gradient shard is all-reduced across the replicas. 1: one
        shard group over the whole data-parallel group (FSDP).
    """

    tensor: int = 1
    pipeline: int = 1
    data: int = 1
    context: int = 1
    expert: int = 1
    virtual_stages: int = 1
    micro_batch: int = 1
    global_batch: int = 1
    sequence_parallel: bool = False
    zero_stage: int = 0
    recompute: Recompute = Recompute.NONE
    recompute_method: RecomputeMethod = RecomputeMethod.UNIFORM
    recompute_layers: int | None = None
    dtype: Dtype = Dtype.BF16
    attention: Attention = Attention.FLASH
    overlap_grad_reduce: bool = False
    overlap_param_gather: bool = False
    tp_comm_overlap: bool = False
    schedule: Schedule = Schedule.ONE_F_ONE_B
    grad_reduce_fp32: bool | None = None
    tp_async_backward: bool = True
    first_stage_layers: int | None = None
    last_stage_layers: int | None = None
    offload_optimizer: bool = False
    offload_params: bool = False
    pipeline_layers: tuple[int, ...] | None = None
    kernels: Kernels = Kernels.FUSED
    float8: Float8Training | None = None
    reshard_after_forward: bool | None = None
    replicate: int = 1

    def __post_init__(self) -> None:
        for name in ("tensor", "pipeline", "data", "context", "expert", "virtual_stages", "micro_batch", "replicate"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_SIZE:
                raise InvalidLayoutError(f"layout {name}: must be an integer from 1 to {MAX_SIZE}, got {value!r}")
        batch = self.global_batch
        if isinstance(batch, bool) or not isinstance(batch, int) or not 1 <= batch <= MAX_SIZE:
            raise InvalidLayoutError(f"--global-batch-size {batch!r}: must be an integer from 1 to {MAX_SIZE}")
        if self.zero_stage not in (0, 1, 2, 3):
            raise InvalidLayoutError(f"zero_stage {self.zero_stage!r}: must be 0, 1, 2 or 3")
        if self.recompute_layers is not None and (
            isinstance(self.recompute_layers, bool) or not isinstance(self.recompute_layers, int)
            or self.recompute_layers < 1
        ):  # fmt: skip
            raise InvalidLayoutError(f"--recompute-num-layers {self.recompute_layers!r}: must be a positive integer")
        for name in ("first_stage_layers", "last_stage_layers"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
                flag = "--decoder-" + name.split("_")[0] + "-pipeline-num-layers"
                raise InvalidLayoutError(f"{flag} {value!r}: must be a positive integer")
        if self.pipeline_layers is not None:
            self._normalise_free_split()
        for name, kind in (
            ("recompute", Recompute),
            ("recompute_method", RecomputeMethod),
            ("dtype", Dtype),
            ("attention", Attention),
            ("schedule", Schedule),
            ("kernels", Kernels),
        ):
            try:
                object.__setattr__(self, name, kind(getattr(self, name)))
            except ValueError:
                choices = ", ".join(k.value for k in kind)
                raise InvalidLayoutError(f"layout {name} {getattr(self, name)!r}: must be one of {choices}") from None
        if self.replicate > 1:
            self._check_replicas()
        if self.reshard_after_forward is not None and not isinstance(self.reshard_after_forward, bool):
            raise InvalidLayoutError(f"layout reshard_after_forward {self.reshard_after_forward!r}: must be true, false "
                                     "or None")  # fmt: skip
        if self.float8 is not None and not isinstance(self.float8, Float8Training):
            raise InvalidLayoutError(f"layout float8 {self.float8!r}: must be a Float8Training or None")
        if self.float8 is not None and (self.kernels is Kernels.FUSED or self.dtype is not Dtype.BF16):
            raise InvalidLayoutError(
                "float8 linear layers are torchtitan's (eager or compiled kernels, bf16 training); Megatron-LM's fp8 "
                "is dtype fp8"
            )
        if self.virtual_stages > 1 and self.schedule is Schedule.ONE_F_ONE_B:
            object.__setattr__(self, "schedule", Schedule.INTERLEAVED)
        if self.schedule is Schedule.INTERLEAVED and self.virtual_stages == 1:
            raise InvalidLayoutError("schedule interleaved needs virtual_stages > 1")
        if self.schedule is Schedule.ZBV and self.virtual_stages != 2:
            raise InvalidLayoutError("schedule zbv (zero-bubble V) runs exactly 2 virtual stages per rank")
        if self.virtual_stages > 1 and self.schedule not in (Schedule.INTERLEAVED, Schedule.ZBV):
            raise InvalidLayoutError(f"virtual_stages > 1 needs the interleaved schedule, not {self.schedule}")

    def _check_replicas(self) -> None:
        """HSDP's rules: ZeRO stage 3, shard groups of at least two ranks, no expert parallelism."""
        r, d = self.replicate, self.data
        if self.zero_stage != 3:
            raise InvalidLayoutError(
                f"layout replicate {r}: HSDP replicates FSDP shard groups (ZeRO stage 3), not ZeRO stage {self.zero_stage}"
            )
        if d % r or d == r:
            raise InvalidLayoutError(
                f"layout replicate {r}: must divide data {d} and leave shard groups of at least 2 ranks (replicas of "
                "single ranks are plain data parallelism, ZeRO stage 0)"
            )
        if self.expert > 1:
            raise InvalidLayoutError(f"layout replicate {r} with expert parallel {self.expert}: HSDP with expert "
                                     "parallelism is not modelled")  # fmt: skip

    def _normalise_free_split(self) -> None:
        """Validate ``pipeline_layers`` and store a split the first/last flags express as them."""
        counts = self.pipeline_layers
        flag = "--pipeline-model-parallel-layout"
        if not isinstance(counts, tuple) or any(isinstance(n, bool) or not isinstance(n, int) for n in counts):
            raise InvalidLayoutError(f"{flag}: the layers per rank must be a tuple of integers, got {counts!r}")
        if self.first_stage_layers is not None or self.last_stage_layers is not None:
            raise InvalidLayoutError(f"{flag} cannot be set with --decoder-first/last-pipeline-num-layers")
        if len(counts) != self.pipeline:
            raise InvalidLayoutError(f"{flag}: {len(counts)} ranks' layer counts for pipeline size {self.pipeline}")
        v = self.virtual_stages
        if any(n < v or n % v for n in counts):
            raise InvalidLayoutError(
                f"{flag}: every rank's layers must be a positive multiple of the {v} virtual stages, got {counts}"
            )
        if len(set(counts[1:-1])) <= 1:  # the middle ranks equal: the first/last flags (or the even split)
            even = len(set(counts)) == 1
            object.__setattr__(self, "first_stage_layers", None if even else counts[0])
            object.__setattr__(self, "last_stage_layers", None if even else counts[-1])
            object.__setattr__(self, "pipeline_layers", None)

    @property
    def gpus(self) -> int:
        """GPUs the layout uses: t * p * cp * d."""
        return self.tensor * self.pipeline * self.context * self.data

    @property
    def distributed_optimizer(self) -> bool:
        """Optimizer state sharded over the data-parallel group (ZeRO stage >= 1)."""
        return self.zero_stage >= 1

    @property
    def fsdp_shard(self) -> int:
        """Data-parallel ranks one shard group spans: ``data / replicate`` (HSDP), else ``data``.

        Sharded state (ZeRO >= 1) is split over ``fsdp_shard * context`` ranks.
        """
        return self.data // self.replicate

    @property
    def microbatches(self) -> int:
        """Micro-batches per pipeline per iteration m = B / (b d) (floor; :func:`check_layout` demands exact)."""
        return max(1, self.global_batch // (self.micro_batch * self.data))

    def fp32_grads(self) -> bool:
        """Whether the gradient buffer is fp32 (Megatron forces it for bf16)."""
        if self.grad_reduce_fp32 is not None:
            return self.grad_reduce_fp32
        return self.dtype in (Dtype.BF16, Dtype.FP8, Dtype.FP32, Dtype.TF32)

    @property
    def torchtitan_fsdp(self) -> bool:
        """Whether FSDP2 runs as torchtitan drives it (ZeRO-3 under torchtitan's eager or compiled kernels)."""
        return self.zero_stage == 3 and self.kernels is not Kernels.FUSED

    @property
    def fsdp_keeps_gathered(self) -> bool:
        """Whether torchtitan's FSDP2 keeps a stage's gathered weights from the first forward to the step's end.

        Under pipelining PyTorch's schedules turn off resharding after each micro-batch's backward
        (``set_reshard_after_backward(False)``), so with no resharding after the forward (torchtitan's default
        under pipelining) the weights are gathered once per step; without pipelining they are resharded after
        each backward, and ``never`` saves the backward's gather only.
        """
        if not self.torchtitan_fsdp:
            return False
        reshard = self.pipeline == 1 if self.reshard_after_forward is None else self.reshard_after_forward
        return not reshard

    @property
    def fsdp_accumulates_unsharded(self) -> bool:
        """Whether torchtitan's FSDP2 sums the micro-batches' gradients unsharded and reduce-scatters once per step.

        Under pipelining PyTorch's schedules turn gradient synchronisation off for every micro-batch
        (``set_requires_gradient_sync(False)``) and reduce once after the last (``perform_reduce_grad``); FSDP2
        accumulates the unsharded gradient in the reduce type (fp32 by torchtitan's default).
        """
        return self.torchtitan_fsdp and self.pipeline > 1

    @property
    def uneven(self) -> bool:
        """Whether the layers are not split evenly (first/last counts or a free split)."""
        return self.first_stage_layers is not None or self.last_stage_layers is not None or self.free_split

    @property
    def free_split(self) -> bool:
        """Whether the split needs ``--pipeline-model-parallel-layout`` (middle ranks with unequal counts)."""
        return self.pipeline_layers is not None

    def with_changes(self, **changes: object) -> Layout:
        """A copy with some fields replaced (validated again)."""
        return replace(self, **changes)  # type: ignore[arg-type]


def stage_layers(model: TransformerSpec, layout: Layout) -> tuple[int, ...]:
    """Transformer layers of each pipeline rank (all its virtual chunks), first rank first.

    Even split: ``L / p`` each. Uneven (Megatron-Core's rule): the first and last ranks take their given
    counts, the remaining ranks split the remaining layers evenly.

    Raises
    ------
    InvalidLayoutError
        If the layers cannot be split so (one line naming the flags).
    """
    if layout.pipeline_layers is not None:
        if sum(layout.pipeline_layers) != model.layers:
            raise InvalidLayoutError(
                f"--pipeline-model-parallel-layout: {sum(layout.pipeline_layers)} decoder layers over the ranks, "
                f"but --num-layers is {model.layers}"
            )
        return layout.pipeline_layers
    return _stage_layers(model.layers, layout.pipeline, layout.virtual_stages, layout.first_stage_layers,
                         layout.last_stage_layers)  # fmt: skip


@functools.lru_cache(maxsize=4096)
def _stage_layers(total: int, p: int, v: int, first: int | None, last: int | None) -> tuple[int, ...]:
    if first is None and last is None:
        if total % (p * v):
            raise InvalidLayoutError(f"--num-layers {total} is not divisible by pipeline size {p} x virtual stages {v}")
        return (total // p,) * p
    if p == 1:
        raise InvalidLayoutError("--decoder-first/last-pipeline-num-layers need pipeline parallel size > 1")
    # Megatron-Core (TransformerConfig.__post_init__, "Uneven PP"): with v virtual stages the first, the last
    # and each middle rank's counts must be multiples of v (each rank's chunks are equal)
    for flag, n in (("first", first), ("last", last)):
        if v > 1 and n is not None and n % v:
            raise InvalidLayoutError(
                f"--decoder-{flag}-pipeline-num-layers {n} is not a multiple of the {v} virtual stages per rank"
            )
    given = [n for n in (first, last) if n is not None]
    rest_ranks, rest = p - len(given), total - sum(given)
    if rest < rest_ranks or rest < 0 or (rest_ranks == 0 and rest != 0) or (rest_ranks and rest % rest_ranks):
        raise InvalidLayoutError(
            f"--decoder-first-pipeline-num-layers {first} / --decoder-last-pipeline-num-layers {last}: the other "
            f"{rest} of --num-layers {total} cannot be split evenly over the other {rest_ranks} pipeline ranks "
            "(each at least one layer)"
        )
    middle = rest // rest_ranks if rest_ranks else 0
    if v > 1 and rest_ranks and middle % v:
        raise InvalidLayoutError(
            f"--decoder-first/last-pipeline-num-layers {first}/{last}: the other ranks' {middle} layers each are "
            f"not a multiple of the {v} virtual stages per rank"
        )
    counts = [middle] * p
    counts[0] = middle if first is None else first
    counts[-1] = middle if last is None else last
    return tuple(counts)


def check_layout(model: TransformerSpec, cluster: Cluster, layout: Layout) -> None:
    """Raise :class:`~placement.errors.InvalidLayoutError` (one line naming the rule) if the layout is invalid.

    Parameters
    ----------
    model, cluster, layout : TransformerSpec, Cluster, Layout
        What to check together.
    """
    t, p, d, cp, ep, v = (
        layout.tensor,
        layout.pipeline,
        layout.data,
        layout.context,
        layout.expert,
        layout.virtual_stages,
    )
    if layout.gpus != cluster.gpus:
        raise InvalidLayoutError(
            f"tensor {t} x pipeline {p} x context {cp} x data {d} = {layout.gpus} GPUs, but the cluster has "
            f"{cluster.gpus} (--gpus)"
        )
    if model.heads % t:
        raise InvalidLayoutError(f"--num-attention-heads {model.heads} is not divisible by tensor parallel size {t}")
    if model.groups % t:
        raise InvalidLayoutError(f"--num-query-groups {model.groups} is not divisible by tensor parallel size {t}")
    if model.ffn % t:
        raise InvalidLayoutError(f"--ffn-hidden-size {model.ffn} is not divisible by tensor parallel size {t}")
    counts = stage_layers(model, layout)  # raises when the layers cannot be split so
    if layout.float8 is not None and cluster.accelerator.peak_flops(Dtype.FP8) <= 0:
        raise InvalidLayoutError(
            f"float8 linear layers need a GPU with float8 products (SM 8.9 or later); the {cluster.accelerator.name} "
            "has none"
        )
    if v > 1 and p == 1:
        raise InvalidLayoutError("the interleaved schedule (virtual stages > 1) needs pipeline parallel size > 1")
    if layout.global_batch % (layout.micro_batch * d):
        raise InvalidLayoutError(
            f"--global-batch-size {layout.global_batch} is not divisible by micro-batch {layout.micro_batch} "
            f"x data parallel {d}"
        )
    if cp > 1 and model.seq_length % (2 * cp):
        raise InvalidLayoutError(f"--seq-length {model.seq_length} is not divisible by 2 x context parallel size {cp}")
    if ep > 1 and not model.moe:
        raise InvalidLayoutError(f"--expert-model-parallel-size {ep} needs --num-experts > 1")
    if model.num_experts % ep:
        raise InvalidLayoutError(f"--num-experts {model.num_experts} is not divisible by expert parallel size {ep}")
    if (d * cp) % ep:
        raise InvalidLayoutError(f"expert parallel size {ep} does not divide data x context parallel size {d * cp}")
    if layout.tp_comm_overlap and not (layout.sequence_parallel and t > 1):
        raise InvalidLayoutError("--tp-comm-overlap needs --sequence-parallel and tensor parallel size > 1")
    if layout.offload_optimizer and layout.zero_stage < 1:
        raise InvalidLayoutError("offload_optimizer needs ZeRO stage >= 1")
    if layout.offload_params and not (layout.zero_stage == 3 and layout.offload_optimizer):
        raise InvalidLayoutError("offload_param needs ZeRO stage 3 and offload_optimizer")
    if layout.overlap_param_gather and not layout.distributed_optimizer:
        raise InvalidLayoutError("--overlap-param-gather needs --use-distributed-optimizer")
    if cluster.accelerator.peak_flops(layout.dtype) <= 0:
        raise InvalidLayoutError(f"{cluster.accelerator.name} has no {layout.dtype} arithmetic (--{layout.dtype})")
    if layout.recompute is Recompute.FULL and layout.recompute_layers is not None:
        per_chunk = max(counts) // v
        if layout.recompute_layers > per_chunk:
            raise InvalidLayoutError(
                f"--recompute-num-layers {layout.recompute_layers} exceeds the {per_chunk} layers of a stage chunk"
            )
