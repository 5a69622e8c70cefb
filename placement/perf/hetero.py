"""Plans for clusters of several GPU kinds (e.g. 8 A100 + 4 V100): whole pipeline stages per kind.

The space: one data-parallel size d for the whole model (every data-parallel replica is a full pipeline), a
pipeline of ``p_k`` stages on each kind k (``p_k * t_k * d`` GPUs of kind k; a kind may be left out), the
kinds in either order along the pipeline, any split of the L layers between the kinds (even within a kind),
micro-batch size 1..8, recomputation none or full per kind, one precision for all (bf16 if every kind has
it, else fp16), sequence parallelism when t > 1, distributed optimizer. Two variants:

* **uniform t** (one tensor-parallel size for every kind): launchable by **Megatron-Core**, with the
  uneven layer split as ``--pipeline-model-parallel-layout`` and the kind of the first stages first in the
  host list (Megatron's pipeline rank is the outermost rank dimension); torchtitan's ``PipelineStage``s could
  run it too (``module_fqns_per_model_part``), DeepSpeed's pipeline engine (``partition_method`` "parameters"
  or explicit ``parts``) when t = 1;
* **t per kind**: **not launchable** - Megatron-LM, torchtitan and DeepSpeed build one tensor-parallel group
  size for the whole model.

Time of a plan, composed from the performance model's own per-stage costs (``predict._stage_time``,
``predict._dp_seconds``) on each stage's GPU kind: ``m * max stage + (p - 1) * mean stage + the model's
stage-jitter term + max over stages (data-parallel + optimizer) + overhead`` (1F1B; the slowest stage paces the steady state). Memory: each stage
on its kind (``memory_breakdown`` of the stage). Every choice is enumerated (exact in this model). Not
modelled: a slower link between the kinds (pipeline sends use the sending kind's links).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any

from ..errors import PlacementError
from ..model import Status
from .collectives import Links
from .coverage import calibration_lines
from .hardware import Cluster, Dtype, accelerator
from .kernels import streaming_seconds
from .layout import Layout, Recompute
from .memory import memory_breakdown, stage_parameters
from .params import DEFAULT_PARAMS, PerfParams
from .predict import MODEL_ID, _dp_seconds, _layer_cost, _stage_time, calibration_band
from .spaces import divisors
from .transformer import TransformerSpec


@dataclass(frozen=True)
class HeteroStage:
    """One pipeline stage: its GPU kind, layers, tensor-parallel size, seconds per micro-batch, memory."""

    kind: str
    layers: int
    tensor: int
    recompute: str
    seconds: float
    memory_bytes: float
    capacity: float


@dataclass(frozen=True)
class HeteroPlan:
    """A heterogeneous pipeline plan with its predicted iteration time and who can launch it."""

    stages: tuple[HeteroStage, ...]
    data: int
    micro_batch: int
    global_batch: int
    dtype: str
    iteration_seconds: float
    launchable: bool
    launcher: str
    megatron_layout: str

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return {
            "stages": [s.__dict__ for s in self.stages],
            "data": self.data,
            "micro_batch": self.micro_batch,
            "global_batch": self.global_batch,
            "dtype": self.dtype,
            "iteration_seconds": self.iteration_seconds,
            "launchable": self.launchable,
            "launcher": self.launcher,
            "megatron_layout": self.megatron_layout,
        }


@dataclass(frozen=True)
class HeteroResult:
    """The best uniform-t plan (launchable) and the best plan with t per kind (may not be)."""

    status: Status
    uniform: HeteroPlan | None
    per_kind: HeteroPlan | None
    evaluated: int
    seconds: float
    kinds: tuple[tuple[str, int], ...] = field(default=())

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return {
            "status": str(self.status),
            "kinds": [list(k) for k in self.kinds],
            "uniform_tensor": None if self.uniform is None else self.uniform.as_dict(),
            "tensor_per_kind": None if self.per_kind is None else self.per_kind.as_dict(),
            "evaluated": self.evaluated,
            "seconds": self.seconds,
        }


def parse_kinds(text: str, gpus_per_node: int = 8) -> list[Cluster]:
    """``"A100:8,V100:4"`` -> one :class:`Cluster` per kind (bad input: one line naming ``--gpu``)."""
    clusters = []
    for part in text.split(","):
        name, _, count = part.partition(":")
        try:
            n = int(count)
        except ValueError:
            raise PlacementError(f"--gpu {text!r}: each kind is NAME:COUNT (e.g. A100:8,V100:4)") from None
        if n < 1:
            raise PlacementError(f"--gpu {text!r}: counts must be positive")
        clusters.append(Cluster(accelerator(name), n, min(gpus_per_node, n) if n < gpus_per_node else gpus_per_node))
    if len({c.accelerator.name for c in clusters}) != len(clusters):
        raise PlacementError(f"--gpu {text!r}: each kind once")
    return clusters


def _split(layers: int, parts: int) -> list[int]:
    base, extra = divmod(layers, parts)
    return [base + (1 if i < extra else 0) for i in range(parts)]


def _layout_string(stages: list[int]) -> str:
    """Megatron-Core's ``--pipeline-model-parallel-layout``: E embedding first, L loss last, t per layer."""
    groups = [f"t*{n}" for n in stages]
    groups[0] = "E" + groups[0]
    groups[-1] = groups[-1] + "L"
    return "|".join(groups)


class _Evaluator:
    """Costs of one stage (kind, layers, position) under one (t, d, b, recompute), cached."""

    def __init__(self, model: TransformerSpec, clusters: list[Cluster], global_batch: int, dtype: Dtype,
                 params: PerfParams) -> None:  # fmt: skip
        self.model, self.clusters, self.batch, self.dtype, self.params = model, clusters, global_batch, dtype, params
        self.cache: dict[tuple[object, ...], tuple[float, float, float, float]] = {}

    def stage(self, k: int, n: int, index: int, p: int, t: int, d: int, b: int, rec: Recompute):  # noqa: ANN201
        """(seconds per micro-batch, backward seconds, memory bytes, dp + optimizer seconds) of stage ``index``."""
        key = (k, n, index == 0, index == p - 1, min(p - index, self.batch // (d * b)), p, t, d, b, rec)
        if key in self.cache:
            return self.cache[key]
        cluster = self.clusters[k]
        # a model with n layers per stage: the stage's layers, in-flight micro-batches and embedding/output
        model = self.model.with_changes(layers=n * p)
        layout = Layout(
            tensor=t, pipeline=p, data=d, micro_batch=b, global_batch=self.batch, sequence_parallel=t > 1,
            zero_stage=1, recompute=rec, dtype=self.dtype, overlap_grad_reduce=d > 1, overlap_param_gather=d > 1,
        )  # fmt: skip
        links = Links.of(cluster, self.params)
        cost = _layer_cost(model, cluster, layout, self.params, links)
        st = _stage_time(model, cluster, layout, self.params, links, cost, index == 0, index == p - 1)
        mem = memory_breakdown(model, layout, self.params, index).total
        dp = _dp_seconds(model, cluster, layout, self.params, links, st, index)
        owned = sum(stage_parameters(model, layout, index)) / d
        opt = streaming_seconds(owned * self.params.optimizer_bytes_per_param, cluster.accelerator, self.params, 20)
        self.cache[key] = (st.total, st.bwd, mem, dp + opt)
        return self.cache[key]


def _tensor_ok(model: TransformerSpec, t: int) -> bool:
    return model.heads % t == 0 and model.groups % t == 0 and model.ffn % t == 0


def search_hetero(
    model: TransformerSpec, clusters: list[Cluster], global_batch: int, params: PerfParams = DEFAULT_PARAMS
) -> HeteroResult:
    """Best heterogeneous pipeline plans: one with uniform t (launchable), one with t per kind.

    Parameters
    ----------
    model : TransformerSpec
        The transformer.
    clusters : list of Cluster
        One per GPU kind (``parse_kinds``); at most a few kinds.
    global_batch : int
        Sequences per iteration.
    params : PerfParams
        The performance model's constants.
    """
    if len(clusters) > 3:
        raise PlacementError("--gpu: at most 3 GPU kinds")
    start = time.perf_counter()
    dtype = Dtype.BF16 if all(c.accelerator.peak_flops(Dtype.BF16) > 0 for c in clusters) else Dtype.FP16
    ev = _Evaluator(model, clusters, global_batch, dtype, params)
    best: dict[bool, tuple[float, HeteroPlan] | None] = {True: None, False: None}
    evaluated = 0
    L = model.layers
    for d in divisors(global_batch):
        # per kind: (t, stages) options using all its GPUs, or the kind left out (0 stages)
        options: list[list[tuple[int, int]]] = []
        for c in clusters:
            opts = [(0, 0)]
            for t in divisors(c.gpus_per_node):
                if _tensor_ok(model, t) and c.gpus % (t * d) == 0:
                    opts.append((t, c.gpus // (t * d)))
            options.append(opts)
        for combo in _product(options):
            used = [(k, t, s) for k, (t, s) in enumerate(combo) if s > 0]
            p = sum(s for _, _, s in used)
            if not used or p > L:
                continue
            uniform = len({t for _, t, _ in used}) == 1
            for order in _orders(used):
                for split in _layer_splits(L, [s for _, _, s in order]):
                    for b in (x for x in divisors(global_batch // d) if x <= 8):
                        for recs in _product([[Recompute.NONE, Recompute.FULL]] * len(order)):
                            evaluated += 1
                            plan = _evaluate(ev, order, split, recs, p, d, b, global_batch, dtype, uniform)
                            if plan is None:
                                continue
                            for key in {uniform, False}:
                                cur = best[key]
                                if cur is None or plan.iteration_seconds < cur[0]:
                                    best[key] = (plan.iteration_seconds, plan)
    found_uniform, found_any = best[True], best[False]
    uni = found_uniform[1] if found_uniform is not None else None
    any_t = found_any[1] if found_any is not None else None
    status = Status.OPTIMAL if any_t is not None else Status.INFEASIBLE
    kinds = tuple((c.accelerator.name, c.gpus) for c in clusters)
    return HeteroResult(status, uni, any_t, evaluated, time.perf_counter() - start, kinds)


def _product(lists: list[list[Any]]) -> list[tuple[Any, ...]]:
    import itertools

    return list(itertools.product(*lists))


def _orders(used: list[tuple[int, int, int]]) -> list[list[tuple[int, int, int]]]:
    import itertools

    return [list(o) for o in itertools.permutations(used)]


def _layer_splits(layers: int, stages: list[int]) -> list[list[int]]:
    """Layers per kind (each stage of a kind at least one layer), as a list per kind."""
    if len(stages) == 1:
        return [[layers]] if layers >= stages[0] else []
    out = []
    for first in range(stages[0], layers - sum(stages[1:]) + 1):
        out += [[first, *rest] for rest in _layer_splits(layers - first, stages[1:])]
    return out


def _evaluate(ev: _Evaluator, order, split, recs, p, d, b, batch, dtype, uniform) -> HeteroPlan | None:  # noqa: ANN001
    m = batch // (d * b)
    stages: list[HeteroStage] = []
    totals, tails = [], []
    index = 0
    for (k, t, s), layers, rec in zip(order, split, recs, strict=True):
        cluster = ev.clusters[k]
        for n in _split(layers, s):
            seconds, _, mem, tail = ev.stage(k, n, index, p, t, d, b, rec)
            if mem > cluster.accelerator.memory_bytes:
                return None
            stages.append(HeteroStage(cluster.accelerator.name, n, t, str(rec), seconds, mem,
                                      float(cluster.accelerator.memory_bytes)))  # fmt: skip
            totals.append(seconds)
            tails.append(tail)
            index += 1
    sync = m * max(totals) * ev.params.stage_jitter * math.sqrt(2 * math.log(p))  # the model's stage-jitter term
    iteration = m * max(totals) + (p - 1) * sum(totals) / p + sync + max(tails) + ev.params.iteration_overhead_s
    layout = _layout_string([s.layers for s in stages])
    if uniform:
        launcher = (
            "Megatron-Core: --pipeline-model-parallel-layout with the first stages' GPU kind first in the host list"
        )
    else:
        launcher = "not launchable: Megatron-LM, torchtitan and DeepSpeed use one tensor-parallel size for all stages"
    return HeteroPlan(tuple(stages), d, b, batch, str(dtype), iteration, uniform, launcher, layout)


def hetero_text(result: HeteroResult) -> str:
    """Plain-text report of :func:`search_hetero`."""
    lines = [
        "kinds: " + ", ".join(f"{n} x {k}" for k, n in result.kinds),
        f"evaluated {result.evaluated} plans in {result.seconds:.2f} s (every choice of the space; exact in the model)",
    ]
    if result.status is Status.INFEASIBLE:
        return "\n".join([*lines, "infeasible: no plan fits in every kind's memory"])
    for title, plan in (("uniform t (launchable)", result.uniform), ("t per kind", result.per_kind)):
        if plan is None:
            lines.append(f"{title}: none fits")
            continue
        lines.append(
            f"{title}: iteration {plan.iteration_seconds:.4g} s, d={plan.data}, micro-batch {plan.micro_batch}, "
            f"{plan.dtype}; {plan.launcher}"
        )
        for i, s in enumerate(plan.stages):
            lines.append(
                f"  stage {i}: {s.kind} t={s.tensor} x d={plan.data}, {s.layers} layers, recompute {s.recompute}, "
                f"{s.seconds * 1e3:.1f} ms per micro-batch, {s.memory_bytes / 2**30:.1f} of {s.capacity / 2**30:.0f} GiB"
            )
        lines.append(f"  --pipeline-model-parallel-layout {plan.megatron_layout}")
    lines.append(f"model {MODEL_ID} (the times above)")
    mixed = " + ".join(str(k) for k, _ in result.kinds)
    lines.append("error: extrapolated: no measured runs of mixed GPU kinds in one pipeline")
    lines += calibration_lines(calibration_band(), (f"GPU kinds in one pipeline {mixed} (calibration runs: one kind)",))
    return "\n".join(lines)
