"""Exact search for the fastest launchable layout of a transformer on a cluster, in the performance model.

The search enumerates a framework's space (:mod:`placement.perf.spaces`) and returns the layout with the
smallest predicted iteration time (:func:`placement.perf.predict.predict`) among those that fit in GPU
memory; ties go to less memory, then to the first in enumeration order. It is exact in the model: every
choice of the space is either evaluated or pruned by one of these rules, each a property of the model
(checked against brute force over whole spaces in ``tests/test_search.py``):

* **Recomputation never speeds up a step.** On one shape (all knobs but recomputation fixed) the time
  without recomputation is a lower bound for every recompute variant, so a shape whose bound is no better
  than the incumbent is skipped whole (the bound needs one prediction).
* **More recomputed layers are never faster.** Full recomputation of the first k layers of each stage
  (``--recompute-method block --recompute-num-layers k``) gets slower as k grows, so only the smallest k that
  fits can be optimal on its shape; the others are dominated (they need only a memory check, which is
  cheap: :func:`placement.perf.memory.memory_breakdown`).
* Selective recomputation is a chain of its own (it neither dominates nor is dominated by full
  recomputation of k layers).

``fits`` is the model's own: the memory breakdown's total against the GPU's capacity.

:func:`search` gives the optimum; :func:`pareto_front` the plans no other plan beats on iteration time,
memory per GPU and GPU count (and cost per iteration when the accelerator has a price). The shapes of a space
and their recompute variants are enumerated by :mod:`placement.perf.shapes`, the bounds are
:mod:`placement.perf.bounds`.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

from ..errors import PlacementError
from ..model import Status
from .bounds import _bound, _layer_seconds, static_memory_bound
from .bounds import time_bound as time_bound  # re-exported: the bounds were defined here before
from .chains import _chains
from .collectives import Links
from .free_split import TIE_RTOL, best_free_split, free_bound, free_template
from .hardware import Cluster, Dtype
from .layout import Layout, Recompute, RecomputeMethod, Schedule
from .memory import free_split_floor, host_bytes, layer_activation_bytes
from .params import DEFAULT_PARAMS, PerfParams
from .partial_split import PartialSplits, partial_bound, partial_template
from .predict import Prediction, _layer_cost, _LayerCost, predict
from .shapes import _checked, _splits_allowed, shape_specs, shape_splits, shapes, variants
from .shapes import space_dtype as space_dtype  # re-exported: the enumeration was defined here before
from .spaces import SearchSpace, get_space
from .splits import _ends_seconds, splits_best_first
from .transformer import TransformerSpec


@dataclass(frozen=True)
class Plan:
    """One layout with its predicted numbers (seconds, bytes)."""

    layout: Layout
    prediction: Prediction
    gpus: int
    price_per_hour: float | None = None

    @property
    def iteration_seconds(self) -> float:
        """Predicted time of one training iteration, seconds."""
        return self.prediction.iteration_seconds

    @property
    def memory_bytes(self) -> float:
        """Memory of the most loaded GPU, bytes."""
        return self.prediction.memory.total

    @property
    def cost_per_iteration(self) -> float | None:
        """GPUs x price per GPU-hour x iteration time; None without a price."""
        if self.price_per_hour is None:
            return None
        return self.gpus * self.price_per_hour * self.iteration_seconds / 3600.0

    def run_seconds(self, tokens: float) -> float:
        """Wall time of a training run of ``tokens`` tokens at the predicted tokens/s."""
        return tokens / self.prediction.tokens_per_second

    def cost_per_run(self, tokens: float) -> float | None:
        """GPUs x price per GPU-hour x :meth:`run_seconds`; None without a price."""
        if self.price_per_hour is None:
            return None
        return self.gpus * self.price_per_hour * self.run_seconds(tokens) / 3600.0


@dataclass(frozen=True)
class SearchStats:
    """What the search did: shapes enumerated, memory checks and predictions made, shapes pruned."""

    shapes: int = 0
    memory_checks: int = 0
    predictions: int = 0
    pruned_by_memory: int = 0
    pruned_by_bound: int = 0
    splits: int = 0  #: uneven layer splits examined (Megatron-Core spaces)


#: What the static memory (GPU and host) depends on.
_FAMILY = (
    "tensor",
    "pipeline",
    "data",
    "context",
    "expert",
    "zero_stage",
    "replicate",
    "offload_optimizer",
    "offload_params",
)
_COUNTERS = ("shapes", "memory_checks", "predictions", "pruned_by_memory", "pruned_by_bound", "splits")


@dataclass(frozen=True)
class SearchResult:
    """The optimum of a space (or the proof that nothing fits).

    ``status`` is ``optimal`` with a plan or ``infeasible`` (no layout of the space fits in memory, or
    none is valid); ``space`` is the one-line statement of the space the plan is optimal in.
    """

    status: Status
    space: str
    space_title: str
    plan: Plan | None
    stats: SearchStats
    seconds: float
    reason: str = ""
    pareto: tuple[Plan, ...] = field(default=())


# ----------------------------------------------------------------------------- search
def _capacity(cluster: Cluster) -> float:
    return float(cluster.accelerator.memory_bytes)


def _better(a: Plan, b: Plan | None) -> bool:
    """a strictly better than b: less time, then less memory; times within :data:`TIE_RTOL` of each other tie
    (rounding: a free split's bubble sums its ranks in another order), and the first found wins exact ties."""
    if b is None:
        return True
    if _beyond(a.iteration_seconds, b.iteration_seconds) or _beyond(b.iteration_seconds, a.iteration_seconds):
        return a.iteration_seconds < b.iteration_seconds
    return a.memory_bytes < b.memory_bytes


def _beyond(seconds: float, incumbent: float) -> bool:
    """``seconds`` is more than the incumbent's time, beyond a tie (so nothing timed so can win)."""
    return seconds > incumbent * (1 + TIE_RTOL)


def _candidates(
    space: SearchSpace, model: TransformerSpec, cluster: Cluster, global_batch: int, dtype: Dtype | None,
    params: PerfParams, capacity: float, counters: dict[str, int],
) -> list[tuple[float, int, dict[str, object]]]:  # fmt: skip
    """(time bound, order, shape spec) of every shape whose family can fit, unsorted.

    Layouts are built only for one member of each family (the memory bound) and one per per-layer cost key;
    the bound of a shape is arithmetic on those (:func:`time_bound`).
    """
    families: dict[tuple[object, ...], bool] = {}
    layer_cache: dict[tuple[object, ...], float] = {}
    out: list[tuple[float, int, dict[str, object]]] = []
    for spec in shape_specs(space, model, cluster, global_batch, dtype):
        counters["shapes"] += 1
        fam = tuple(spec[k] for k in _FAMILY)
        if fam not in families:
            layout = _checked(model, cluster, spec)
            families[fam] = (
                layout is not None
                and static_memory_bound(model, layout, params, space.uneven) <= capacity
                and max(host_bytes(model, layout, s) for s in {0, layout.pipeline - 1}) <= cluster.host_memory_per_gpu
            )
            counters["memory_checks"] += 1
        if not families[fam]:
            counters["pruned_by_memory"] += 1
            continue
        key = tuple(spec[k] for k in ("tensor", "context", "expert", "micro_batch", "sequence_parallel"))
        if key not in layer_cache:
            layout = _checked(model, cluster, spec)
            layer_cache[key] = math.inf if layout is None else _layer_seconds(model, cluster, layout, params)
        p, v = int(spec["pipeline"]), int(spec["virtual_stages"])  # type: ignore[call-overload]
        m = global_batch // (int(spec["data"]) * int(spec["micro_batch"]))  # type: ignore[call-overload]
        bound = _bound(layer_cache[key], model.layers, p, v, m, Schedule(spec["schedule"]).zero_bubble, params)
        out.append((bound, len(out), spec))
    return out


def _best_of_shape(
    space: SearchSpace, model: TransformerSpec, cluster: Cluster, shape: Layout, params: PerfParams,
    capacity: float, best: Plan | None, counters: dict[str, int],
) -> Plan | None:  # fmt: skip
    """The fastest fitting split and recompute variant of ``shape`` if it beats ``best``, else None.

    Splits come best-first by their time bound (:func:`placement.perf.splits.splits_best_first`).
    """
    if not _splits_allowed(space, shape.pipeline, shape.schedule):
        return _best_of_split(space, model, cluster, shape, params, capacity, best, counters)
    found: Plan | None = None
    cost = _layer_cost(model, cluster, shape, params, Links.of(cluster, params))  # one layer (every split's)
    ends = _ends_seconds(model, cluster, shape, params, cost)  # one layer's step, the ends, the sends: shared
    if space.free_layouts and shape.pipeline >= 3:
        found = _best_free(space, model, cluster, shape, params, capacity, best, counters, ends, cost)
    for bound, split in splits_best_first(model, cluster, shape, params, ends):
        incumbent = found or best
        if incumbent is not None and _beyond(bound, incumbent.iteration_seconds):
            break
        counters["splits"] += 1
        plan = _best_of_split(space, model, cluster, split, params, capacity, incumbent, counters)
        if plan is not None and _better(plan, incumbent):
            found = plan
    if space.free_layouts and space.partial_recompute and Recompute.FULL in space.recompute and shape.pipeline >= 3:
        # (after the first/last splits, which it also covers: a plan found there keeps exact ties)
        plan = _best_partial(model, cluster, shape, params, capacity, found or best, counters, ends, cost)
        if plan is not None and _better(plan, found or best):
            found = plan
    return found


def _mode_of(shape: Layout, mode: Recompute) -> Layout:
    """``shape`` with recomputation ``mode`` of every layer, unvalidated (for :func:`free_bound` only, which reads
    the recomputation fields)."""
    from .chains import _variant

    if mode is Recompute.FULL:
        return _variant(shape, recompute=mode, recompute_method=RecomputeMethod.BLOCK, recompute_layers=None)
    return _variant(shape, recompute=mode)


def _best_free(
    space: SearchSpace, model: TransformerSpec, cluster: Cluster, shape: Layout, params: PerfParams,
    capacity: float, best: Plan | None, counters: dict[str, int], ends: tuple[float, ...] | None = None,
    cost: _LayerCost | None = None,
) -> Plan | None:  # fmt: skip
    """The fastest fitting free split of ``shape`` (recompute none, selective, full of every layer) if it beats
    ``best`` (:func:`placement.perf.free_split.best_free_split`, exact for each mode), else None. (Partial
    recomputation: :func:`_best_partial`.)"""
    found: Plan | None = None
    if ends is None:
        ends = _ends_seconds(model, cluster, shape, params)
    if best is not None and _beyond(free_bound(model, cluster, shape, params, ends), best.iteration_seconds):
        return None  # the bound without recomputation is below every mode's
    if cost is None:
        cost = _layer_cost(model, cluster, shape, params, Links.of(cluster, params))
    for mode in space.recompute:
        incumbent = found or best
        limit = math.inf if incumbent is None else incumbent.iteration_seconds
        if mode is not Recompute.NONE and _beyond(
            free_bound(model, cluster, _mode_of(shape, mode), params, ends, cost), limit
        ):
            continue  # (the bound grows with the recomputation: the next modes may still pass on memory grounds)
        template = free_template(shape, mode)
        layouts = best_free_split(model, cluster, template, params, capacity, limit, cost)
        found = _fastest(layouts, model, cluster, params, found, best, counters)
    return found


def _fastest(
    layouts: Iterable[Layout], model: TransformerSpec, cluster: Cluster, params: PerfParams, found: Plan | None,
    best: Plan | None, counters: dict[str, int],
) -> Plan | None:  # fmt: skip
    """The fastest fitting plan of ``layouts`` (each predicted) if it beats ``found or best``, else ``found``."""
    for layout in layouts:
        counters["predictions"] += 1
        prediction = predict(model, cluster, layout, params, check=False, with_band=False)
        plan = Plan(layout, prediction, cluster.gpus, cluster.accelerator.price_per_hour)
        if prediction.fits and _better(plan, found or best):
            found = plan
    return found


def _best_partial(
    model: TransformerSpec, cluster: Cluster, shape: Layout, params: PerfParams, capacity: float,
    best: Plan | None, counters: dict[str, int], ends: tuple[float, ...] | None = None,
    cost: _LayerCost | None = None,
) -> Plan | None:  # fmt: skip
    """The fastest fitting free split of ``shape`` with block recomputation of k < the largest chunk layers per chunk
    (:func:`placement.perf.partial_split.best_partial_split`, exact for each k) if it beats ``best``, else None.

    Memory never grows with k: the least k whose memory floor (:func:`~placement.perf.memory.free_split_floor`)
    fits is found by bisection, then the least k with a fitting split; k then rises while the running maximum of
    :func:`~placement.perf.partial_split.partial_bound` over the k so far (itself a bound) is within the
    incumbent. k >= ``L / v - (p - 1)`` (every chunk recomputed whole) is the free full mode of :func:`_best_free`.
    """
    p, v = shape.pipeline, shape.virtual_stages
    size = model.layers // v - (p - 1)  # the largest chunk of any split
    if cost is None:
        cost = _layer_cost(model, cluster, shape, params, Links.of(cluster, params))
    floor = partial_bound(model, cluster, shape, params, 1, ends, cost)
    if size <= 1 or (best is not None and _beyond(floor, best.iteration_seconds)):
        return None
    per_layer = (layer_activation_bytes(model, shape, Recompute.NONE),
                 layer_activation_bytes(model, shape, Recompute.FULL))  # fmt: skip
    start = _least_k(lambda k: free_split_floor(model, partial_template(shape, k), params, per_layer) <= capacity, size)
    if start == size:
        return None
    floor = max(floor, partial_bound(model, cluster, shape, params, start, ends, cost))
    if best is not None and _beyond(floor, best.iteration_seconds):
        return None
    solvers: dict[int, PartialSplits] = {}
    statics: dict[tuple[int, int], float] = {}  # (the ranks' static bytes: the same for every k)

    def solver(k: int) -> PartialSplits:
        if k not in solvers:
            solvers[k] = PartialSplits(model, cluster, partial_template(shape, k), params, cost, statics=statics)
        return solvers[k]

    counters["memory_checks"] += 1
    lo = _least_k(lambda k: k >= start and solver(k).fits(capacity), size)
    found: Plan | None = None
    for k in range(lo, size):
        incumbent = found or best
        floor = max(floor, partial_bound(model, cluster, shape, params, k, ends, cost))
        if incumbent is not None and _beyond(floor, incumbent.iteration_seconds):
            break
        limit = math.inf if incumbent is None else incumbent.iteration_seconds
        found = _fastest(solver(k).best(capacity, limit), model, cluster, params, found, best, counters)
    return found


def _least_k(holds: Callable[[int], bool], size: int) -> int:
    """The least k in 1 .. size - 1 where ``holds`` (true on a suffix), or ``size`` where it holds nowhere."""
    lo, hi = 1, size
    while lo < hi:
        mid = (lo + hi) // 2
        if holds(mid):
            hi = mid
        else:
            lo = mid + 1
    return lo


def _best_of_split(
    space: SearchSpace, model: TransformerSpec, cluster: Cluster, shape: Layout, params: PerfParams,
    capacity: float, best: Plan | None, counters: dict[str, int],
) -> Plan | None:  # fmt: skip
    """The fastest fitting recompute variant of ``shape`` (one split) if it beats ``best``, else None."""
    found: Plan | None = None
    bound: Prediction | None = None
    price = cluster.accelerator.price_per_hour
    for chain in _chains(space, model, params, shape):
        # fastest first along the chain: its first fitting variant is the chain's best; find it by
        # bisection (memory never grows along the chain, see the module docstring)
        lo, hi = 0, len(chain)
        while lo < hi:
            mid = (lo + hi) // 2
            counters["memory_checks"] += 1
            if chain.memory(mid) <= capacity:
                hi = mid
            else:
                lo = mid + 1
        if lo == len(chain):
            continue
        layout = chain.layout(lo)
        if bound is None:  # the shape without recomputation bounds every variant from below
            bound = predict(model, cluster, shape, params, check=False, with_band=False)
            counters["predictions"] += 1
        incumbent = found or best
        if incumbent is not None and _beyond(bound.iteration_seconds, incumbent.iteration_seconds):
            return found
        if layout is shape:
            prediction = bound
        else:
            prediction = predict(model, cluster, layout, params, check=False, with_band=False)
            counters["predictions"] += 1
        plan = Plan(layout, prediction, cluster.gpus, price)
        if _better(plan, found or best):
            found = plan
    return found


def search(
    model: TransformerSpec,
    cluster: Cluster,
    global_batch: int,
    space: SearchSpace | str = "megatron",
    *,
    dtype: Dtype | str | None = None,
    params: PerfParams = DEFAULT_PARAMS,
) -> SearchResult:
    """The fastest layout of ``space`` that fits, proven optimal in the model.

    Shapes are taken best-first by :func:`time_bound`; the search stops when the next bound exceeds the
    incumbent's time. Families whose weights, gradients and optimizer state alone overflow the GPU
    (:func:`static_memory_bound`) are skipped whole.

    Parameters
    ----------
    model, cluster : TransformerSpec, Cluster
        What to train and on what (all ``cluster.gpus`` GPUs are used).
    global_batch : int
        Sequences per iteration (fixed: the optimum is over layouts, not batch sizes).
    space : SearchSpace or str
        The framework's space (:data:`placement.perf.spaces.SPACES`).
    dtype : Dtype, str or None
        Arithmetic type (default: bf16 where the GPU has it, else fp16).
    params : PerfParams
        The performance model's constants.

    Returns
    -------
    SearchResult
        ``optimal`` with the plan, or ``infeasible`` with the reason.
    """
    space = get_space(space) if isinstance(space, str) else space
    if isinstance(global_batch, bool) or not isinstance(global_batch, int) or global_batch < 1:
        raise PlacementError(f"--global-batch {global_batch!r}: must be a positive integer")
    start = time.perf_counter()
    capacity = _capacity(cluster)
    counters = dict.fromkeys(_COUNTERS, 0)
    dt = None if dtype is None else Dtype(dtype)
    candidates = sorted(_candidates(space, model, cluster, global_batch, dt, params, capacity, counters))
    best: Plan | None = None
    for i, (bound, _, spec) in enumerate(candidates):
        if best is not None and _beyond(bound, best.iteration_seconds):
            counters["pruned_by_bound"] += len(candidates) - i
            break
        shape = _checked(model, cluster, spec)
        if shape is None:
            continue
        found = _best_of_shape(space, model, cluster, shape, params, capacity, best, counters)
        if found is not None and _better(found, best):
            best = found
    stats = SearchStats(**counters)
    seconds = time.perf_counter() - start
    if best is None:
        reason = (
            f"no layout of the {space.name} space is valid for {model.name} on {cluster.gpus} GPUs "
            f"with global batch {global_batch}"
            if counters["shapes"] == 0
            else f"no layout of the {space.name} space fits in {capacity / 2**30:.1f} GiB per GPU"
        )
        return SearchResult(Status.INFEASIBLE, space.name, space.title, None, stats, seconds, reason)
    # the winner again, with the calibration band attached (the band does not change the numbers)
    best = Plan(
        best.layout, predict(model, cluster, best.layout, params, framework=space.name), best.gpus, best.price_per_hour
    )
    return SearchResult(Status.OPTIMAL, space.name, space.title, best, stats, seconds)


def every_layout(
    space: SearchSpace | str,
    model: TransformerSpec,
    cluster: Cluster,
    global_batch: int,
    dtype: Dtype | str | None = None,
) -> Iterator[Layout]:
    """Every choice of the space (each shape with each recompute variant), for Pareto fronts and tests."""
    space = get_space(space) if isinstance(space, str) else space
    for shape in shapes(space, model, cluster, global_batch, dtype):
        for split in shape_splits(space, model, shape):
            for chain in variants(space, model, split):
                yield from chain
