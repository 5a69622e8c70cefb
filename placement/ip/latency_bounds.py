"""Proven lower bounds on single-sample latency, computed before the latency IP and given to it as cuts.

Every bound holds for every placement the evaluator (:func:`placement.evaluate.latency`) accepts,
for any number of calls per accelerator (the chain bound given ``q``: for at most ``q``): units are accelerator calls and CPU nodes; a call lasts
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
  Between two consecutive segments, the *straddlers* of the cut (off-path nodes after a node of
  the first and before a node of the second, in neither hull) sit in one of the two units or in
  units that run after the first and before the second: a path through them adds at least its
  fastest times. Accelerator segments are distinct calls: with ``q`` calls per accelerator, at
  most ``k q`` of them (``k`` accelerators). The cheapest such segmentation (a DP over the path,
  the last segment and the calls used) is a lower bound. It is taken on a few long paths (by
  fastest time, with transfers, by size).

* ``memory_chain``: the chain's segmentation on the paths by CPU time and by fastest time, with the
  accelerators' memory shared by their calls (see :func:`memory_chain_bound`).

:func:`latency_bounds` returns every bound by name; the largest is the one used.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from ..model import Problem
from .common import Deadline, DeadlinePassed

__all__ = ["chain_bound", "critical_path_bound", "latency_bounds", "memory_chain_bound", "work_bound"]


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


def _straddlers(problem: Problem, path: Sequence[int], reach) -> dict[int, list[tuple[int, int]]]:
    """Off-path nodes ``w`` by ``a(w)``, the last path index reaching them: ``(b(w), w)``, ``b(w)`` the first path
    index they reach (only nodes with both), in topological order."""
    desc, anc, bit = reach
    graph = problem.graph
    on_path = set(path)
    out: dict[int, list[tuple[int, int]]] = {}
    for w in graph.topological_order:
        if w in on_path:
            continue
        a = max((m for m, v in enumerate(path) if desc[v] & bit[w]), default=None)
        b = min((m for m, v in enumerate(path) if anc[v] & bit[w]), default=None)
        if a is not None and b is not None:
            out.setdefault(a, []).append((b, w))
    return out


def _heaviest(problem: Problem, members: Sequence[int], weight: dict[int, float]) -> float:
    """The heaviest path inside ``members`` (given in topological order) by ``weight``."""
    inside = set(members)
    finish: dict[int, float] = {}
    for w in members:
        finish[w] = weight[w] + max((finish[u] for u in problem.graph.predecessors[w] if u in inside), default=0.0)
    return max(finish.values(), default=0.0)


def _segment_costs(
    problem: Problem, path: Sequence[int], reach, feeds, first_target, charge, sizes: list[list[float]] | None = None
) -> list[list[float]]:
    """``cost[i][j]``: the least duration of an accelerator call holding ``p_i .. p_j`` (0-based; ``inf`` where none can).

    Its hull's compute on the call's kind, the feeder charges of off-path nodes outside the hull
    that feed it first, the incoming transfer of ``p_{i-1}`` and the outgoing one of ``p_j`` (unless
    it ends the path). (A CPU core runs one path node: its CPU time.) ``sizes[i][j]``, when given, gets
    the hull's size wherever a call can hold it.
    """
    graph, devices = problem.graph, problem.devices
    kinds = [k for k in devices.accelerators if k.count > 0]
    desc, anc, bit = reach
    by_bit = {b.bit_length() - 1: v for v, b in bit.items()}
    n = len(path)
    out = [[math.inf] * n for _ in range(n)]
    for j in range(n):
        for kk, kind in enumerate(kinds):
            scale = devices.transfer_scale(kind)
            outgoing = scale * graph.output_cost[path[j]] if j < n - 1 else 0.0
            top = anc[path[j]]
            hull = 0
            compute = size = 0.0
            for i in range(j, -1, -1):  # the hull only grows as i falls
                grown = desc[path[i]] & top
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
                    if k is not None and k <= j:  # its feeder charge was counted: now it is inside
                        compute -= charge[kk][member.id]
                if not ok or size > kind.memory:
                    break
                compute += sum(charge[kk][v] for v in feeds[i] if not hull & bit[v])
                incoming = scale * graph.output_cost[path[i - 1]] if i > 0 else 0.0
                out[i][j] = min(out[i][j], compute + incoming + outgoing)
                if sizes is not None:
                    sizes[i][j] = size
    return out


#: The chain DP counts accelerator calls (a segment on an accelerator is a call of its own) up to this
#: many; with more calls available it does not count them.
MAX_COUNTED_CALLS = 16
#: Paths longer than this get no chain DP (its tables take ``path length ** 2`` entries per call count).
MAX_CHAIN_NODES = 1500


def _chain_value(
    problem: Problem,
    path: Sequence[int],
    reach=None,
    calls_per_accelerator: int | None = None,
    deadline: Deadline | None = None,
) -> float:
    """The cheapest segmentation of ``path`` into units (see the module docstring).

    A DP over (first, last) of the last segment and the accelerator calls used so far (at most
    ``accelerators * calls_per_accelerator``; not counted when that is ``None`` or over
    :data:`MAX_COUNTED_CALLS`). Besides its own cost (:func:`_segment_costs`; a CPU core runs one
    node), a segment ``p_i .. p_j`` after a segment ``p_h .. p_{i-1}`` is charged the *straddlers* of the
    cut between them: off-path nodes whose last path ancestor is in ``p_h .. p_{i-1}`` and whose first
    path descendant is in ``p_i .. p_j``. Each sits in one of the two units or in a unit that runs
    after the first and before the second, so a path through them adds at least its nodes' fastest
    times (less the feeder charges they may already have in the segment). Raises
    :class:`~placement.ip.common.DeadlinePassed` when ``deadline`` passes.
    """
    graph, devices = problem.graph, problem.devices
    kinds = [k for k in devices.accelerators if k.count > 0]
    n = len(path)
    if n == 0:
        return 0.0
    reach = reach or _reach(problem)
    feeds = _feeders(problem, path)
    first_target = {v: k for k, vs in enumerate(feeds) for v in vs}
    # charge[K][v]: what off-path node v adds to the call of kind K holding the path node it feeds first.
    charge = [{v: _feeder_cost(problem, v, kind) for v in first_target} for kind in kinds]
    cost = _segment_costs(problem, path, reach, feeds, first_target, charge)
    cpu = [graph.node_by_id[v].cpu_latency if devices.cpus > 0 else math.inf for v in path]
    accel, cpu_time = _fastest(problem)
    fastest = {v: min(accel[v], cpu_time[v]) for v in accel}
    most_charged = {v: max((c[v] for c in charge), default=0.0) for v in first_target}
    straddlers = [(a, b, w) for a, group in _straddlers(problem, path, reach).items() for b, w in group]
    position = {v: k for k, v in enumerate(graph.topological_order)}
    total_calls = sum(k.count for k in kinds) * (calls_per_accelerator or 0)
    counted = 0 < total_calls <= MAX_COUNTED_CALLS
    top, step = (total_calls, 1) if counted else (0, 0)  # c: accelerator calls used (always 0 when not counted)

    def extra(members: list[int], last: int) -> float:
        heavy = _heaviest(problem, sorted(members, key=position.__getitem__), fastest)
        fed = sum(most_charged[w] for w in members if first_target.get(w, n) <= last)
        return max(0.0, heavy - fed)

    # best[c][i] (for the current j): the cheapest segmentation of p_0 .. p_j with last segment p_i .. p_j
    # and c calls; suffix_min[c][j][h] = min over h' >= h of that for j.
    suffix_min = [[[math.inf] * (n + 1) for _ in range(n)] for _ in range(top + 1)]
    spanning = [[(a, b, w) for a, b, w in straddlers if a < i <= b] for i in range(n)]  # straddlers of cut i

    def ranges(i: int, j: int) -> list[tuple[int, float]]:
        """(h0, charge): a previous segment starting at h >= h0 pays at most ``charge`` for the straddlers
        of the cut before p_i reaching p_i .. p_j (exactly that charge for the h up to the next h0)."""
        found = sorted(((a, w) for a, b, w in spanning[i] if b <= j), reverse=True)
        out = [(found[0][0] + 1 if found else 0, 0.0)]
        members: list[int] = []
        for k, (a, w) in enumerate(found):
            members.append(w)
            if k + 1 < len(found) and found[k + 1][0] == a:
                continue
            out.append((found[k + 1][0] + 1 if k + 1 < len(found) else 0, extra(members, j)))
        return out

    def before(c: int, i: int, charges: list[tuple[int, float]]) -> float:
        """The cheapest prefix p_0 .. p_{i-1} with c calls, plus the straddlers of the cut before p_i."""
        if i == 0:
            return 0.0 if c == 0 else math.inf
        if c < 0:
            return math.inf
        column = suffix_min[c][i - 1]
        return min(column[low] + charge for low, charge in charges)

    for j in range(n):
        if deadline is not None:
            deadline.check()
        best = [[math.inf] * n for _ in range(top + 1)]
        for i in range(j, -1, -1):
            on_accel = math.isfinite(cost[i][j])
            on_cpu = i == j and math.isfinite(cpu[j])
            if not on_accel and not on_cpu:
                if i < j:
                    break  # the hull only grows as i falls: no longer segment fits either
                continue
            charges = ranges(i, j) if i > 0 else []
            for c in range(top + 1):
                here = cost[i][j] + before(c - step, i, charges) if on_accel and c >= step else math.inf
                if on_cpu:
                    here = min(here, cpu[j] + before(c, i, charges))
                best[c][i] = here
        for c in range(top + 1):
            for h in range(j, -1, -1):
                suffix_min[c][j][h] = min(best[c][h], suffix_min[c][j][h + 1])
    return min(suffix_min[c][n - 1][0] for c in range(top + 1))


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


def chain_bound(problem: Problem, calls_per_accelerator: int | None = None, deadline: Deadline | None = None) -> float:
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
        if key in seen or len(path) > MAX_CHAIN_NODES:
            continue
        seen.add(key)
        try:
            best = max(best, _chain_value(problem, path, reach, calls_per_accelerator, deadline))
        except DeadlinePassed:  # a bound from the paths done so far (each is one)
            break
    return best


#: Memory buckets of the memory chain bound (hull sizes are rounded down to ``total memory / buckets``).
MEMORY_BUCKETS = 64


def memory_chain_bound(
    problem: Problem, calls_per_accelerator: int | None = None, deadline: Deadline | None = None
) -> float:
    """The chain bound's segmentation with the accelerators' memory shared by their calls (0 when memory is unlimited).

    On the path by CPU time (the one the CPU nodes lengthen most) and the path by fastest time: the hulls of
    the accelerator segments are disjoint (a node in two hulls would sit on a cycle through the path) and
    all on accelerators, so their sizes add up to at most the accelerators' memory together; each segment
    also fits one device and costs what the chain bound charges it (without the straddlers). A DP over the
    path, the calls used (at most ``k q``) and the memory used, in :data:`MEMORY_BUCKETS` units with every
    hull size rounded down (a relaxation, so the bound holds).
    """
    graph, devices = problem.graph, problem.devices
    kinds = [k for k in devices.accelerators if k.count > 0]
    total = sum(k.count * k.memory for k in kinds)
    if not kinds or not math.isfinite(total) or total <= 0 or devices.cpus == 0:
        return 0.0
    accel, cpu_time = _fastest(problem)
    fastest = {v: min(accel[v], cpu_time[v]) for v in accel}
    if not all(math.isfinite(t) for t in fastest.values()):
        return 0.0
    calls = sum(k.count for k in kinds) * (calls_per_accelerator or len(graph.nodes))
    reach = _reach(problem)
    best = 0.0
    seen: set[tuple[int, ...]] = set()
    for weight in (cpu_time.__getitem__, fastest.__getitem__):
        path = tuple(_longest_path(problem, weight)[1])
        if path in seen or not path or len(path) > MAX_CHAIN_NODES:
            continue
        seen.add(path)
        try:
            best = max(best, _memory_chain_value(problem, path, reach, min(calls, len(path)), total, deadline))
        except DeadlinePassed:
            break
    return best


def _memory_chain_value(problem: Problem, path, reach, calls: int, total: float, deadline: Deadline | None) -> float:
    """The cheapest segmentation of ``path`` with at most ``calls`` accelerator segments whose hulls fit ``total``."""
    kinds = [k for k in problem.devices.accelerators if k.count > 0]
    n = len(path)
    feeds = _feeders(problem, path)
    first_target = {v: k for k, vs in enumerate(feeds) for v in vs}
    charge = [{v: _feeder_cost(problem, v, kind) for v in first_target} for kind in kinds]
    sizes = [[math.inf] * n for _ in range(n)]
    cost = _segment_costs(problem, path, reach, feeds, first_target, charge, sizes)
    cpu = [problem.graph.node_by_id[v].cpu_latency for v in path]
    unit = total / MEMORY_BUCKETS
    # best[j][c][m]: the cheapest cover of p_0 .. p_{j-1} with c segments and m memory units.
    inf = math.inf
    best = [[[inf] * (MEMORY_BUCKETS + 1) for _ in range(calls + 1)] for _ in range(n + 1)]
    best[0][0][0] = 0.0
    for i in range(n):
        if deadline is not None:
            deadline.check()
        here = best[i]
        for c in range(calls + 1):
            row = here[c]
            for m, value in enumerate(row):
                if value == inf:
                    continue
                nxt = best[i + 1][c]
                if value + cpu[i] < nxt[m]:
                    nxt[m] = value + cpu[i]
                if c == calls:
                    continue
                for j in range(i, n):
                    duration = cost[i][j]
                    if duration == inf:  # the hull only grows with j: no longer segment fits either
                        break
                    used = m + int(sizes[i][j] // unit)
                    if used > MEMORY_BUCKETS:
                        break
                    target = best[j + 1][c + 1]
                    if value + duration < target[used]:
                        target[used] = value + duration
    return min(min(row) for row in best[n])


def latency_bounds(
    problem: Problem, calls_per_accelerator: int | None = None, deadline: Deadline | None = None
) -> dict[str, float]:
    """Every combinatorial lower bound on the latency, by name (``critical_path``, ``work``, ``chain``, ``memory_chain``).

    ``calls_per_accelerator`` (``q``) lets the chain bound count accelerator calls (see
    :func:`_chain_value`); ``None``: any number of calls (a bound for every ``q``). When ``deadline``
    passes, the chain bound is the best over the paths finished by then (0 if none).
    """
    return {
        "critical_path": critical_path_bound(problem),
        "work": work_bound(problem),
        "chain": chain_bound(problem, calls_per_accelerator, deadline),
        "memory_chain": memory_chain_bound(problem, calls_per_accelerator, deadline),
    }
