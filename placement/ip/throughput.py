"""Throughput integer programs: contiguous and non-contiguous minimum max-load.

**Contiguous (``"ip"``)** - the same class of splits as the DP (:mod:`placement.exact.dp`): the groups
of :func:`placement.exact.ideals.contract` on ``D`` ordered positions whose prefixes are ideals
(:mod:`placement.ip.positions`), each position one device type, positions may stay empty.
CPU positions pay communication only when ``devices.cpu_bandwidth`` is set (scaled by
``devices.cpu_transfer_scale``; ``overlap`` applies to them as well).

**Non-contiguous (``"ip-noncontiguous"``)** - any assignment of color-class groups to devices
(``x[g, device]``), same loads, memory and support rules. Identical devices are ordered by
their first group, groups ranked by compute, largest first (symmetry breaking). Crossing indicators are tightened per edge: with
``s[u, w, i]`` = "both ends on device ``i``" (``s <= x[g(u), i]``, ``s <= x[g(w), i]``),
``c[u, i] >= x[g(u), i] - s[u, w, i]`` and ``c[u, i] >= x[g(w), i] - s[u, w, i]`` (stronger in
the relaxation than ``c >= x[g(u), i] - x[g(w), i]``). The better of the exact DP's optimum
(contiguous, so an upper bound) and a local search is the incumbent and a cut ``L <= value``.
The compute-only relaxation (transfers dropped: a multiprocessor scheduling problem that HiGHS
often proves in seconds where the full model stalls) is solved first; its bound is the cut
``L >= bound`` (it is what closes the gap on GNMT, whose loads are almost all compute).

Both are warm-started: the chain DP (``"pipedream"``) for the contiguous IP; the better of the
exact DP and a short local search for the non-contiguous one.
"""

from __future__ import annotations

import math
import time
from typing import Any

import pulp

from ..errors import PlacementError
from ..evaluate import evaluate
from ..exact.ideals import contract
from ..model import DeviceSlot, Placement, Problem, Result, Stage, Status
from .common import (
    Deadline,
    DeadlinePassed,
    TimedProblem,
    check_devices,
    check_model_size,
    check_options,
    color_groups,
    device_types,
    group_compute,
    infeasible_result,
    lp_sum,
    make_result,
    nowhere,
    skipped_outcome,
    solve_in_time,
    solve_model,
    value,
)
from .positions import (
    contiguity,
    crossing_vars,
    group_data,
    position_types,
    read_contiguous,
)


def add_load_constraints(prob, load, compute_terms, comm_terms, scale: float, overlap: bool) -> None:
    """compute + communication <= load (both <= load with ``overlap``)."""
    compute = lp_sum(compute_terms)
    comm = lp_sum((v, c * scale) for v, c in comm_terms)
    if overlap:
        prob += compute <= load
        prob += comm <= load
    else:
        prob += compute + comm <= load


def _refuse(problem: Problem, method: str, solver: str, time_limit, gap, started: float) -> Result | None:
    """Check the options (raising on bad ones); the infeasible Result when a node can run nowhere, else None."""
    check_options(solver, time_limit, gap)
    reason = check_devices(problem)
    return infeasible_result(method, reason, started, "throughput") if reason else None


def start_throughput(problem: Problem, method: str, deadline: Deadline | None = None) -> Placement | None:
    """A feasible split from a cheap method (None when it finds none, or when ``deadline`` leaves no time).

    The DP runs only with at least :data:`~placement.ip.latency_search.DP_MIN_SECONDS` left and is
    stopped at a quarter of what is left; the local search gets at most 10 s and that quarter.
    """
    deadline = deadline or Deadline()
    try:
        if method == "dp":
            from ..exact.dp import solve_dp
            from .latency_search import DP_MIN_SECONDS, DP_SHARE

            if deadline.left() < DP_MIN_SECONDS:
                return None
            share = deadline.share(DP_SHARE)
            result = solve_dp(problem, progress=(lambda done, total: share.check()) if share.limited else None)
        elif method == "local-search":
            from ..heuristics import local_search

            seconds = min(10.0, deadline.left() * 0.25)
            result = local_search(problem, seed=0, restarts=5, time_limit=max(seconds, 1e-3))
        else:
            from ..heuristics import pipedream

            result = pipedream(problem)
    except (PlacementError, DeadlinePassed):
        return None
    if not result.ok or result.placement is None or not evaluate(problem, result.placement).feasible:
        return None
    return result.placement


def solve_ip_contiguous(
    problem: Problem,
    time_limit: float | None = None,
    gap: float | None = None,
    solver: str = "highs",
    warm_start: bool = True,
) -> Result:
    """The optimal contiguous split (minimum max-load) by an integer program.

    Parameters
    ----------
    problem : Problem
        Graph and devices (several accelerator kinds, CPU cores, overlap).
    time_limit : float, optional
        Seconds in all (warm start, model, solver); on expiry the best split found is returned as "feasible".
    gap : float, optional
        Relative gap at which the solver may stop (default: prove optimality).
    solver : {"highs", "cbc"}
        HiGHS (falls back to CBC when ``highspy`` is missing) or PuLP's bundled CBC.
    warm_start : bool
        Start from the chain DP's split (``"pipedream"``).

    Returns
    -------
    Result
        Method ``"ip"``, objective kind ``"throughput"``; stages in pipeline order.
    """
    started, method = time.perf_counter(), "ip"
    if refused := _refuse(problem, method, solver, time_limit, gap, started):
        return refused
    graph, devices = problem.graph, problem.devices
    groups_obj = contract(graph)
    groups = groups_obj.members
    group_of, crossing = group_data(problem, groups)
    types = device_types(problem)
    n_pos = sum(count for _, _, count in types)
    check_model_size(method, len(groups) * n_pos * 2, f"{len(groups):,} groups x {n_pos:,} positions")
    deadline = Deadline.after(time_limit, started)
    incumbents = []
    if warm_start:
        start_placement = start_throughput(problem, "pipedream", deadline)
        if start_placement is not None:
            incumbents.append(start_placement)
    built_at = deadline.now()
    try:
        positions = range(n_pos)
        prob = TimedProblem("contiguous", deadline)
        load = prob.add_variable("L", lowBound=0)
        prob += load
        t = position_types(prob, types, positions)
        compute = {
            (g, d): group_compute(problem, groups[g], types[d][1])
            for g in range(len(groups))
            for d in range(len(types))
        }
        memory = [sum(graph.node_by_id[n].size for n in members) for members in groups]
        x = {}
        for g in range(len(groups)):
            for p in positions:
                for d in range(len(types)):
                    if math.isfinite(compute[g, d]):
                        kind = types[d][1]
                        if kind is not None and memory[g] > kind.memory:
                            continue
                        x[g, p, d] = prob.add_variable(f"x_{g}_{p}_{d}", 0, 1, pulp.LpBinary)
                        prob += x[g, p, d] <= t[p, d]
            options = [(x[g, p, d], 1) for p in positions for d in range(len(types)) if (g, p, d) in x]
            if not options:
                return infeasible_result(method, nowhere(problem, groups[g]), started, "throughput")
            prob += lp_sum(options) == 1
        by_gp: dict[tuple[int, int], list] = {}
        for (g, p, d), var in x.items():
            by_gp.setdefault((g, p), []).append(var)

        def at(g: int, p: int):
            return [(v, 1) for v in by_gp.get((g, p), [])]

        contiguity(prob, groups_obj.order_edges, n_pos, at)
        c: dict = {}
        for d, (name, kind, _) in enumerate(types):
            scale = devices.transfer_scale(kind) if kind is not None else devices.cpu_transfer_scale
            for p in positions:
                members = [(g, x[g, p, d]) for g in range(len(groups)) if (g, p, d) in x]
                if not members:
                    continue
                if kind is None and scale == 0:  # CPU cores pay no communication (cpu_bandwidth None)
                    prob += lp_sum((var, compute[g, d]) for g, var in members) <= load
                    continue
                comm_terms = [
                    (var, graph.output_cost[u]) for var, u in crossing_vars(prob, crossing, group_of, x, at, p, d, c)
                ]
                add_load_constraints(
                    prob, load, [(var, compute[g, d]) for g, var in members], comm_terms, scale, devices.overlap
                )
                if kind is not None and math.isfinite(
                    kind.memory
                ):  # in units of the cap (byte-sized rows mislead HiGHS)
                    prob += lp_sum((var, memory[g] / kind.memory) for g, var in members) <= 1.0
        stats = {
            "groups": len(groups),
            "positions": n_pos,
            "variables": prob.numVariables(),
            "constraints": prob.numConstraints(),
        }
        start = contiguous_start(incumbents[0], group_of, types, x, t) if incumbents else None
    except DeadlinePassed:
        stats = {"ip_skipped": "time limit reached while building the integer program"}
        return make_result(method, skipped_outcome(solver), problem, None, started, "throughput", stats, incumbents)
    outcome = solve_in_time(prob, load, solver, deadline, built_at, gap, start, stats)
    placement = read_contiguous(x, t, groups, types, n_pos) if outcome.has_solution else None
    extra = None
    if incumbents:  # contiguous splits are placements: the pigeonhole bound holds for them too
        extra = pigeonhole_bound(problem, color_groups(graph), evaluate(problem, incumbents[0]).max_load)
    return make_result(method, outcome, problem, placement, started, "throughput", stats, incumbents, extra_bound=extra)


def contiguous_start(placement: Placement, group_of, types, x, t) -> dict | None:
    """Values of the binaries of the contiguous model for ``placement`` (a partial MIP start)."""
    type_index = {name: d for d, (name, _, _) in enumerate(types)}
    n_pos = sum(count for _, _, count in types)
    stages = [s for s in placement.stages if s.nodes]
    remaining = {d: count for d, (_, _, count) in enumerate(types)}
    assigned = []
    for stage in stages:
        d = type_index[stage.device.kind]
        remaining[d] -= 1
        assigned.append(d)
    if any(left < 0 for left in remaining.values()):
        return None
    pos_type = assigned + [d for d, left in remaining.items() for _ in range(left)]
    start: dict = {t[p, d]: 1.0 if pos_type[p] == d else 0.0 for p in range(n_pos) for d in range(len(types))}
    start.update({var: 0.0 for var in x.values()})
    for p, stage in enumerate(stages):
        for g in {group_of[n] for n in stage.nodes}:
            if (g, p, pos_type[p]) not in x:
                return None
            start[x[g, p, pos_type[p]]] = 1.0
    return start


def solve_ip_noncontiguous(
    problem: Problem,
    time_limit: float | None = None,
    gap: float | None = None,
    solver: str = "highs",
    warm_start: bool = True,
) -> Result:
    """The optimal (not necessarily contiguous) placement minimising max-load, by an integer program.

    Options as :func:`solve_ip_contiguous`.

    Returns
    -------
    Result
        Method ``"ip-noncontiguous"``, objective kind ``"throughput"``; stages ordered by device.

    Notes
    -----
    Color-class groups are assigned to devices freely; identical devices are ordered by their
    first group in the order of compute, largest first (symmetry breaking). The warm start is the
    best of the exact DP's split (so the result is never worse than the contiguous optimum when
    the DP runs; else the chain DP's), a short local search (5 restarts, <= 10 s) and the split
    of the compute-only relaxation (:func:`compute_bound`, a third of the time left), whose
    bound is a cut ``L >= bound`` and a floor of the reported bound.
    """
    started, method = time.perf_counter(), "ip-noncontiguous"
    if refused := _refuse(problem, method, solver, time_limit, gap, started):
        return refused
    deadline = Deadline.after(time_limit, started)
    graph, devices = problem.graph, problem.devices
    groups = color_groups(graph)
    group_of, crossing = group_data(problem, groups)
    n_devices = devices.accelerator_count + devices.cpus
    check_model_size(method, len(groups) * n_devices * 2, f"{len(groups):,} groups x {n_devices:,} devices")
    slots = devices.slots()
    kinds = {kind.name: kind for kind in devices.accelerators}
    incumbents: list[Placement] = []
    upper = math.inf
    if warm_start:
        starts = [
            start_throughput(problem, "dp", deadline) or start_throughput(problem, "pipedream"),
            start_throughput(problem, "local-search", deadline),
        ]
        candidates = [p for p in starts if p is not None]
        if candidates:
            best = min(candidates, key=lambda p: evaluate(problem, p).max_load)
            incumbents.append(_canonical(best, group_of, _symmetry_ranks(problem, groups, slots, kinds)))
            # A hair above the incumbent's value, for float noise: no optimum is worse.
            upper = evaluate(problem, best).max_load * (1 + 1e-9) + 1e-12
    memory = [sum(graph.node_by_id[n].size for n in members) for members in groups]
    rank = _symmetry_ranks(problem, groups, slots, kinds)
    # The compute-only relaxation, its own (easier) integer program: a lower bound and a cut here,
    # given a third of the time left.
    left = deadline.left()
    budget = COMPUTE_BOUND_SECONDS if not deadline.limited else left / 3
    lower, relaxed = compute_bound(problem, groups, slots, memory, rank, upper, solver, budget)
    if warm_start and relaxed is not None and evaluate(problem, relaxed).max_load < upper:  # a better start
        incumbents.insert(0, _canonical(relaxed, group_of, rank))
        upper = evaluate(problem, relaxed).max_load * (1 + 1e-9) + 1e-12
    built_at = deadline.now()
    try:
        built = _assignment_model("noncontiguous", problem, groups, slots, memory, rank, upper, deadline)
        if isinstance(built, str):
            return infeasible_result(method, built, started, "throughput")
        prob, load, x, compute = built
        if lower is not None:
            prob += load >= lower
        # Per edge between groups and device: s = both ends there (linking "kept" edges to the x's).
        same: dict[tuple[int, int], dict[int, Any]] = {}
        for u, targets in crossing.items():
            gu = group_of[u]
            for w in targets:
                gw = group_of[w]
                if (u, w) in same:
                    continue
                both = {}
                for i in range(len(slots)):
                    if (gu, i) in x and (gw, i) in x:
                        var = prob.add_variable(f"s_{u}_{w}_{i}", 0, 1)
                        prob += var - x[gu, i] <= 0
                        prob += var - x[gw, i] <= 0
                        both[i] = var
                same[u, w] = both
        c = {}
        for i, slot in enumerate(slots):
            kind = kinds.get(slot.kind)
            members = [(g, x[g, i]) for g in range(len(groups)) if (g, i) in x]
            if not members:
                continue
            scale = devices.transfer_scale(kind) if kind is not None else devices.cpu_transfer_scale
            if kind is None and scale == 0:  # CPU cores pay no communication (cpu_bandwidth None)
                prob += lp_sum((var, compute[g, i]) for g, var in members) <= load
                continue
            comm_terms = []
            for u, targets in crossing.items():
                gu = group_of[u]
                var = prob.add_variable(f"c_{u}_{i}", 0, 1)
                c[u, i] = var
                comm_terms.append((var, graph.output_cost[u]))
                for w in targets:
                    gw = group_of[w]
                    kept = same[u, w].get(i)
                    # c >= x[gu, i] - s and c >= x[gw, i] - s: stronger than c >= x[gu, i] - x[gw, i].
                    if (gu, i) in x:
                        prob += lp_sum([(var, 1), (x[gu, i], -1)] + ([(kept, 1)] if kept is not None else [])) >= 0
                    if (gw, i) in x:
                        prob += lp_sum([(var, 1), (x[gw, i], -1)] + ([(kept, 1)] if kept is not None else [])) >= 0
            add_load_constraints(
                prob, load, [(var, compute[g, i]) for g, var in members], comm_terms, scale, devices.overlap
            )
        stats = {"groups": len(groups), "variables": prob.numVariables(), "constraints": prob.numConstraints()}
        start = _noncontiguous_start(incumbents[0], group_of, slots, x) if incumbents else None
    except DeadlinePassed:
        stats = {"ip_skipped": "time limit reached while building the integer program"}
        return make_result(method, skipped_outcome(solver), problem, None, started, "throughput", stats, incumbents)
    outcome = solve_in_time(prob, load, solver, deadline, built_at, gap, start, stats)
    placement = None
    if outcome.has_solution:
        assignment = {n: slots[i] for (g, i), var in x.items() if value(var) > 0.5 for n in groups[g]}
        placement = Placement.from_assignment(assignment, order=slots)
    extra = pigeonhole_bound(problem, groups, upper) if math.isfinite(upper) else None
    if lower is not None:
        stats["compute_bound"] = lower
        extra = lower if extra is None else max(extra, lower)
    return make_result(method, outcome, problem, placement, started, "throughput", stats, incumbents, extra_bound=extra)


#: Seconds for the compute-only relaxation when the caller sets no time limit.
COMPUTE_BOUND_SECONDS = 30.0
#: Relative gap at which the compute-only relaxation stops (its bound only needs to be close).
COMPUTE_BOUND_GAP = 1e-4


def _assignment_model(
    name: str, problem: Problem, groups, slots, memory, rank, upper: float, deadline: Deadline | None = None
):
    """The assignment part shared by the non-contiguous IP and its compute-only relaxation.

    ``x[g, i]`` = group ``g`` on slot ``i`` (only where supported, within memory, and with compute
    at most ``upper``), each group once, memory rows, symmetry among identical devices, the cut
    ``L <= upper`` and the cardinality cuts. Returns ``(prob, L, x, compute)``, or the reason
    (a string) when a group fits no device.
    """
    kinds = {kind.name: kind for kind in problem.devices.accelerators}
    prob = TimedProblem(name, deadline)
    load = prob.add_variable("L", lowBound=0)
    prob += load
    if math.isfinite(upper):
        prob += load <= upper  # the incumbent (the DP optimum or better) as a cut
    compute = {}
    x = {}
    for g in range(len(groups)):
        for i, slot in enumerate(slots):
            kind = kinds.get(slot.kind)
            compute[g, i] = group_compute(problem, groups[g], kind)
            # A group whose compute alone exceeds the incumbent never sits there in a better placement.
            if not math.isfinite(compute[g, i]) or compute[g, i] > upper:
                continue
            if kind is not None and memory[g] > kind.memory:
                continue
            x[g, i] = prob.add_variable(f"x_{g}_{i}", 0, 1, pulp.LpBinary)
        options = [(x[g, i], 1) for i in range(len(slots)) if (g, i) in x]
        if not options:
            return nowhere(problem, groups[g])
        prob += lp_sum(options) == 1
    # Symmetry: among devices of one kind, device j may take group g only if device j-1 took a group
    # ranked before g, groups ranked by compute on that kind, largest first (so the largest group sits
    # on the kind's first device: much stronger than ranking by index).
    for j in range(1, len(slots)):
        if slots[j].kind != slots[j - 1].kind:
            continue
        order = rank[slots[j].kind]
        for r, g in enumerate(order):
            if (g, j) in x:
                prob += lp_sum([(x[g, j], 1)] + [(x[h, j - 1], -1) for h in order[:r] if (h, j - 1) in x]) <= 0
    for i, slot in enumerate(slots):
        kind = kinds.get(slot.kind)
        if kind is not None and math.isfinite(kind.memory):  # in units of the cap (byte-sized rows mislead HiGHS)
            members = [(x[g, i], memory[g] / kind.memory) for g in range(len(groups)) if (g, i) in x]
            if members:
                prob += lp_sum(members) <= 1.0
    if math.isfinite(upper):
        _cardinality_cuts(prob, x, compute, len(groups), len(slots), upper)
    return prob, load, x, compute


def compute_bound(
    problem: Problem, groups, slots, memory, rank, upper: float, solver: str, seconds: float
) -> tuple[float | None, Placement | None]:
    """A lower bound on the max-load from the compute-only relaxation, and its best split.

    The relaxation drops every transfer from the loads (a load is compute plus communication,
    or the larger of the two with ``overlap``: at least its compute) and keeps everything else,
    so its optimum, and any dual bound of it, bounds the max-load of every placement no worse
    than ``upper``. Without the transfer variables it is a multiprocessor scheduling problem
    that HiGHS often proves within seconds where the full model stalls. Returns ``(None, None)``
    when it gives nothing (no bound, or infeasible: the full model then decides).
    """
    deadline = Deadline.after(seconds)
    try:
        built = _assignment_model("compute_only", problem, groups, slots, memory, rank, upper, deadline)
    except DeadlinePassed:
        return None, None
    if isinstance(built, str):
        return None, None
    prob, load, x, compute = built
    for i in range(len(slots)):
        members = [(x[g, i], compute[g, i]) for g in range(len(groups)) if (g, i) in x]
        if members:
            prob += lp_sum(members) <= load
    outcome = solve_model(prob, load, solver, deadline.solver_seconds(), COMPUTE_BOUND_GAP, None, deadline)
    if outcome.solver == "highs":
        lower = outcome.bound  # HiGHS' dual bound (at most its objective)
    elif outcome.status == Status.OPTIMAL and outcome.objective is not None:
        # CBC reports no bound; "optimal" means within COMPUTE_BOUND_GAP of the objective.
        lower = outcome.objective * (1 - COMPUTE_BOUND_GAP)
    else:
        lower = None
    placement = None
    if outcome.has_solution:
        assignment = {n: slots[i] for (g, i), var in x.items() if value(var) > 0.5 for n in groups[g]}
        placement = Placement.from_assignment(assignment, order=slots)
        if not evaluate(problem, placement).feasible:  # pragma: no cover - within tolerance only
            placement = None
    if lower is None or not math.isfinite(lower) or lower <= 0:
        return None, placement
    return lower, placement


def pigeonhole_bound(problem: Problem, groups, upper: float) -> float:
    """A lower bound on the max-load of any placement no worse than ``upper`` (pigeonhole on the accelerators).

    Groups that cannot go on a CPU core in such a placement (their CPU compute exceeds ``upper``,
    or there are no cores) all sit on the ``m`` accelerators, so one accelerator holds at least
    ``ceil(|B| / m)`` of any such set ``B``: its load is at least the sum of that many smallest
    computes of ``B`` on its kind. The bound is the best over the sets ``B`` of groups with compute
    at least a threshold (every distinct threshold), and never below the largest single compute.
    Communication only adds to a load (or is overlapped with it), so it is left out.
    """
    devices = problem.devices
    kinds = [kind for kind in devices.accelerators if kind.count > 0]
    m = sum(kind.count for kind in kinds)
    if m == 0:
        return 0.0
    forced = []
    best_single = 0.0
    for members in groups:
        cpu_ok = devices.cpus > 0 and group_compute(problem, members, None) <= upper
        on = [group_compute(problem, members, kind) for kind in kinds]
        cheapest = min(on + ([group_compute(problem, members, None)] if cpu_ok else []))
        best_single = max(best_single, cheapest if math.isfinite(cheapest) else 0.0)
        if not cpu_ok and math.isfinite(min(on)):
            forced.append(on)
    bound = best_single
    if not forced:
        return bound
    thresholds = sorted({min(on) for on in forced})
    for theta in thresholds:
        chosen = [on for on in forced if min(on) >= theta]
        k = -(-len(chosen) // m)  # ceil
        if k < 2:
            break
        # The accelerator holding k of them is of some kind: the bound is the least over kinds.
        per_kind = []
        for t in range(len(kinds)):
            values = sorted(on[t] for on in chosen)
            per_kind.append(sum(values[:k]) if len(values) >= k and math.isfinite(values[k - 1]) else math.inf)
        value = min(per_kind)
        if math.isfinite(value):
            bound = max(bound, value)
    return bound


def _cardinality_cuts(prob, x, compute, n_groups: int, n_slots: int, upper: float) -> None:
    """At most k groups of compute >= theta on one device, k the most whose smallest computes fit under ``upper``.

    Valid under the cut ``L <= upper`` (a device's load is at least its compute); they cut the
    fractional spreading of the relaxation that the load rows alone allow.
    """
    for i in range(n_slots):
        values = sorted(compute[g, i] for g in range(n_groups) if (g, i) in x and compute[g, i] > 0)
        if len(values) < 2:
            continue
        thresholds = sorted({values[int(len(values) * f)] for f in (0.2, 0.4, 0.6, 0.8, 0.9)})
        for theta in thresholds:
            members = [g for g in range(n_groups) if (g, i) in x and compute[g, i] >= theta]
            smallest = sorted(compute[g, i] for g in members)
            total, k = 0.0, 0
            for c in smallest:
                if total + c > upper:
                    break
                total, k = total + c, k + 1
            if k < len(members):
                prob += lp_sum((x[g, i], 1) for g in members) <= k


def _symmetry_ranks(problem: Problem, groups, slots, kinds) -> dict[str, list[int]]:
    """Per device kind, the groups in symmetry-breaking order: compute on that kind descending, then index."""
    out = {}
    for slot in slots:
        if slot.kind not in out:
            kind = kinds.get(slot.kind)
            cost = [group_compute(problem, members, kind) for members in groups]
            # inf (unsupported) sorts first; such groups have no variable on this kind and are skipped.
            out[slot.kind] = sorted(range(len(groups)), key=lambda g: (-cost[g], g))  # cost is used at once
    return out


def _canonical(placement: Placement, group_of, rank: dict[str, list[int]]) -> Placement:
    """Renumber devices of each kind by their first group in ``rank`` (the order the symmetry constraints demand)."""
    position = {kind: {g: r for r, g in enumerate(order)} for kind, order in rank.items()}
    by_kind: dict[str, list[tuple[int, Stage]]] = {}
    for stage in placement.stages:
        if stage.nodes:
            first = min(position[stage.device.kind][group_of[n]] for n in stage.nodes)
            by_kind.setdefault(stage.device.kind, []).append((first, stage))
    stages = []
    for kind, items in by_kind.items():
        for index, (_, stage) in enumerate(sorted(items, key=lambda item: item[0])):
            stages.append(Stage(DeviceSlot(kind, index), stage.nodes))
    return Placement(tuple(stages))


def _noncontiguous_start(placement: Placement, group_of, slots, x) -> dict | None:
    """Values of the x binaries for ``placement`` (a partial MIP start)."""
    index = {slot: i for i, slot in enumerate(slots)}
    start = {var: 0.0 for var in x.values()}
    for stage in placement.stages:
        i = index.get(stage.device)
        if i is None:
            return None
        for g in {group_of[n] for n in stage.nodes}:
            if (g, i) not in x:
                return None
            start[x[g, i]] = 1.0
    return start
