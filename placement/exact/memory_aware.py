"""Memory-aware planning: the optimal contiguous split when memory is the schedule's peak.

The plain DP (:mod:`placement.exact.dp`) checks a stage's memory as the sum of its nodes' sizes.
Under a training schedule a device also holds optimizer state and the activations of every
microbatch in flight, and in 1F1B that number depends on the stage's *position*: the device
at position ``k`` of ``K`` holds ``min(K - k, M)`` microbatches (see :mod:`placement.pipeline.memory`).
:func:`solve_memory_aware` minimises the max-load (the steady-state time per sample of
streaming inference and of 1F1B), where a stage that recomputes its activations counts its
forward compute a second time (its load + its forward compute: the backward pass re-runs
the forward pass once), subject to every accelerator holding the schedule's closed-form
peak (:func:`placement.pipeline.memory.peak_bytes`)::

    inference: W + A        gpipe: W + O + M A        1f1b: W + O + min(K - k, M) A
    (a stage that recomputes: n A becomes n I + A)

Recomputation (training schedules): ``"none"``, ``"always"`` (every stage) or
``"per-stage"`` (the planner chooses for each stage, exactly: both options are states of
the same DP).

It runs the shared lattice kernel (:mod:`placement.exact.kernel`) with "exactly these devices"
semantics: ``best[I, s]`` is the smallest max-load of any split of the nodes *outside*
ideal ``I`` into consecutive stages using *exactly* the device counts of state ``s``. Because
the DP runs from the end of the pipeline to its start, the stage in front of a suffix with
state ``s`` has ``digit_sum(s) + 1`` stages from it to the end (itself included): exactly
the ``K - k`` 1F1B needs, without knowing ``K`` in advance; the answer is
``min_s best[empty, s]``. Loads and the sums ``W, O, A, I`` are exact (correctly rounded).
The bound for "too slow" is the value of the same DP over one topological order.

Groups that :func:`placement.exact.ideals.reduce_groups` would merge are merged first, with their
memory ignored (a relaxation: a lower bound); the split found is then checked with the real
memory, re-solved with it when memory binds, and solved on the unreduced lattice if the two
differ (:func:`placement.exact.kernel.relax_then_verify`). With recomputation the stage input is
not monotone under merging, so the unreduced lattice is used directly (status
``"feasible"`` without a bound if it is too large).
"""

from __future__ import annotations

import math
import time
from typing import cast

import numpy as np

from ..errors import TooManyIdealsError
from ..evaluate import evaluate
from ..model import Placement, Problem, Recompute, Result, ScheduleKind, Status, make_result
from ..pipeline.memory import (
    activation_bytes,
    check_schedule_options,
    output_bytes,
    peak_table,
    resolve_optimizer_multiplier,
)
from .ideals import DEFAULT_MAX_IDEALS, contract, enumerate_ideals, reduce_groups
from .kernel import build_inputs, chain_lattice, lattice_tuple, relax_then_verify, run, traceback_split
from .limits import check_problem_table

#: Recomputation choices: which kernel modes (0 plain, 1 recompute) a stage may use.
RECOMPUTE_MODES = {Recompute.NONE: (0, 0), Recompute.ALWAYS: (1, 1), Recompute.PER_STAGE: (0, 1)}


def _flight(schedule: str, microbatches: int, digit_sum: np.ndarray) -> np.ndarray:
    """Microbatches in flight on a stage whose target state is s (s counts the stages from it to the end)."""
    if schedule == ScheduleKind.INFERENCE:
        return np.ones_like(digit_sum)
    if schedule == ScheduleKind.GPIPE:
        return np.full_like(digit_sum, microbatches)
    return np.minimum(digit_sum, microbatches)


def _solve_lattice(problem, groups, lattice, ignore, options, bytes_per_cost):
    """One exact run; returns (value, placement or None, pairs, per-stage modes)."""
    out_bytes = output_bytes(problem.graph, bytes_per_cost)
    kept = activation_bytes(problem.graph, bytes_per_cost)
    modes = options["modes"]
    inputs = build_inputs(problem, groups, ignore, out_bytes, forward_compute=modes[1] == 1, kept_bytes=kept)
    flight = _flight(options["schedule"], options["microbatches"], inputs.digit_sum)
    overlap = problem.devices.overlap

    def solve(lattice_arrays, bound):
        return run(
            inputs,
            lattice_arrays,
            overlap,
            bound,
            closure=False,
            flight=flight,
            opt_mult=options["opt_mult"],
            modes=modes,
        )

    chain = solve(chain_lattice(groups.count), math.inf)
    upper_bound = float(np.min(chain[0][0]))  # achieved by a split: exact, no slack needed
    best, parent_ideal, parent_type, pairs = solve(lattice_tuple(lattice), upper_bound)
    state = int(np.argmin(best[0]))
    value = float(best[0, state])
    if not math.isfinite(value):
        return math.inf, None, int(pairs), ()
    placement, stage_modes = traceback_split(
        problem, groups, lattice.groups_of, parent_ideal, parent_type, state, lattice.full, inputs
    )
    return value, placement, int(pairs), stage_modes


def plan_value(problem: Problem, placement: Placement, recomputing=()) -> float:
    """Max-load of ``placement`` where every device in ``recomputing`` adds its forward compute.

    Each device's value is its evaluator load + ``math.fsum`` of its forward nodes'
    latencies (one rounding), as the kernel computes it.
    """
    graph = problem.graph
    recomputing = set(recomputing)
    kinds = {kind.name: kind for kind in problem.devices.accelerators}
    value = 0.0
    for entry, stage in zip(evaluate(problem, placement).devices, placement.stages):
        load = entry.load
        if stage.device in recomputing:
            forward = [graph.node_by_id[n] for n in stage.nodes if not graph.node_by_id[n].is_backward]
            kind = kinds.get(stage.device.kind)
            terms = [n.cpu_latency if kind is None else n.latency_on(kind) for n in forward]
            try:
                load = load + math.fsum(terms)
            except OverflowError:
                load = math.inf
        value = max(value, load)
    return value


def solve_memory_aware(
    problem: Problem,
    schedule: str = ScheduleKind.ONE_F_ONE_B.value,
    microbatches: int = 8,
    optimizer_multiplier: float | None = None,
    recompute: Recompute | str | bool = Recompute.NONE.value,
    bytes_per_cost: float | None = None,
    max_ideals: int = DEFAULT_MAX_IDEALS,
) -> Result:
    """The optimal contiguous split whose devices hold the schedule's peak memory.

    Parameters
    ----------
    problem : Problem
        Graph and devices.
    schedule : str
        ``"inference"``, ``"gpipe"`` or ``"1f1b"``: decides the microbatches in flight per stage.
    microbatches : int
        Microbatches per batch (``M``).
    optimizer_multiplier : float, optional
        Optimizer state per byte of forward weights (training schedules). None (default): Adam
        with mixed precision for the graph's weight dtype
        (:func:`placement.pipeline.memory.default_optimizer_multiplier`: 6 for 16-bit weights, 2 for fp32).
    recompute : Recompute, str or bool
        ``"none"`` (or False), ``"always"`` (or True: every device recomputes its forward
        pass in the backward pass, stashing only its stage input), or ``"per-stage"`` (the
        planner decides for each stage). A recomputing stage's value is its load + its
        forward compute. Ignored (none) for inference.
    bytes_per_cost : float, optional
        Bytes per transfer-cost unit for edges without a ``size``.
    max_ideals : int
        Give up past this many ideals.

    Returns
    -------
    Result
        ``method`` "memory-aware"; ``objective`` the max-load (+ recomputation); status
        "optimal", "infeasible" (with a reason) or "feasible" (see the module docstring).
        ``stats`` has ``recompute`` (the choice) and ``recompute_devices`` (the devices that
        recompute, as ``"kind:index"`` strings).
    """
    started = time.perf_counter()
    check_schedule_options(schedule, microbatches, optimizer_multiplier)
    choice = Recompute.of(recompute)
    training = schedule != ScheduleKind.INFERENCE
    if not training:
        choice = Recompute.NONE
    opt_mult = resolve_optimizer_multiplier(problem.graph, optimizer_multiplier) if training else 0.0
    options = {
        "schedule": schedule,
        "microbatches": microbatches,
        "opt_mult": opt_mult,
        "modes": RECOMPUTE_MODES[choice],
    }
    stats = {
        "schedule": schedule,
        "microbatches": microbatches,
        "optimizer_multiplier": opt_mult,
        "recompute": choice.value,
    }

    def done(status, objective, placement, modes=(), **extra):
        stats["recompute_devices"] = (
            ",".join(f"{s.device.kind}:{s.device.index}" for s, m in zip(placement.stages, modes) if m)
            if placement
            else ""
        )
        return make_result(
            "memory-aware", status, started=started, objective=objective, placement=placement, stats=stats, **extra
        )

    def fits(placement, modes):
        recomputing = tuple(s.device for s, m in zip(placement.stages, modes) if m)
        return all(
            peak <= cap
            for _, peak, cap in peak_table(
                problem, placement, schedule, microbatches, opt_mult, recomputing, bytes_per_cost
            )
        )

    def solve(groups, lattice, ignore):
        value, placement, pairs, modes = _solve_lattice(problem, groups, lattice, ignore, options, bytes_per_cost)
        return value, placement, pairs, modes

    full_groups = contract(problem.graph)
    groups, moved = reduce_groups(problem.graph, full_groups)
    out_bytes = activation_bytes(problem.graph, bytes_per_cost)
    relaxed = frozenset(n for n in moved if problem.graph.node_by_id[n].size > 0 or out_bytes[n] > 0)
    recomputing = choice is not Recompute.NONE
    if recomputing and relaxed:
        groups, relaxed = full_groups, frozenset()
    try:
        lattice = enumerate_ideals(groups, max_ideals)
        check_problem_table(problem, lattice.count)
    except TooManyIdealsError:
        if groups is not full_groups or not recomputing:
            raise
        groups, _ = reduce_groups(problem.graph, full_groups)
        lattice = enumerate_ideals(groups, max_ideals)
        check_problem_table(problem, lattice.count)
        value, placement, pairs, modes = solve(groups, lattice, frozenset())
        stats.update(groups=groups.count, ideals=lattice.count, pairs=pairs)
        if placement is None:
            return done(
                Status.NO_SOLUTION,
                None,
                None,
                reason="recomputation with merged nodes: the unreduced lattice is too large",
            )
        return done(
            Status.FEASIBLE,
            value,
            placement,
            modes,
            reason="recomputation with merged nodes: optimal among splits of the merged groups only",
        )
    outcome = relax_then_verify(
        solve,
        lambda p: fits(p, ()),
        groups,
        full_groups,
        lattice,
        relaxed,
        max_ideals,
        lambda ideals: check_problem_table(problem, ideals),
    )
    stats.update(
        groups=outcome.groups,
        ideals=outcome.ideals,
        pairs=outcome.pairs,
        merged_nodes=len(moved) if groups is not full_groups else 0,
    )
    modes = cast("tuple[int, ...]", outcome.extra or ())  # the solve's stage modes (traceback_split's second value)
    if outcome.placement is not None:
        recomputing_devices = tuple(s.device for s, m in zip(outcome.placement.stages, modes) if m)
        checked = plan_value(problem, outcome.placement, recomputing_devices)
        if checked != outcome.value:
            raise RuntimeError(
                f"internal error: the memory-aware DP's value {outcome.value!r} differs from the "
                f"evaluator's {checked!r} for its own split"
            )
    if outcome.status == Status.INFEASIBLE:
        return done(Status.INFEASIBLE, None, None, reason=_reason(problem, schedule, microbatches))
    if outcome.status == Status.NO_SOLUTION:
        return done(Status.NO_SOLUTION, None, None, bound=outcome.bound, reason=outcome.note)
    if outcome.status == Status.FEASIBLE:
        gap = (outcome.value - outcome.bound) / outcome.value if outcome.value else 0.0
        return done(Status.FEASIBLE, outcome.value, outcome.placement, modes, bound=outcome.bound, gap=gap)
    return done(Status.OPTIMAL, outcome.value, outcome.placement, modes, bound=outcome.value, gap=0.0)


def _reason(problem: Problem, schedule: str, microbatches: int) -> str:
    return (
        f"no contiguous split fits: under {schedule} with {microbatches} microbatch(es) every way of cutting "
        f"the graph into at most {problem.devices.accelerator_count} accelerator and {problem.devices.cpus} CPU "
        "stages puts more weights, optimizer state and in-flight activations on some accelerator than it holds"
    )
