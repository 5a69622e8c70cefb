"""Memory-aware planning: the optimal contiguous split when memory is the schedule's peak.

The plain DP (:mod:`placement.dp`) checks a stage's memory as the sum of its nodes' sizes.
Under a training schedule a device also holds optimizer state and the activations of every
microbatch in flight, and in 1F1B that number depends on the stage's *position*: the device
at position ``k`` of ``K`` holds ``min(K - k, M)`` microbatches (see :mod:`placement.memory`).
:func:`solve_memory_aware` minimises the same objective - the max-load (the steady-state
time per sample of streaming inference and of 1F1B), plus the forward compute again on
every device when ``recompute`` is on - subject to every accelerator holding the schedule's
closed-form peak (:func:`placement.memory.peak_bytes`)::

    inference: W + A        gpipe: W + O + M A        1f1b: W + O + min(K - k, M) A
    (with recompute, n A becomes n I + A)

Table (axes): ``best[I, s]`` is the smallest max-load of any split of the nodes *outside*
ideal ``I`` into consecutive stages using *exactly* the device counts of state ``s`` (the
mixed-radix encoding of :mod:`placement.dp`). Because the DP runs from the end of the
pipeline to its start, the stage ``J \\ I`` added in front of a suffix with state ``s`` has
``digit_sum(s) + 1`` stages from it to the end (itself included): exactly the ``K - k``
1F1B needs, without knowing ``K`` in advance. ``best[full, 0] = 0``; the answer is
``min_s best[empty, s]``. Ideals are visited from the largest to the smallest; for each
``I`` a depth-first search over its supersets ``J`` keeps the stage's compute, communication,
weights, activations and (for recomputation) stage input up to date group by group.
A branch stops when the stage is too slow on every device type or breaks memory everywhere
even with one microbatch in flight (both only grow with ``J``). The bound for "too slow" is
the value of the same DP over one topological order (a chain of ideals, a feasible split).

Groups that :func:`placement.ideals.reduce_groups` would merge are merged first, with their
memory ignored (a relaxation: a lower bound); the split found is then checked with the real
memory, re-solved with it when memory binds, and solved on the unreduced lattice if the two
differ. With recomputation the stage input is not monotone under merging, so the unreduced
lattice is used directly (status ``"feasible"`` without a bound if it is too large).
"""

from __future__ import annotations

import math
import time

import numpy as np
from numba import njit

from .dp import graph_arrays
from .errors import PlacementError, TooManyIdealsError
from .ideals import DEFAULT_MAX_IDEALS, Groups, contract, enumerate_ideals, reduce_groups
from .memory import DEFAULT_OPTIMIZER_MULTIPLIER, output_bytes, peak_table
from .model import CPU_KIND, DeviceSlot, Placement, Problem, Result, Stage
from .schedule import SCHEDULES

_SCHEDULE_CODE = {"inference": 0, "gpipe": 1, "1f1b": 2}


@njit(cache=True)
def _comm_of(node_in_stage, in_stage_succ, node_cost, out_degree, u):
    if node_in_stage[u]:
        if in_stage_succ[u] < out_degree[u]:
            return node_cost[u]
        return 0.0
    if in_stage_succ[u] > 0:
        return node_cost[u]
    return 0.0


@njit(cache=True)
def _input_of(node_in_stage, fwd_succ_in, node_forward, node_ob, u):
    """Bytes node ``u`` adds to the stage input: a forward node outside feeding a forward node inside."""
    if (not node_in_stage[u]) and node_forward[u] and fwd_succ_in[u] > 0:
        return node_ob[u]
    return 0.0


@njit(cache=True)
def _toggle(g, add, group_start, group_nodes, pred_start, preds, node_in_stage, in_stage_succ, node_cost,
            out_degree, node_forward, node_ob, fwd_succ_in):
    """Add/remove group ``g``; return (change in communication, change in stage input bytes)."""
    d_comm = 0.0
    d_in = 0.0
    for k in range(group_start[g], group_start[g + 1]):
        x = group_nodes[k]
        d_comm -= _comm_of(node_in_stage, in_stage_succ, node_cost, out_degree, x)
        d_in -= _input_of(node_in_stage, fwd_succ_in, node_forward, node_ob, x)
        node_in_stage[x] = add
        d_comm += _comm_of(node_in_stage, in_stage_succ, node_cost, out_degree, x)
        d_in += _input_of(node_in_stage, fwd_succ_in, node_forward, node_ob, x)
        for m in range(pred_start[x], pred_start[x + 1]):
            u = preds[m]
            d_comm -= _comm_of(node_in_stage, in_stage_succ, node_cost, out_degree, u)
            d_in -= _input_of(node_in_stage, fwd_succ_in, node_forward, node_ob, u)
            step = 1 if add else -1
            in_stage_succ[u] += step
            if node_forward[x] and node_forward[u]:
                fwd_succ_in[u] += step
            d_comm += _comm_of(node_in_stage, in_stage_succ, node_cost, out_degree, u)
            d_in += _input_of(node_in_stage, fwd_succ_in, node_forward, node_ob, u)
    return d_comm, d_in


@njit(cache=True)
def _kernel(up_start, up_group, up_target, n_ideals,
            group_start, group_nodes, pred_start, preds, node_cost, out_degree, node_forward, node_ob,
            kind_compute, kind_fcompute, kind_blocked, kind_cap, kind_scale, cpu_compute, cpu_fcompute, cpu_scale,
            group_weight, group_param, group_act,
            next_state, digit_sum, n_states, overlap, upper_bound,
            schedule, microbatches, opt_mult, recompute):
    n_kinds = kind_compute.shape[0]
    n_nodes = node_cost.shape[0]
    best = np.full((n_ideals, n_states), np.inf)
    parent_ideal = np.full((n_ideals, n_states), -1, dtype=np.int32)
    parent_type = np.full((n_ideals, n_states), -1, dtype=np.int8)
    best[n_ideals - 1, 0] = 0.0
    stamp = np.full(n_ideals, -1, dtype=np.int64)
    node_in_stage = np.zeros(n_nodes, dtype=np.bool_)
    in_stage_succ = np.zeros(n_nodes, dtype=np.int64)
    fwd_succ_in = np.zeros(n_nodes, dtype=np.int64)
    stack_ideal = np.empty(n_ideals + 1, dtype=np.int64)
    stack_pos = np.empty(n_ideals + 1, dtype=np.int64)
    stack_group = np.empty(n_ideals + 1, dtype=np.int64)
    compute = np.zeros(n_kinds)
    fcompute = np.zeros(n_kinds)
    blocked = np.zeros(n_kinds, dtype=np.int64)  # nodes in the stage that cannot run on kind t
    loads = np.zeros(n_kinds)
    min_flight = 1 if schedule != 1 else microbatches
    pairs = 0
    for i in range(n_ideals - 2, -1, -1):
        depth = 0
        stack_ideal[0] = i
        stack_pos[0] = up_start[i]
        stack_group[0] = -1
        stamp[i] = i
        for t in range(n_kinds):
            compute[t] = 0.0
            fcompute[t] = 0.0
            blocked[t] = 0
        cpu = 0.0
        cpu_f = 0.0
        weight = 0.0
        param = 0.0
        act = 0.0
        comm = 0.0
        inp = 0.0
        while depth >= 0:
            top = stack_ideal[depth]
            if stack_pos[depth] < up_start[top + 1]:
                e = stack_pos[depth]
                stack_pos[depth] = e + 1
                j = up_target[e]
                if stamp[j] == i:
                    continue
                stamp[j] = i
                g = up_group[e]
                dc, di = _toggle(g, True, group_start, group_nodes, pred_start, preds, node_in_stage, in_stage_succ,
                                 node_cost, out_degree, node_forward, node_ob, fwd_succ_in)
                comm += dc
                inp += di
                for t in range(n_kinds):
                    compute[t] += kind_compute[t, g]
                    fcompute[t] += kind_fcompute[t, g]
                    blocked[t] += kind_blocked[t, g]
                cpu += cpu_compute[g]
                cpu_f += cpu_fcompute[g]
                weight += group_weight[g]
                param += group_param[g]
                act += group_act[g]
                pairs += 1
                static = weight + opt_mult * param
                alive = False
                for t in range(n_kinds):
                    loads[t] = np.inf
                    extra = fcompute[t] if recompute else 0.0
                    low = static + (act if recompute else min_flight * act)
                    if next_state[t, 0] >= 0 and compute[t] + extra <= upper_bound and blocked[t] == 0 \
                            and low <= kind_cap[t]:
                        alive = True
                        c = comm * kind_scale[t]
                        if overlap:
                            loads[t] = (compute[t] if compute[t] > c else c) + extra
                        else:
                            loads[t] = compute[t] + c + extra
                cpu_load = cpu + (cpu_f if recompute else 0.0)
                cpu_ok = next_state[n_kinds, 0] >= 0 and cpu_load <= upper_bound
                if cpu_ok:
                    alive = True  # pruned on compute only (monotone); the full load is compared below
                    if cpu_scale > 0.0:  # CPU cores pay transfers (Devices.cpu_bandwidth)
                        c = comm * cpu_scale
                        if c < 0.0:
                            c = 0.0
                        if overlap:
                            cpu_load = (cpu if cpu > c else c) + (cpu_f if recompute else 0.0)
                        else:
                            cpu_load = cpu_load + c
                        cpu_ok = cpu_load <= upper_bound
                if alive:
                    for s in range(n_states):
                        base = best[j, s]
                        if base > upper_bound:
                            continue
                        r = digit_sum[s] + 1
                        if schedule == 0:
                            n = 1
                        elif schedule == 1:
                            n = microbatches
                        else:
                            n = r if r < microbatches else microbatches
                        if recompute and schedule != 0:
                            memory = static + n * inp + act
                        else:
                            memory = static + n * act
                        for t in range(n_kinds):
                            nxt = next_state[t, s]
                            if nxt >= 0 and loads[t] <= upper_bound and memory <= kind_cap[t]:
                                value = base if base > loads[t] else loads[t]
                                if value < best[i, nxt]:
                                    best[i, nxt] = value
                                    parent_ideal[i, nxt] = j
                                    parent_type[i, nxt] = t
                        if cpu_ok:
                            nxt = next_state[n_kinds, s]
                            if nxt >= 0:
                                value = base if base > cpu_load else cpu_load
                                if value < best[i, nxt]:
                                    best[i, nxt] = value
                                    parent_ideal[i, nxt] = j
                                    parent_type[i, nxt] = n_kinds
                    depth += 1
                    stack_ideal[depth] = j
                    stack_pos[depth] = up_start[j]
                    stack_group[depth] = g
                else:
                    dc, di = _toggle(g, False, group_start, group_nodes, pred_start, preds, node_in_stage,
                                     in_stage_succ, node_cost, out_degree, node_forward, node_ob, fwd_succ_in)
                    comm += dc
                    inp += di
                    for t in range(n_kinds):
                        compute[t] -= kind_compute[t, g]
                        fcompute[t] -= kind_fcompute[t, g]
                        blocked[t] -= kind_blocked[t, g]
                    cpu -= cpu_compute[g]
                    cpu_f -= cpu_fcompute[g]
                    weight -= group_weight[g]
                    param -= group_param[g]
                    act -= group_act[g]
            else:
                g = stack_group[depth]
                if g >= 0:
                    dc, di = _toggle(g, False, group_start, group_nodes, pred_start, preds, node_in_stage,
                                     in_stage_succ, node_cost, out_degree, node_forward, node_ob, fwd_succ_in)
                    comm += dc
                    inp += di
                    for t in range(n_kinds):
                        compute[t] -= kind_compute[t, g]
                        fcompute[t] -= kind_fcompute[t, g]
                        blocked[t] -= kind_blocked[t, g]
                    cpu -= cpu_compute[g]
                    cpu_f -= cpu_fcompute[g]
                    weight -= group_weight[g]
                    param -= group_param[g]
                    act -= group_act[g]
                depth -= 1
    return best, parent_ideal, parent_type, pairs


def _arrays(problem: Problem, groups: Groups, ignore: frozenset, bytes_per_cost):
    graph, devices = problem.graph, problem.devices
    position = {node.id: k for k, node in enumerate(graph.nodes)}
    out_bytes = output_bytes(graph, bytes_per_cost)
    group_start, group_nodes, pred_start, preds, node_cost, out_degree = graph_arrays(graph, groups)
    node_forward = np.asarray([not node.is_backward for node in graph.nodes], dtype=np.bool_)
    node_ob = np.asarray([0.0 if node.id in ignore else out_bytes[node.id] for node in graph.nodes], dtype=np.float64)
    kinds = devices.accelerators
    kind_compute = np.zeros((len(kinds), groups.count))
    kind_fcompute = np.zeros((len(kinds), groups.count))
    kind_blocked = np.zeros((len(kinds), groups.count), dtype=np.int64)
    for t, kind in enumerate(kinds):
        for g, members in enumerate(groups.members):
            total = forward = 0.0
            for n in members:
                node = graph.node_by_id[n]
                if not node.runs_on(kind):
                    kind_blocked[t, g] += 1  # counted, not added as inf: inf - inf would poison the sums
                    continue
                latency = node.latency_on(kind)
                total += latency
                if not node.is_backward:
                    forward += latency
            kind_compute[t, g], kind_fcompute[t, g] = total, forward
    nodes = graph.node_by_id
    cpu_compute = np.asarray([sum(nodes[n].cpu_latency for n in m) for m in groups.members], dtype=np.float64)
    cpu_fcompute = np.asarray([sum(nodes[n].cpu_latency for n in m if not nodes[n].is_backward)
                               for m in groups.members], dtype=np.float64)
    group_weight = np.asarray([sum(nodes[n].size for n in m if n not in ignore) for m in groups.members],
                              dtype=np.float64)
    group_param = np.asarray([sum(nodes[n].size for n in m if n not in ignore and not nodes[n].is_backward)
                              for m in groups.members], dtype=np.float64)
    group_act = np.asarray([sum(node_ob[position[n]] for n in m if not nodes[n].is_backward)
                            for m in groups.members], dtype=np.float64)
    counts = [kind.count for kind in kinds] + [devices.cpus]
    strides = np.cumprod([1] + [c + 1 for c in counts])
    n_states = int(strides[-1])
    next_state = np.full((len(counts), n_states), -1, dtype=np.int64)
    digit_sum = np.zeros(n_states, dtype=np.int64)
    for s in range(n_states):
        for d, count in enumerate(counts):
            digit = (s // strides[d]) % (count + 1)
            digit_sum[s] += digit
            if digit < count:
                next_state[d, s] = s + strides[d]
    return dict(
        group_start=group_start, group_nodes=group_nodes, pred_start=pred_start, preds=preds, node_cost=node_cost,
        out_degree=out_degree, node_forward=node_forward, node_ob=node_ob, kind_compute=kind_compute,
        kind_fcompute=kind_fcompute, kind_blocked=kind_blocked, kind_cap=np.asarray([k.memory for k in kinds], dtype=np.float64),
        kind_scale=np.asarray([devices.transfer_scale(k) for k in kinds], dtype=np.float64),
        cpu_compute=cpu_compute, cpu_fcompute=cpu_fcompute, cpu_scale=float(devices.cpu_transfer_scale),
        group_weight=group_weight, group_param=group_param,
        group_act=group_act, next_state=next_state, digit_sum=digit_sum, n_states=n_states,
    ), strides


def _chain(n_groups: int):
    up_start = np.arange(n_groups + 2, dtype=np.int64)
    up_start[-1] = n_groups
    return up_start, np.arange(n_groups, dtype=np.int32), np.arange(1, n_groups + 1, dtype=np.int32), n_groups + 1


def _run(arrays, lattice, problem, options, bound):
    up_start, up_group, up_target, n_ideals = lattice
    a = arrays
    return _kernel(
        up_start, up_group, up_target, n_ideals,
        a["group_start"], a["group_nodes"], a["pred_start"], a["preds"], a["node_cost"], a["out_degree"],
        a["node_forward"], a["node_ob"], a["kind_compute"], a["kind_fcompute"], a["kind_blocked"], a["kind_cap"], a["kind_scale"],
        a["cpu_compute"], a["cpu_fcompute"], a["cpu_scale"], a["group_weight"], a["group_param"], a["group_act"],
        a["next_state"], a["digit_sum"], a["n_states"], problem.devices.overlap, bound,
        options["schedule"], options["microbatches"], options["opt_mult"], options["recompute"],
    )


def _solve_lattice(problem, groups, lattice_groups, ignore, options, bytes_per_cost):
    """One exact run; returns (value, placement or None, pairs). ``lattice_groups`` is an IdealLattice."""
    arrays, strides = _arrays(problem, groups, ignore, bytes_per_cost)
    chain = _run(arrays, _chain(groups.count), problem, options, math.inf)
    upper = float(np.min(chain[0][0]))
    bound = upper * (1 + 1e-9) + 1e-12 if math.isfinite(upper) else math.inf
    lattice = lattice_groups
    best, parent_ideal, parent_type, pairs = _run(
        arrays, (lattice.up_start, lattice.up_group, lattice.up_target, lattice.count), problem, options, bound)
    state = int(np.argmin(best[0]))
    value = float(best[0, state])
    if not math.isfinite(value):
        return math.inf, None, int(pairs)
    n_kinds = len(problem.devices.accelerators)
    used = [0] * (n_kinds + 1)
    stages = []
    ideal = 0
    while ideal != lattice.full:
        after = int(parent_ideal[ideal, state])
        device_type = int(parent_type[ideal, state])
        stage_groups = set(lattice.groups_of(after)) - set(lattice.groups_of(ideal))
        kind = CPU_KIND if device_type == n_kinds else problem.devices.accelerators[device_type].name
        nodes = tuple(n for g in sorted(stage_groups) for n in groups.members[g])
        stages.append(Stage(DeviceSlot(kind, used[device_type]), nodes))
        used[device_type] += 1
        state -= int(strides[device_type])
        ideal = after
    return value, Placement(tuple(stages)), int(pairs)


def _fits(problem, placement, schedule, microbatches, opt_mult, recompute, bytes_per_cost) -> bool:
    devices = tuple(s.device for s in placement.stages) if recompute else ()
    return all(peak <= cap for _, peak, cap in
               peak_table(problem, placement, schedule, microbatches, opt_mult, devices, bytes_per_cost))


def solve_memory_aware(problem: Problem, schedule: str = "1f1b", microbatches: int = 8,
                       optimizer_multiplier: float = DEFAULT_OPTIMIZER_MULTIPLIER, recompute: bool = False,
                       bytes_per_cost: float | None = None, max_ideals: int = DEFAULT_MAX_IDEALS) -> Result:
    """The optimal contiguous split whose devices hold the schedule's peak memory.

    Parameters
    ----------
    problem : Problem
        Graph and devices.
    schedule : str
        ``"inference"``, ``"gpipe"`` or ``"1f1b"``: decides the microbatches in flight per stage.
    microbatches : int
        Microbatches per batch (``M``).
    optimizer_multiplier : float
        Optimizer state per byte of forward weights (training schedules; Adam: 2).
    recompute : bool
        Every device recomputes its forward pass in the backward pass (stash only stage inputs;
        the objective then includes the forward compute twice).
    bytes_per_cost : float, optional
        Bytes per transfer-cost unit for edges without a ``size``.
    max_ideals : int
        Give up past this many ideals.

    Returns
    -------
    Result
        ``method`` "memory-aware"; ``objective`` the max-load (+ recomputation); status
        "optimal", "infeasible" (with a reason) or "feasible" (see the module docstring).
    """
    started = time.perf_counter()
    if schedule not in SCHEDULES:
        raise PlacementError(f"unknown schedule {schedule!r}; choose one of: {', '.join(SCHEDULES)}")
    if isinstance(microbatches, bool) or not isinstance(microbatches, int) or microbatches < 1:
        raise PlacementError(f"microbatches must be a positive integer (got {microbatches!r})")
    if not isinstance(optimizer_multiplier, (int, float)) or not math.isfinite(optimizer_multiplier) \
            or optimizer_multiplier < 0:
        raise PlacementError(f"optimizer multiplier must be a finite number >= 0 (got {optimizer_multiplier!r})")
    training = schedule != "inference"
    recompute = bool(recompute) and training
    opt_mult = float(optimizer_multiplier) if training else 0.0
    options = {"schedule": _SCHEDULE_CODE[schedule], "microbatches": microbatches, "opt_mult": opt_mult,
               "recompute": recompute}
    stats = {"schedule": schedule, "microbatches": microbatches, "optimizer_multiplier": opt_mult,
             "recompute": recompute}

    def done(status, objective, placement, **extra):
        return Result(status=status, method="memory-aware", objective=objective, placement=placement,
                      seconds=time.perf_counter() - started, stats=tuple(stats.items()), **extra)

    def fits(placement):
        return _fits(problem, placement, schedule, microbatches, opt_mult, recompute, bytes_per_cost)

    full_groups = contract(problem.graph)
    groups, moved = reduce_groups(problem.graph, full_groups)
    out_bytes = output_bytes(problem.graph, bytes_per_cost)
    relaxed = frozenset(n for n in moved if problem.graph.node_by_id[n].size > 0 or out_bytes[n] > 0)
    if recompute and relaxed:
        groups, relaxed = full_groups, frozenset()
    try:
        lattice = enumerate_ideals(groups, max_ideals)
    except TooManyIdealsError:
        if groups is not full_groups:
            raise
        groups, _ = reduce_groups(problem.graph, full_groups)
        lattice = enumerate_ideals(groups, max_ideals)
        value, placement, pairs = _solve_lattice(problem, groups, lattice, frozenset(), options, bytes_per_cost)
        stats.update(groups=groups.count, ideals=lattice.count, pairs=pairs)
        if placement is None:
            return done("no solution", None, None,
                        reason="recomputation with merged nodes: the unreduced lattice is too large")
        return done("feasible", value, placement,
                    reason="recomputation with merged nodes: optimal among splits of the merged groups only")
    stats.update(groups=groups.count, ideals=lattice.count, merged_nodes=len(moved) if groups is not full_groups else 0)
    value, placement, pairs = _solve_lattice(problem, groups, lattice, relaxed, options, bytes_per_cost)
    stats["pairs"] = pairs
    if placement is None:
        return done("infeasible", None, None, reason=_reason(problem, schedule, microbatches))
    if not relaxed or fits(placement):
        return done("optimal", value, placement, bound=value, gap=0.0)
    upper, upper_placement, more = _solve_lattice(problem, groups, lattice, frozenset(), options, bytes_per_cost)
    stats["pairs"] += more
    if upper_placement is not None and upper <= value * (1 + 1e-12):
        return done("optimal", upper, upper_placement, bound=value, gap=0.0)
    try:
        full_lattice = enumerate_ideals(full_groups, max_ideals)
    except TooManyIdealsError:
        if upper_placement is None:
            return done("no solution", None, None, bound=value,
                        reason="memory binds on merged nodes and the unreduced lattice is too large")
        return done("feasible", upper, upper_placement, bound=value, gap=(upper - value) / upper if upper else 0.0)
    stats.update(groups=full_groups.count, ideals=full_lattice.count)
    exact, exact_placement, more = _solve_lattice(problem, full_groups, full_lattice, frozenset(), options,
                                                  bytes_per_cost)
    stats["pairs"] += more
    if exact_placement is None:
        return done("infeasible", None, None, reason=_reason(problem, schedule, microbatches))
    return done("optimal", exact, exact_placement, bound=exact, gap=0.0)


def _reason(problem: Problem, schedule: str, microbatches: int) -> str:
    return (f"no contiguous split fits: under {schedule} with {microbatches} microbatch(es) every way of cutting "
            f"the graph into at most {problem.devices.accelerator_count} accelerator and {problem.devices.cpus} CPU "
            "stages puts more weights, optimizer state and in-flight activations on some accelerator than it holds")
