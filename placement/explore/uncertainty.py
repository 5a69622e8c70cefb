"""Uncertain latencies: a seeded Monte Carlo of a plan's time per sample and out-of-memory risk.

Node latencies carry relative error bars (one global ``±e`` or one per node). Each draw
multiplies every node's latencies (accelerator, per-kind and CPU) by an independent factor
uniform in ``[1 - e, 1 + e]`` and then:

* evaluates the **chosen plan** on the drawn graph (:func:`placement.evaluate.evaluate`): its time
  per sample and its bottleneck device (the device with the largest load);
* optionally **re-optimises** (solves the drawn graph exactly, the DP by default) and records the
  optimum, i.e. what the plan could have been had the latencies been known;
* checks both plans' peak memory under a pipeline schedule (:func:`placement.pipeline.memory.peak_table`):
  a plan is out of memory when a device's peak exceeds its capacity.

Draw ``k`` uses its own generator seeded with ``(seed, k)``, so a run is reproducible and the same
``seed`` gives the same draws whatever the number of samples asked for.
"""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import cast

from ..errors import PlacementError
from ..evaluate import evaluate
from ..model import Graph, Placement, Problem
from ..pipeline.memory import peak_table
from ..pipeline.schedule import SCHEDULES
from .sweep import solve_point

#: At most this many draws per run.
MAX_SAMPLES = 5000


def _check_error(value: float, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or not 0 <= value < 1:
        raise PlacementError(f"{what}: a relative latency error must be a number in [0, 1) (got {value!r})")
    return float(value)


def latency_errors(graph: Graph, rel_error: float | Mapping[int, float]) -> dict[int, float]:
    """Relative error of every node: the global value, or per node id (nodes not listed get 0).

    Raises
    ------
    PlacementError
        For an error outside ``[0, 1)`` or an unknown node id.
    """
    if isinstance(rel_error, Mapping):
        ids = {node.id for node in graph.nodes}
        out = {node.id: 0.0 for node in graph.nodes}
        for node_id, value in rel_error.items():
            if node_id not in ids:
                raise PlacementError(f"latency error for unknown node {node_id!r}")
            out[node_id] = _check_error(value, f"node {node_id}")
        return out
    value = _check_error(rel_error, "latency error")
    return {node.id: value for node in graph.nodes}


def draw_graph(graph: Graph, errors: Mapping[int, float], rng: random.Random) -> Graph:
    """``graph`` with each node's latencies times a factor uniform in ``[1 - e, 1 + e]`` (one per node)."""
    nodes = []
    for node in graph.nodes:
        error = errors.get(node.id, 0.0)
        factor = rng.uniform(1.0 - error, 1.0 + error) if error else 1.0
        if factor != 1.0:
            node = replace(
                node,
                cpu_latency=node.cpu_latency * factor,
                accelerator_latency=node.accelerator_latency * factor,
                kind_latency=tuple((k, v * factor) for k, v in node.kind_latency),
            )
        nodes.append(node)
    return replace(graph, nodes=tuple(nodes))


def _out_of_memory(problem: Problem, plan: Placement, schedule: str, microbatches: int) -> bool:
    return any(peak > cap * (1 + 1e-12) for _, peak, cap in peak_table(problem, plan, schedule, microbatches))


@dataclass(frozen=True)
class MonteCarlo:
    """The draws of :func:`monte_carlo` (plain values; quantiles and shares as properties).

    Attributes
    ----------
    seed, samples : int
        The run's seed and number of draws.
    schedule : str
        The schedule the memory is checked under; ``microbatches`` its microbatch count.
    plan_times : tuple of float
        The chosen plan's time per sample in each draw.
    plan_oom : tuple of bool
        Whether the chosen plan is out of memory under the schedule in each draw.
    bottlenecks : tuple of str
        The chosen plan's bottleneck device (``"kind index"``) in each draw.
    reopt_times : tuple of float or None
        The re-optimised optimum in each draw (None where nothing fits); empty when not re-optimised.
    reopt_oom : tuple of bool
        Whether the re-optimised plan is out of memory under the schedule (False where there is none).
    reopt_changed : tuple of bool
        Whether the re-optimised plan differs from the chosen one.
    """

    seed: int
    samples: int
    schedule: str
    microbatches: int
    plan_times: tuple[float, ...]
    plan_oom: tuple[bool, ...]
    bottlenecks: tuple[str, ...]
    reopt_times: tuple[float | None, ...] = ()
    reopt_oom: tuple[bool, ...] = ()
    reopt_changed: tuple[bool, ...] = ()

    @property
    def plan_quantiles(self) -> tuple[float, float, float]:
        """P10, P50 and P90 of the chosen plan's time per sample."""
        return quantiles(self.plan_times)

    @property
    def reopt_quantiles(self) -> tuple[float, float, float] | None:
        """P10, P50 and P90 of the re-optimised time per sample (None without re-optimisation or plans)."""
        values = [t for t in self.reopt_times if t is not None]
        return quantiles(values) if values else None

    @property
    def plan_oom_probability(self) -> float:
        """Share of draws in which the chosen plan is out of memory under the schedule."""
        return sum(self.plan_oom) / len(self.plan_oom) if self.plan_oom else 0.0

    @property
    def reopt_oom_probability(self) -> float | None:
        """Share of draws in which the re-optimised plan is out of memory (None without re-optimisation)."""
        return sum(self.reopt_oom) / len(self.reopt_oom) if self.reopt_oom else None

    @property
    def bottleneck_shares(self) -> tuple[tuple[str, float], ...]:
        """(device, share of draws in which it is the chosen plan's bottleneck), most frequent first."""
        counts = Counter(self.bottlenecks)
        return tuple(
            (device, n / len(self.bottlenecks))
            for device, n in sorted(counts.items(), key=lambda item: (-item[1], item[0]))
        )


def quantiles(values: Sequence[float]) -> tuple[float, float, float]:
    """P10, P50, P90 of ``values`` (linear interpolation between order statistics, like numpy's default)."""
    ordered = sorted(values)
    if not ordered:
        raise PlacementError("no values to take quantiles of")

    def at(q: float) -> float:
        position = q * (len(ordered) - 1)
        low = math.floor(position)
        high = min(low + 1, len(ordered) - 1)
        return ordered[low] + (ordered[high] - ordered[low]) * (position - low)

    return at(0.1), at(0.5), at(0.9)


def monte_carlo(
    problem: Problem,
    plan: Placement,
    rel_error: float | Mapping[int, float],
    samples: int = 200,
    seed: int = 0,
    schedule: str = "inference",
    microbatches: int = 1,
    reoptimise: bool = True,
    method: str = "dp",
    progress: Callable[[int, int], None] | None = None,
) -> MonteCarlo:
    """Draw ``samples`` latency scenarios; evaluate ``plan`` (and re-optimise) in each.

    Parameters
    ----------
    problem : Problem
        The graph with its nominal latencies and the devices.
    plan : Placement
        The chosen plan (valid for ``problem``).
    rel_error : float or mapping
        Relative latency error: one value for every node, or node id -> value (others 0); in [0, 1).
    samples : int
        Number of draws (1 to :data:`MAX_SAMPLES`).
    seed : int
        Seed: draw ``k`` uses ``random.Random(f"{seed}:{k}")``.
    schedule : str
        ``"inference"``, ``"gpipe"`` or ``"1f1b"``: the schedule whose peak memory is checked.
    microbatches : int
        Microbatches of the schedule.
    reoptimise : bool
        Also solve each drawn graph (with ``method``) and record its optimum.
    method : str
        Solver for re-optimisation (the exact DP by default).
    progress : callable, optional
        ``progress(done, total)`` after each draw.

    Raises
    ------
    PlacementError
        For a bad error value, sample count, schedule, or a plan that does not fit ``problem``.
    """
    if isinstance(samples, bool) or not isinstance(samples, int) or not 1 <= samples <= MAX_SAMPLES:
        raise PlacementError(f"samples: must be an integer from 1 to {MAX_SAMPLES} (got {samples!r})")
    if schedule not in SCHEDULES:
        raise PlacementError(f"unknown schedule {schedule!r}; choose one of: {', '.join(SCHEDULES)}")
    if isinstance(microbatches, bool) or not isinstance(microbatches, int) or microbatches < 1:
        raise PlacementError(f"microbatches: must be a positive integer (got {microbatches!r})")
    nominal = evaluate(problem, plan)
    if not nominal.feasible:
        raise PlacementError(f"the plan does not fit this graph and devices: {nominal.violations[0]}")
    errors = latency_errors(problem.graph, rel_error)
    plan_oom_fixed = _out_of_memory(problem, plan, schedule, microbatches)  # latencies do not move memory
    times, ooms, bottlenecks = [], [], []
    reopt_times, reopt_ooms, changed = [], [], []
    for k in range(samples):
        rng = random.Random(f"{seed}:{k}")
        drawn = Problem(draw_graph(problem.graph, errors, rng), problem.devices)
        evaluation = evaluate(drawn, plan)
        times.append(evaluation.max_load)
        ooms.append(plan_oom_fixed)
        worst = max(evaluation.devices, key=lambda d: d.load)
        bottlenecks.append(f"{worst.device.kind} {worst.device.index}")
        if reoptimise:
            result = solve_point(drawn, method)
            if result.ok:
                placement = cast(Placement, result.placement)  # ok: a placement is available
                reopt_times.append(result.objective)
                reopt_ooms.append(_out_of_memory(drawn, placement, schedule, microbatches))
                changed.append(placement.device_of != plan.device_of)
            else:
                reopt_times.append(None)
                reopt_ooms.append(False)
                changed.append(True)
        if progress is not None:
            progress(k + 1, samples)
    return MonteCarlo(
        seed,
        samples,
        schedule,
        microbatches,
        tuple(times),
        tuple(ooms),
        tuple(bottlenecks),
        tuple(reopt_times),
        tuple(reopt_ooms),
        tuple(changed),
    )
