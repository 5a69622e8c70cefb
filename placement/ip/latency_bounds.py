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
  one after another. A segment ``p_i .. p_j`` holds its *hull* too: every node on a path from
  ``p_i`` to ``p_j`` (outside the unit it would wait for the unit and the unit for it). On an
  accelerator of kind ``K`` it lasts at least its hull's compute on ``K``, plus, at ``K``'s
  transfer scale, the output of the node before it (incoming) and of its last node (outgoing,
  unless it ends the path), plus for each other off-path node feeding it first the least of its
  compute and its transfer; the hull must fit ``K``'s memory. A CPU node lasts its CPU time.
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


def _reach(problem: Problem) -> tuple[dict[int, int], dict[int, int], dict[int, int]]:
    """(descendants, ancestors) of every node as bitsets (each node included), and each node's bit."""
    graph = problem.graph
    order = graph.topological_order
    bit = {v: 1 << i for i, v in enumerate(order)}
    anc: dict[int, int] = {}
    for v in order:
        mask = bit[v]
        for u in graph.predecessors[v]:
            mask |= anc[u]
        anc[v] = mask
    desc: dict[int, int] = {}
    for v in reversed(order):
        mask = bit[v]
        for w in graph.successors[v]:
            mask |= desc[w]
        desc[v] = mask
    return desc, anc, bit


def _chain_value(problem: Problem, path: Sequence[int], reach=None) -> float:
    """The cheapest segmentation of ``path`` into units (see the module docstring).

    A segment ``p_i .. p_j`` is charged its hull (every node on a path from ``p_i`` to ``p_j``:
    those lie in the same unit, or a unit would depend on itself) and, for each off-path node
    outside the hull feeding one of its nodes first, the least of its compute and its transfer.
    """
    graph, devices = problem.graph, problem.devices
    kinds = [k for k in devices.accelerators if k.count > 0]
    nodes = [graph.node_by_id[v] for v in path]
    cost = [graph.output_cost[v] for v in path]
    n = len(path)
    desc, anc, bit = reach or _reach(problem)
    by_bit = {b.bit_length() - 1: v for v, b in bit.items()}
    feeds = _feeders(problem, path)
    first_target = {v: k for k, vs in enumerate(feeds) for v in vs}
    # charge[K][v]: what off-path node v adds to the call of kind K holding the path node it feeds first.
    charge = [{v: _feeder_cost(problem, v, kind) for v in first_target} for kind in kinds]
    best = [0.0] + [math.inf] * n
    for j in range(1, n + 1):
        if devices.cpus > 0:
            best[j] = best[j - 1] + nodes[j - 1].cpu_latency
        for kk, kind in enumerate(kinds):
            scale = devices.transfer_scale(kind)
            outgoing = scale * cost[j - 1] if j < n else 0.0
            top = anc[path[j - 1]]
            hull = 0
            compute = size = 0.0
            for i in range(j, 0, -1):  # segment p_i .. p_j (1-based); its hull only grows as i falls
                grown = desc[path[i - 1]] & top
                new, hull = grown & ~hull, grown
                ok = True
                while new:
                    low = new & -new
                    new ^= low
                    member = graph.node_by_id[by_bit[low.bit_length() - 1]]
                    if not member.runs_on(kind):
                        ok = False
                        break
                    size += member.size
                    compute += member.latency_on(kind)
                    k = first_target.get(member.id)
                    if k is not None and k <= j - 1:  # its feeder charge was counted: now it is inside
                        compute -= charge[kk][member.id]
                if not ok or size > kind.memory:
                    break
                compute += sum(charge[kk][v] for v in feeds[i - 1] if not hull & bit[v])
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
    reach = _reach(problem)
    for weight in weights:
        _, path = _longest_path(problem, weight)
        key = tuple(path)
        if key in seen:
            continue
        seen.add(key)
        best = max(best, _chain_value(problem, path, reach))
    return best


def latency_bounds(problem: Problem) -> dict[str, float]:
    """Every combinatorial lower bound on the latency, by name (``critical_path``, ``work``, ``chain``)."""
    return {
        "critical_path": critical_path_bound(problem),
        "work": work_bound(problem),
        "chain": chain_bound(problem),
    }
