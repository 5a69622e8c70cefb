"""Proven lower bounds on single-sample latency, computed before the latency IP and given to it as cuts.

Every bound holds for every placement the evaluator (:func:`placement.evaluate.latency`) accepts,
for any number of calls per accelerator: units are accelerator calls and CPU nodes; a call lasts
its compute plus the transfers of every output crossing its boundary (either direction) at its
device's scale; a unit starts after the units it depends on, and calls on one accelerator run
one after another.

* ``critical_path``: the longest path with every node at its fastest allowed device, no transfers.
* ``work``: the accelerators are busy at most ``L`` each, so the nodes that cannot run on a CPU
  core within ``L`` (``cpu latency > L``, or no CPU cores) need ``sum of their fastest accelerator
  times / m <= L`` (``m`` accelerators). The least ``L`` meeting both is found over the sorted CPU
  latencies.
* ``chain``: along any path ``p_1 .. p_n`` the units partition the path into consecutive segments
  (a unit holding ``p_i`` and ``p_k`` but not ``p_j``, ``i < j < k``, would depend on itself), run
  one after another. A segment on an accelerator of kind ``K`` lasts at least its compute on ``K``
  plus, at ``K``'s transfer scale, the output of the node before it (incoming) and of its last node
  (outgoing, unless it ends the path), and must fit ``K``'s memory; a CPU node lasts its CPU time.
  The cheapest such segmentation (a DP over the path) is a lower bound. It is taken on a few long
  paths (by fastest time, with transfers, by size).

:func:`latency_bounds` returns every bound by name; the largest is the one used.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from ..model import Problem

__all__ = ["chain_bound", "critical_path_bound", "latency_bounds", "work_bound"]


def _fastest(problem: Problem) -> tuple[dict[int, float], dict[int, float]]:
    """(fastest accelerator time, CPU time) per node; ``inf`` where a node cannot go."""
    graph, devices = problem.graph, problem.devices
    accel: dict[int, float] = {}
    cpu: dict[int, float] = {}
    for node in graph.nodes:
        times = [
            node.latency_on(k)
            for k in devices.accelerators
            if k.count > 0 and node.runs_on(k) and node.size <= k.memory
        ]
        accel[node.id] = min(times, default=math.inf)
        cpu[node.id] = node.cpu_latency if devices.cpus > 0 else math.inf
    return accel, cpu


def _longest_path(problem: Problem, weight: Callable[[int], float]) -> tuple[float, list[int]]:
    """The heaviest path by node weights: (its weight, its nodes in order)."""
    graph = problem.graph
    finish: dict[int, float] = {}
    parent: dict[int, int | None] = {}
    for v in graph.topological_order:
        preds = graph.predecessors[v]
        best = max(preds, key=finish.__getitem__, default=None)
        parent[v] = best
        finish[v] = (finish[best] if best is not None else 0.0) + weight(v)
    if not finish:
        return 0.0, []
    end: int | None = max(finish, key=finish.__getitem__)
    total = finish[end]  # type: ignore[index]
    path = []
    while end is not None:
        path.append(end)
        end = parent[end]
    return total, path[::-1]


def critical_path_bound(problem: Problem) -> float:
    """Longest path with every node at its fastest allowed device and no transfers."""
    accel, cpu = _fastest(problem)
    return _longest_path(problem, lambda v: min(accel[v], cpu[v]))[0]


def work_bound(problem: Problem) -> float:
    """The least ``L`` with ``L >= cpu(v)`` for nodes off the accelerators and accelerator work ``<= m L``.

    Nodes are taken by CPU time, slowest first: if the first ``k`` are exactly those with CPU time
    above ``L``, then ``L >= cpu(k+1)`` and ``L >= S_k / m`` (``S_k`` their fastest accelerator
    times); the bound is the least such ``max`` over ``k``.
    """
    accel, cpu = _fastest(problem)
    m = sum(k.count for k in problem.devices.accelerators)
    candidates = sorted((v for v in accel if math.isfinite(accel[v])), key=lambda v: -cpu[v])
    if m == 0 or not candidates:
        return 0.0
    best = math.inf
    work = 0.0
    for k in range(len(candidates) + 1):
        nxt = cpu[candidates[k]] if k < len(candidates) else 0.0
        best = min(best, max(nxt, work / m))
        if k < len(candidates):
            work += accel[candidates[k]]
    return best


def _chain_value(problem: Problem, path: Sequence[int]) -> float:
    """The cheapest segmentation of ``path`` into units (see the module docstring)."""
    graph, devices = problem.graph, problem.devices
    kinds = [k for k in devices.accelerators if k.count > 0]
    nodes = [graph.node_by_id[v] for v in path]
    cost = [graph.output_cost[v] for v in path]
    n = len(path)
    feeds = _feeders(problem, path)
    # extra[k][K]: what the off-path nodes feeding p_k add to p_k's call on kind K (see _feeders).
    extra = [[sum(_feeder_cost(problem, v, kind) for v in feeds[k]) for kind in kinds] for k in range(n)]
    best = [0.0] + [math.inf] * n
    for j in range(1, n + 1):
        node = nodes[j - 1]
        if devices.cpus > 0:
            best[j] = best[j - 1] + node.cpu_latency
        for kk, kind in enumerate(kinds):
            scale = devices.transfer_scale(kind)
            outgoing = scale * cost[j - 1] if j < n else 0.0
            compute = size = 0.0
            for i in range(j, 0, -1):  # segment p_i .. p_j (1-based)
                member = nodes[i - 1]
                if not member.runs_on(kind):
                    break
                size += member.size
                if size > kind.memory:
                    break
                compute += member.latency_on(kind) + extra[i - 1][kk]
                incoming = scale * cost[i - 2] if i > 1 else 0.0
                best[j] = min(best[j], best[i - 1] + compute + incoming + outgoing)
    return best[n]


def _feeders(problem: Problem, path: Sequence[int]) -> list[list[int]]:
    """Off-path nodes by the first path node they feed: ``out[k]`` feeds ``p_k`` (each node listed once)."""
    graph = problem.graph
    index = {v: k for k, v in enumerate(path)}
    out: list[list[int]] = [[] for _ in path]
    for node in graph.nodes:
        if node.id in index:
            continue
        targets = [index[w] for w in graph.successors[node.id] if w in index]
        if targets:
            out[min(targets)].append(node.id)
    return out


def _feeder_cost(problem: Problem, v: int, kind) -> float:
    """At least what off-path node ``v`` adds to the call of kind ``kind`` holding the path node it feeds.

    Either ``v`` is in that call (its compute there) or not (its output crosses into the call, at
    the call's scale). Each ``v`` is charged to one path node only, so nothing is counted twice.
    """
    node = problem.graph.node_by_id[v]
    inside = node.latency_on(kind) if node.runs_on(kind) and node.size <= kind.memory else math.inf
    return min(inside, problem.devices.transfer_scale(kind) * problem.graph.output_cost[v])


def chain_bound(problem: Problem) -> float:
    """The path-segmentation bound on a few long paths (fastest time; with transfers; by size)."""
    graph, devices = problem.graph, problem.devices
    accel, cpu = _fastest(problem)
    scales = [devices.transfer_scale(k) for k in devices.accelerators if k.count > 0]
    smin = min(scales, default=0.0)
    caps = [k.memory for k in devices.accelerators if k.count > 0]
    cap = max(caps, default=math.inf)
    fastest = {v: min(accel[v], cpu[v]) for v in accel}
    if not all(math.isfinite(t) for t in fastest.values()):
        return 0.0
    weights: list[Callable[[int], float]] = [
        fastest.__getitem__,
        lambda v: fastest[v] + 2 * smin * graph.output_cost[v],
    ]
    if math.isfinite(cap) and cap > 0:
        total = sum(fastest.values()) or 1.0
        weights.append(lambda v: fastest[v] + total * graph.node_by_id[v].size / cap)
    best = 0.0
    seen: set[tuple[int, ...]] = set()
    for weight in weights:
        _, path = _longest_path(problem, weight)
        key = tuple(path)
        if key in seen:
            continue
        seen.add(key)
        best = max(best, _chain_value(problem, path))
    return best


def latency_bounds(problem: Problem) -> dict[str, float]:
    """Every combinatorial lower bound on the latency, by name (``critical_path``, ``work``, ``chain``)."""
    return {
        "critical_path": critical_path_bound(problem),
        "work": work_bound(problem),
        "chain": chain_bound(problem),
    }
