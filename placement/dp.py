"""The exact dynamic program over ideals for the optimal contiguous split (throughput).

Table (axes): ``best[i, s]`` is the smallest max-load of any contiguous split of ideal ``i``
using *at most* the device counts encoded by state ``s`` - a mixed-radix number whose digit
``d`` counts devices of accelerator kind ``d`` (``d < T``) or CPU cores (``d == T``).
``best[0, s] = 0`` (the empty ideal), and the answer is ``best[full, all devices]``.

Transition: a stage is ``J \\ I`` for ideals ``I <= J``; it runs on one more device of some
type. For each ``I`` (in order of size, so ``best[I]`` is final) a depth-first search walks
the supersets ``J`` of ``I`` through the lattice's cover edges, keeping the stage's
compute, memory and communication up to date node by node (no table of pairs is stored).
A search branch stops once the stage is too slow on every device type even without
communication, or breaks memory/support everywhere: both only grow with ``J``. "Too slow"
is measured against an upper bound from the same DP restricted to one topological order
(a chain of ideals), so no optimal split is cut. Once ``best[I]`` is final it is closed
under "more devices never hurt", and only states that beat every state with one device
fewer are extended (the others are dominated).

Before the search, groups that can be merged with a neighbour without raising any load are
merged (:func:`placement.ideals.reduce_groups`); their memory is first ignored (a
relaxation), then the split is checked with the real sizes, and re-solved without the
relaxation when memory binds. The status is "optimal" only when that check proves it.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, replace

import numpy as np
from numba import njit

from .errors import TooManyIdealsError
from .ideals import DEFAULT_MAX_IDEALS, Groups, IdealLattice, contract, enumerate_ideals, reduce_groups
from .model import CPU_KIND, DeviceSlot, Placement, Problem, Result, Stage

#: parent_type values >= INHERIT mean "same value as the state with one device of type (value - INHERIT) fewer".
INHERIT = 64


@njit(cache=True)
def _dp_kernel(up_start, up_group, up_target, n_ideals,
               group_start, group_nodes, pred_start, preds, node_cost, out_degree,
               kind_compute, kind_blocked, kind_memory_cap, kind_comm_scale, cpu_compute, cpu_comm_scale, group_memory,
               next_state, prev_state, n_states, overlap, upper_bound, count_only):
    """Fill the DP table; see the module docstring for its axes.

    Returns (best, parent_ideal, parent_type, pairs): best[n_ideals, n_states]; the parent
    arrays give, per cell, the ideal I of the last stage and its device type.

    The stage J \\ I is maintained incrementally: ``in_stage[u]`` marks its nodes and
    ``stage_succ[u]`` counts u's successors inside it, so that u is counted in the stage's
    communication iff (u inside and some successor outside) or (u outside and some
    successor inside). Every push of the search adds one group, every pop removes it.
    (The toggle is written inline: as a separate jitted function it ran ~10x slower.)

    ``cpu_comm_scale`` (0.0: CPU cores pay no communication) scales the stage's communication
    on a CPU core; the search is pruned on CPU compute only (monotone in J), while the load
    compared with the bound and relaxed into the table is the full one.
    """
    n_kinds = kind_compute.shape[0]
    n_nodes = node_cost.shape[0]
    has_cpu = next_state[n_kinds, 0] >= 0
    best = np.full((n_ideals, n_states), np.inf)
    parent_ideal = np.full((n_ideals, n_states), -1, dtype=np.int32)
    parent_type = np.full((n_ideals, n_states), -1, dtype=np.int8)
    for s in range(n_states):
        best[0, s] = 0.0
    stamp = np.full(n_ideals, -1, dtype=np.int64)
    in_stage = np.zeros(n_nodes, dtype=np.int64)
    stage_succ = np.zeros(n_nodes, dtype=np.int64)
    stack_ideal = np.empty(n_ideals + 1, dtype=np.int64)
    stack_pos = np.empty(n_ideals + 1, dtype=np.int64)
    stack_group = np.empty(n_ideals + 1, dtype=np.int64)
    active = np.empty(n_states, dtype=np.int64)
    compute = np.zeros(n_kinds)
    blocked = np.zeros(n_kinds, dtype=np.int64)  # nodes in the stage that cannot run on kind t
    loads = np.zeros(n_kinds)
    pairs = 0
    n_types = next_state.shape[0]
    for i in range(n_ideals):
        # best[i] is final: close it under "more devices never hurt" (states in increasing
        # order, so inheritance chains resolve), then push only from states that beat every
        # state with one device fewer - pushes from the others are dominated.
        n_active = 0
        for s in range(n_states):
            for d in range(n_types):
                back = prev_state[d, s]
                if back >= 0 and best[i, back] < best[i, s]:
                    best[i, s] = best[i, back]
                    parent_ideal[i, s] = -1
                    parent_type[i, s] = INHERIT + d
            if best[i, s] <= upper_bound:
                dominated = False
                for d in range(n_types):
                    back = prev_state[d, s]
                    if back >= 0 and best[i, back] <= best[i, s]:
                        dominated = True
                if not dominated:
                    active[n_active] = s
                    n_active += 1
        if n_active == 0 and not count_only:
            continue
        # Depth-first search over supersets J of I; the stage is J \\ I.
        depth = 0
        stack_ideal[0] = i
        stack_pos[0] = up_start[i]
        stack_group[0] = -1
        stamp[i] = i
        for t in range(n_kinds):
            compute[t] = 0.0
            blocked[t] = 0
        cpu = 0.0
        memory = 0.0
        comm = 0.0
        while depth >= 0:
            top = stack_ideal[depth]
            j = -1
            if stack_pos[depth] < up_start[top + 1]:
                e = stack_pos[depth]
                stack_pos[depth] = e + 1
                j = up_target[e]
                if stamp[j] == i:
                    continue
                stamp[j] = i
                g = up_group[e]
                step = 1
            else:
                g = stack_group[depth]
                depth -= 1
                if g < 0:
                    continue
                step = -1
            # ---- toggle group g into (step=1) or out of (step=-1) the stage
            for k in range(group_start[g], group_start[g + 1]):
                x = group_nodes[k]
                c = stage_succ[x]
                if in_stage[x]:
                    if c < out_degree[x]:
                        comm -= node_cost[x]
                elif c > 0:
                    comm -= node_cost[x]
                in_stage[x] = 1 if step == 1 else 0
                if in_stage[x]:
                    if c < out_degree[x]:
                        comm += node_cost[x]
                elif c > 0:
                    comm += node_cost[x]
                for m in range(pred_start[x], pred_start[x + 1]):
                    u = preds[m]
                    c = stage_succ[u]
                    inside = in_stage[u]
                    if inside:
                        if c < out_degree[u]:
                            comm -= node_cost[u]
                    elif c > 0:
                        comm -= node_cost[u]
                    c += step
                    stage_succ[u] = c
                    if inside:
                        if c < out_degree[u]:
                            comm += node_cost[u]
                    elif c > 0:
                        comm += node_cost[u]
            for t in range(n_kinds):
                compute[t] += step * kind_compute[t, g]
                blocked[t] += step * kind_blocked[t, g]
            cpu += step * cpu_compute[g]
            memory += step * group_memory[g]
            if step == -1:
                continue
            # ---- the pair (I, J): relax best[J, .] from best[I, .]
            pairs += 1
            alive = False
            for t in range(n_kinds):
                loads[t] = np.inf
                if next_state[t, 0] >= 0 and blocked[t] == 0 and compute[t] <= upper_bound \
                        and memory <= kind_memory_cap[t]:
                    alive = True
                    scaled = comm * kind_comm_scale[t]
                    if scaled < 0.0:
                        scaled = 0.0  # float noise of the incremental sum
                    if overlap:
                        loads[t] = compute[t] if compute[t] > scaled else scaled
                    else:
                        loads[t] = compute[t] + scaled
            cpu_ok = has_cpu and cpu <= upper_bound
            cpu_load = cpu
            if cpu_ok:
                alive = True
                if cpu_comm_scale > 0.0:
                    scaled = comm * cpu_comm_scale
                    if scaled < 0.0:
                        scaled = 0.0  # float noise of the incremental sum
                    if overlap:
                        cpu_load = cpu if cpu > scaled else scaled
                    else:
                        cpu_load = cpu + scaled
                    cpu_ok = cpu_load <= upper_bound
            if alive and not count_only:
                for a in range(n_active):
                    s = active[a]
                    base = best[i, s]
                    for t in range(n_kinds):
                        nxt = next_state[t, s]
                        if nxt >= 0 and loads[t] <= upper_bound:
                            value = base if base > loads[t] else loads[t]
                            if value < best[j, nxt]:
                                best[j, nxt] = value
                                parent_ideal[j, nxt] = i
                                parent_type[j, nxt] = t
                    if cpu_ok:
                        nxt = next_state[n_kinds, s]
                        if nxt >= 0:
                            value = base if base > cpu_load else cpu_load
                            if value < best[j, nxt]:
                                best[j, nxt] = value
                                parent_ideal[j, nxt] = i
                                parent_type[j, nxt] = n_kinds
            # Push J; a dead stage is pushed with no edges left so that the pop undoes it.
            depth += 1
            stack_ideal[depth] = j
            stack_group[depth] = g
            stack_pos[depth] = up_start[j] if alive else up_start[j + 1]
    return best, parent_ideal, parent_type, pairs


@dataclass(frozen=True)
class _Arrays:
    """The numeric inputs of the kernel for one (problem, groups) pair."""

    group_start: np.ndarray
    group_nodes: np.ndarray
    pred_start: np.ndarray
    preds: np.ndarray
    node_cost: np.ndarray
    out_degree: np.ndarray
    kind_compute: np.ndarray  # [kind, group]: latency of the group's runnable nodes on the kind
    kind_blocked: np.ndarray  # [kind, group]: number of the group's nodes that cannot run on the kind
    kind_memory_cap: np.ndarray
    kind_comm_scale: np.ndarray
    cpu_compute: np.ndarray
    group_memory: np.ndarray
    next_state: np.ndarray  # [device type, state] -> state with one more device of that type, or -1
    prev_state: np.ndarray  # [device type, state] -> state with one device of that type fewer, or -1
    n_states: int
    cpu_comm_scale: float = 0.0  # factor on a CPU stage's communication (0: none, the paper's model)


def graph_arrays(graph, groups: Groups) -> tuple[np.ndarray, ...]:
    """The graph in CSR form for the kernels, nodes numbered by their position in ``graph.nodes``.

    Returns (group_start, group_nodes, pred_start, preds, node_cost, out_degree): the nodes of
    group g are ``group_nodes[group_start[g]:group_start[g+1]]``, the predecessors of node k are
    ``preds[pred_start[k]:pred_start[k+1]]``.
    """
    position = {node.id: k for k, node in enumerate(graph.nodes)}
    group_nodes = np.asarray([position[n] for members in groups.members for n in members], dtype=np.int64)
    group_start = np.zeros(groups.count + 1, dtype=np.int64)
    group_start[1:] = np.cumsum([len(m) for m in groups.members])
    pred_lists = [[position[p] for p in graph.predecessors[node.id]] for node in graph.nodes]
    pred_start = np.zeros(len(graph.nodes) + 1, dtype=np.int64)
    pred_start[1:] = np.cumsum([len(p) for p in pred_lists])
    preds = np.asarray([p for plist in pred_lists for p in plist], dtype=np.int64)
    node_cost = np.asarray([graph.output_cost[node.id] for node in graph.nodes], dtype=np.float64)
    out_degree = np.asarray([len(graph.successors[node.id]) for node in graph.nodes], dtype=np.int64)
    return group_start, group_nodes, pred_start, preds, node_cost, out_degree


def _build_arrays(problem: Problem, groups: Groups, ignore_size: frozenset = frozenset()) -> _Arrays:
    graph, devices = problem.graph, problem.devices
    group_start, group_nodes, pred_start, preds, node_cost, out_degree = graph_arrays(graph, groups)
    kinds = devices.accelerators
    kind_compute = np.zeros((len(kinds), groups.count))
    kind_blocked = np.zeros((len(kinds), groups.count), dtype=np.int64)
    for t, kind in enumerate(kinds):
        for g, members in enumerate(groups.members):
            for n in members:
                node = graph.node_by_id[n]
                if node.runs_on(kind):
                    kind_compute[t, g] += node.latency_on(kind)
                else:
                    kind_blocked[t, g] += 1
    cpu_compute = np.asarray([sum(graph.node_by_id[n].cpu_latency for n in m) for m in groups.members], dtype=np.float64)
    group_memory = np.asarray(
        [sum(graph.node_by_id[n].size for n in m if n not in ignore_size) for m in groups.members], dtype=np.float64
    )
    counts = [kind.count for kind in kinds] + [devices.cpus]
    strides = np.cumprod([1] + [c + 1 for c in counts])
    n_states = int(strides[-1])
    next_state = np.full((len(counts), n_states), -1, dtype=np.int64)
    prev_state = np.full((len(counts), n_states), -1, dtype=np.int64)
    for s in range(n_states):
        for d, count in enumerate(counts):
            digit = (s // strides[d]) % (count + 1)
            if digit < count:
                next_state[d, s] = s + strides[d]
            if digit > 0:
                prev_state[d, s] = s - strides[d]
    return _Arrays(
        group_start, group_nodes, pred_start, preds, node_cost, out_degree, kind_compute, kind_blocked,
        np.asarray([kind.memory for kind in kinds], dtype=np.float64),
        np.asarray([devices.transfer_scale(kind) for kind in kinds], dtype=np.float64),
        cpu_compute, group_memory, next_state, prev_state, n_states, float(devices.cpu_transfer_scale),
    )


def _chain_lattice(n_groups: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """The chain of prefixes 0..g of the groups' topological numbering, as a lattice."""
    up_start = np.arange(n_groups + 2, dtype=np.int64)
    up_start[-1] = n_groups
    up_group = np.arange(n_groups, dtype=np.int32)
    up_target = np.arange(1, n_groups + 1, dtype=np.int32)
    return up_start, up_group, up_target, n_groups + 1


def _run(arrays: _Arrays, lattice: tuple, overlap: bool, upper_bound: float, count_only: bool = False):
    up_start, up_group, up_target, n_ideals = lattice
    return _dp_kernel(
        up_start, up_group, up_target, n_ideals,
        arrays.group_start, arrays.group_nodes, arrays.pred_start, arrays.preds, arrays.node_cost, arrays.out_degree,
        arrays.kind_compute, arrays.kind_blocked, arrays.kind_memory_cap, arrays.kind_comm_scale,
        arrays.cpu_compute, float(arrays.cpu_comm_scale), arrays.group_memory, arrays.next_state, arrays.prev_state,
        arrays.n_states, overlap, upper_bound, count_only,
    )


def _solve_lattice(problem: Problem, groups: Groups, lattice: IdealLattice, ignore_size: frozenset):
    """One exact DP over ``lattice``; returns (value, placement or None, pairs)."""
    arrays = _build_arrays(problem, groups, ignore_size)
    overlap = problem.devices.overlap
    chain = _run(arrays, _chain_lattice(groups.count), overlap, math.inf)
    upper_bound = float(chain[0][-1, arrays.n_states - 1])
    # Stages whose compute alone exceeds the chain's value cannot be in an optimal split.
    # A hair above it, so that float noise never cuts the optimum.
    bound = upper_bound * (1 + 1e-9) + 1e-12 if math.isfinite(upper_bound) else math.inf
    best, parent_ideal, parent_type, pairs = _run(
        arrays, (lattice.up_start, lattice.up_group, lattice.up_target, lattice.count), overlap, bound
    )
    pairs = int(pairs)
    value = float(best[lattice.full, arrays.n_states - 1])
    if not math.isfinite(value):
        return math.inf, None, pairs

    def groups_in(index: int) -> set[int]:
        return set(lattice.groups_of(index))

    placement = _walk(problem, groups, groups_in, best, parent_ideal, parent_type, lattice.full, arrays.n_states)
    return value, placement, pairs


def _walk(problem, groups, groups_in, best, parent_ideal, parent_type, full, n_states) -> Placement:
    """Follow parent pointers from (full ideal, every device) back to the empty ideal."""
    counts = [kind.count for kind in problem.devices.accelerators] + [problem.devices.cpus]
    strides = np.cumprod([1] + [c + 1 for c in counts])
    stages_back = []
    ideal, state = full, n_states - 1
    while ideal != 0:
        before = int(parent_ideal[ideal, state])
        device_type = int(parent_type[ideal, state])
        if device_type >= INHERIT:  # same value with one device of this type fewer
            state -= int(strides[device_type - INHERIT])
            continue
        stage_groups = groups_in(ideal) - groups_in(before)
        stages_back.append((device_type, stage_groups))
        state -= int(strides[device_type])
        ideal = before
    n_kinds = len(problem.devices.accelerators)
    used = [0] * (n_kinds + 1)
    stages = []
    for device_type, stage_groups in reversed(stages_back):
        kind = CPU_KIND if device_type == n_kinds else problem.devices.accelerators[device_type].name
        nodes = tuple(n for g in sorted(stage_groups) for n in groups.members[g])
        stages.append(Stage(DeviceSlot(kind, used[device_type]), nodes))
        used[device_type] += 1
    return Placement(tuple(stages))


def _fits_memory(problem: Problem, placement: Placement) -> bool:
    caps = {kind.name: kind.memory for kind in problem.devices.accelerators}
    for stage in placement.stages:
        if stage.device.is_cpu:
            continue
        if sum(problem.graph.node_by_id[n].size for n in stage.nodes) > caps[stage.device.kind]:
            return False
    return True


def _infeasible_reason(problem: Problem) -> str:
    graph, devices = problem.graph, problem.devices
    if devices.cpus == 0:
        for node in graph.nodes:
            if not any(node.runs_on(kind) for kind in devices.accelerators if kind.count > 0):
                return f"node {node.label} cannot run on any accelerator and there are no CPU cores"
    total = sum(node.size for node in graph.nodes)
    capacity = sum(kind.count * kind.memory for kind in devices.accelerators)
    if devices.cpus == 0 and total > capacity:
        return f"the nodes need {total:,.0f} bytes but the accelerators hold {capacity:,.0f} bytes in all"
    return ("no contiguous split fits: every way of cutting the graph into at most "
            f"{devices.accelerator_count} accelerator stages and {devices.cpus} CPU stages breaks the memory or "
            "support rules")


#: Largest DP table allowed (bytes): best (8) + parent ideal (4) + parent type (1) per cell.
MAX_TABLE_BYTES = 2 * 1024**3


def _check_table_size(problem: Problem, ideals: int) -> None:
    states = math.prod(kind.count + 1 for kind in problem.devices.accelerators) * (problem.devices.cpus + 1)
    needed = ideals * states * 13
    if needed > MAX_TABLE_BYTES:
        raise TooManyIdealsError(
            f"the DP table would need {needed / 1024**3:.1f} GiB ({ideals:,} ideals x {states:,} device-count "
            f"states), over the {MAX_TABLE_BYTES / 1024**3:.0f} GiB limit: use fewer devices or kinds, or coarsen the graph"
        )


def solve_dp(problem: Problem, max_ideals: int = DEFAULT_MAX_IDEALS) -> Result:
    """The optimal contiguous split of ``problem`` (minimum max-load) by dynamic programming.

    Parameters
    ----------
    problem : Problem
        Graph and devices (any number of accelerator kinds, CPU cores, overlap option).
    max_ideals : int
        Give up (raise :class:`TooManyIdealsError`) past this many ideals.

    Returns
    -------
    Result
        ``status`` "optimal" with the split in pipeline order, "infeasible" with a reason, or
        (rarely, when memory binds and the unreduced lattice is too large) "feasible" with a
        bound and gap.
    """
    started = time.perf_counter()
    full_groups = contract(problem.graph)
    groups, moved = reduce_groups(problem.graph, full_groups)
    lattice = enumerate_ideals(groups, max_ideals)
    _check_table_size(problem, lattice.count)
    stats = {"groups": groups.count, "ideals": lattice.count, "merged_nodes": len(moved)}
    relaxed = frozenset(n for n in moved if problem.graph.node_by_id[n].size > 0)
    value, placement, pairs = _solve_lattice(problem, groups, lattice, relaxed)
    stats["pairs"] = pairs

    def done(status, objective, placement, **extra):
        return Result(status=status, method="dp", objective=objective, placement=placement,
                      seconds=time.perf_counter() - started, stats=tuple(stats.items()), **extra)

    if placement is None:
        return done("infeasible", None, None, reason=_infeasible_reason(problem))
    if not relaxed or _fits_memory(problem, placement):
        return done("optimal", value, placement, bound=value, gap=0.0)
    # Memory binds on a merged node: solve again with real sizes (an upper bound).
    upper, upper_placement, more_pairs = _solve_lattice(problem, groups, lattice, frozenset())
    stats["pairs"] += more_pairs
    if upper_placement is not None and upper <= value * (1 + 1e-12):
        return done("optimal", upper, upper_placement, bound=value, gap=0.0)
    try:
        full_lattice = enumerate_ideals(full_groups, max_ideals)
        _check_table_size(problem, full_lattice.count)
    except TooManyIdealsError:
        if upper_placement is None:
            return done("no solution", None, None, bound=value,
                        reason="memory binds on merged nodes and the unreduced lattice is too large")
        return done("feasible", upper, upper_placement, bound=value, gap=(upper - value) / upper if upper else 0.0)
    stats.update(groups=full_groups.count, ideals=full_lattice.count)
    exact, exact_placement, more_pairs = _solve_lattice(problem, full_groups, full_lattice, frozenset())
    stats["pairs"] += more_pairs
    if exact_placement is None:
        return done("infeasible", None, None, reason=_infeasible_reason(problem))
    return done("optimal", exact, exact_placement, bound=exact, gap=0.0)


def count_pairs(problem: Problem, reduce: bool = True, max_ideals: int = DEFAULT_MAX_IDEALS) -> tuple[int, int]:
    """(ideals, ideal pairs I <= J) of the lattice the DP searches, counted as the paper's code does."""
    groups = contract(problem.graph)
    if reduce:
        groups, _ = reduce_groups(problem.graph, groups)
    lattice = enumerate_ideals(groups, max_ideals)
    arrays = _build_arrays(problem, groups)
    arrays = replace(arrays, kind_compute=np.zeros_like(arrays.kind_compute),
                     kind_blocked=np.zeros_like(arrays.kind_blocked),
                     kind_memory_cap=np.full_like(arrays.kind_memory_cap, np.inf))
    *_, pairs = _run(arrays, (lattice.up_start, lattice.up_group, lattice.up_target, lattice.count), False,
                     math.inf, count_only=True)
    # The kernel counts pairs I < J; add the pairs I = J.
    return lattice.count, int(pairs) + lattice.count
