"""Search spaces of the launchable-layout planner, one per target framework.

A :class:`SearchSpace` names the discrete choices a training framework can launch with one set of
uniform degrees for the whole model (one tensor-parallel size t, one pipeline size p, one
data-parallel size d, ...). The planner (:mod:`placement.perf.search`) enumerates a space in two
levels:

* a **shape**: the knobs that change the work and its schedule - t, p, d, context parallel cp,
  expert parallel ep, virtual stages v, micro-batch size, sequence parallel, schedule;
* a **ladder** of memory savers on one shape, ordered from fastest to leanest: sharding of the
  optimizer state / gradients / weights (distributed optimizer, ZeRO 1-3, FSDP) and activation
  recomputation (none, selective, full of k layers per stage, k = 1, 2, ...).

The search relies on two properties of the performance model, both checked by tests against brute
force (``tests/test_search.py``): along a ladder the predicted time never decreases and the memory
never increases. Everything else is enumerated.

Registry: :data:`SPACES` (``"megatron"``, ``"torchtitan"``, ``"deepspeed"``).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from ..errors import PlacementError
from .layout import Attention, Kernels, Recompute


class Framework(str, Enum):
    """A training framework that launches the plans of a space."""

    MEGATRON = "megatron"
    TORCHTITAN = "torchtitan"
    DEEPSPEED = "deepspeed"

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class SearchSpace:
    """The discrete layout choices one framework can launch (uniform degrees for the whole model).

    Parameters
    ----------
    name : str
        Registry key (``"megatron"``...).
    framework : Framework
        The framework that launches its plans.
    title : str
        One line naming the choices (shown with every result: "optimal in ...").
    context : bool
        Context parallelism (cp > 1) allowed.
    expert : bool
        Expert parallelism (ep > 1) allowed for mixture-of-experts models.
    virtual : bool
        Interleaved schedules with v > 1 virtual stages per pipeline rank.
    schedules : tuple of str
        Pipeline schedules (the layout's ``schedule`` values).
    sequence_parallel : tuple of bool
        Sequence-parallel choices when t > 1.
    shardings : tuple of int
        The ladder of optimizer/gradient/weight sharding levels, fastest first (0: none, 1:
        optimizer state - Megatron's distributed optimizer, 2: + gradients, 3: + weights - FSDP).
    recompute : tuple of Recompute
        Recomputation modes, fastest first.
    partial_recompute : bool
        Full recomputation of k = 1 .. layers-per-stage layers (``--recompute-num-layers``).
    tensor_within_node : bool
        t at most the GPUs of one node (NVLink domain), as every framework's guide advises.
    max_micro_batch : int
        Largest micro-batch size tried.
    attention : Attention
        Core attention kernel (fused flash attention in today's frameworks).
    kernels : Kernels
        The framework's kernels for a layer's streaming work (torchtitan: its model under torch.compile).
    overlap : bool
        Data-parallel gradient reduction (and parameter gathering with sharding) overlapped with compute.
    tp_async : bool
        Asynchronous tensor-parallel reduction in the backward pass (Megatron-LM since 2022).
    offload : tuple of str
        DeepSpeed ZeRO-Offload choices: ``"none"``, ``"optimizer"`` (ZeRO >= 1), ``"optimizer+params"``
        (ZeRO 3); without pipelining.
    uneven : bool
        Uneven layer counts per pipeline rank: the first and the last rank take their own counts, the
        others split the rest evenly (Megatron-Core's ``--decoder-first/last-pipeline-num-layers``); then
        any pipeline size up to the layer count is allowed; with v virtual stages every rank's count is a
        multiple of v (so v divides the layers), with 1F1B or interleaved schedules.
    free_layouts : bool
        Free per-rank layer counts (Megatron-Core's ``--pipeline-model-parallel-layout``; p >= 3, 1F1B or
        interleaved, every count a multiple of v) with recomputation none, selective or full of every layer
        (:mod:`placement.perf.free_split`), and with block recomputation of k layers per chunk where the space has
        ``partial_recompute`` (:mod:`placement.perf.partial_split`).
    replicas : bool
        HSDP: with ZeRO 3 (no expert parallelism), the data-parallel group also split into r > 1 replicas of FSDP
        shard groups of d / r ranks spanning 1, 2, 4 or 8 whole nodes (torchtitan's
        ``data_parallel_replicate_degree``; :func:`placement.perf.shapes._shardings`).
    """

    name: str
    framework: Framework
    title: str
    context: bool = True
    expert: bool = True
    virtual: bool = True
    schedules: tuple[str, ...] = ("1f1b",)
    sequence_parallel: tuple[bool, ...] = (True, False)
    shardings: tuple[int, ...] = (0, 1)
    recompute: tuple[Recompute, ...] = (Recompute.NONE, Recompute.SELECTIVE, Recompute.FULL)
    partial_recompute: bool = True
    tensor_within_node: bool = True
    max_micro_batch: int = 16
    attention: Attention = Attention.FLASH
    kernels: Kernels = Kernels.FUSED
    overlap: bool = True
    tp_async: bool = True
    uneven: bool = False
    offload: tuple[str, ...] = ("none",)
    free_layouts: bool = False
    replicas: bool = False

    def __post_init__(self) -> None:
        where = f"search space {self.name!r}"
        if not self.name or not self.schedules or not self.shardings or not self.recompute:
            raise PlacementError(f"{where}: name, schedules, shardings and recompute must be non-empty")
        if any(s not in (0, 1, 2, 3) for s in self.shardings):
            raise PlacementError(f"{where}: sharding levels are 0..3")
        if self.max_micro_batch < 1:
            raise PlacementError(f"{where}: max_micro_batch must be at least 1")

    def describe(self) -> str:
        """One line: the space a result is optimal in."""
        return self.title


SPACES: dict[str, SearchSpace] = {
    "megatron": SearchSpace(
        "megatron",
        Framework.MEGATRON,
        "Megatron-LM / Megatron-Core: uniform t (within a node), p, d, cp, ep (MoE), interleaved v, "
        "micro-batch 1..16, sequence parallel on/off, distributed optimizer on/off, recompute "
        "none / selective / full of k layers per stage (block method); layers split evenly or with the first "
        "and last ranks' own layer counts (--decoder-first/last-pipeline-num-layers), or any count per rank "
        "(--pipeline-model-parallel-layout) with recompute none / selective / full of k layers per chunk; with "
        "interleaving every rank's count a multiple of v",
        schedules=("1f1b",),
        shardings=(0, 1),
        uneven=True,
        free_layouts=True,
    ),
    "torchtitan": SearchSpace(
        "torchtitan",
        Framework.TORCHTITAN,
        "torchtitan: FSDP2 (ZeRO-3, or HSDP: replicas of shard groups of 1, 2, 4 or 8 nodes) x TP (within a node) x PP x CP, schedules 1F1B / Interleaved1F1B "
        "(v > 1) / ZBVZeroBubble (v = 2), micro-batch 1..16, activation checkpointing none / selective / full; layers split "
        "evenly; torchtitan's llama3 kernels under torch.compile",
        expert=True,
        schedules=("1f1b", "zbv"),
        sequence_parallel=(True,),
        shardings=(3,),
        partial_recompute=False,
        kernels=Kernels.COMPILED,
        replicas=True,
    ),
    "deepspeed": SearchSpace(
        "deepspeed",
        Framework.DEEPSPEED,
        "DeepSpeed: ZeRO 0-3 x pipeline engine (1F1B, ZeRO <= 1 with pipelines) x Megatron-style t "
        "(within a node), micro-batch 1..16, activation checkpointing none / full; ZeRO-Offload of the "
        "optimizer state (ZeRO >= 1) and the weights (ZeRO 3) to CPU memory without pipelining (host "
        "memory and PCIe bandwidth from the cluster); layers priced with Megatron-LM's fused kernels (DeepSpeed "
        "runs the user's model code, whose own kernels are not modelled)",
        offload=("none", "optimizer", "optimizer+params"),
        context=False,
        expert=False,
        virtual=False,
        schedules=("1f1b",),
        sequence_parallel=(False,),
        shardings=(0, 1, 2, 3),
        recompute=(Recompute.NONE, Recompute.FULL),
        partial_recompute=False,
    ),
    "megatron-2021": SearchSpace(
        "megatron-2021",
        Framework.MEGATRON,
        "Megatron-LM as of Narayanan et al. 2021: uniform t (within a node), p, d, interleaved v, micro-batch "
        "1..16, unfused attention, no sequence parallelism, no distributed optimizer, no overlap (nor asynchronous tensor-parallel backward), recompute none "
        "or full (every layer); layers split evenly",
        context=False,
        expert=False,
        sequence_parallel=(False,),
        shardings=(0,),
        recompute=(Recompute.NONE, Recompute.FULL),
        partial_recompute=False,
        attention=Attention.UNFUSED,
        overlap=False,
        tp_async=False,
    ),
}


def get_space(name: str) -> SearchSpace:
    """The registered space ``name``; one-line error naming the known ones."""
    try:
        return SPACES[name]
    except KeyError:
        raise PlacementError(f"--framework: unknown search space {name!r} (known: {', '.join(SPACES)})") from None


def divisors(n: int) -> list[int]:
    """The positive divisors of ``n`` in increasing order."""
    small = [k for k in range(1, int(n**0.5) + 1) if n % k == 0]
    return sorted(set(small + [n // k for k in small]))
