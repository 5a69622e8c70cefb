"""Memory-aware contiguous integer program: the schedule's peak memory per pipeline position.

The same contiguous model as :func:`placement.ip.throughput.solve_ip_contiguous` (groups of
:func:`placement.exact.ideals.contract` on ``D`` ordered positions whose prefixes are ideals, one
device type per position, any order of types, crossing indicators ``c`` for communication),
with each accelerator position's memory rule replaced by the peak of
:func:`placement.pipeline.memory.peak_bytes` - the same model as the DP of
:mod:`placement.exact.memory_aware`, so the two give the same optimum::

    inference: W + A        gpipe: W + O + M A        1f1b: W + O + min(K - k, M) A
    (with recompute, n A becomes n I + A and the forward compute is counted twice)

Exact linearisation of the position-dependent in-flight count (1F1B):

* ``y[p]`` = position ``p`` is non-empty (``x[g, p, d] <= y[p] <= sum_{g, d} x[g, p, d]``),
  with ``y[p] >= y[p + 1]``: the non-empty positions come first. This only breaks symmetry -
  removing an empty position (with its device type) keeps the prefixes a chain of ideals and
  the pipeline the same.
* Then the stage at a non-empty position ``p`` has ``sum_{q > p} y[q]`` stages after it, and
  that number is ``>= j`` exactly when ``y[p + j] = 1``. So its in-flight count is
  ``n_p = min(M, K - p) = 1 + sum_{j=1}^{M-1} y[p + j]`` and no counting variables are needed.
* ``n_p A_p = A_p + sum_j y[p + j] A_p``; each product of the continuous stage activation
  ``A_{p,d} = sum_g a_g x[g, p, d]`` with a binary is ``v[p, j, d] >= A_{p,d} - B_d (1 - y[p + j])``,
  ``v >= 0``, where ``B_d = min(cap_d, total activation bytes of groups that fit type d)``
  (the peak rule itself keeps ``A_{p,d} <= cap_d``). Every term only needs a lower bound: the
  memory constraint is the only place it appears, so the solver sets it as low as allowed.
  Memory rows count bytes in units of ``cap_d`` (with raw byte counts, coefficients ~1e9,
  HiGHS reported a wrong "optimum" on the GNMT sample).
* Recomputation: the stage input ``I_{p,d} = sum_u ob_u i[u, p, d]`` with
  ``i[u, p, d] >= x[g(v), p, d] - x[g(u), p, d]`` for every forward edge ``u -> v`` between
  groups; ``n_p I_p`` is linearised as above.

Warm start (``warm_start=True``): the better of the memory-aware DP's split (when at least
:data:`~placement.ip.latency_search.DP_MIN_SECONDS` are left and the graph has at most
:data:`WARM_MAX_IDEALS` ideals, so it cannot overrun a limit by much) and the chain DP's split
when it fits; it goes to HiGHS as a MIP start, and the result is never worse than it: when the
solver's incumbent is worse or absent (time limit), the start is returned as "feasible" with the
solver's bound. Only the placement of the start is used, never the DP's proof (the IP proves its
own optimum).

CPU positions pay communication only when ``devices.cpu_bandwidth`` is set (as in the
evaluator), and have no memory rule. Statuses and the solver as in :mod:`placement.ip.common`;
the objective reported is recomputed from the placement with the evaluator (max-load, plus
each device's forward compute with recomputation) and the plan is checked against
:func:`placement.pipeline.memory.peak_table`.
"""

from __future__ import annotations

import math
import time
from typing import Any

import pulp

from ..errors import PlacementError
from ..evaluate import evaluate
from ..exact.ideals import contract
from ..model import Placement, Problem, Recompute, Result, ScheduleKind, Status, make_result
from ..pipeline.memory import (
    activation_bytes,
    check_schedule_options,
    output_bytes,
    peak_table,
    resolve_optimizer_multiplier,
)
from .common import (
    Deadline,
    DeadlinePassed,
    TimedProblem,
    check_devices,
    check_options,
    device_types,
    group_compute,
    infeasible_result,
    lp_sum,
    nowhere,
    solve_in_time,
)
from .positions import (
    contiguity,
    crossing_vars,
    group_data,
    position_types,
    read_contiguous,
)
from .throughput import contiguous_start

METHOD = "memory-aware-ip"


def _forward_compute(problem: Problem, members, kind) -> float:
    graph = problem.graph
    forward = [n for n in members if not graph.node_by_id[n].is_backward]
    if kind is None:
        return sum(graph.node_by_id[n].cpu_latency for n in forward)
    return sum(graph.node_by_id[n].latency_on(kind) for n in forward)


def plan_value(problem: Problem, placement: Placement, recompute: bool) -> float:
    """Max-load of ``placement``, plus every device's forward compute when it recomputes."""
    evaluation = evaluate(problem, placement)
    if not recompute:
        return evaluation.max_load
    kinds = {kind.name: kind for kind in problem.devices.accelerators}
    return max(
        entry.load + _forward_compute(problem, stage.nodes, kinds.get(stage.device.kind))
        for entry, stage in zip(evaluation.devices, placement.stages)
    )


def solve_memory_aware_ip(
    problem: Problem,
    schedule: str = "1f1b",
    microbatches: int = 8,
    optimizer_multiplier: float | None = None,
    recompute: bool | str = "none",
    time_limit: float | None = None,
    gap: float | None = None,
    solver: str = "highs",
    bytes_per_cost: float | None = None,
    warm_start: bool = True,
) -> Result:
    """The optimal contiguous split whose accelerators hold the schedule's peak memory, by an IP.

    Parameters
    ----------
    problem : Problem
        Graph and devices (several accelerator kinds, CPU cores, overlap).
    schedule : str
        ``"inference"``, ``"gpipe"`` or ``"1f1b"``: decides the microbatches in flight per stage.
    microbatches : int
        Microbatches per batch (``M``).
    optimizer_multiplier : float, optional
        Optimizer state per byte of forward weights (training schedules; None: mixed-precision Adam
        for the graph's weight dtype, :func:`placement.pipeline.memory.default_optimizer_multiplier`).
    recompute : bool or str
        ``"always"`` (or True): every device recomputes its forward pass in the backward pass
        (training schedules); ``"none"`` (or False): none does. No per-stage choice.
    time_limit : float, optional
        Seconds for the solver; on expiry the best split found is returned as "feasible".
    gap : float, optional
        Relative gap at which the solver may stop (default: prove optimality).
    solver : {"highs", "cbc"}
        HiGHS (falls back to CBC when ``highspy`` is missing) or PuLP's bundled CBC.
    bytes_per_cost : float, optional
        Bytes per transfer-cost unit for edges without a ``size`` (see :mod:`placement.pipeline.memory`).
    warm_start : bool
        Start from the memory-aware DP's split (or the chain DP's when it fits); the result is
        never worse than the start (module docstring).

    Returns
    -------
    Result
        Method ``"memory-aware-ip"``, objective kind ``"throughput"``; stages in pipeline order.
        The objective equals that of :func:`placement.exact.memory_aware.solve_memory_aware`.
    """
    started = time.perf_counter()
    check_schedule_options(schedule, microbatches, optimizer_multiplier)
    check_options(solver, time_limit, gap)
    training = schedule != ScheduleKind.INFERENCE
    try:
        choice: Recompute | None = Recompute.of(recompute)
    except PlacementError:
        choice = None
    if choice not in (Recompute.NONE, Recompute.ALWAYS):  # per-stage is the exact DP's only
        raise PlacementError(f"recompute must be 'none' or 'always' (or true/false) for {METHOD!r}, got {recompute!r}")
    recompute = choice is Recompute.ALWAYS and training
    opt_mult = resolve_optimizer_multiplier(problem.graph, optimizer_multiplier) if training else 0.0
    reason = check_devices(problem)
    if reason:
        return infeasible_result(METHOD, reason, started, "throughput")
    graph, devices = problem.graph, problem.devices
    nodes = graph.node_by_id
    groups_obj = contract(graph)
    groups = groups_obj.members
    group_of, crossing = group_data(problem, groups)
    out_bytes = output_bytes(graph, bytes_per_cost)
    types = device_types(problem)
    n_pos = sum(count for _, _, count in types)
    positions = range(n_pos)
    n_groups = len(groups)

    static = [
        sum(nodes[n].size for n in m) + opt_mult * sum(nodes[n].size for n in m if not nodes[n].is_backward)
        for m in groups
    ]
    kept = activation_bytes(graph, bytes_per_cost)
    act = [sum(kept[n] for n in m if not nodes[n].is_backward) for m in groups]
    compute = {
        (g, d): group_compute(problem, groups[g], types[d][1]) for g in range(n_groups) for d in range(len(types))
    }
    fcompute = {
        (g, d): _forward_compute(problem, groups[g], types[d][1]) if recompute else 0.0
        for g in range(n_groups)
        for d in range(len(types))
    }
    # Forward edges between groups whose source has output bytes: the stage inputs (recomputation).
    inputs: dict[int, set[int]] = {}
    if recompute:
        for edge in graph.edges:
            u, v = edge.source, edge.target
            if nodes[u].is_backward or nodes[v].is_backward or group_of[u] == group_of[v] or out_bytes[u] <= 0:
                continue
            inputs.setdefault(u, set()).add(group_of[v])

    deadline = Deadline.after(time_limit, started)
    memory_options = (schedule, microbatches, opt_mult, recompute, bytes_per_cost)
    start_plan = _warm_start(problem, memory_options, optimizer_multiplier, deadline) if warm_start else None
    built_at = deadline.now()
    try:
        prob = TimedProblem("memory_aware_contiguous", deadline)
        load = prob.add_variable("L", lowBound=0)
        prob += load
        t = position_types(prob, types, positions)
        y = {p: prob.add_variable(f"y_{p}", 0, 1, pulp.LpBinary) for p in positions}
        for p in range(n_pos - 1):
            prob += y[p] - y[p + 1] >= 0
        x = {}
        for g in range(n_groups):
            for p in positions:
                for d in range(len(types)):
                    if not math.isfinite(compute[g, d]):
                        continue
                    kind = types[d][1]
                    # Even alone with one microbatch in flight the group must fit (A_p >= a_g, I_p >= 0).
                    if kind is not None and static[g] + act[g] > kind.memory:
                        continue
                    x[g, p, d] = prob.add_variable(f"x_{g}_{p}_{d}", 0, 1, pulp.LpBinary)
                    prob += x[g, p, d] <= t[p, d]
                    prob += y[p] - x[g, p, d] >= 0
            options = [(x[g, p, d], 1) for p in positions for d in range(len(types)) if (g, p, d) in x]
            if not options:
                return infeasible_result(
                    METHOD, nowhere(problem, groups[g]) + " (with the schedule's memory)", started, "throughput"
                )
            prob += lp_sum(options) == 1
        by_gp: dict[tuple[int, int], list] = {}
        for (g, p, d), var in x.items():
            by_gp.setdefault((g, p), []).append(var)
        # y[p] = 1 exactly when position p holds a group.
        for p in positions:
            prob += lp_sum([(y[p], 1)] + [(var, -1) for (g, q, d), var in x.items() if q == p]) <= 0

        def at(g: int, p: int):
            return [(v, 1) for v in by_gp.get((g, p), [])]

        contiguity(prob, groups_obj.order_edges, n_pos, at)
        c: dict[tuple[int, int, int], Any] = {}
        # CPU cores pay communication only when devices.cpu_bandwidth is set (scale 0 otherwise).
        cpu_scale = getattr(devices, "cpu_transfer_scale", 0.0)
        for d, (name, kind, _) in enumerate(types):
            scale = devices.transfer_scale(kind) if kind is not None else cpu_scale
            for p in positions:
                members = [(g, x[g, p, d]) for g in range(n_groups) if (g, p, d) in x]
                if not members:
                    continue
                extra = [(var, fcompute[g, d]) for g, var in members]
                if kind is None and scale == 0:
                    prob += lp_sum([(var, compute[g, d]) for g, var in members] + extra) <= load
                    continue
                comm_terms = [
                    (var, graph.output_cost[u] * scale)
                    for var, u in crossing_vars(prob, crossing, group_of, x, at, p, d, c)
                ]
                compute_terms = [(var, compute[g, d]) for g, var in members]
                if devices.overlap:
                    prob += lp_sum(compute_terms + extra) <= load
                    prob += lp_sum(comm_terms + extra) <= load
                else:
                    prob += lp_sum(compute_terms + comm_terms + extra) <= load
                if kind is not None and math.isfinite(kind.memory):
                    _add_memory(
                        prob,
                        kind.memory,
                        members,
                        static,
                        act,
                        inputs,
                        out_bytes,
                        group_of,
                        x,
                        y,
                        p,
                        d,
                        n_pos,
                        schedule,
                        microbatches,
                        recompute,
                    )
        stats = {
            "schedule": schedule,
            "microbatches": microbatches,
            "optimizer_multiplier": opt_mult,
            "recompute": recompute,
            "groups": n_groups,
            "positions": n_pos,
            "variables": prob.numVariables(),
            "constraints": prob.numConstraints(),
        }
        start = None
        if start_plan is not None:
            start = contiguous_start(start_plan[0], group_of, types, x, t)
            if start is not None:
                used = len([s for s in start_plan[0].stages if s.nodes])
                start.update({y[p]: 1.0 if p < used else 0.0 for p in positions})
    except DeadlinePassed:
        stats = {"ip_skipped": "time limit reached while building the integer program"}
        if start_plan is not None:
            return _from_start(start_plan, stats, started, None)
        return make_result(
            METHOD,
            "no solution",
            started=started,
            reason="no solution found within the limits (time limit reached while building the integer program)",
            stats=stats,
        )
    outcome = solve_in_time(prob, load, solver, deadline, built_at, gap, start, stats)
    stats["solver"] = outcome.solver
    if outcome.objective is not None:
        stats["ip_objective"] = outcome.objective

    def done(status, objective=None, placement=None, **extra):
        return make_result(
            METHOD, status, started=started, objective=objective, placement=placement, stats=stats, **extra
        )

    if outcome.status == Status.INFEASIBLE:
        return done(
            Status.INFEASIBLE,
            reason=(
                f"no contiguous split fits: under {schedule} with {microbatches} microbatch(es) every way of cutting "
                f"the graph into at most {devices.accelerator_count} accelerator and {devices.cpus} CPU stages puts "
                "more weights, optimizer state and in-flight activations on some accelerator than it holds"
            ),
        )
    if outcome.status == Status.ERROR:
        return done(Status.ERROR, reason=outcome.message)
    if outcome.status == Status.NO_SOLUTION:
        if start_plan is not None:
            return _from_start(start_plan, stats, started, outcome.bound)
        return done(Status.NO_SOLUTION, bound=outcome.bound, reason="no solution found within the limits")
    placement = read_contiguous(x, t, groups, types, n_pos)
    evaluation = evaluate(problem, placement)
    recomputing = tuple(s.device for s in placement.stages) if recompute else ()
    peaks = peak_table(problem, placement, schedule, microbatches, opt_mult, recomputing, bytes_per_cost)
    over = [f"{device}: {peak:.6g} > {cap:.6g}" for device, peak, cap in peaks if peak > cap * (1 + 1e-9)]
    if not evaluation.feasible or over:  # pragma: no cover - would be a modelling bug
        broken = (list(evaluation.violations) + over)[:3]
        return done(
            Status.ERROR, placement=placement, reason="the solver's placement breaks a rule: " + "; ".join(broken)
        )
    value = plan_value(problem, placement, recompute)
    if start_plan is not None and start_plan[1] < value * (1 - 1e-12):  # never worse than the start
        return _from_start(start_plan, stats, started, outcome.bound)
    status = outcome.status
    bound = outcome.bound
    if status == Status.OPTIMAL:
        bound, gap_value = (value if bound is None else min(bound, value)), 0.0
    elif bound is not None:
        bound = min(bound, value)
        gap_value = (value - bound) / value if value > 0 else 0.0
    else:
        gap_value = None
    return done(status, value, placement, bound=bound, gap=gap_value)


#: The memory-aware DP is a warm start only on graphs with at most this many ideals (its run cannot be
#: interrupted; measured well under a second up to about 3,000 ideals and 2 million pairs).
WARM_MAX_IDEALS = 10_000


def _fits(problem: Problem, placement: Placement, memory_options) -> bool:
    """Whether ``placement`` is valid and every accelerator holds the schedule's peak (as the IP's rows)."""
    schedule, microbatches, opt_mult, recompute, bytes_per_cost = memory_options
    if not evaluate(problem, placement).feasible:
        return False
    recomputing = tuple(s.device for s in placement.stages) if recompute else ()
    peaks = peak_table(problem, placement, schedule, microbatches, opt_mult, recomputing, bytes_per_cost)
    return all(peak <= cap for _, peak, cap in peaks)


def _warm_start(
    problem: Problem, memory_options, optimizer_multiplier, deadline: Deadline
) -> tuple[Placement, float] | None:
    """The best split that fits of the memory-aware DP and the chain DP, with its value (None: none fits)."""
    from ..exact.memory_aware import solve_memory_aware
    from ..heuristics import pipedream
    from .latency_search import DP_MIN_SECONDS

    schedule, microbatches, _, recompute, bytes_per_cost = memory_options
    found: list[Placement] = []
    if deadline.left() >= DP_MIN_SECONDS:
        try:
            result = solve_memory_aware(
                problem,
                schedule,
                microbatches,
                optimizer_multiplier,
                Recompute.ALWAYS.value if recompute else Recompute.NONE.value,
                bytes_per_cost,
                max_ideals=WARM_MAX_IDEALS,
            )
            if result.ok and result.placement is not None:
                found.append(result.placement)
        except PlacementError:  # too many ideals, or a table too large: no DP start
            pass
    try:
        chain = pipedream(problem)
        if chain.ok and chain.placement is not None:
            found.append(chain.placement)
    except PlacementError:
        pass
    scored = [(p, plan_value(problem, p, recompute)) for p in found if _fits(problem, p, memory_options)]
    return min(scored, key=lambda item: item[1]) if scored else None


def _from_start(start_plan: tuple[Placement, float], stats: dict, started: float, bound: float | None) -> Result:
    """The warm start as the result ("feasible"), with the solver's bound when it has one."""
    placement, value = start_plan
    stats = dict(stats, from_start=True)
    if bound is not None and math.isfinite(bound):
        bound = min(bound, value)
        gap = (value - bound) / value if value > 0 else 0.0
    else:
        bound, gap = None, None
    return make_result(
        METHOD,
        Status.FEASIBLE,
        started=started,
        objective=value,
        placement=placement,
        stats=stats,
        bound=bound,
        gap=gap,
    )


def _add_memory(
    prob, cap, members, static, act, inputs, out_bytes, group_of, x, y, p, d, n_pos, schedule, microbatches, recompute
):
    """Peak memory of position ``p`` on accelerator type ``d`` <= ``cap`` (module docstring).

    Bytes are counted in units of ``cap`` (right-hand side 1): coefficients near 1 whatever the
    scale of the sizes (with raw byte counts HiGHS can stop at a wrong "optimum").
    """
    unit = 1.0 / cap
    weights = [(var, static[g] * unit) for g, var in members]
    activation = [(var, act[g] * unit) for g, var in members]
    if schedule == ScheduleKind.INFERENCE or (not recompute and schedule == ScheduleKind.GPIPE):
        scale = 1 if schedule == ScheduleKind.INFERENCE else microbatches
        prob += lp_sum(weights + [(var, scale * coef) for var, coef in activation]) <= 1.0
        return
    base = weights + activation if recompute else weights
    # The per-microbatch stash: A (activations), or I (stage input) with recomputation.
    if recompute:
        stash = []
        for u, targets in inputs.items():
            ins = [(x[gv, p, d], 1) for gv in targets if (gv, p, d) in x]
            if not ins:
                continue
            var = prob.add_variable(f"i_{u}_{p}_{d}", 0, 1)
            own = [(x[group_of[u], p, d], 1)] if (group_of[u], p, d) in x else []
            for term in ins:
                prob += lp_sum([(var, 1), (term[0], -1)] + own) >= 0
            stash.append((var, out_bytes[u] * unit))
        big = sum(coef for _, coef in stash)
    else:
        stash = activation
        big = sum(coef for _, coef in stash)
    big = min(big, 1.0)
    if schedule == ScheduleKind.GPIPE:
        prob += lp_sum(base + [(var, microbatches * coef) for var, coef in stash]) <= 1.0
        return
    # 1F1B: n_p = 1 + sum_{j=1}^{M-1} y[p + j]; each y[p + j] * stash linearised with big-M.
    terms = base + stash
    for j in range(1, microbatches):
        if p + j >= n_pos or not stash:
            break
        v = prob.add_variable(f"v_{p}_{j}_{d}", 0, None)
        prob += lp_sum([(v, 1)] + [(var, -coef) for var, coef in stash] + [(y[p + j], -big)]) >= -big
        terms.append((v, 1))
    prob += lp_sum(terms) <= 1.0
