"""The latency integer program's model (``"latency-ip"``, ours): variables, rows, cuts, reading a plan back.

The formulation and its valid inequalities are described in :mod:`placement.ip.latency` (which solves it,
alone or beside the paper's program, :mod:`placement.ip.latency_paper`, which reuses its ranks).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pulp

from ..model import CPU_KIND, DeviceSlot, Placement, Problem, Stage
from .common import (
    Deadline,
    TimedProblem,
    color_groups,
    lp_sum,
    nowhere,
    value,
)
from .latency_bounds import latency_bounds


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


def assignment_model(
    problem: Problem, n_calls: int, upper: float, names: tuple[str, str], deadline: Deadline | None
) -> tuple[LatencyModel, float]:
    """A latency model with its assignment part, shared by ours and the paper's program; and its big-M.

    ``names`` are the program's name and its objective variable's (minimised, bounded by the big-M, just
    above ``upper``). Adds ``x[v, i]`` (node ``v`` in call ``i`` of accelerator ``i // n_calls``, where it
    is supported and fits), ``y[v]`` (on a CPU core, when there are any) and ``sum_i x[v, i] + y[v] = 1``.
    When a node can run nowhere, sets ``infeasible_reason`` and stops there.
    """
    graph, devices = problem.graph, problem.devices
    kinds = {kind.name: kind for kind in devices.accelerators}
    accels = [slot for slot in devices.slots() if not slot.is_cpu]
    n_slots = len(accels) * n_calls
    big = upper * (1 + 1e-6) + 1e-6
    prob = TimedProblem(names[0], deadline)
    objective = prob.add_variable(names[1], lowBound=0, upBound=big)
    prob += objective
    model = LatencyModel(prob, objective, accels, n_calls, deadline=deadline or Deadline())
    x, y = model.x, model.y
    for node in graph.nodes:
        v = node.id
        for i in range(n_slots):
            kind = kinds[accels[i // n_calls].kind]
            if node.runs_on(kind) and node.size <= kind.memory:
                x[v, i] = prob.add_variable(f"x_{v}_{i}", 0, 1, pulp.LpBinary)
        if devices.cpus > 0:
            y[v] = prob.add_variable(f"y_{v}", 0, 1, pulp.LpBinary)
        terms = [(x[v, i], 1) for i in range(n_slots) if (v, i) in x] + ([(y[v], 1)] if v in y else [])
        if not terms:
            model.infeasible_reason = nowhere(problem, (v,))
            break
        prob += lp_sum(terms) == 1
    return model, big


def build_latency_model(
    problem: Problem, n_calls: int, upper: float, strong_cuts: bool = True, deadline: Deadline | None = None
) -> LatencyModel:
    """The latency program with big-M ``upper`` (an achievable latency); see the module docstring.

    ``strong_cuts`` adds the communication-aware critical-path rows and the memory covers.
    Raises :class:`~placement.ip.common.DeadlinePassed` when ``deadline`` passes while building.
    """
    graph, devices = problem.graph, problem.devices
    kinds = {kind.name: kind for kind in devices.accelerators}
    cpu_allowed = devices.cpus > 0
    nodes = [node.id for node in graph.nodes]
    model, big = assignment_model(problem, n_calls, upper, ("latency", "T"), deadline)
    if model.infeasible_reason is not None:
        return model
    prob, accels, x, y = model.prob, model.accels, model.x, model.y
    calls = [(a, j) for a in range(len(accels)) for j in range(n_calls)]

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
