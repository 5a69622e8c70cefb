"""The paper's baselines and a local search, for side-by-side comparisons.

* ``one_accelerator`` - every node on one accelerator (the paper's single-device figure);
* ``greedy_latency`` - the paper's greedy for latency: groups that must stay together, in
  topological order, fill the accelerators one after another up to memory; what does not fit
  (or cannot run on an accelerator) goes to the CPU;
* ``pipedream`` - PipeDream-style: linearise the groups into a chain in topological order and
  split the chain optimally (the DP over the chain of prefixes, with the full model's costs);
* ``local_search`` - seeded random restarts moving color-class groups between devices.

Every function returns a :class:`~placement.model.Result` whose objective is the evaluator's
value (:func:`placement.evaluate.evaluate`) of the returned placement; status "feasible"
(a valid placement, optimality not claimed) or "infeasible" with a reason.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Sequence

import networkx as nx

from .errors import PlacementError
from .evaluate import evaluate
from .exact.ideals import contract
from .model import CPU_KIND, DeviceSlot, Objective, Placement, Problem, Result, Stage, Status, make_result


def _infeasible(
    method: str, started: float, reason: str, objective_kind: str = "throughput", stats: dict | None = None
) -> Result:
    """A heuristic's Result when it found no placement (``reason`` says why)."""
    return make_result(
        method, Status.INFEASIBLE, started=started, objective_kind=objective_kind, reason=reason, stats=stats or {}
    )


def _done(
    method: str,
    problem: Problem,
    placement: Placement,
    started: float,
    objective_kind: str,
    stats: dict | None = None,
) -> Result:
    """A heuristic's Result for ``placement``, valued by the evaluator ("infeasible" if it breaks a rule)."""
    stats = dict(stats or {})
    seconds = time.perf_counter() - started
    evaluation = evaluate(problem, placement)
    if not evaluation.feasible:
        return make_result(
            method,
            Status.INFEASIBLE,
            seconds=seconds,
            objective_kind=objective_kind,
            reason="; ".join(evaluation.violations[:3]),
            stats=stats,
        )
    value = evaluation.max_load if objective_kind == Objective.THROUGHPUT else evaluation.latency
    stats.setdefault("max_load", evaluation.max_load)
    stats.setdefault("latency", evaluation.latency)
    return make_result(
        method,
        Status.FEASIBLE,
        seconds=seconds,
        objective=value,
        placement=placement,
        objective_kind=objective_kind,
        stats=stats,
    )


# ----------------------------------------------------------------------------- one accelerator


def one_accelerator(problem: Problem, ignore_memory: bool = False) -> Result:
    """Everything on one accelerator (nodes it cannot run on go to a CPU core).

    The kind chosen is the one with the smallest load among kinds that can hold the graph.

    Parameters
    ----------
    problem : Problem
    ignore_memory : bool
        Report the load even when the graph does not fit one accelerator's memory (the paper's
        figure); the result then has status "infeasible" unless memory fits, and the load
        ignoring memory is given in ``stats["load_ignoring_memory"]`` either way.

    Returns
    -------
    Result
        Method ``"one-accelerator"``, objective kind ``"throughput"``.
    """
    started, method = time.perf_counter(), "one-accelerator"
    graph, devices = problem.graph, problem.devices
    best = None
    notes = []
    for kind in devices.accelerators:
        if kind.count == 0:
            continue
        on_cpu = tuple(node.id for node in graph.nodes if not node.runs_on(kind))
        if on_cpu and devices.cpus == 0:
            notes.append(f"kind {kind.name!r}: {len(on_cpu)} node(s) cannot run on it and there are no CPU cores")
            continue
        nodes = tuple(node.id for node in graph.nodes if node.runs_on(kind))
        stages = [Stage(DeviceSlot(kind.name, 0), nodes)]
        if on_cpu:
            stages.append(Stage(DeviceSlot(CPU_KIND, 0), on_cpu))
        placement = Placement(tuple(stages))
        evaluation = evaluate(problem, placement)
        memory = sum(graph.node_by_id[n].size for n in nodes)
        fits = memory <= kind.memory
        if not fits:
            notes.append(
                f"kind {kind.name!r}: the graph needs {memory:,.0f} bytes, one device holds {kind.memory:,.0f}"
            )
        key = (not fits, evaluation.max_load)
        if best is None or key < best[0]:
            best = (key, placement, evaluation.max_load, fits)
    if best is None:
        return _infeasible(
            method, started, "no accelerator kind can run the graph: " + "; ".join(notes or ["no accelerators"])
        )
    _, placement, load, fits = best
    stats = {"load_ignoring_memory": load}
    if not fits:
        reason = "the graph does not fit one accelerator: " + "; ".join(notes)
        if ignore_memory:
            return make_result(
                method,
                Status.INFEASIBLE,
                started=started,
                objective=load,
                placement=placement,
                reason=reason + f" (load ignoring memory: {load:g})",
                stats=stats,
            )
        return _infeasible(method, started, reason + f" (load ignoring memory: {load:g})", stats=stats)
    return _done(method, problem, placement, started, "throughput", stats=stats)


# ----------------------------------------------------------------------------- greedy latency


def greedy_latency(problem: Problem, order: str = "paper") -> Result:
    """The paper's greedy for latency.

    Groups (contracted color classes, :func:`placement.exact.ideals.contract`) are taken in
    topological order and put on the current accelerator while its memory lasts, then on the
    next one (kinds in inventory order); a group that cannot run on the current accelerator's
    kind, or that fits on no remaining accelerator, goes to a CPU core.

    Parameters
    ----------
    order : {"paper", "lexicographic"}
        Tie-break of the topological order of the groups: ``"paper"`` takes, among the ready
        groups, the one holding the largest node id (this reproduces the reference figures
        100.219 and 416.204 of the paper's latency workloads); ``"lexicographic"`` the one
        holding the smallest.

    Returns
    -------
    Result
        Method ``"greedy-latency"``, objective kind ``"latency"`` (infeasible when a group
        needs the CPU and there is none).
    """
    started, method = time.perf_counter(), "greedy-latency"
    graph, devices = problem.graph, problem.devices
    if order not in ("paper", "lexicographic"):
        raise PlacementError(f"unknown greedy order {order!r}; choose 'paper' or 'lexicographic'")
    contracted = contract(graph)
    order_graph = nx.DiGraph()
    order_graph.add_nodes_from(range(contracted.count))
    order_graph.add_edges_from(contracted.order_edges)
    sign = -1 if order == "paper" else 1
    sequence = nx.lexicographical_topological_sort(order_graph, key=lambda g: sign * max(contracted.members[g]))
    groups = [contracted.members[g] for g in sequence]
    accels = [(slot, devices.kind(slot.kind)) for slot in devices.slots() if not slot.is_cpu]
    current = 0
    used = 0.0
    assignment: dict[int, DeviceSlot] = {}
    cpu_nodes: list[int] = []
    for members in groups:
        size = sum(graph.node_by_id[n].size for n in members)
        placed = False
        while current < len(accels):
            slot, kind = accels[current]
            if not all(graph.node_by_id[n].runs_on(kind) for n in members):
                break
            if used + size <= kind.memory:
                for n in members:
                    assignment[n] = slot
                used += size
                placed = True
                break
            if used == 0.0:  # does not fit even an empty device of this kind
                break
            current += 1
            used = 0.0
        if not placed:
            if devices.cpus == 0:
                label = graph.node_by_id[members[0]].label
                return _infeasible(
                    method, started, f"node {label} fits no remaining accelerator and there are no CPU cores", "latency"
                )
            cpu_nodes.extend(members)
    stages = []
    for slot, _ in accels:
        nodes = tuple(n for n, s in assignment.items() if s == slot)
        if nodes:
            stages.append(Stage(slot, nodes))
    if cpu_nodes:
        stages.append(Stage(DeviceSlot(CPU_KIND, 0), tuple(cpu_nodes)))
    return _done(method, problem, Placement(tuple(stages)), started, "latency")


# ----------------------------------------------------------------------------- PipeDream-style chain DP


def pipedream(problem: Problem) -> Result:
    """PipeDream-style split: the optimal split of the groups linearised in topological order.

    The groups of :func:`placement.exact.ideals.contract` are numbered topologically; only prefixes
    of that order are cut points, so every stage is a consecutive run of the chain (the
    full model's loads, memory and device kinds are used for each stage).

    Returns
    -------
    Result
        Method ``"pipedream"``, objective kind ``"throughput"``; stages in pipeline order.
    """
    from .exact.dp import solve_chain  # the shared exact kernel over one topological chain

    started, method = time.perf_counter(), "pipedream"
    groups = contract(problem.graph)
    value, placement = solve_chain(problem, groups)
    if placement is None:
        return _infeasible(method, started, "no split of the topological chain fits the memory and support rules")
    return _done(method, problem, placement, started, "throughput", stats={"groups": groups.count})


# ----------------------------------------------------------------------------- local search


class _State:
    """Assignment of groups to devices with incrementally maintained compute and communication."""

    def __init__(self, problem: Problem, groups: Sequence[Sequence[int]], slots: Sequence[DeviceSlot]):
        graph, devices = problem.graph, problem.devices
        self.graph = graph
        self.groups = groups
        self.slots = slots
        self.kinds = [None if s.is_cpu else devices.kind(s.kind) for s in slots]
        # CPU cores: 0 unless devices.cpu_bandwidth is set (then they pay communication too).
        self.scale = [devices.cpu_transfer_scale if k is None else devices.transfer_scale(k) for k in self.kinds]
        self.cap = [math.inf if k is None else k.memory for k in self.kinds]
        self.overlap = devices.overlap
        self.size = [sum(graph.node_by_id[n].size for n in m) for m in groups]
        self.compute = [[self._compute(m, k) for k in self.kinds] for m in groups]
        self.allowed = [
            [i for i in range(len(slots)) if math.isfinite(self.compute[g][i]) and self.size[g] <= self.cap[i]]
            for g in range(len(groups))
        ]
        self.cost = graph.output_cost
        self.succ = graph.successors
        # Nodes whose "crosses the boundary" status can change when group g moves.
        self.affected = [sorted({n for n in m} | {p for n in m for p in graph.predecessors[n]}) for m in groups]

    def _compute(self, members, kind) -> float:
        if kind is None:
            return sum(self.graph.node_by_id[n].cpu_latency for n in members)
        if not all(self.graph.node_by_id[n].runs_on(kind) for n in members):
            return math.inf
        return sum(self.graph.node_by_id[n].latency_on(kind) for n in members)

    def reset(self, assign: list[int]) -> None:
        self.assign = list(assign)
        self.members: list[set[int]] = [set() for _ in self.slots]
        self.device = {}
        for g, i in enumerate(assign):
            self.members[i].add(g)
            for n in self.groups[g]:
                self.device[n] = i
        self.memory = [sum(self.size[g] for g in self.members[i]) for i in range(len(self.slots))]
        self.comp = [sum(self.compute[g][i] for g in self.members[i]) for i in range(len(self.slots))]
        self.comm = [0.0] * len(self.slots)
        for u, targets in self.succ.items():
            if not self.cost[u]:
                continue
            for i in {self.device[u]} | {self.device[w] for w in targets}:
                if self._counted(u, i, None, -1):
                    self.comm[i] += self.cost[u]
        self.loads = [self.combine(i, self.comp[i], self.comm[i]) for i in range(len(self.slots))]

    def combine(self, i: int, compute: float, comm: float) -> float:
        if self.kinds[i] is None and self.scale[i] == 0:
            return compute
        comm *= self.scale[i]
        return max(compute, comm) if self.overlap else compute + comm

    def _counted(self, u: int, i: int, moving: set | None, target: int) -> bool:
        """Whether u's output crosses device i's boundary (with the nodes in ``moving`` on ``target``)."""
        device = self.device

        def on(n):
            return (target if moving is not None and n in moving else device[n]) == i

        inside = on(u)
        return any(on(w) != inside for w in self.succ[u])

    def comm_delta(self, i: int, g: int, target: int) -> float:
        """Change of device i's (unscaled) communication when group g moves to ``target``."""
        moving = set(self.groups[g])
        delta = 0.0
        for u in self.affected[g]:
            if not self.cost[u]:
                continue
            before = self._counted(u, i, None, -1)
            after = self._counted(u, i, moving, target)
            if before != after:
                delta += self.cost[u] if after else -self.cost[u]
        return delta

    def move(self, g: int, j: int, comm_i: float, comm_j: float) -> None:
        i = self.assign[g]
        self.members[i].discard(g)
        self.members[j].add(g)
        self.assign[g] = j
        for n in self.groups[g]:
            self.device[n] = j
        self.memory[i] -= self.size[g]
        self.memory[j] += self.size[g]
        self.comp[i] -= self.compute[g][i]
        self.comp[j] += self.compute[g][j]
        self.comm[i], self.comm[j] = comm_i, comm_j
        self.loads[i] = self.combine(i, self.comp[i], comm_i)
        self.loads[j] = self.combine(j, self.comp[j], comm_j)

    def key(self, loads: Sequence[float]) -> tuple[float, float]:
        return max(loads), sum(v * v for v in loads)


def _random_assignment(state: _State, rng: random.Random) -> list[int] | None:
    order = list(range(len(state.groups)))
    rng.shuffle(order)
    free = list(state.cap)
    assign = [-1] * len(state.groups)
    for g in sorted(order, key=lambda g: -state.size[g]) if rng.random() < 0.5 else order:
        options = [i for i in state.allowed[g] if state.size[g] <= free[i]]
        if not options:
            return None
        i = rng.choice(options)
        assign[g] = i
        free[i] -= state.size[g]
    return assign


def _descend(state: _State, deadline: float, max_moves: int) -> None:
    """Best-improvement moves of single groups off the busiest devices until none improves."""
    n_dev = len(state.slots)
    for _ in range(max_moves):
        if time.perf_counter() > deadline:
            return
        current = state.key(state.loads)
        top = max(state.loads)
        best = None
        for i in range(n_dev):
            if state.loads[i] < top * (1 - 1e-12):
                continue
            for g in list(state.members[i]):
                for j in state.allowed[g]:
                    if j == i or state.memory[j] + state.size[g] > state.cap[j]:
                        continue
                    comm_i = state.comm[i] + state.comm_delta(i, g, j)
                    comm_j = state.comm[j] + state.comm_delta(j, g, j)
                    load_i = state.combine(i, state.comp[i] - state.compute[g][i], comm_i)
                    load_j = state.combine(j, state.comp[j] + state.compute[g][j], comm_j)
                    loads = list(state.loads)
                    loads[i], loads[j] = load_i, load_j
                    key = state.key(loads)
                    if key < current and (best is None or key < best[0]):
                        best = (key, g, j, comm_i, comm_j)
        if best is None:
            return
        _, g, j, comm_i, comm_j = best
        state.move(g, j, comm_i, comm_j)


def local_search(
    problem: Problem,
    seed: int = 0,
    restarts: int = 10,
    time_limit: float | None = 60.0,
    max_moves: int = 10_000,
) -> Result:
    """Seeded local search over color-class groups (not restricted to contiguous splits).

    Each restart draws a random memory-feasible assignment of groups to devices, then moves
    single groups off the busiest device while the (max-load, sum of squared loads) pair
    improves. Restart 0 starts from the PipeDream-style split when it exists.

    Parameters
    ----------
    seed : int
        Seed of the random generator (results are reproducible).
    restarts : int
        Number of starting points.
    time_limit : float, optional
        Stop starting new restarts (and moving) after this many seconds.

    Returns
    -------
    Result
        Method ``"local-search"``, objective kind ``"throughput"``.
    """
    started, method = time.perf_counter(), "local-search"
    if isinstance(restarts, bool) or not isinstance(restarts, int) or restarts < 1:
        raise PlacementError(f"restarts must be a positive integer (got {restarts!r})")
    deadline = started + (time_limit if time_limit is not None else math.inf)
    graph = problem.graph
    groups = graph.color_groups  # color classes (singletons otherwise)
    slots = problem.devices.slots()
    state = _State(problem, groups, slots)
    for g, options in enumerate(state.allowed):
        if not options:
            label = graph.node_by_id[groups[g][0]].label
            return _infeasible(
                method, started, f"node {label} fits no device (unsupported or larger than memory, no CPU cores)"
            )
    rng = random.Random(seed)
    best_key, best_assign = None, None
    starts = []
    chain = pipedream(problem)
    if chain.ok and chain.placement is not None:
        index = {slot: i for i, slot in enumerate(slots)}
        device_of = chain.placement.device_of
        starts.append([index[device_of[m[0]]] for m in groups])
    tried = 0
    for r in range(restarts):
        if time.perf_counter() > deadline and best_assign is not None:
            break
        assign = starts[r] if r < len(starts) else None
        attempts = 0
        while assign is None and attempts < 20:
            assign = _random_assignment(state, rng)
            attempts += 1
        if assign is None:
            continue
        tried += 1
        state.reset(assign)
        _descend(state, deadline, max_moves)
        key = state.key(state.loads)
        if best_key is None or key < best_key:
            best_key, best_assign = key, list(state.assign)
    if best_assign is None:
        return _infeasible(method, started, "no memory-feasible assignment found (random starts failed)")
    assignment = {n: slots[best_assign[g]] for g, members in enumerate(groups) for n in members}
    placement = Placement.from_assignment(assignment, order=slots)
    return _done(method, problem, placement, started, "throughput", stats={"restarts": tried, "seed": seed})
