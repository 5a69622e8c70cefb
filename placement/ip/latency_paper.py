"""The paper's latency integer program, a second model for ``latency-ip`` run side by side with ours.

Tarnawski et al. (NeurIPS 2020, appendix) minimise single-sample latency with device-assignment
variables and per-node and per-subgraph start and finish times. Ported here to the evaluator's
latency model (:func:`placement.evaluate.latency`), the one :mod:`placement.ip.latency` solves:

* ``x[v, i]``: node ``v`` in subgraph ``i`` (accelerator ``a`` runs subgraphs ``i = a q .. a q + q - 1``
  one after another); ``y[v]``: ``v`` on a CPU core (unbounded cores). ``sum_i x[v, i] + y[v] = 1``;
  color classes share a device; the subgraphs of one accelerator fit its memory together.
* ``comm_in[u, i] >= x[w, i] - x[u, i]`` and ``comm_out[u, i] >= x[u, i] - x[w, i]`` for every
  edge ``u -> w``: ``u``'s output enters, or leaves, subgraph ``i`` (paid once per node and subgraph).
* ``SubgraphStart[i]``, ``SubgraphFinish[i] >= SubgraphStart[i] + compute + transfers``; the next
  subgraph on the same accelerator starts after it.
* per node: ``Start[v]`` (when its inputs are all there) and ``Finish[v]`` (when its output is):
  ``Start[w] >= Finish[u]`` for every edge whose ends are in different subgraphs (big-M on the
  same-subgraph case); ``SubgraphStart[i] >= Start[v]`` and ``Finish[v] >= SubgraphFinish[i]`` when
  ``v`` is in ``i`` (big-M); ``Finish[v] >= Start[v] + cpu(v)`` on a CPU core.
* ``Latency >= Finish[v]``; minimise ``Latency``.

Big-M constants are the best incumbent's latency (an optimal schedule fits under it). Where edges
cost nothing, integral ranks (as in :mod:`placement.ip.latency`) rule out zero-duration cycles.
It carries none of our model's valid inequalities (critical-path rows with transfers, memory
covers): a leaner model, whose solver search differs, so it finds other incumbents.
"""

from __future__ import annotations

import math

from ..model import Problem
from .common import Deadline, color_groups, lp_sum
from .latency_model import LatencyModel, _add_ranks, assignment_model

__all__ = ["build_paper_model"]


def build_paper_model(problem: Problem, n_calls: int, upper: float, deadline: Deadline | None = None) -> LatencyModel:
    """The paper's latency program with big-M ``upper`` (an achievable latency); see the module docstring.

    Returns a :class:`~placement.ip.latency.LatencyModel` (read back with
    :func:`~placement.ip.latency.extract_latency`). Raises
    :class:`~placement.ip.common.DeadlinePassed` when ``deadline`` passes while building.
    """
    kinds = {kind.name: kind for kind in problem.devices.accelerators}
    nodes = [node.id for node in problem.graph.nodes]
    model, big = assignment_model(problem, n_calls, upper, ("latency_paper", "Latency"), deadline)
    if model.infeasible_reason is not None:
        return model
    subgraphs = [(a, j) for a in range(len(model.accels)) for j in range(n_calls)]
    _assignment_rules(problem, model, kinds, nodes)
    _times(problem, model, subgraphs, kinds, nodes, big)
    if any(problem.graph.output_cost[e.source] == 0 for e in problem.graph.edges):
        _add_ranks(problem, model, subgraphs, nodes)
    return model


def _on_device(model: LatencyModel, v: int, a: int) -> list:
    q = model.n_calls
    return [(model.x[v, a * q + j], 1) for j in range(q) if (v, a * q + j) in model.x]


def _assignment_rules(problem: Problem, model: LatencyModel, kinds, nodes) -> None:
    """Color classes on one device (any of its subgraphs), and each accelerator's memory."""
    graph, prob = problem.graph, model.prob
    for members in color_groups(graph):
        for other in members[1:]:
            for a in range(len(model.accels)):
                prob += (
                    lp_sum(_on_device(model, members[0], a) + [(v, -c) for v, c in _on_device(model, other, a)]) == 0
                )
            if model.y:
                prob += model.y[members[0]] - model.y[other] == 0
    for a, slot in enumerate(model.accels):
        memory = kinds[slot.kind].memory
        if math.isfinite(memory):
            sizes = [(var, graph.node_by_id[v].size / memory) for v in nodes for var, _ in _on_device(model, v, a)]
            prob += lp_sum(sizes) <= 1.0


def _times(problem: Problem, model: LatencyModel, subgraphs, kinds, nodes, big: float) -> None:
    """Subgraph and node start/finish times, transfers in and out, and the latency."""
    graph, devices = problem.graph, problem.devices
    prob, x, y = model.prob, model.x, model.y
    start = {v: prob.add_variable(f"Start_{v}", 0, big) for v in nodes}
    finish = {v: prob.add_variable(f"Finish_{v}", 0, big) for v in nodes}
    sub_start = {i: prob.add_variable(f"SubgraphStart_{i}", 0, big) for i in range(len(subgraphs))}
    sub_finish = {i: prob.add_variable(f"SubgraphFinish_{i}", 0, big) for i in range(len(subgraphs))}
    for v in nodes:
        prob += model.makespan - finish[v] >= 0
        prob += finish[v] - start[v] >= 0
        if v in y:
            prob += lp_sum([(finish[v], 1), (start[v], -1), (y[v], -graph.node_by_id[v].cpu_latency)]) >= 0
    for i, (a, j) in enumerate(subgraphs):
        model.deadline.check()
        kind = kinds[model.accels[a].kind]
        scale = devices.transfer_scale(kind)
        duration = [(x[v, i], graph.node_by_id[v].latency_on(kind)) for v in nodes if (v, i) in x]
        for u in nodes:
            cost = graph.output_cost[u] * scale
            if cost <= 0:
                continue
            xu = [(x[u, i], 1)] if (u, i) in x else []
            outs = [w for w in graph.successors[u] if (w, i) in x]
            if outs:  # comm_in >= x[w, i] - x[u, i]
                comm_in = prob.add_variable(f"CommIn_{u}_{i}", 0, 1)
                duration.append((comm_in, cost))
                for w in outs:
                    prob += lp_sum([(comm_in, 1), (x[w, i], -1)] + xu) >= 0
            if xu and graph.successors[u]:  # comm_out >= x[u, i] - x[w, i]
                comm_out = prob.add_variable(f"CommOut_{u}_{i}", 0, 1)
                duration.append((comm_out, cost))
                for w in graph.successors[u]:
                    prob += lp_sum([(comm_out, 1), (x[u, i], -1)] + ([(x[w, i], 1)] if (w, i) in x else [])) >= 0
        prob += lp_sum([(sub_finish[i], 1), (sub_start[i], -1)] + [(var, -c) for var, c in duration]) >= 0
        if j > 0:
            prob += sub_start[i] - sub_finish[i - 1] >= 0
        for v in nodes:
            if (v, i) in x:  # v in i: i starts when v's inputs are there, v's output is there when i ends
                prob += lp_sum([(sub_start[i], 1), (start[v], -1), (x[v, i], -big)]) >= -big
                prob += lp_sum([(finish[v], 1), (sub_finish[i], -1), (x[v, i], -big)]) >= -big
    for edge in graph.edges:
        u, w = edge.source, edge.target
        # Start[w] >= Finish[u] unless u and w share a subgraph: Same <= 1 - x[u, i] + x[w, i] for every i.
        if not any((u, i) in x and (w, i) in x for i in range(len(subgraphs))):
            prob += start[w] - finish[u] >= 0
            continue
        same = prob.add_variable(f"Same_{u}_{w}", 0, 1)
        for i in range(len(subgraphs)):
            if (u, i) in x:
                prob += lp_sum([(same, 1), (x[u, i], 1)] + ([(x[w, i], -1)] if (w, i) in x else [])) <= 1
        if u in y:
            prob += same + y[u] <= 1
        prob += lp_sum([(start[w], 1), (finish[u], -1), (same, big)]) >= 0
