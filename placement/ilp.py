"""Integer programs: contiguous and non-contiguous max-load, and single-sample latency.

Three mixed-integer programs (MIPs), built with PuLP and solved with HiGHS (in process,
through ``highspy``) or, when HiGHS is missing or ``solver="cbc"``, the CBC bundled with PuLP.
No PuLP object leaves this module: every function returns a plain
:class:`~placement.model.Result` whose objective is recomputed by the independent evaluator
(:mod:`placement.evaluate`) on the returned placement.

**Contiguous (``"ip"``)** - the same class of splits as the DP (:mod:`placement.dp`): the
groups of :func:`placement.ideals.contract` are assigned to ``D`` positions (``D`` = all
devices), each position gets one device type (an accelerator kind or CPU), and for every
order-graph edge ``a -> b`` and every position ``p`` the prefix "placed at positions <= p"
of ``a`` is at least that of ``b`` (the prefixes are a chain of ideals). Positions may stay
empty, so every order of device types is allowed. Variables ``x[g, p, d]`` (group ``g`` at
position ``p`` on type ``d``), ``t[p, d]`` (position ``p`` has type ``d``) and
``c[u, p, k]`` (node ``u`` has an edge crossing the boundary of position ``p``, which is
of kind ``k``: linearised as ``c >= x[gu, p, k] - X[gw, p]`` and the reverse, ``X`` the
position's indicator of all types). CPU positions pay no communication unless
``devices.cpu_bandwidth`` is set; then they get the same ``c`` variables, scaled by
``devices.cpu_transfer_scale`` (and ``overlap`` applies to them as well).

**Non-contiguous (``"ip-noncontiguous"``)** - any assignment of colour-class groups to
devices (``x[g, device]``), same loads (CPU communication included when
``devices.cpu_bandwidth`` is set), memory and support rules.

**Latency (``"latency-ip"``)** - every accelerator runs up to ``q`` calls (subgraphs) one after
another; CPU nodes run on unbounded cores. Times: a call starts after its outside inputs and
the previous call on its device; it lasts incoming + outgoing transfers + compute; a node's
finish time is its call's end (or, on CPU, its start + CPU latency). Big-M constants come from
the starting solution's latency. When the graph has edges of zero cost, integral "ranks"
(strictly increasing along edges between different units) rule out zero-duration cycles
that the times alone would allow. ``devices.cpu_bandwidth`` does not enter this model, as it
does not enter the evaluator's latency (:mod:`placement.evaluate`).

Solutions are warm-started (option ``warm_start``) from a cheap method: the chain DP
(``"pipedream"``) for the contiguous IP, the better of the exact DP and a short local search
for the non-contiguous IP and the best of
the greedy and DP splits for the latency IP, so a time-limited run returns at least as good a
placement as those.

Statuses: ``"optimal"`` only when the solver proves it (``sol_status == 1`` and a relative gap
<= 1e-6); ``"feasible"`` with ``bound`` and ``gap`` when stopped with an incumbent;
``"no solution"`` without one; ``"infeasible"`` (with ``reason``) when proven.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np
import pulp

from .errors import PlacementError
from .evaluate import evaluate
from .ideals import contract
from .model import CPU_KIND, DeviceSlot, Graph, Placement, Problem, Result, Stage

#: Relative gap under which a solver's "optimal" is reported as proven.
PROVEN_GAP = 1e-6
#: Gap given to the solver when the caller gives none (HiGHS' own default, 1e-4, is too coarse).
DEFAULT_GAP = 1e-7


# ----------------------------------------------------------------------------- groups

def colour_groups(graph: Graph) -> tuple[tuple[int, ...], ...]:
    """Nodes that must share a device (colour classes; singletons otherwise), by first topological position."""
    return graph.colour_units


# ----------------------------------------------------------------------------- solving

@dataclass(frozen=True)
class _Outcome:
    """What a solve gave back, in plain values."""

    kind: str  # "optimal", "feasible", "infeasible", "no solution", "error"
    values: dict  # variable name -> value (only with an incumbent)
    objective: float | None
    bound: float | None
    gap: float | None
    solver: str
    message: str = ""


def _highs_available() -> bool:
    try:
        return bool(pulp.HiGHS(msg=False).available())
    except Exception:  # pragma: no cover - depends on the installation
        return False


class _HiGHSWithStart(pulp.HiGHS):
    """PuLP's in-process HiGHS, plus a MIP start and a read-back of the dual bound."""

    def __init__(self, start: Mapping[str, float] | None = None, report: dict | None = None, **kwargs: Any):
        super().__init__(**kwargs)
        self._start = dict(start or {})
        self._report = report if report is not None else {}

    def callSolver(self, lp):  # noqa: N802 - PuLP's name
        model = lp.solverModel
        if self._start:
            index, value = [], []
            for var in lp.variables():
                if var.name in self._start:
                    index.append(var.index)
                    value.append(float(self._start[var.name]))
            if index:
                model.setSolution(len(index), np.asarray(index, dtype=np.int32), np.asarray(value, dtype=np.float64))
        model.run()
        info = model.getInfo()
        self._report["dual_bound"] = float(info.mip_dual_bound)
        self._report["mip_gap"] = float(info.mip_gap)
        self._report["nodes"] = int(info.mip_node_count)


def _solve_model(prob: pulp.LpProblem, objective_var, solver: str, time_limit: float | None, gap: float | None,
                 start: Mapping[str, float] | None, sense_min: bool = True) -> _Outcome:
    """Solve ``prob`` and translate the outcome into plain values (see the module docstring for statuses)."""
    if solver not in ("highs", "cbc"):
        raise PlacementError(f"unknown solver {solver!r}; choose 'highs' or 'cbc'")
    if time_limit is not None and (not isinstance(time_limit, (int, float)) or time_limit <= 0):
        raise PlacementError(f"time limit must be a positive number of seconds (got {time_limit!r})")
    if gap is not None and (not isinstance(gap, (int, float)) or not 0 <= gap < 1):
        raise PlacementError(f"gap must be a fraction in [0, 1) (got {gap!r})")
    rel_gap = DEFAULT_GAP if gap is None else float(gap)
    report: dict = {}
    if solver == "highs" and not _highs_available():
        solver = "cbc"
    if solver == "highs":
        engine = _HiGHSWithStart(start=start, report=report, msg=False, timeLimit=time_limit, gapRel=rel_gap,
                                 gapAbs=1e-9)
    else:
        for var in prob.variables():
            if start and var.name in start:
                var.setInitialValue(start[var.name])
        engine = pulp.PULP_CBC_CMD(msg=False, timeLimit=time_limit, gapRel=rel_gap, warmStart=bool(start))
    try:
        prob.solve(engine)
    except pulp.PulpSolverError as exc:
        return _Outcome("error", {}, None, None, None, solver, f"solver failed: {exc}")
    status, sol_status = prob.status, prob.sol_status
    if status == pulp.LpStatusInfeasible:
        return _Outcome("infeasible", {}, None, None, None, solver)
    if status == pulp.LpStatusUnbounded:
        return _Outcome("error", {}, None, None, None, solver, "the model is unbounded (a bug)")
    if sol_status not in (pulp.LpSolutionOptimal, pulp.LpSolutionIntegerFeasible):
        bound = report.get("dual_bound")
        bound = bound if bound is not None and math.isfinite(bound) else None
        return _Outcome("no solution", {}, None, bound, None, solver)
    values = {var.name: var.varValue for var in prob.variables()}
    value = float(objective_var.varValue) if objective_var.varValue is not None else None
    bound = report.get("dual_bound")
    if bound is not None and not math.isfinite(bound):
        bound = None
    if solver == "cbc":
        bound = value if sol_status == pulp.LpSolutionOptimal else None
    kind = "optimal" if sol_status == pulp.LpSolutionOptimal else "feasible"
    if bound is not None and value is not None:
        bound = min(bound, value)
        gap_value = (value - bound) / abs(value) if value else 0.0
        if gap_value > PROVEN_GAP and value - bound > 1e-9:
            kind = "feasible"
    else:
        gap_value = 0.0 if kind == "optimal" else None
    return _Outcome(kind, values, value, bound, gap_value, solver)


def _value(values: Mapping[str, float], name: str) -> float:
    v = values.get(name)
    return 0.0 if v is None else float(v)


def _check_devices(problem: Problem) -> str | None:
    """A reason when no placement can exist for trivial reasons (a node with nowhere to run)."""
    devices = problem.devices
    if devices.cpus == 0:
        for node in problem.graph.nodes:
            if not any(kind.count > 0 and node.runs_on(kind) for kind in devices.accelerators):
                return f"node {node.label} cannot run on any accelerator and there are no CPU cores"
    return None


def _nowhere(problem: Problem, members: Sequence[int]) -> str:
    labels = ", ".join(problem.graph.node_by_id[n].label for n in members[:5])
    more = f" (and {len(members) - 5} more)" if len(members) > 5 else ""
    return (f"nodes {labels}{more} (which must share a device) fit no device: unsupported on every accelerator kind "
            "or larger than its memory, and there are no CPU cores")


def _lp_sum(pairs) -> pulp.LpAffineExpression:
    return pulp.LpAffineExpression([(var, coef) for var, coef in pairs if coef != 0])


def _result(method: str, outcome: _Outcome, problem: Problem, placement: Placement | None, started: float,
            objective_kind: str, stats: dict, start_placement: Placement | None = None,
            reason: str | None = None) -> Result:
    """Build the Result, taking the objective from the evaluator."""
    stats = dict(stats, solver=outcome.solver)
    if outcome.objective is not None:
        stats["ip_objective"] = outcome.objective
    seconds = time.perf_counter() - started
    if outcome.kind == "infeasible":
        return Result("infeasible", method, None, None, seconds, objective_kind,
                      reason=reason or "the integer program is infeasible: no placement satisfies the memory, "
                                       "support and colour rules with these devices", stats=tuple(stats.items()))
    if outcome.kind == "error":
        return Result("error", method, None, None, seconds, objective_kind, reason=outcome.message,
                      stats=tuple(stats.items()))
    candidate = placement if outcome.kind in ("optimal", "feasible") else None
    if candidate is None and start_placement is not None:
        candidate = start_placement
        stats["from_start"] = True
    if candidate is None:
        return Result("no solution", method, None, None, seconds, objective_kind, bound=outcome.bound,
                      reason="no solution found within the limits", stats=tuple(stats.items()))
    evaluation = evaluate(problem, candidate)

    def value_of(ev):
        return ev.max_load if objective_kind == "throughput" else ev.latency

    if start_placement is not None and candidate is not start_placement:
        # Never return worse than the start (a solver may reject a start on tolerances).
        start_evaluation = evaluate(problem, start_placement)
        if start_evaluation.feasible and (value_of(start_evaluation) < value_of(evaluation) * (1 - 1e-12)
                                          or not math.isfinite(value_of(evaluation))):
            candidate, evaluation = start_placement, start_evaluation
            stats["from_start"] = True
    if not evaluation.feasible:  # pragma: no cover - would be a modelling bug
        return Result("error", method, None, candidate, seconds, objective_kind,
                      reason="the solver's placement breaks a rule: " + "; ".join(evaluation.violations[:3]),
                      stats=tuple(stats.items()))
    value = value_of(evaluation)
    if not math.isfinite(value):  # pragma: no cover - would be a modelling bug
        return Result("error", method, None, None, seconds, objective_kind,
                      reason="the solver's placement has no finite value (its calls wait for each other)",
                      stats=tuple(stats.items()))
    status = outcome.kind if candidate is placement else "feasible"
    bound = outcome.bound
    if bound is not None:
        bound = min(bound, value)
    if status == "optimal":
        bound, gap = (value if bound is None else bound), 0.0
    else:
        gap = (value - bound) / value if bound is not None and value > 0 else (0.0 if bound is not None else None)
    return Result(status, method, value, candidate, seconds, objective_kind, bound=bound, gap=gap,
                  stats=tuple(stats.items()))


def _infeasible_result(method: str, reason: str, started: float, objective_kind: str) -> Result:
    return Result("infeasible", method, None, None, time.perf_counter() - started, objective_kind, reason=reason)


# ----------------------------------------------------------------------------- throughput models

def _types(problem: Problem) -> list[tuple[str, Any, int]]:
    """Device types with a positive count: (name, AcceleratorKind or None for CPU, count)."""
    out = [(kind.name, kind, kind.count) for kind in problem.devices.accelerators if kind.count > 0]
    if problem.devices.cpus > 0:
        out.append((CPU_KIND, None, problem.devices.cpus))
    return out


def _group_data(problem: Problem, groups: Sequence[Sequence[int]]):
    graph = problem.graph
    group_of = {n: g for g, members in enumerate(groups) for n in members}
    # Nodes whose output crosses between groups, and the inter-group edges they own.
    crossing: dict[int, list[int]] = {}
    for edge in graph.edges:
        if group_of[edge.source] != group_of[edge.target] and graph.output_cost[edge.source] > 0:
            crossing.setdefault(edge.source, []).append(edge.target)
    return group_of, crossing


def _group_compute(problem: Problem, members: Sequence[int], kind) -> float:
    graph = problem.graph
    if kind is None:
        return sum(graph.node_by_id[n].cpu_latency for n in members)
    if not all(graph.node_by_id[n].runs_on(kind) for n in members):
        return math.inf
    return sum(graph.node_by_id[n].latency_on(kind) for n in members)


def _add_load_constraints(prob, load, compute_terms, comm_terms, scale, overlap):
    compute = _lp_sum(compute_terms)
    comm = _lp_sum((v, c * scale) for v, c in comm_terms)
    if overlap:
        prob += compute <= load
        prob += comm <= load
    else:
        prob += compute + comm <= load


def _crossing_nodes(graph: Graph, nodes: set[int]) -> set[int]:
    counted = set()
    for edge in graph.edges:
        if (edge.source in nodes) != (edge.target in nodes):
            counted.add(edge.source)
    return counted


def _position_types(prob, types, positions) -> dict:
    """Binary t[p, d]: position p is a device of type d; each position one type, each type its count."""
    t = {}
    for p in positions:
        for d in range(len(types)):
            t[p, d] = prob.add_variable(f"t_{p}_{d}", 0, 1, pulp.LpBinary)
        prob += _lp_sum((t[p, d], 1) for d in range(len(types))) == 1
    for d, (_, _, count) in enumerate(types):
        prob += _lp_sum((t[p, d], 1) for p in positions) == count
    return t


def _contiguity(prob, order_edges, n_pos: int, at) -> None:
    """Prefixes of positions form a chain of ideals: for an order edge a -> b, b is never before a."""
    for a, b in order_edges:
        for p in range(n_pos - 1):
            terms = [(v, 1) for q in range(p + 1) for v, _ in at(a, q)] + [(v, -1) for q in range(p + 1)
                                                                              for v, _ in at(b, q)]
            prob += _lp_sum(terms) >= 0


def _crossing_vars(prob, crossing, group_of, x, at, p: int, d: int, c: dict) -> list:
    """c[u, p, d] >= 1 when node u's output crosses the boundary of position p (type d); returns (var, u)."""
    out = []
    for u, targets in crossing.items():
        gu = group_of[u]
        var = prob.add_variable(f"c_{u}_{p}_{d}", 0, 1)
        c[u, p, d] = var
        out.append((var, u))
        for w in targets:
            gw = group_of[w]
            if (gu, p, d) in x:
                prob += _lp_sum([(var, 1), (x[gu, p, d], -1)] + at(gw, p)) >= 0
            if (gw, p, d) in x:
                prob += _lp_sum([(var, 1), (x[gw, p, d], -1)] + at(gu, p)) >= 0
    return out


#: Largest integer program built (binary variables, estimated before building): PuLP keeps each
#: variable as a Python object of about 1 KB, so this bounds the model at a few hundred MB.
MAX_IP_VARIABLES = 400_000
#: Most calls (subgraphs run one after another) per accelerator in the latency IP.
MAX_SUBGRAPHS_PER_ACCELERATOR = 64


def _check_model_size(method: str, variables: int, what: str) -> None:
    """Refuse (one line, naming the limit) an integer program that would not fit in memory."""
    if variables > MAX_IP_VARIABLES:
        raise PlacementError(
            f"{method}: the integer program would need about {variables:,} binary variables ({what}), over the "
            f"{MAX_IP_VARIABLES:,} limit: use fewer devices or coarsen the graph")


def solve_ip_contiguous(problem: Problem, time_limit: float | None = None, gap: float | None = None,
                        solver: str = "highs", warm_start: bool = True, **_ignored: Any) -> Result:
    """The optimal contiguous split (minimum max-load) by an integer program.

    Parameters
    ----------
    problem : Problem
        Graph and devices (several accelerator kinds, CPU cores, overlap).
    time_limit : float, optional
        Seconds for the solver; on expiry the best split found is returned as "feasible".
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
    started = time.perf_counter()
    method = "ip"
    reason = _check_devices(problem)
    if reason:
        return _infeasible_result(method, reason, started, "throughput")
    graph, devices = problem.graph, problem.devices
    groups_obj = contract(graph)
    groups = groups_obj.members
    group_of, crossing = _group_data(problem, groups)
    types = _types(problem)
    n_pos = sum(count for _, _, count in types)
    _check_model_size(method, len(groups) * n_pos * 2, f"{len(groups):,} groups x {n_pos:,} positions")
    positions = range(n_pos)
    prob = pulp.LpProblem("contiguous", pulp.LpMinimize)
    load = prob.add_variable("L", lowBound=0)
    prob += load
    t = _position_types(prob, types, positions)
    compute = {(g, d): _group_compute(problem, groups[g], types[d][1]) for g in range(len(groups))
               for d in range(len(types))}
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
            return _infeasible_result(method, _nowhere(problem, groups[g]), started, "throughput")
        prob += _lp_sum(options) == 1
    by_gp: dict[tuple[int, int], list] = {}
    for (g, p, d), var in x.items():
        by_gp.setdefault((g, p), []).append(var)

    def at(g: int, p: int):
        return [(v, 1) for v in by_gp.get((g, p), [])]

    _contiguity(prob, groups_obj.order_edges, n_pos, at)
    # Communication and loads per position and type.
    c = {}
    for d, (name, kind, _) in enumerate(types):
        scale = devices.transfer_scale(kind) if kind is not None else devices.cpu_transfer_scale
        for p in positions:
            members = [(g, x[g, p, d]) for g in range(len(groups)) if (g, p, d) in x]
            if not members:
                continue
            if kind is None and scale == 0:  # CPU cores pay no communication (cpu_bandwidth None)
                prob += _lp_sum((var, compute[g, d]) for g, var in members) <= load
                continue
            comm_terms = [(var, graph.output_cost[u])
                          for var, u in _crossing_vars(prob, crossing, group_of, x, at, p, d, c)]
            _add_load_constraints(prob, load, [(var, compute[g, d]) for g, var in members], comm_terms,
                                  scale, devices.overlap)
            if kind is not None and math.isfinite(kind.memory):
                prob += _lp_sum((var, memory[g]) for g, var in members) <= kind.memory
    stats = {"groups": len(groups), "positions": n_pos, "variables": prob.numVariables(),
             "constraints": prob.numConstraints()}

    start_placement = None
    start = None
    if warm_start:
        start_placement = _start_throughput(problem, "pipedream")
        if start_placement is not None:
            start = _contiguous_start(problem, start_placement, groups, group_of, types, x, t, c, crossing)
            if start is not None:
                start["L"] = evaluate(problem, start_placement).max_load
    outcome = _solve_model(prob, load, solver, time_limit, gap, start)
    placement = None
    if outcome.kind in ("optimal", "feasible"):
        placement = _read_contiguous(outcome.values, groups, types, n_pos)
    return _result(method, outcome, problem, placement, started, "throughput", stats, start_placement)


def _read_contiguous(values, groups, types, n_pos) -> Placement:
    stages = []
    used = [0] * len(types)
    for p in range(n_pos):
        d = max(range(len(types)), key=lambda d: _value(values, f"t_{p}_{d}"))
        nodes = [n for g, members in enumerate(groups) if _value(values, f"x_{g}_{p}_{d}") > 0.5 for n in members]
        if nodes:
            stages.append(Stage(DeviceSlot(types[d][0], used[d]), tuple(nodes)))
            used[d] += 1
    return Placement(tuple(stages))


def _start_throughput(problem: Problem, method: str) -> Placement | None:
    """A feasible split from a cheap method (None when it finds none)."""
    try:
        if method == "dp":
            from .dp import solve_dp

            result = solve_dp(problem)
        elif method == "local-search":
            from .baselines import local_search

            result = local_search(problem, seed=0, restarts=5, time_limit=10.0)
        else:
            from .baselines import pipedream

            result = pipedream(problem)
    except PlacementError:
        return None
    if not result.ok or not evaluate(problem, result.placement).feasible:
        return None
    return result.placement


def _contiguous_start(problem, placement, groups, group_of, types, x, t, c, crossing):
    """Variable values of the contiguous model for ``placement`` (stages in pipeline order)."""
    type_index = {name: d for d, (name, _, _) in enumerate(types)}
    n_pos = sum(count for _, _, count in types)
    stages = [s for s in placement.stages if s.nodes]
    remaining = {d: count for d, (_, _, count) in enumerate(types)}
    assigned = []
    for stage in stages:
        d = type_index[stage.device.kind]
        remaining[d] -= 1
        assigned.append(d)
    filler = [d for d, left in remaining.items() for _ in range(left)]
    if any(left < 0 for left in remaining.values()):
        return None
    pos_type = assigned + filler
    start: dict[str, float] = {}
    for p in range(n_pos):
        for d in range(len(types)):
            start[f"t_{p}_{d}"] = 1.0 if pos_type[p] == d else 0.0
    for key in x:
        start[f"x_{key[0]}_{key[1]}_{key[2]}"] = 0.0
    for key in c:
        start[f"c_{key[0]}_{key[1]}_{key[2]}"] = 0.0
    graph = problem.graph
    for p, stage in enumerate(stages):
        d = pos_type[p]
        gs = {group_of[n] for n in stage.nodes}
        for g in gs:
            if (g, p, d) not in x:
                return None
            start[f"x_{g}_{p}_{d}"] = 1.0
        nodes = set(stage.nodes)
        for u in _crossing_nodes(graph, nodes):
            if (u, p, d) in c:
                start[f"c_{u}_{p}_{d}"] = 1.0
    return start


def solve_ip_noncontiguous(problem: Problem, time_limit: float | None = None, gap: float | None = None,
                           solver: str = "highs", warm_start: bool = True, **_ignored: Any) -> Result:
    """The optimal (not necessarily contiguous) placement minimising max-load, by an integer program.

    Colour-class groups are assigned to devices freely; identical devices are ordered by their
    lowest group (symmetry breaking). Options as :func:`solve_ip_contiguous`; the warm start is
    the better of the exact DP's split (so the result is never worse than the contiguous
    optimum when the DP runs; else the chain DP's) and a short local search (5 restarts, <= 10 s).

    Returns
    -------
    Result
        Method ``"ip-noncontiguous"``, objective kind ``"throughput"``; stages ordered by device.
    """
    started = time.perf_counter()
    method = "ip-noncontiguous"
    reason = _check_devices(problem)
    if reason:
        return _infeasible_result(method, reason, started, "throughput")
    graph, devices = problem.graph, problem.devices
    groups = colour_groups(graph)
    group_of, crossing = _group_data(problem, groups)
    n_devices = devices.accelerator_count + devices.cpus
    _check_model_size(method, len(groups) * n_devices * 2, f"{len(groups):,} groups x {n_devices:,} devices")
    slots = devices.slots()
    kinds = {kind.name: kind for kind in devices.accelerators}
    prob = pulp.LpProblem("noncontiguous", pulp.LpMinimize)
    load = prob.add_variable("L", lowBound=0)
    prob += load
    memory = [sum(graph.node_by_id[n].size for n in members) for members in groups]
    x = {}
    for g in range(len(groups)):
        for i, slot in enumerate(slots):
            kind = kinds.get(slot.kind)
            if not math.isfinite(_group_compute(problem, groups[g], kind)):
                continue
            if kind is not None and memory[g] > kind.memory:
                continue
            x[g, i] = prob.add_variable(f"x_{g}_{i}", 0, 1, pulp.LpBinary)
        options = [(x[g, i], 1) for i in range(len(slots)) if (g, i) in x]
        if not options:
            return _infeasible_result(method, _nowhere(problem, groups[g]), started, "throughput")
        prob += _lp_sum(options) == 1
    # Symmetry: among devices of one kind, device j may take group g only if device j-1 took an earlier group.
    for j in range(1, len(slots)):
        if slots[j].kind != slots[j - 1].kind:
            continue
        for g in range(len(groups)):
            if (g, j) in x:
                prob += _lp_sum([(x[g, j], 1)] + [(x[h, j - 1], -1) for h in range(g) if (h, j - 1) in x]) <= 0
    c = {}
    for i, slot in enumerate(slots):
        kind = kinds.get(slot.kind)
        members = [(g, x[g, i]) for g in range(len(groups)) if (g, i) in x]
        if not members:
            continue
        scale = devices.transfer_scale(kind) if kind is not None else devices.cpu_transfer_scale
        if kind is None and scale == 0:  # CPU cores pay no communication (cpu_bandwidth None)
            prob += _lp_sum((var, _group_compute(problem, groups[g], None)) for g, var in members) <= load
            continue
        comm_terms = []
        for u, targets in crossing.items():
            gu = group_of[u]
            var = prob.add_variable(f"c_{u}_{i}", 0, 1)
            c[u, i] = var
            comm_terms.append((var, graph.output_cost[u]))
            for w in targets:
                gw = group_of[w]
                xu = [(x[gu, i], 1)] if (gu, i) in x else []
                xw = [(x[gw, i], 1)] if (gw, i) in x else []
                if xu:
                    prob += _lp_sum([(var, 1), (x[gu, i], -1)] + xw) >= 0
                if xw:
                    prob += _lp_sum([(var, 1), (x[gw, i], -1)] + xu) >= 0
        _add_load_constraints(prob, load, [(var, _group_compute(problem, groups[g], kind)) for g, var in members],
                              comm_terms, scale, devices.overlap)
        if kind is not None and math.isfinite(kind.memory):
            prob += _lp_sum((var, memory[g]) for g, var in members) <= kind.memory
    stats = {"groups": len(groups), "variables": prob.numVariables(), "constraints": prob.numConstraints()}

    start_placement = None
    start = None
    if warm_start:
        candidates = [_start_throughput(problem, "dp") or _start_throughput(problem, "pipedream"),
                      _start_throughput(problem, "local-search")]
        candidates = [c for c in candidates if c is not None]
        if candidates:
            start_placement = min(candidates, key=lambda c: evaluate(problem, c).max_load)
        if start_placement is not None:
            start_placement = _canonical(start_placement, groups, group_of, slots)
            start = _noncontiguous_start(problem, start_placement, group_of, slots, x, c)
            if start is None:
                start_placement = None
            else:
                start["L"] = evaluate(problem, start_placement).max_load
    outcome = _solve_model(prob, load, solver, time_limit, gap, start)
    placement = None
    if outcome.kind in ("optimal", "feasible"):
        assignment = {}
        for (g, i) in x:
            if _value(outcome.values, f"x_{g}_{i}") > 0.5:
                for n in groups[g]:
                    assignment[n] = slots[i]
        placement = Placement.from_assignment(assignment, order=slots)
    return _result(method, outcome, problem, placement, started, "throughput", stats, start_placement)


def _canonical(placement: Placement, groups, group_of, slots) -> Placement:
    """Renumber devices of each kind by their lowest group (the order the symmetry constraints demand)."""
    by_kind: dict[str, list[tuple[int, Stage]]] = {}
    for stage in placement.stages:
        if stage.nodes:
            by_kind.setdefault(stage.device.kind, []).append((min(group_of[n] for n in stage.nodes), stage))
    stages = []
    for kind, items in by_kind.items():
        for index, (_, stage) in enumerate(sorted(items, key=lambda item: item[0])):
            stages.append(Stage(DeviceSlot(kind, index), stage.nodes))
    return Placement(tuple(stages))


def _noncontiguous_start(problem, placement, group_of, slots, x, c):
    index = {slot: i for i, slot in enumerate(slots)}
    start = {f"x_{g}_{i}": 0.0 for g, i in x}
    start.update({f"c_{u}_{i}": 0.0 for u, i in c})
    for stage in placement.stages:
        i = index.get(stage.device)
        if i is None:
            return None
        for g in {group_of[n] for n in stage.nodes}:
            if (g, i) not in x:
                return None
            start[f"x_{g}_{i}"] = 1.0
        for u in _crossing_nodes(problem.graph, set(stage.nodes)):
            if (u, i) in c:
                start[f"c_{u}_{i}"] = 1.0
    return start


# ----------------------------------------------------------------------------- latency model

def _schedule(problem: Problem, placement: Placement) -> dict:
    """Start/end of each accelerator call and finish of each node, as the evaluator's latency model defines them.

    Returns ``{"call": {(slot, j): (start, end)}, "finish": {node: t}, "rank": {...}}`` (ranks are
    positions of units in a topological order).
    """
    graph, devices = problem.graph, problem.devices
    kinds = {kind.name: kind for kind in devices.accelerators}
    unit_of: dict[int, int] = {}
    units: list[tuple[DeviceSlot, int, tuple[int, ...]]] = []
    for stage in placement.stages:
        if stage.device.is_cpu:
            for n in stage.nodes:
                unit_of[n] = len(units)
                units.append((stage.device, -1, (n,)))
        else:
            for j, call in enumerate(stage.calls or (stage.nodes,)):
                for n in call:
                    unit_of[n] = len(units)
                units.append((stage.device, j, tuple(call)))
    import networkx as nx

    dag = nx.DiGraph()
    dag.add_nodes_from(range(len(units)))
    for edge in graph.edges:
        a, b = unit_of[edge.source], unit_of[edge.target]
        if a != b:
            dag.add_edge(a, b)
    previous: dict[DeviceSlot, int] = {}
    for k, (slot, j, _) in enumerate(units):
        if not slot.is_cpu:
            if slot in previous:
                dag.add_edge(previous[slot], k)
            previous[slot] = k
    order = list(nx.topological_sort(dag))
    start = [0.0] * len(units)
    end = [0.0] * len(units)
    for k in order:
        slot, j, nodes = units[k]
        start[k] = max((end[p] for p in dag.predecessors(k)), default=0.0)
        if slot.is_cpu:
            duration = graph.node_by_id[nodes[0]].cpu_latency
        else:
            kind = kinds[slot.kind]
            duration = sum(graph.node_by_id[n].latency_on(kind) for n in nodes) + sum(
                graph.output_cost[u] for u in _crossing_nodes(graph, set(nodes))) * devices.transfer_scale(kind)
        end[k] = start[k] + duration
    rank = {k: r for r, k in enumerate(order)}
    # When each node's own compute ends: CPU nodes at their finish; in a call, after the incoming
    # transfers and the compute of the nodes before it in topological order.
    own_end: dict[int, float] = {}
    position = {n: i for i, n in enumerate(graph.topological_order)}
    for k, (slot, j, members) in enumerate(units):
        if slot.is_cpu:
            own_end[members[0]] = end[k]
            continue
        kind = kinds[slot.kind]
        inside = set(members)
        incoming = {p for n in members for p in graph.predecessors[n] if p not in inside}
        clock = start[k] + sum(graph.output_cost[u] for u in incoming) * devices.transfer_scale(kind)
        for n in sorted(members, key=position.__getitem__):
            clock += graph.node_by_id[n].latency_on(kind)
            own_end[n] = clock
    return {
        "own_end": own_end,
        "call": {(slot, j): (start[k], end[k], rank[k]) for k, (slot, j, _) in enumerate(units) if not slot.is_cpu},
        "finish": {n: end[unit_of[n]] for n in unit_of},
        "node_rank": {n: rank[unit_of[n]] for n in unit_of},
    }


def solve_latency_ip(problem: Problem, time_limit: float | None = None, gap: float | None = None,
                     solver: str = "highs", subgraphs_per_accelerator: int = 1, warm_start: bool = True,
                     q: int | None = None, **_ignored: Any) -> Result:
    """The placement of minimum single-sample latency, by an integer program.

    Parameters
    ----------
    problem : Problem
        Graph and devices; CPU nodes run on unbounded cores (when ``devices.cpus > 0``).
    time_limit, gap, solver
        As in :func:`solve_ip_contiguous`.
    subgraphs_per_accelerator : int
        ``q``: how many calls (subgraphs run one after another) each accelerator may make.
        ``q`` is an alias.
    warm_start : bool
        Start from the best of the greedy and the DP splits.

    Returns
    -------
    Result
        Method ``"latency-ip"``, objective kind ``"latency"``; accelerator stages carry ``calls``
        (in execution order) when ``q > 1``.
    """
    started = time.perf_counter()
    method = "latency-ip"
    if q is not None:
        subgraphs_per_accelerator = q
    if isinstance(subgraphs_per_accelerator, bool) or not isinstance(subgraphs_per_accelerator, int) \
            or subgraphs_per_accelerator < 1:
        raise PlacementError(
            f"subgraphs per accelerator must be a positive integer (got {subgraphs_per_accelerator!r})")
    if subgraphs_per_accelerator > MAX_SUBGRAPHS_PER_ACCELERATOR:
        raise PlacementError(f"subgraphs per accelerator must be at most {MAX_SUBGRAPHS_PER_ACCELERATOR} "
                             f"(got {subgraphs_per_accelerator:,})")
    n_calls = subgraphs_per_accelerator
    n_all_calls = problem.devices.accelerator_count * n_calls
    _check_model_size(method, (len(problem.graph.nodes) + len(problem.graph.edges)) * n_all_calls,
                      f"{len(problem.graph.nodes):,} nodes and {len(problem.graph.edges):,} edges x "
                      f"{n_all_calls:,} calls")
    reason = _check_devices(problem)
    if reason:
        return _infeasible_result(method, reason, started, "latency")
    graph, devices = problem.graph, problem.devices
    kinds = {kind.name: kind for kind in devices.accelerators}
    accels = [slot for slot in devices.slots() if not slot.is_cpu]
    calls = [(a, j) for a in range(len(accels)) for j in range(n_calls)]
    cpu_allowed = devices.cpus > 0
    nodes = [node.id for node in graph.nodes]
    groups = colour_groups(graph)

    # Starting solution and big-M.
    start_placement = _start_latency(problem, n_calls) if warm_start else None
    max_scale = max((devices.transfer_scale(k) for k in devices.accelerators), default=1.0)
    total_cost = sum(graph.output_cost.values())
    safe = sum(max([graph.node_by_id[n].cpu_latency] + [graph.node_by_id[n].latency_on(k) for k in
                                                         devices.accelerators]) for n in nodes)
    safe += len(calls) * total_cost * max_scale * 2
    upper = safe
    if start_placement is not None:
        upper = min(upper, evaluate(problem, start_placement).latency)
    big = upper * (1 + 1e-6) + 1e-6

    prob = pulp.LpProblem("latency", pulp.LpMinimize)
    makespan = prob.add_variable("T", lowBound=0, upBound=big)
    prob += makespan
    x = {}
    y = {}
    for v in nodes:
        node = graph.node_by_id[v]
        for ci, (a, j) in enumerate(calls):
            kind = kinds[accels[a].kind]
            if node.runs_on(kind) and node.size <= kind.memory:
                x[v, ci] = prob.add_variable(f"x_{v}_{ci}", 0, 1, pulp.LpBinary)
        if cpu_allowed:
            y[v] = prob.add_variable(f"y_{v}", 0, 1, pulp.LpBinary)
        terms = [(x[v, ci], 1) for ci in range(len(calls)) if (v, ci) in x] + ([(y[v], 1)] if v in y else [])
        if not terms:
            return _infeasible_result(method, _nowhere(problem, (v,)), started, "latency")
        prob += _lp_sum(terms) == 1
    # Colour classes share a device (any of its calls).
    for members in groups:
        first = members[0]
        for other in members[1:]:
            for a in range(len(accels)):
                cis = [a * n_calls + j for j in range(n_calls)]
                prob += _lp_sum([(x[first, ci], 1) for ci in cis if (first, ci) in x]
                                + [(x[other, ci], -1) for ci in cis if (other, ci) in x]) == 0
            if cpu_allowed:
                prob += y[first] - y[other] == 0
    # Memory per accelerator.
    for a, slot in enumerate(accels):
        kind = kinds[slot.kind]
        if math.isfinite(kind.memory):
            prob += _lp_sum((x[v, a * n_calls + j], graph.node_by_id[v].size) for v in nodes
                            for j in range(n_calls) if (v, a * n_calls + j) in x) <= kind.memory
    # Times.
    s = {ci: prob.add_variable(f"s_{ci}", 0, big) for ci in range(len(calls))}
    e = {ci: prob.add_variable(f"e_{ci}", 0, big) for ci in range(len(calls))}
    f = {v: prob.add_variable(f"f_{v}", 0, big) for v in nodes}
    z = {}
    for ci, (a, j) in enumerate(calls):
        kind = kinds[accels[a].kind]
        scale = devices.transfer_scale(kind)
        comm_terms = []
        for u in nodes:
            if graph.output_cost[u] <= 0 or not graph.successors[u]:
                continue
            ends = [u, *graph.successors[u]]
            if not any((w, ci) in x for w in ends):
                continue
            var = prob.add_variable(f"z_{u}_{ci}", 0, 1)
            z[u, ci] = var
            comm_terms.append((var, graph.output_cost[u] * scale))
            xu = [(x[u, ci], 1)] if (u, ci) in x else []
            for w in graph.successors[u]:
                xw = [(x[w, ci], 1)] if (w, ci) in x else []
                if xu:
                    prob += _lp_sum([(var, 1), (x[u, ci], -1)] + xw) >= 0
                if xw:
                    prob += _lp_sum([(var, 1), (x[w, ci], -1)] + xu) >= 0
        compute_terms = [(x[v, ci], graph.node_by_id[v].latency_on(kind)) for v in nodes if (v, ci) in x]
        prob += _lp_sum([(e[ci], 1), (s[ci], -1)] + [(var, -coef) for var, coef in compute_terms + comm_terms]) >= 0
        if j > 0:
            prob += s[ci] - e[ci - 1] >= 0
        prob += makespan - e[ci] >= 0
        for v in nodes:
            if (v, ci) in x:
                # f[v] >= e[ci] when v runs in call ci.
                prob += _lp_sum([(f[v], 1), (e[ci], -1), (x[v, ci], -big)]) >= -big
        # Inputs: s[ci] >= f[u] when (u, w) is an edge with w in the call and u outside it.
        for edge in graph.edges:
            u, w = edge.source, edge.target
            if (w, ci) not in x:
                continue
            terms = [(s[ci], 1), (f[u], -1), (x[w, ci], -big)]
            if (u, ci) in x:
                terms.append((x[u, ci], big))
            prob += _lp_sum(terms) >= -big
    for v in nodes:
        prob += makespan - f[v] >= 0
        if v in y:
            cpu = graph.node_by_id[v].cpu_latency
            prob += _lp_sum([(f[v], 1), (y[v], -cpu)]) >= 0
            for u in graph.predecessors[v]:
                # f[v] >= f[u] + cpu(v) when v runs on a CPU core.
                prob += _lp_sum([(f[v], 1), (f[u], -1), (y[v], -(big + cpu))]) >= -big
    # Valid inequalities (no big-M): h[v] = when v's own compute ends, in a topological order
    # inside its call; along every edge it grows by v's latency on its device, plus the transfer
    # of u's output when exactly one of u, v sits in a given call.
    h = {v: prob.add_variable(f"h_{v}", 0, big) for v in nodes}
    for v in nodes:
        node = graph.node_by_id[v]
        own = [(x[v, ci], node.latency_on(kinds[accels[calls[ci][0]].kind])) for ci in range(len(calls))
               if (v, ci) in x] + ([(y[v], node.cpu_latency)] if v in y else [])
        prob += _lp_sum([(h[v], 1)] + [(var, -coef) for var, coef in own]) >= 0
        prob += makespan - h[v] >= 0
        for u in graph.predecessors[v]:
            base = [(h[v], 1), (h[u], -1)] + [(var, -coef) for var, coef in own]
            prob += _lp_sum(base) >= 0
            cost = graph.output_cost[u]
            if cost <= 0:
                continue
            for ci in range(len(calls)):
                scale = devices.transfer_scale(kinds[accels[calls[ci][0]].kind]) * cost
                xv = (v, ci) in x
                xu = (u, ci) in x
                if xv:  # incoming transfer into v's call
                    prob += _lp_sum(base + [(x[v, ci], -scale)] + ([(x[u, ci], scale)] if xu else [])) >= 0
                if xu:  # outgoing transfer out of u's call
                    prob += _lp_sum(base + [(x[u, ci], -scale)] + ([(x[v, ci], scale)] if xv else [])) >= 0
    # Ranks rule out cycles of zero-duration units (only possible with zero-cost edges).
    use_ranks = any(graph.output_cost[e_.source] == 0 for e_ in graph.edges)
    if use_ranks:
        n_units = len(nodes) + len(calls)
        r_call = {ci: prob.add_variable(f"rc_{ci}", 0, n_units) for ci in range(len(calls))}
        r = {v: prob.add_variable(f"r_{v}", 0, n_units) for v in nodes}
        for ci, (a, j) in enumerate(calls):
            if j > 0:
                prob += r_call[ci] - r_call[ci - 1] >= 1
            for v in nodes:
                if (v, ci) in x:
                    prob += _lp_sum([(r[v], 1), (r_call[ci], -1), (x[v, ci], -n_units)]) >= -n_units
                    prob += _lp_sum([(r_call[ci], 1), (r[v], -1), (x[v, ci], -n_units)]) >= -n_units
        for edge in graph.edges:
            u, w = edge.source, edge.target
            # r[w] >= r[u] + 1 unless u and w share a call.
            same = [(x[u, ci], x[w, ci]) for ci in range(len(calls)) if (u, ci) in x and (w, ci) in x]
            if not same:
                prob += r[w] - r[u] >= 1
                continue
            d = prob.add_variable(f"d_{u}_{w}", 0, 1)
            for xu, xw in same:
                prob += d >= xu - xw
                prob += d >= xw - xu
            if u in y:
                prob += d >= y[u]
            if w in y:
                prob += d >= y[w]
            shared = [ci for ci in range(len(calls)) if (u, ci) in x and (w, ci) in x]
            # d may be 0 only when both sit in one call: d >= 1 - sum_ci x[u, ci] over calls w can share.
            prob += _lp_sum([(d, 1)] + [(x[u, ci], 1) for ci in shared]) >= 1
            prob += _lp_sum([(r[w], 1), (r[u], -1), (d, -(n_units + 1))]) >= -n_units
    stats = {"calls": len(calls), "subgraphs_per_accelerator": n_calls, "variables": prob.numVariables(),
             "constraints": prob.numConstraints(), "big_m": big}

    start = None
    if start_placement is not None:
        start = _latency_start(problem, start_placement, accels, n_calls, x, y, z, use_ranks)
        if start is None:
            start_placement = None
    outcome = _solve_model(prob, makespan, solver, time_limit, gap, start)
    placement = None
    if outcome.kind in ("optimal", "feasible"):
        placement = _read_latency(problem, outcome.values, x, y, accels, n_calls)
    return _result(method, outcome, problem, placement, started, "latency", stats, start_placement,
                   reason="the latency program is infeasible: no placement satisfies the memory, support and "
                          "colour rules with these devices")


def _read_latency(problem: Problem, values, x, y, accels, n_calls) -> Placement:
    graph = problem.graph
    call_nodes: dict[int, list[int]] = {}
    cpu_nodes = []
    for node in graph.nodes:
        v = node.id
        placed = False
        for ci in range(len(accels) * n_calls):
            if (v, ci) in x and _value(values, f"x_{v}_{ci}") > 0.5:
                call_nodes.setdefault(ci, []).append(v)
                placed = True
                break
        if not placed:
            cpu_nodes.append(v)
    stages = []
    for a, slot in enumerate(accels):
        parts = [tuple(call_nodes.get(a * n_calls + j, [])) for j in range(n_calls)]
        parts = [part for part in parts if part]
        if not parts:
            continue
        flat = tuple(n for part in parts for n in part)
        stages.append(Stage(slot, flat, tuple(parts) if n_calls > 1 else None))
    stages.extend(_cpu_stages(problem, cpu_nodes))
    return Placement(tuple(stages))


def _cpu_stages(problem: Problem, cpu_nodes: Sequence[int]) -> list[Stage]:
    """Spread CPU nodes over the cores, colour class by colour class, round-robin (latency ignores cores)."""
    if not cpu_nodes:
        return []
    cores = problem.devices.cpus
    chosen = set(cpu_nodes)
    per_core: dict[int, list[int]] = {}
    k = 0
    for members in colour_groups(problem.graph):
        inside = [n for n in members if n in chosen]
        if inside:
            per_core.setdefault(k % cores, []).extend(inside)
            k += 1
    return [Stage(DeviceSlot(CPU_KIND, i), tuple(ns)) for i, ns in sorted(per_core.items())]


def _start_latency(problem: Problem, n_calls: int) -> Placement | None:
    """Best (by the evaluator's latency) of the greedy and the DP split; None if neither is valid."""
    candidates = []
    try:
        from .baselines import greedy_latency

        for order in ("paper", "lexicographic"):
            result = greedy_latency(problem, order=order)
            if result.ok:
                candidates.append(result.placement)
    except PlacementError:
        pass
    try:
        from .dp import solve_dp

        result = solve_dp(problem)
        if result.ok:
            candidates.append(result.placement)
    except PlacementError:
        pass
    best, best_value = None, math.inf
    for placement in candidates:
        evaluation = evaluate(problem, placement)
        if evaluation.feasible and evaluation.latency < best_value:
            best, best_value = placement, evaluation.latency
    return best


def _latency_start(problem, placement, accels, n_calls, x, y, z, use_ranks):
    """Variable values of the latency model for ``placement`` (None if it does not fit the model)."""
    graph = problem.graph
    accel_index = {slot: a for a, slot in enumerate(accels)}
    sched = _schedule(problem, placement)
    start: dict[str, float] = {key: 0.0 for key in [f"x_{v}_{ci}" for v, ci in x] + [f"y_{v}" for v in y]}
    call_of: dict[int, int] = {}
    for stage in placement.stages:
        if stage.device.is_cpu:
            for v in stage.nodes:
                if v not in y:
                    return None
                start[f"y_{v}"] = 1.0
            continue
        a = accel_index.get(stage.device)
        parts = stage.calls or (stage.nodes,)
        if a is None or len(parts) > n_calls:
            return None
        for j, part in enumerate(parts):
            ci = a * n_calls + j
            for v in part:
                if (v, ci) not in x:
                    return None
                start[f"x_{v}_{ci}"] = 1.0
                call_of[v] = ci
    n_total = len(accels) * n_calls
    members: dict[int, set[int]] = {}
    for v, ci in call_of.items():
        members.setdefault(ci, set()).add(v)
    for (u, ci) in z:
        start[f"z_{u}_{ci}"] = 1.0 if u in _crossing_nodes(graph, members.get(ci, set())) else 0.0
    # Times: unused calls sit at the end of their device's previous call (or 0).
    latency_value = 0.0
    for a, slot in enumerate(accels):
        clock = 0.0
        for j in range(n_calls):
            ci = a * n_calls + j
            if (slot, j) in sched["call"]:
                s_, e_, _ = sched["call"][slot, j]
                clock = e_
                start[f"s_{ci}"], start[f"e_{ci}"] = s_, e_
            else:
                start[f"s_{ci}"] = start[f"e_{ci}"] = clock
            latency_value = max(latency_value, start[f"e_{ci}"])
    for v, t_ in sched["finish"].items():
        start[f"f_{v}"] = t_
        start[f"h_{v}"] = sched["own_end"][v]
        latency_value = max(latency_value, t_)
    start["T"] = latency_value
    if use_ranks:
        # Ranks: units in topological order; unused calls take their predecessor's rank + 1.
        node_rank = sched["node_rank"]
        for v, rk in node_rank.items():
            start[f"r_{v}"] = float(rk)
        for a, slot in enumerate(accels):
            previous = -1.0
            for j in range(n_calls):
                ci = a * n_calls + j
                if (slot, j) in sched["call"]:
                    previous = float(sched["call"][slot, j][2])
                else:
                    previous = previous + 1.0 if previous >= 0 else float(j)
                start[f"rc_{ci}"] = previous
        for edge in graph.edges:
            u, w = edge.source, edge.target
            start[f"d_{u}_{w}"] = 0.0 if call_of.get(u) is not None and call_of.get(u) == call_of.get(w) else 1.0
    return start
