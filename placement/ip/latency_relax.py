"""The device-choice relaxation of single-sample latency: a small integer program whose bound holds for the full one.

The latency program (:mod:`placement.ip.latency_model`) decides which call of which accelerator
runs every node; its relaxation here keeps only *which kind of device* runs it (an accelerator
kind, or a CPU core) and drops calls, their order and transfers between accelerators. It has one
binary per node and device kind, no big-M, and is solved by HiGHS in a fraction of the time the
full program needs to prove as much. Its optimum (or, when stopped, its proven bound) is a lower
bound on every placement the evaluator (:func:`placement.evaluate.latency`) accepts.

Variables: ``a[v, K]`` (node ``v`` on an accelerator of kind ``K``, where it is supported and fits),
``c[v]`` (on a CPU core), ``sum_K a[v, K] + c[v] = 1`` and equal for a color class. ``h[v]`` is when
``v``'s own compute ends, ``T`` the latency. Why each row holds for a placement (read its calls as
running their incoming transfers, then their nodes in topological order, then their outgoing
transfers; a call's nodes all finish at its end):

* time: ``h[w] >= h[u] + t(w)`` along every edge ``u -> w`` and ``h[v] >= t(v)``, where
  ``t(v) = sum_K lat_K(v) a[v, K] + cpu(v) c[v]``; ``T >= h[v]``.
* crossings to and from CPU cores: when ``u`` runs on a CPU core and ``w`` on an accelerator,
  ``w``'s call receives ``u``'s output before its compute: ``h[w] >= h[u] + t(w) + s cost(u)
  (c[u] - c[w])``; when ``u`` is on an accelerator and ``w`` on a CPU core, ``u``'s call sends it
  before ``w`` starts: ``h[w] >= h[u] + t(w) + s cost(u) (c[w] - c[u])`` (``s`` the least
  accelerator transfer scale).
* memory: the kind's accelerators hold at most ``count_K memory_K`` together; and one accelerator
  holds at most ``j`` nodes larger than ``memory_K / (j + 1)``, so
  ``sum {a[v, K]: size(v) > memory_K / (j + 1)} <= j count_K`` (``j = 1 ..``
  :data:`LARGE_ITEM_ROWS`).
* work: every accelerator's calls run one after another within ``T``:
  ``sum_v lat_K(v) a[v, K] <= count_K T``.
* calls along a path (given ``q`` calls per accelerator): two runs of accelerator nodes along a
  path, separated by a CPU node, are distinct calls (one call holding both would wait for the CPU
  node, which waits for it), so a few long paths (by CPU time, by fastest time, by node count)
  have at most ``q`` times the accelerator count of runs: ``1 - c[p_1] + sum_i r_i <= k q`` with
  ``r_i >= c[p_{i-1}] - c[p_i]``.

:func:`relaxation_bound` returns the bound, the solver's status and the seconds it took.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import pulp

from ..model import Problem, Status
from .common import Deadline, DeadlinePassed, TimedProblem, color_groups, lp_sum, solve_model, too_late_to_solve

__all__ = ["RelaxationBound", "relaxation_bound"]

#: Rows "at most j nodes larger than memory / (j + 1) per accelerator" for j = 1 .. this.
LARGE_ITEM_ROWS = 4


@dataclass(frozen=True)
class RelaxationBound:
    """The relaxation's proven bound (0 when it was not solved), the solver's status (optimal: ``bound`` is the
    relaxation's optimum, to HiGHS' tolerance) and the seconds it took."""

    bound: float
    status: Status
    seconds: float


def _build(problem: Problem, deadline: Deadline | None):
    """The relaxation's PuLP model: (problem, makespan variable, a, c)."""
    graph, devices = problem.graph, problem.devices
    kinds = [k for k in devices.accelerators if k.count > 0]
    prob = TimedProblem("latency_relaxation", deadline)
    makespan = prob.add_variable("T", lowBound=0)
    prob += makespan
    a: dict[tuple[int, int], pulp.LpVariable] = {}
    c: dict[int, pulp.LpVariable] = {}
    time_terms: dict[int, list] = {}
    for group in color_groups(graph):
        first = group[0]
        for kk, kind in enumerate(kinds):
            if all(graph.node_by_id[v].runs_on(kind) and graph.node_by_id[v].size <= kind.memory for v in group):
                a[first, kk] = prob.add_variable(f"a_{first}_{kk}", 0, 1, pulp.LpBinary)
        if devices.cpus > 0:
            c[first] = prob.add_variable(f"c_{first}", 0, 1, pulp.LpBinary)
        choices = [a[first, kk] for kk in range(len(kinds)) if (first, kk) in a] + ([c[first]] if first in c else [])
        if not choices:
            return None
        prob += lp_sum((var, 1) for var in choices) == 1
        for v in group[1:]:
            for kk in range(len(kinds)):
                if (first, kk) in a:
                    a[v, kk] = a[first, kk]
            if first in c:
                c[v] = c[first]
    for node in graph.nodes:
        v = node.id
        time_terms[v] = [(a[v, kk], node.latency_on(kind)) for kk, kind in enumerate(kinds) if (v, kk) in a]
        if v in c:
            time_terms[v].append((c[v], node.cpu_latency))
    return prob, makespan, a, c, time_terms, kinds


def _add_rows(problem: Problem, model) -> None:
    """Time, crossing, memory and work rows (see the module docstring)."""
    graph, devices = problem.graph, problem.devices
    prob, makespan, a, c, time_terms, kinds = model
    smin = min((devices.transfer_scale(k) for k in kinds), default=0.0)
    h = {node.id: prob.add_variable(f"h_{node.id}", lowBound=0) for node in graph.nodes}
    for v, terms in time_terms.items():
        prob += lp_sum([(h[v], 1)] + [(var, -t) for var, t in terms]) >= 0
        prob += makespan - h[v] >= 0
    for edge in graph.edges:
        u, w = edge.source, edge.target
        base = [(h[w], 1), (h[u], -1)] + [(var, -t) for var, t in time_terms[w]]
        prob += lp_sum(base) >= 0
        amount = smin * graph.output_cost[u]
        if amount > 0 and u in c and w in c and c[u] is not c[w]:
            prob += lp_sum(base + [(c[u], -amount), (c[w], amount)]) >= 0
            prob += lp_sum(base + [(c[w], -amount), (c[u], amount)]) >= 0
    groups = color_groups(graph)
    for kk, kind in enumerate(kinds):
        firsts = [g[0] for g in groups if (g[0], kk) in a]
        if math.isfinite(kind.memory) and kind.memory > 0:
            size = {g[0]: sum(graph.node_by_id[v].size for v in g) for g in groups}
            prob += lp_sum((a[v, kk], size[v] / kind.memory) for v in firsts) <= kind.count
            for j in range(1, LARGE_ITEM_ROWS + 1):
                large = [v for v in firsts if size[v] > kind.memory / (j + 1)]
                if len(large) > j * kind.count:
                    prob += lp_sum((a[v, kk], 1) for v in large) <= j * kind.count
        work = [(a[node.id, kk], node.latency_on(kind)) for node in graph.nodes if (node.id, kk) in a]
        prob += lp_sum(work + [(makespan, -kind.count)]) <= 0


def _path_runs(problem: Problem, model, max_calls: int) -> None:
    """At most ``max_calls`` runs of accelerator nodes along each of a few long paths (see the module docstring)."""
    from .latency_bounds import _longest_path

    graph = problem.graph
    prob, c, time_terms = model[0], model[3], model[4]
    cpu = {node.id: node.cpu_latency for node in graph.nodes}
    fastest = {v: min(t for _, t in terms) for v, terms in time_terms.items()}
    seen: set[tuple[int, ...]] = set()
    for weight in (cpu.__getitem__, fastest.__getitem__, lambda v: 1.0):
        path = tuple(_longest_path(problem, weight)[1])
        if path in seen or len(path) < 2 or any(v not in c for v in path):
            continue
        seen.add(path)
        starts = [(c[path[0]], -1)]  # r_0 >= 1 - c[p_0]; sum of run starts <= max_calls
        constant = 1.0
        for before, v in zip(path, path[1:]):
            if c[before] is c[v]:
                continue
            r = prob.add_variable(f"r_{before}_{v}", 0, 1)
            prob += r - c[before] + c[v] >= 0  # a run starts at v: v on an accelerator, before on a CPU core
            starts.append((r, 1))
        prob += lp_sum(starts) <= max_calls - constant


def relaxation_bound(
    problem: Problem, deadline: Deadline | None = None, solver: str = "highs", calls_per_accelerator: int | None = None
) -> RelaxationBound:
    """Solve the device-choice relaxation within ``deadline`` (see the module docstring).

    Returns
    -------
    RelaxationBound
        Its proven lower bound on the latency (0 when it could not be solved in time).
    """
    started = time.perf_counter()
    deadline = deadline or Deadline()
    nothing = RelaxationBound(0.0, Status.NO_SOLUTION, 0.0)
    try:
        model = _build(problem, deadline)
        if model is None:
            return nothing
        _add_rows(problem, model)
        if calls_per_accelerator is not None and problem.devices.cpus > 0:
            calls = sum(k.count for k in problem.devices.accelerators) * calls_per_accelerator
            _path_runs(problem, model, calls)
    except DeadlinePassed:
        return nothing
    if too_late_to_solve(deadline, time.perf_counter() - started):
        return nothing
    prob, makespan = model[0], model[1]
    outcome = solve_model(prob, makespan, solver, deadline.solver_seconds(), 1e-6, None)
    seconds = time.perf_counter() - started
    if outcome.status == Status.INFEASIBLE:
        return RelaxationBound(0.0, outcome.status, seconds)  # the latency program reports why
    bound = outcome.bound if outcome.bound is not None else 0.0  # the solver's dual bound, never its objective
    return RelaxationBound(max(0.0, bound), outcome.status, seconds)
