"""Latency integer program (``"latency-ip"``): the placement of minimum single-sample latency.

Model (the evaluator's latency, :func:`placement.evaluate.latency`): every accelerator runs up to
``q`` calls one after another; CPU nodes run on unbounded cores. A call starts after its outside
inputs and the previous call on its device and lasts incoming + outgoing transfers + compute; a
node's finish time is its call's end (on a CPU core: its start + CPU latency).

Variables: ``x[v, c]`` (node ``v`` in call ``c``), ``y[v]`` (on a CPU core), call start/end
``s, e``, node finish ``f``, crossing ``z[u, c]`` and the makespan ``T``. Big-M constants are the
best incumbent's latency (every optimal schedule fits under it). When the graph has zero-cost
edges, integral "ranks" rule out zero-duration cycles that the times alone would allow.

Valid inequalities (they cut fractional points, never an integral schedule):

* ``h[v]`` = when ``v``'s own compute ends; along every edge ``u -> w`` it grows by ``w``'s
  time on its device, plus, per call, the transfer of ``u``'s output when exactly one end is in
  that call; and plus ``cost(u) * smin * (o + i)`` where ``k[u, w] = sum_c kept[u, w, c]``
  (``kept <= x[u, c], kept <= x[w, c]``) says both ends share a call, ``o >= 1 - y[u] - k``
  (the sender pays) and ``i >= 1 - y[w] - k`` (the receiver pays): a critical-path bound that
  sees communication.
* Memory covers: a connected set ``S`` of nodes larger than every accelerator's memory cannot
  sit in one call, so ``sum_{tree edges of S} (1 - k[e]) + sum_{v in S} y[v] >= 1``.

Symmetry rows (identical accelerators ordered by their first node) were tried and dropped: on the
BERT-3 operator graph they held HiGHS' bound at 62 after 30 s, against 369 without them.

Incumbents (:mod:`placement.ip.latency_search`): the greedy (both orders), the DP's tie-broken split
and a latency local search seeded from each; the result is never worse than any of them. Lower
bounds (:mod:`placement.ip.latency_bounds`: critical path, work, chain; the chain DP counts the
``k * q`` calls) are computed first, within a share of the time; the largest is a cut
``T >= bound`` and a floor of the reported bound. By default (``model="both"``) this program runs
first with half the time left, then the paper's (:mod:`placement.ip.latency_paper`), started from
the best plan so far, with the rest: the better plan and the larger bound are kept. One :class:`~placement.ip.common.Deadline`
covers the whole call (starts, model building, solver). The model is built, solved and read back in
three steps (:func:`build_latency_model`, :func:`placement.ip.common.solve_model`,
:func:`extract_latency`).
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pulp

from ..errors import PlacementError
from ..model import CPU_KIND, DeviceSlot, Placement, Problem, Result, Stage, Status
from .common import (
    MAX_SUBGRAPHS_PER_ACCELERATOR,
    Deadline,
    DeadlinePassed,
    Outcome,
    TimedProblem,
    check_devices,
    check_model_size,
    check_options,
    color_groups,
    infeasible_result,
    lp_sum,
    make_result,
    nowhere,
    skipped_outcome,
    solve_model,
    too_late_to_solve,
    value,
)
from .latency_bounds import latency_bounds
from .latency_search import baseline_placements, improve_all, latency_local_search, latency_of

__all__ = [
    "baseline_placements",
    "build_latency_model",
    "extract_latency",
    "latency_local_search",
    "latency_lower_bound",
    "solve_latency_ip",
]

METHOD = "latency-ip"
#: The integer programs ``solve_latency_ip(model=...)`` offers.
MODELS = ("both", "ours", "paper")
#: Share of the time left that ours gets when both programs run (the paper's gets the rest).
OURS_SHARE = 0.5
#: Share of the time limit the combinatorial bounds may take (the chain DP stops at it, keeping the paths done).
BOUNDS_SHARE = 0.2


@dataclass
class LatencyModel:
    """The PuLP model and its variables (internal: never leaves :mod:`placement.ip`)."""

    prob: pulp.LpProblem
    makespan: Any
    accels: list[DeviceSlot]
    n_calls: int
    x: dict = field(default_factory=dict)
    y: dict = field(default_factory=dict)
    infeasible_reason: str | None = None
    deadline: Deadline = field(default_factory=Deadline)  # checked while building (DeadlinePassed)

    @property
    def stats(self) -> dict:
        return {
            "calls": len(self.accels) * self.n_calls,
            "subgraphs_per_accelerator": self.n_calls,
            "variables": self.prob.numVariables(),
            "constraints": self.prob.numConstraints(),
        }


def _memory_covers(problem: Problem, cap: float) -> list[tuple[list[tuple[int, int]], list[int]]]:
    """Disjoint connected node sets larger than ``cap``, grown along successors in topological order: (tree edges, nodes)."""
    graph = problem.graph
    order = graph.topological_order
    position = {v: i for i, v in enumerate(order)}
    covers = []
    seen = set()
    used: set[int] = set()
    for root in order:
        if root in used:  # disjoint covers: few, sparse rows (overlapping ones slowed the LP 10x)
            continue
        inside = [root]
        member = {root}
        tree = []
        size = graph.node_by_id[root].size
        frontier = sorted(graph.successors[root], key=position.__getitem__)
        parent = {w: root for w in frontier}
        while size <= cap and frontier:
            w = frontier.pop(0)
            if w in member:
                continue
            member.add(w)
            inside.append(w)
            tree.append((parent[w], w))
            size += graph.node_by_id[w].size
            for nxt in graph.successors[w]:
                if nxt not in member and nxt not in parent:
                    parent[nxt] = w
                    frontier.append(nxt)
            frontier.sort(key=position.__getitem__)
        if size > cap and tree:
            key = frozenset(inside)
            if key not in seen:
                seen.add(key)
                used.update(inside)
                covers.append((tree, inside))
    return covers


#: Graphs up to this many nodes get the communication-aware path rows and memory covers by default
#: (on the 235-node BERT-3 operator graph they made its root LP relaxation take 15-26 s on 2 shared cores).
STRONG_CUTS_MAX_NODES = 120


def build_latency_model(
    problem: Problem, n_calls: int, upper: float, strong_cuts: bool = True, deadline: Deadline | None = None
) -> LatencyModel:
    """The latency program with big-M ``upper`` (an achievable latency); see the module docstring.

    ``strong_cuts`` adds the communication-aware critical-path rows and the memory covers.
    Raises :class:`~placement.ip.common.DeadlinePassed` when ``deadline`` passes while building.
    """
    graph, devices = problem.graph, problem.devices
    kinds = {kind.name: kind for kind in devices.accelerators}
    accels = [slot for slot in devices.slots() if not slot.is_cpu]
    calls = [(a, j) for a in range(len(accels)) for j in range(n_calls)]
    cpu_allowed = devices.cpus > 0
    nodes = [node.id for node in graph.nodes]
    big = upper * (1 + 1e-6) + 1e-6
    prob = TimedProblem("latency", deadline)
    makespan = prob.add_variable("T", lowBound=0, upBound=big)
    prob += makespan
    model = LatencyModel(prob, makespan, accels, n_calls, deadline=deadline or Deadline())
    x, y = model.x, model.y
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
            model.infeasible_reason = nowhere(problem, (v,))
            return model
        prob += lp_sum(terms) == 1

    def on_device(v: int, a: int) -> list:
        return [(x[v, a * n_calls + j], 1) for j in range(n_calls) if (v, a * n_calls + j) in x]

    # Color classes share a device (any of its calls).
    for members in color_groups(graph):
        first = members[0]
        for other in members[1:]:
            for a in range(len(accels)):
                prob += lp_sum(on_device(first, a) + [(var, -c) for var, c in on_device(other, a)]) == 0
            if cpu_allowed:
                prob += y[first] - y[other] == 0
    # Memory per accelerator.
    for a, slot in enumerate(accels):
        kind = kinds[slot.kind]
        if math.isfinite(kind.memory):
            # In units of the cap: byte-sized coefficients mislead HiGHS.
            prob += (
                lp_sum((var, graph.node_by_id[v].size / kind.memory) for v in nodes for var, _ in on_device(v, a))
                <= 1.0
            )
    _add_times(problem, model, calls, kinds, nodes, big)
    _add_critical_path(problem, model, calls, kinds, nodes, big, strong_cuts)
    if any(graph.output_cost[e.source] == 0 for e in graph.edges):
        _add_ranks(problem, model, calls, nodes)
    return model


def _add_times(problem, model: LatencyModel, calls, kinds, nodes, big) -> None:
    """Call start/end, node finish times and the makespan (big-M where a placement decides)."""
    graph, devices = problem.graph, problem.devices
    prob, x, y, accels, makespan = model.prob, model.x, model.y, model.accels, model.makespan
    s = {ci: prob.add_variable(f"s_{ci}", 0, big) for ci in range(len(calls))}
    e = {ci: prob.add_variable(f"e_{ci}", 0, big) for ci in range(len(calls))}
    f = {v: prob.add_variable(f"f_{v}", 0, big) for v in nodes}
    for ci, (a, j) in enumerate(calls):
        model.deadline.check()
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
            comm_terms.append((var, graph.output_cost[u] * scale))
            xu = [(x[u, ci], 1)] if (u, ci) in x else []
            for w in graph.successors[u]:
                xw = [(x[w, ci], 1)] if (w, ci) in x else []
                if xu:
                    prob += lp_sum([(var, 1), (x[u, ci], -1)] + xw) >= 0
                if xw:
                    prob += lp_sum([(var, 1), (x[w, ci], -1)] + xu) >= 0
        compute_terms = [(x[v, ci], graph.node_by_id[v].latency_on(kind)) for v in nodes if (v, ci) in x]
        prob += lp_sum([(e[ci], 1), (s[ci], -1)] + [(var, -coef) for var, coef in compute_terms + comm_terms]) >= 0
        if j > 0:
            prob += s[ci] - e[ci - 1] >= 0
        prob += makespan - e[ci] >= 0
        for v in nodes:
            if (v, ci) in x:
                prob += lp_sum([(f[v], 1), (e[ci], -1), (x[v, ci], -big)]) >= -big  # f[v] >= e[ci] if v in ci
        for edge in graph.edges:  # s[ci] >= f[u] for an edge u -> w with w in the call and u outside
            u, w = edge.source, edge.target
            if (w, ci) not in x:
                continue
            terms = [(s[ci], 1), (f[u], -1), (x[w, ci], -big)]
            if (u, ci) in x:
                terms.append((x[u, ci], big))
            prob += lp_sum(terms) >= -big
    for v in nodes:
        prob += makespan - f[v] >= 0
        if v in y:
            cpu = graph.node_by_id[v].cpu_latency
            prob += lp_sum([(f[v], 1), (y[v], -cpu)]) >= 0
            for u in graph.predecessors[v]:  # f[v] >= f[u] + cpu(v) when v runs on a CPU core
                prob += lp_sum([(f[v], 1), (f[u], -1), (y[v], -(big + cpu))]) >= -big


def _add_critical_path(problem, model: LatencyModel, calls, kinds, nodes, big, strong: bool) -> None:
    """Big-M-free valid inequalities: own compute ends h along edges, with transfers and memory covers."""
    graph, devices = problem.graph, problem.devices
    prob, x, y, accels, makespan = model.prob, model.x, model.y, model.accels, model.makespan
    scales = [devices.transfer_scale(kinds[accels[a].kind]) for a, _ in calls]
    smin = min(scales, default=0.0)
    h = {v: prob.add_variable(f"h_{v}", 0, big) for v in nodes}
    own = {}
    for v in nodes:
        node = graph.node_by_id[v]
        own[v] = [
            (x[v, ci], node.latency_on(kinds[accels[calls[ci][0]].kind])) for ci in range(len(calls)) if (v, ci) in x
        ] + ([(y[v], node.cpu_latency)] if v in y else [])
        prob += lp_sum([(h[v], 1)] + [(var, -coef) for var, coef in own[v]]) >= 0
        prob += makespan - h[v] >= 0
    kept_sum: dict[tuple[int, int], list] = {}
    for edge in graph.edges:
        model.deadline.check()
        u, w = edge.source, edge.target
        base = [(h[w], 1), (h[u], -1)] + [(var, -coef) for var, coef in own[w]]
        prob += lp_sum(base) >= 0
        both = []
        for ci in range(len(calls) if strong else 0):
            if (u, ci) in x and (w, ci) in x:
                k = prob.add_variable(f"k_{u}_{w}_{ci}", 0, 1)
                prob += k - x[u, ci] <= 0
                prob += k - x[w, ci] <= 0
                both.append((k, 1))
        kept_sum[u, w] = both
        cost = graph.output_cost[u]
        if cost <= 0:
            continue
        for ci in range(len(calls)):
            amount = scales[ci] * cost
            xv, xu = (w, ci) in x, (u, ci) in x
            if xv:  # incoming transfer into w's call
                prob += lp_sum(base + [(x[w, ci], -amount)] + ([(x[u, ci], amount)] if xu else [])) >= 0
            if xu:  # outgoing transfer out of u's call
                prob += lp_sum(base + [(x[u, ci], -amount)] + ([(x[w, ci], amount)] if xv else [])) >= 0
        if strong and smin > 0:
            # o >= 1 - y[u] - kept (u on an accelerator, w not in its call), i likewise for w.
            o = prob.add_variable(f"o_{u}_{w}", 0, 1)
            i = prob.add_variable(f"i_{u}_{w}", 0, 1)
            prob += lp_sum([(o, 1)] + ([(y[u], 1)] if u in y else []) + both) >= 1
            prob += lp_sum([(i, 1)] + ([(y[w], 1)] if w in y else []) + both) >= 1
            prob += lp_sum(base + [(o, -cost * smin), (i, -cost * smin)]) >= 0
    caps = [kinds[slot.kind].memory for slot in accels]
    cap = max(caps, default=math.inf)
    if strong and math.isfinite(cap):
        for tree, inside in _memory_covers(problem, cap):
            terms = [(y[v], 1) for v in inside if v in y]
            for u, w in tree:
                terms += [(var, -1) for var, _ in kept_sum.get((u, w), [])]
            prob += lp_sum(terms) >= 1 - len(tree)


def _add_ranks(problem, model: LatencyModel, calls, nodes) -> None:
    """Integral ranks, strictly increasing along edges between units: no zero-duration cycles."""
    graph = problem.graph
    prob, x, y = model.prob, model.x, model.y
    n_units = len(nodes) + len(calls)
    r_call = {ci: prob.add_variable(f"rc_{ci}", 0, n_units) for ci in range(len(calls))}
    r = {v: prob.add_variable(f"r_{v}", 0, n_units) for v in nodes}
    for ci, (a, j) in enumerate(calls):
        if j > 0:
            prob += r_call[ci] - r_call[ci - 1] >= 1
        for v in nodes:
            if (v, ci) in x:
                prob += lp_sum([(r[v], 1), (r_call[ci], -1), (x[v, ci], -n_units)]) >= -n_units
                prob += lp_sum([(r_call[ci], 1), (r[v], -1), (x[v, ci], -n_units)]) >= -n_units
    for edge in graph.edges:
        u, w = edge.source, edge.target
        shared = [ci for ci in range(len(calls)) if (u, ci) in x and (w, ci) in x]
        if not shared:
            prob += r[w] - r[u] >= 1
            continue
        d = prob.add_variable(f"d_{u}_{w}", 0, 1)  # r[w] >= r[u] + 1 unless u and w share a call
        for ci in shared:
            prob += d >= x[u, ci] - x[w, ci]
            prob += d >= x[w, ci] - x[u, ci]
        if u in y:
            prob += d >= y[u]
        if w in y:
            prob += d >= y[w]
        prob += lp_sum([(d, 1)] + [(x[u, ci], 1) for ci in shared]) >= 1
        prob += lp_sum([(r[w], 1), (r[u], -1), (d, -(n_units + 1))]) >= -n_units


def extract_latency(problem: Problem, model: LatencyModel) -> Placement:
    """The placement the solved variables describe (calls in execution order when ``q > 1``)."""
    graph = problem.graph
    n_calls, accels = model.n_calls, model.accels
    call_nodes: dict[int, list[int]] = {}
    cpu_nodes = []
    for node in graph.nodes:
        v = node.id
        ci = next((ci for ci in range(len(accels) * n_calls) if value(model.x.get((v, ci))) > 0.5), None)
        if ci is None:
            cpu_nodes.append(v)
        else:
            call_nodes.setdefault(ci, []).append(v)
    stages = []
    for a, slot in enumerate(accels):
        parts = [tuple(call_nodes.get(a * n_calls + j, [])) for j in range(n_calls)]
        parts = [part for part in parts if part]
        if parts:
            stages.append(Stage(slot, tuple(n for part in parts for n in part), tuple(parts) if n_calls > 1 else None))
    stages.extend(cpu_stages(problem, cpu_nodes))
    return Placement(tuple(stages))


def cpu_stages(problem: Problem, cpu_nodes: Sequence[int]) -> list[Stage]:
    """Spread CPU nodes over the cores, color class by color class, round-robin (latency ignores cores)."""
    if not cpu_nodes:
        return []
    cores = problem.devices.cpus
    chosen = set(cpu_nodes)
    per_core: dict[int, list[int]] = {}
    k = 0
    for members in color_groups(problem.graph):
        inside = [n for n in members if n in chosen]
        if inside:
            per_core.setdefault(k % cores, []).extend(inside)
            k += 1
    return [Stage(DeviceSlot(CPU_KIND, i), tuple(ns)) for i, ns in sorted(per_core.items())]


def latency_start(model: LatencyModel, placement: Placement) -> dict | None:
    """Values of the binaries x, y for ``placement`` (a partial MIP start; None if it does not fit)."""
    accel_index = {slot: a for a, slot in enumerate(model.accels)}
    start = {var: 0.0 for var in list(model.x.values()) + list(model.y.values())}
    for stage in placement.stages:
        if stage.device.is_cpu:
            for v in stage.nodes:
                if v not in model.y:
                    return None
                start[model.y[v]] = 1.0
            continue
        a = accel_index.get(stage.device)
        parts = stage.calls or (stage.nodes,)
        if a is None or len(parts) > model.n_calls:
            return None
        for j, part in enumerate(parts):
            for v in part:
                var = model.x.get((v, a * model.n_calls + j))
                if var is None:
                    return None
                start[var] = 1.0
    return start


def latency_lower_bound(problem: Problem) -> float:
    """The largest combinatorial lower bound on the latency (:func:`placement.ip.latency_bounds.latency_bounds`)."""
    return max(latency_bounds(problem).values(), default=0.0)


def solve_latency_ip(
    problem: Problem,
    time_limit: float | None = None,
    gap: float | None = None,
    solver: str = "highs",
    subgraphs_per_accelerator: int = 1,
    warm_start: bool = True,
    q: int | None = None,
    local_search_seconds: float | None = None,
    strong_cuts: bool | None = None,
    model: str = "both",
) -> Result:
    """The placement of minimum single-sample latency, by an integer program.

    Parameters
    ----------
    problem : Problem
        Graph and devices; CPU nodes run on unbounded cores (when ``devices.cpus > 0``).
    time_limit, gap, solver
        As in :func:`placement.ip.throughput.solve_ip_contiguous`; ``time_limit`` is wall clock
        for the whole call (baselines, local search, model building, solver): when it passes,
        the best plan so far comes back "feasible" with its bound.
    subgraphs_per_accelerator : int
        ``q``: how many calls (subgraphs run one after another) each accelerator may make.
        ``q`` is an alias.
    warm_start : bool
        Start from the greedy and DP splits, each improved by a latency local search.
    local_search_seconds : float, optional
        Seconds for those local searches together (default: a sixth of ``time_limit``, at most
        10 s; 2 s without a time limit).
    strong_cuts : bool, optional
        Add the communication-aware critical-path rows and memory covers (default: on graphs
        of at most :data:`STRONG_CUTS_MAX_NODES` nodes).
    model : {"both", "ours", "paper"}
        Which integer program: ours (:func:`build_latency_model`), the paper's
        (:func:`placement.ip.latency_paper.build_paper_model`), or both one after the other
        (ours with :data:`OURS_SHARE` of the time left, then the paper's, started from the best
        plan so far): the result is the better plan and the larger bound of the two.

    Returns
    -------
    Result
        Method ``"latency-ip"``, objective kind ``"latency"``; accelerator stages carry ``calls``
        (in execution order) when ``q > 1``. Never worse than the greedy or the DP's split.
    """
    started = time.perf_counter()
    if q is not None:
        subgraphs_per_accelerator = q
    if (
        isinstance(subgraphs_per_accelerator, bool)
        or not isinstance(subgraphs_per_accelerator, int)
        or subgraphs_per_accelerator < 1
    ):
        raise PlacementError(
            f"subgraphs per accelerator must be a positive integer (got {subgraphs_per_accelerator!r})"
        )
    if subgraphs_per_accelerator > MAX_SUBGRAPHS_PER_ACCELERATOR:
        raise PlacementError(
            f"subgraphs per accelerator must be at most {MAX_SUBGRAPHS_PER_ACCELERATOR} "
            f"(got {subgraphs_per_accelerator:,})"
        )
    check_options(solver, time_limit, gap)
    if model not in MODELS:
        raise PlacementError(f"model must be one of: {', '.join(MODELS)} (got {model!r})")
    n_all_calls = problem.devices.accelerator_count * subgraphs_per_accelerator
    check_model_size(
        METHOD,
        (len(problem.graph.nodes) + len(problem.graph.edges)) * n_all_calls,
        f"{len(problem.graph.nodes):,} nodes and {len(problem.graph.edges):,} edges x {n_all_calls:,} calls",
    )
    reason = check_devices(problem)
    if reason:
        return infeasible_result(METHOD, reason, started, "latency")
    n_calls = subgraphs_per_accelerator
    graph, devices = problem.graph, problem.devices
    accels = [slot for slot in devices.slots() if not slot.is_cpu]
    deadline = Deadline.after(time_limit, started)
    bounds = latency_bounds(problem, n_calls, deadline.share(BOUNDS_SHARE))
    lower = max(bounds.values(), default=0.0)
    lower = lower if math.isfinite(lower) else 0.0
    stats: dict[str, Any] = {f"bound_{name}": v for name, v in bounds.items()}
    incumbents: list[Placement] = []
    baselines: list[Placement] = []
    if warm_start:
        incumbents = baseline_placements(problem, deadline)
        baselines = list(incumbents)
        seconds = local_search_seconds
        if seconds is None:
            seconds = 2.0 if time_limit is None else min(10.0, time_limit / 6)
        incumbents += improve_all(problem, incumbents, deadline.share(1.0, cap=seconds))
    # Big-M: an achievable latency (the best incumbent's, else a schedule-free safe bound).
    max_scale = max((devices.transfer_scale(k) for k in devices.accelerators), default=1.0)
    safe = sum(max([node.cpu_latency] + [node.latency_on(k) for k in devices.accelerators]) for node in graph.nodes)
    safe += len(accels) * n_calls * sum(graph.output_cost.values()) * max_scale * 2
    values = [latency_of(problem, p) for p in incumbents]
    upper = min([safe] + values)
    if strong_cuts is None:
        strong_cuts = len(graph.nodes) <= STRONG_CUTS_MAX_NODES
    stats.update(big_m=upper, strong_cuts=bool(strong_cuts))
    outcome, placement = _solve_models(
        problem, model, n_calls, upper, lower, bool(strong_cuts), incumbents, deadline, gap, solver, stats, baselines
    )
    if isinstance(outcome, str):
        return infeasible_result(METHOD, outcome, started, "latency")
    ip_bound = outcome.bound if outcome.bound is not None else -math.inf
    stats["bound_source"] = "ip" if ip_bound > lower * (1 + 1e-9) else max(bounds, key=bounds.__getitem__, default="ip")
    return make_result(
        METHOD,
        outcome,
        problem,
        placement,
        started,
        "latency",
        stats,
        incumbents,
        reason="the latency program is infeasible: no placement satisfies the memory, support and "
        "color rules with these devices",
        extra_bound=lower,
    )


def _solve_models(
    problem: Problem,
    which: str,
    n_calls: int,
    upper: float,
    lower: float,
    strong_cuts: bool,
    incumbents: list[Placement],
    deadline: Deadline,
    gap: float | None,
    solver: str,
    stats: dict[str, Any],
    baselines: Sequence[Placement] = (),
) -> tuple[Outcome | str, Placement | None]:
    """Solve ours, the paper's, or both (see :func:`solve_latency_ip`): the combined outcome and its placement.

    Both programs are exact for the same latency, so either one's proven optimum (or infeasibility)
    is final, and the larger of their bounds holds. With both, ours starts from the best of
    ``baselines`` (before the local search; big-M its latency) and the paper's from the best plan
    so far: two starts, two searches (HiGHS searches near its start; on GNMT layers ours from the
    greedy's plan found 182.4533 in 30 s, from the local search's 182.4907 none better in 60 s).
    ``stats`` gets ``<model>_objective`` and ``<model>_bound`` per program solved, and
    ``incumbent_model`` (which program found the plan).
    """
    order = ["ours", "paper"] if which == "both" else [which]
    results: list[tuple[str, Outcome, Placement | None]] = []
    for k, name in enumerate(order):
        last = k == len(order) - 1
        part = deadline if last else deadline.share(OURS_SHARE)
        found = [p for _, o, p in results if p is not None]
        starts, big = incumbents + found, upper
        if which == "both" and name == "ours" and baselines:
            starts = [min(baselines, key=lambda p: latency_of(problem, p))]
            big = max(upper, latency_of(problem, starts[0]))
        elif found:
            big = min([upper] + [latency_of(problem, p) for p in found])
        sub_stats: dict[str, Any] = {}
        outcome, placement = _solve_program(
            problem, name, n_calls, big, lower, strong_cuts, starts, part, gap, solver, sub_stats
        )
        if isinstance(outcome, str):
            return outcome, None
        for key, val in sub_stats.items():
            stats[key if key not in stats or name == "ours" else f"{name}_{key}"] = val
        stats[f"{name}_objective"] = outcome.objective
        stats[f"{name}_bound"] = outcome.bound
        results.append((name, outcome, placement))
        if outcome.status in (Status.OPTIMAL, Status.INFEASIBLE):
            break
    final = [r for r in results if r[1].status in (Status.OPTIMAL, Status.INFEASIBLE)]
    if final:
        name, outcome, placement = final[0]
    else:
        solved = [r for r in results if r[1].has_solution and r[2] is not None]
        name, outcome, placement = (
            min(solved, key=lambda r: latency_of(problem, r[2])) if solved else results[-1]  # type: ignore[arg-type]
        )
    for other, o, p in results:
        if p is not None and other != name:
            incumbents.append(p)
    bounds = [r[1].bound for r in results if r[1].bound is not None]
    if bounds and outcome.status != Status.OPTIMAL:
        outcome = Outcome(outcome.status, outcome.objective, max(bounds), outcome.gap, outcome.solver, outcome.message)
    if outcome.has_solution:
        stats["incumbent_model"] = name
    return outcome, placement


def _solve_program(
    problem: Problem,
    which: str,
    n_calls: int,
    upper: float,
    lower: float,
    strong_cuts: bool,
    incumbents: list[Placement],
    deadline: Deadline,
    gap: float | None,
    solver: str,
    stats: dict[str, Any],
) -> tuple[Outcome | str, Placement | None]:
    """Build and solve the program within ``deadline``: (outcome, its placement), or the reason it is infeasible.

    When the deadline passes while building, or too little time is left to hand the model over,
    the outcome is "no solution" (the caller then returns the best incumbent with its bound).
    """
    skipped = skipped_outcome(solver)
    if deadline.passed:
        stats["ip_skipped"] = "time limit reached before the integer program"
        return skipped, None
    built_at = time.perf_counter()
    try:
        if which == "paper":
            from .latency_paper import build_paper_model

            model = build_paper_model(problem, n_calls, upper, deadline)
        else:
            model = build_latency_model(problem, n_calls, upper, strong_cuts, deadline)
    except DeadlinePassed:
        stats["ip_skipped"] = "time limit reached while building the integer program"
        return skipped, None
    if model.infeasible_reason:
        return model.infeasible_reason, None
    stats.update(model.stats)
    if too_late_to_solve(deadline, time.perf_counter() - built_at):
        stats["ip_skipped"] = "too little time left to hand the integer program to the solver"
        return skipped, None
    # The combinatorial bound as a cut (a hair below it, and never above the big-M, for float noise).
    model.prob += model.makespan >= min(lower * (1 - 1e-9), upper)
    start = None
    if incumbents:
        start = latency_start(model, min(incumbents, key=lambda p: latency_of(problem, p)))
    outcome = solve_model(model.prob, model.makespan, solver, deadline.solver_seconds(), gap, start)
    return outcome, (extract_latency(problem, model) if outcome.has_solution else None)
