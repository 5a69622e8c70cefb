"""Interval splits for latency: the cheapest cut of a topological order into accelerator calls and CPU nodes.

A start for the latency program (:mod:`placement.ip.latency`) that the greedy and the throughput
DP do not give when memory is tight: which nodes go to CPU cores, and where calls begin and end,
are chosen together. The color classes are taken in one topological order; a DP cuts that order
into consecutive runs, each run either one accelerator call (one call per accelerator, at most
``count`` calls of a kind; the run fits the kind's memory and runs on it) or classes on CPU
cores. Running the runs one after another in that order is a valid schedule (the CPU nodes of a
run on cores of their own, as soon as their inputs are there), so the DP minimises an upper bound
of the latency: the sum of the calls' durations (compute plus every transfer crossing the call,
at the kind's scale) and of the CPU runs' heaviest paths. The evaluator's latency of the split
(runs that do not depend on each other overlap) is at most that sum.

Orders tried (:func:`interval_placements`): the classes by first topological position, a
depth-first order that keeps each branch of a fork together, and the classes by depth (side inputs
such as an embedding feeding the decoder come first, out of the main chain's calls).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from ..model import CPU_KIND, DeviceSlot, Placement, Problem, Stage
from .common import Deadline, DeadlinePassed, color_groups

__all__ = ["calls_interval_placement", "interval_placement", "interval_placements"]

#: Above this many color classes no interval split is made (its table holds ``classes ** 2`` runs).
MAX_INTERVAL_CLASSES = 2000


def _depth_first_order(problem: Problem, groups: Sequence[Sequence[int]]) -> list[int]:
    """Class indices in a topological order that follows one branch to its end (or join) before the next."""
    graph = problem.graph
    group_of = {v: g for g, members in enumerate(groups) for v in members}
    succ: list[list[int]] = [[] for _ in groups]
    indegree = [0] * len(groups)
    seen_edges: set[tuple[int, int]] = set()
    for edge in graph.edges:
        a, b = group_of[edge.source], group_of[edge.target]
        if a != b and (a, b) not in seen_edges:
            seen_edges.add((a, b))
            succ[a].append(b)
            indegree[b] += 1
    stack = [g for g in range(len(groups)) if indegree[g] == 0][::-1]
    order: list[int] = []
    while stack:
        g = stack.pop()
        order.append(g)
        for h in sorted(succ[g], reverse=True):
            indegree[h] -= 1
            if indegree[h] == 0:
                stack.append(h)
    return order


def _crosses(u: int, inside: set[int], succ_in: dict[int, int], outdeg: dict[int, int]) -> bool:
    """Whether ``u``'s output crosses the call holding ``inside`` (``succ_in``: ``u``'s successors inside)."""
    k = succ_in.get(u, 0)
    return k < outdeg[u] if u in inside else k > 0


def _earliest_order(problem: Problem, groups: Sequence[Sequence[int]]) -> list[int]:
    """Class indices by depth (most edges from a source), then first position: side inputs come early, so a
    call along the main chain need not hold them."""
    graph = problem.graph
    depth: dict[int, int] = {}
    for v in graph.topological_order:
        depth[v] = 1 + max((depth[u] for u in graph.predecessors[v]), default=-1)
    return sorted(range(len(groups)), key=lambda g: (max(depth[v] for v in groups[g]), g))


def _run_costs(
    problem: Problem, groups: Sequence[Sequence[int]], order: Sequence[int], kind, deadline: Deadline, sizes=None
):
    """``cost[i][j]``: duration of one call of ``kind`` holding the classes ``order[i .. j]`` (missing: cannot);
    ``sizes[i][j]`` (when ``sizes`` is a list) their memory."""
    graph, devices = problem.graph, problem.devices
    scale = devices.transfer_scale(kind)
    outdeg = {v: len(graph.successors[v]) for v in graph.node_by_id}
    cost: list[dict[int, float]] = []
    for i in range(len(order)):
        deadline.check()
        row: dict[int, float] = {}
        size_row: dict[int, float] = {}
        inside: set[int] = set()
        succ_in: dict[int, int] = {}
        crossing = compute = size = 0.0

        for j in range(i, len(order)):
            members = groups[order[j]]
            if not all(graph.node_by_id[v].runs_on(kind) for v in members):
                break
            size += sum(graph.node_by_id[v].size for v in members)
            if size > kind.memory:
                break
            for v in members:
                touched = {v, *graph.predecessors[v]}
                crossing -= sum(graph.output_cost[u] for u in touched if _crosses(u, inside, succ_in, outdeg))
                inside.add(v)
                for u in graph.predecessors[v]:
                    succ_in[u] = succ_in.get(u, 0) + 1
                crossing += sum(graph.output_cost[u] for u in touched if _crosses(u, inside, succ_in, outdeg))
                compute += graph.node_by_id[v].latency_on(kind)
            row[j] = compute + scale * crossing
            if sizes is not None:
                size_row[j] = size
        cost.append(row)
        if sizes is not None:
            sizes.append(size_row)
    return cost


def _cpu_run_costs(problem: Problem, groups: Sequence[Sequence[int]], order: Sequence[int], deadline: Deadline):
    """``cost[i][j]``: how long the classes ``order[i .. j]`` take on CPU cores (unbounded): their heaviest path."""
    graph = problem.graph
    cost: list[dict[int, float]] = []
    for i in range(len(order)):
        deadline.check()
        row: dict[int, float] = {}
        finish: dict[int, float] = {}
        longest = 0.0
        for j in range(i, len(order)):
            for v in groups[order[j]]:
                ready = max((finish[u] for u in graph.predecessors[v] if u in finish), default=0.0)
                finish[v] = ready + graph.node_by_id[v].cpu_latency
                longest = max(longest, finish[v])
            row[j] = longest
        cost.append(row)
    return cost


def interval_placement(
    problem: Problem, order: Sequence[int] | None = None, deadline: Deadline | None = None
) -> Placement | None:
    """The cheapest interval split of ``order`` (indices into the color classes; default: by first position).

    Returns None when no split exists (a class with nowhere to run), or when ``deadline`` passes.
    """
    graph, devices = problem.graph, problem.devices
    deadline = deadline or Deadline()
    groups = color_groups(graph)
    if len(groups) > MAX_INTERVAL_CLASSES:
        return None
    order = list(range(len(groups))) if order is None else list(order)
    kinds = [k for k in devices.accelerators if k.count > 0]
    n = len(order)
    try:
        costs = [_run_costs(problem, groups, order, kind, deadline) for kind in kinds]
        cpu = _cpu_run_costs(problem, groups, order, deadline) if devices.cpus > 0 else [{} for _ in order]
    except DeadlinePassed:
        return None
    # best[j][used]: the cheapest split of order[:j] using ``used`` calls of each kind (a tuple).
    start = tuple(0 for _ in kinds)
    best: list[dict[tuple[int, ...], tuple[float, tuple | None]]] = [{} for _ in range(n + 1)]
    best[0][start] = (0.0, None)

    def offer(j: int, used: tuple[int, ...], value: float, back: tuple) -> None:
        if value < best[j].get(used, (math.inf, None))[0]:
            best[j][used] = (value, back)

    for i in range(n):
        if deadline.passed:
            return None
        for used, (value, _) in list(best[i].items()):
            for j, duration in cpu[i].items():
                offer(j + 1, used, value + duration, (i, used, None))
            for kk, kind in enumerate(kinds):
                if used[kk] >= kind.count:
                    continue
                more = used[:kk] + (used[kk] + 1,) + used[kk + 1 :]
                for j, duration in costs[kk][i].items():
                    offer(j + 1, more, value + duration, (i, used, kk))
    if not best[n]:
        return None
    used = min(best[n], key=lambda u: best[n][u][0])
    runs: list[tuple[int, int, int | None]] = []
    j = n
    while j > 0:
        _, back = best[j][used]
        i, used, kk = back  # type: ignore[misc]
        runs.append((i, j, kk))
        j = i
    return _placement(problem, groups, order, runs[::-1], kinds)


def _placement(problem: Problem, groups, order, runs, kinds) -> Placement:
    """Runs (first, end, kind index or None for CPU cores) as a placement: each kind's calls on its slots in order."""
    slots = {kind.name: [s for s in problem.devices.slots() if s.kind == kind.name] for kind in kinds}
    taken = {kind.name: 0 for kind in kinds}
    stages = []
    cpu_nodes: list[int] = []
    for i, j, kk in runs:
        nodes = tuple(v for g in order[i:j] for v in groups[g])
        if kk is None:
            cpu_nodes.extend(nodes)
            continue
        name = kinds[kk].name
        stages.append(Stage(slots[name][taken[name]], nodes))
        taken[name] += 1
    if cpu_nodes:
        stages.append(Stage(DeviceSlot(CPU_KIND, 0), tuple(cpu_nodes)))
    return Placement(tuple(stages))


#: Memory units per accelerator of the several-calls split (run sizes are rounded up: a split it finds fits).
CALL_MEMORY_UNITS = 64


def calls_interval_placement(
    problem: Problem, n_calls: int, order: Sequence[int] | None = None, deadline: Deadline | None = None
) -> Placement | None:
    """The cheapest interval split with up to ``n_calls`` calls per accelerator (one accelerator kind).

    As :func:`interval_placement`, but the runs on accelerators are given to the accelerators in order,
    each taking up to ``n_calls`` runs (its calls, in that order) whose sizes, rounded up to
    :data:`CALL_MEMORY_UNITS` units of its memory, fit it. None when there are several kinds, no CPU
    cores, unlimited memory, no split, or ``deadline`` passes.
    """
    graph, devices = problem.graph, problem.devices
    deadline = deadline or Deadline()
    kinds = [k for k in devices.accelerators if k.count > 0]
    groups = color_groups(graph)
    if len(kinds) != 1 or devices.cpus == 0 or not math.isfinite(kinds[0].memory) or len(groups) > MAX_INTERVAL_CLASSES:
        return None
    kind, units = kinds[0], CALL_MEMORY_UNITS
    order = list(range(len(groups))) if order is None else list(order)
    n = len(order)
    sizes: list[dict[int, float]] = []
    try:
        costs = _run_costs(problem, groups, order, kind, deadline, sizes)
        cpu = _cpu_run_costs(problem, groups, order, deadline)
    except DeadlinePassed:
        return None
    unit = kind.memory / units
    # best[i][(a, c, m)]: cheapest cover of order[:i] with accelerator a current, c calls and m units on it.
    best: list[dict[tuple[int, int, int], tuple[float, tuple | None]]] = [{} for _ in range(n + 1)]
    best[0][(-1, n_calls, units)] = (0.0, None)

    def offer(j: int, state: tuple[int, int, int], value: float, back: tuple) -> None:
        if value < best[j].get(state, (math.inf, None))[0]:
            best[j][state] = (value, back)

    for i in range(n):
        if deadline.passed:
            return None
        for state, (value, _) in _pareto(best[i]):
            a, c, m = state
            for j, duration in cpu[i].items():
                offer(j + 1, state, value + duration, (i, state, False))
            for j, duration in costs[i].items():
                need = math.ceil(sizes[i][j] / unit - 1e-9)
                if c < n_calls and m + need <= units:
                    offer(j + 1, (a, c + 1, m + need), value + duration, (i, state, True))
                if a + 1 < kind.count and need <= units:
                    offer(j + 1, (a + 1, 1, need), value + duration, (i, state, True))
                if need > units:
                    break
    if not best[n]:
        return None
    state = min(best[n], key=lambda k: best[n][k][0])
    runs: list[tuple[int, int, int | None]] = []
    j = n
    while j > 0:
        _, back = best[j][state]
        i, before, on_accel = back  # type: ignore[misc]
        runs.append((i, j, state[0] if on_accel else None))
        state, j = before, i
    return _calls_placement(problem, groups, order, runs[::-1], kind)


def _pareto(states: dict) -> list:
    """The states no other state with the same accelerator and calls beats with less memory and less time."""
    out = []
    lowest: dict[tuple[int, int], float] = {}
    for state, entry in sorted(states.items(), key=lambda item: item[0]):
        key = state[:2]
        if entry[0] < lowest.get(key, math.inf):
            lowest[key] = entry[0]
            out.append((state, entry))
    return out


def _calls_placement(problem: Problem, groups, order, runs, kind) -> Placement:
    """Runs (first, end, accelerator index or None for CPU cores) as a placement with calls in run order."""
    slots = [s for s in problem.devices.slots() if s.kind == kind.name]
    calls: dict[int, list[tuple[int, ...]]] = {}
    cpu_nodes: list[int] = []
    for i, j, a in runs:
        nodes = tuple(v for g in order[i:j] for v in groups[g])
        if a is None:
            cpu_nodes.extend(nodes)
        else:
            calls.setdefault(a, []).append(nodes)
    stages = [
        Stage(slots[a], tuple(v for part in parts for v in part), tuple(parts) if len(parts) > 1 else None)
        for a, parts in sorted(calls.items())
    ]
    if cpu_nodes:
        stages.append(Stage(DeviceSlot(CPU_KIND, 0), tuple(cpu_nodes)))
    return Placement(tuple(stages))


def interval_placements(problem: Problem, deadline: Deadline | None = None, n_calls: int = 1) -> list[Placement]:
    """Interval splits of the three orders (see the module docstring), each given an equal share of ``deadline``;
    with ``n_calls`` above 1, also the splits with that many calls per accelerator."""
    deadline = deadline or Deadline()
    groups = color_groups(problem.graph)
    out = []
    orders = (None, _depth_first_order(problem, groups), _earliest_order(problem, groups))
    # With several calls, their splits first (they can only beat the one-call splits), the depth order first.
    tries = [(order, n_calls) for order in orders[::-1] if n_calls > 1] + [(order, 1) for order in orders]
    for k, (order, q) in enumerate(tries):
        share = deadline.share(0.5 if q > 1 and k == 0 else 1.0 / (len(tries) - k))
        found = (
            interval_placement(problem, order, share) if q == 1 else calls_interval_placement(problem, q, order, share)
        )
        if found is not None and found not in out:
            out.append(found)
    return out
