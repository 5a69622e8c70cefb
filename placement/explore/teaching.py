"""Teaching mode: a small, readable trace of the DP's recurrence, and why a plan is optimal.

:func:`trace_dp` runs the same recurrence as :func:`placement.solve_dp` in plain Python, without
its speed-ups (no pruning, no group merging, no bounds), on the shared lattice of ideals
(:func:`placement.exact.ideals.contract` + :func:`placement.exact.ideals.enumerate_ideals`):

    best[∅][s] = 0 for every device state s (a count per device type, "at most" that many),
    best[J][s] = min over ideals I ⊊ J and device types t with s_t >= 1 of
                 max(best[I][s - e_t], load_t(J \\ I)),

where ``load_t(J \\ I)`` is the evaluator's load of the stage ``J \\ I`` on one device of type
``t`` (infinite when a node of it cannot run there or it breaks the memory cap). Ideals are
finished in order of size, so ``best[I]`` is final when ``J`` uses it; ``best`` is then
non-increasing in ``s`` by induction (more devices never hurt). The answer is
``best[full][all devices]``. Every step (one pair ``I ⊊ J``) is recorded for the app to
replay forward and back. It is meant for graphs of a dozen groups.

:func:`explain_optimality` says why a plan is optimal: a lower bound that any plan must meet,
the ideals and pairs the DP searched, and the bottleneck device.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from itertools import product

from ..errors import InvalidGraphError
from ..evaluate import device_loads, evaluate
from ..exact.ideals import contract, enumerate_ideals
from ..model import CPU_KIND, DeviceSlot, Placement, Problem, Stage

#: Largest number of groups :func:`trace_dp` accepts (the trace keeps every pair of ideals).
MAX_TEACHING_GROUPS = 16
MAX_TEACHING_STEPS = 20_000

State = tuple[int, ...]


@dataclass(frozen=True)
class TraceStep:
    """One pair of the recurrence: the ideal ``ideal`` (J) being finished, tried with ``previous`` (I).

    ``loads[t]`` is the stage's load in ms on one device of type t (inf: not allowed, and
    ``reasons[t]`` says why: a node that cannot run there, or the memory cap; "" when allowed);
    ``improved`` lists ``(state, new best, type index)`` for the cells of ``best[J]`` this pair lowered.
    """

    ideal: int
    previous: int
    stage_groups: tuple[int, ...]
    stage_nodes: tuple[int, ...]
    loads: tuple[float, ...]
    improved: tuple[tuple[State, float, int], ...]
    reasons: tuple[str, ...] = ()


@dataclass(frozen=True)
class DPTrace:
    """The whole trace: the lattice, the device types and states, every step and the final table.

    Attributes
    ----------
    groups : tuple of tuple of int
        Node ids of each group (color classes contracted), in topological order.
    masks : tuple of int
        Ideal i as a bitmask over groups, by increasing size (``masks[0]`` is empty).
    covers : tuple of (int, int)
        Cover edges ``(I, J)`` of the lattice (J = I plus one group).
    types : tuple of str
        Device types: accelerator kind names, then ``"cpu"`` if there are CPU cores.
    counts : tuple of int
        Devices of each type.
    states : tuple of State
        Every device state (a count per type), in increasing order.
    steps : tuple of TraceStep
        The pairs ``I ⊊ J`` in the order the recurrence visits them.
    best : tuple of tuple of float
        ``best[i][k]`` for ideal i and state ``states[k]`` (final values).
    answer : float
        ``best[full][all devices]`` (inf: no feasible split).
    placement : Placement or None
        An optimal split read back from the table (None when infeasible).
    """

    groups: tuple[tuple[int, ...], ...]
    masks: tuple[int, ...]
    covers: tuple[tuple[int, int], ...]
    types: tuple[str, ...]
    counts: tuple[int, ...]
    states: tuple[State, ...]
    steps: tuple[TraceStep, ...]
    best: tuple[tuple[float, ...], ...]
    answer: float
    placement: Placement | None

    @property
    def full(self) -> int:
        return len(self.masks) - 1

    def groups_of(self, ideal: int) -> tuple[int, ...]:
        mask = self.masks[ideal]
        return tuple(g for g in range(mask.bit_length()) if mask >> g & 1)

    def split_for(self, state: State) -> list[tuple[str, tuple[int, ...]]] | None:
        """A best split of the whole graph on at most ``state`` devices, read back from the steps.

        Returns the stages in pipeline order as ``(device type, node ids)``, or None when
        ``best[full][state]`` is infinite (no feasible split on those devices).
        """
        position = {s: k for k, s in enumerate(self.states)}
        if state not in position or not math.isfinite(self.best[self.full][position[state]]):
            return None
        by_ideal: dict[int, list[TraceStep]] = {}
        for item in self.steps:
            by_ideal.setdefault(item.ideal, []).append(item)
        last_first: list[tuple[str, tuple[int, ...]]] = []
        j = self.full
        while j != 0:
            target = self.best[j][position[state]]
            found = None
            for item in by_ideal[j]:
                for t, load in enumerate(item.loads):
                    if state[t] == 0 or not math.isfinite(load):
                        continue
                    fewer = state[:t] + (state[t] - 1,) + state[t + 1 :]
                    if max(self.best[item.previous][position[fewer]], load) == target:
                        found = (item, t, fewer)
                        break
                if found:
                    break
            if found is None:  # cannot happen: best[J][s] is the min over these very candidates
                return None
            item, t, state = found
            last_first.append((self.types[t], item.stage_nodes))
            j = item.previous
        return last_first[::-1]

    def best_after(self, step: int) -> dict[int, dict[State, float]]:
        """``best`` as it stands after steps ``0..step`` (ideals not yet touched are absent; ∅ is 0)."""
        table: dict[int, dict[State, float]] = {0: {s: 0.0 for s in self.states}}
        for item in self.steps[: step + 1]:
            cells = table.setdefault(item.ideal, {s: math.inf for s in self.states})
            for state, value, _ in item.improved:
                cells[state] = value
        return table


def _megabytes(value: float) -> str:
    """Bytes as MiB, written as the app writes device memory (``61.04 MiB``)."""
    return f"{value / 2.0**20:,.2f} MiB"


def stage_verdict(problem: Problem, nodes: tuple[int, ...], kind_name: str) -> tuple[float, str]:
    """The evaluator's load (ms) of ``nodes`` as one stage on one device of this type, and why it is not allowed.

    Returns ``(load, "")`` when allowed, ``(inf, reason)`` otherwise; the reason names the first
    node that cannot run on this type, or the stage's memory against the device's cap.
    """
    graph = problem.graph
    if kind_name != CPU_KIND:
        kind = problem.devices.kind(kind_name)
        barred = [graph.node_by_id[n] for n in nodes if not graph.node_by_id[n].runs_on(kind)]
        if barred:
            name = barred[0].name or str(barred[0].id)
            return math.inf, f"{name} cannot run on {kind_name}"
        memory = sum(graph.node_by_id[n].size for n in nodes)
        if memory > kind.memory:
            return math.inf, f"memory {_megabytes(memory)} > the {_megabytes(kind.memory)} cap of {kind_name}"
    (entry,) = device_loads(problem, Placement((Stage(DeviceSlot(kind_name, 0), nodes),)))
    return entry.load, ""


def trace_dp(problem: Problem, max_groups: int = MAX_TEACHING_GROUPS) -> DPTrace:
    """Run the DP's recurrence step by step on a small graph (see the module docstring).

    Parameters
    ----------
    problem : Problem
        The graph and devices.
    max_groups : int
        Refuse graphs with more groups (after contracting color classes) than this.

    Raises
    ------
    InvalidGraphError
        When the graph has too many groups or pairs of ideals for a readable trace.
    """
    groups = contract(problem.graph)
    if groups.count > max_groups:
        raise InvalidGraphError(
            f"{problem.graph.name or 'graph'}: {groups.count} groups; teaching mode steps "
            f"through graphs of at most {max_groups}"
        )
    lattice = enumerate_ideals(groups)
    masks = tuple(lattice.masks)
    covers = tuple(
        (i, int(lattice.up_target[k]))
        for i in range(lattice.count)
        for k in range(lattice.up_start[i], lattice.up_start[i + 1])
    )
    types = tuple(kind.name for kind in problem.devices.accelerators if kind.count > 0)
    counts = tuple(problem.devices.kind(name).count for name in types)
    if problem.devices.cpus:
        types += (CPU_KIND,)
        counts += (problem.devices.cpus,)
    states = tuple(product(*(range(c + 1) for c in counts)))
    position = {state: k for k, state in enumerate(states)}

    best = [[math.inf] * len(states) for _ in masks]
    best[0] = [0.0] * len(states)
    parent: dict[tuple[int, State], tuple[int, int]] = {}  # (J, s) -> (I, type index) of the last stage
    steps: list[TraceStep] = []
    for j, mask_j in enumerate(masks):
        if j == 0:
            continue
        for i in range(j):  # ideals by size: every I before J is final
            mask_i = masks[i]
            if mask_i & ~mask_j or mask_i == mask_j:
                continue  # I must be a proper subset of J
            stage_groups = tuple(g for g in range(mask_j.bit_length()) if (mask_j & ~mask_i) >> g & 1)
            stage_nodes = tuple(sorted(n for g in stage_groups for n in groups.members[g]))
            verdicts = [stage_verdict(problem, stage_nodes, name) for name in types]
            loads = tuple(load for load, _ in verdicts)
            improved = []
            for state in states:
                for t, load in enumerate(loads):
                    if state[t] == 0 or load == math.inf:
                        continue
                    fewer = state[:t] + (state[t] - 1,) + state[t + 1 :]
                    candidate = max(best[i][position[fewer]], load)
                    if candidate < best[j][position[state]]:
                        best[j][position[state]] = candidate
                        parent[(j, state)] = (i, t)
                        improved.append((state, candidate, t))
            reasons = tuple(reason for _, reason in verdicts)
            steps.append(TraceStep(j, i, stage_groups, stage_nodes, loads, tuple(improved), reasons))
            if len(steps) > MAX_TEACHING_STEPS:
                raise InvalidGraphError(
                    f"{problem.graph.name or 'graph'}: more than {MAX_TEACHING_STEPS} pairs of "
                    "ideals; teaching mode needs a smaller graph"
                )

    full, everything = len(masks) - 1, tuple(counts)
    answer = best[full][position[everything]] if states else math.inf
    placement = None
    if answer < math.inf:
        last_first = []  # (type index, nodes) of each stage, last stage first
        j, state = full, everything
        while j != 0:
            i, t = parent[(j, state)]
            last_first.append(
                (
                    t,
                    tuple(
                        sorted(
                            n
                            for g in range(masks[j].bit_length())
                            if (masks[j] & ~masks[i]) >> g & 1
                            for n in groups.members[g]
                        )
                    ),
                )
            )
            j, state = i, state[:t] + (state[t] - 1,) + state[t + 1 :]
        used = [0] * len(types)
        stages = []
        for t, nodes in reversed(last_first):  # pipeline order: first stage first
            stages.append(Stage(DeviceSlot(types[t], used[t]), nodes))
            used[t] += 1
        placement = Placement(tuple(stages))
    return DPTrace(
        groups=tuple(groups.members),
        masks=masks,
        covers=covers,
        types=types,
        counts=counts,
        states=states,
        steps=tuple(steps),
        best=tuple(tuple(row) for row in best),
        answer=answer,
        placement=placement,
    )


def starting_split(trace: DPTrace) -> Placement | None:
    """A correct but improvable split to start "beat the solver" from.

    The best split on one device fewer than all (the slowest such, when it is slower than the
    optimum): close to the answer, with room to improve. When no such state is feasible or
    none is slower, the best split on the fewest devices. None when nothing is feasible.
    """
    position = {s: k for k, s in enumerate(trace.states)}
    value = {s: trace.best[trace.full][position[s]] for s in trace.states}
    feasible = [s for s in trace.states if math.isfinite(value[s])]
    if not feasible:
        return None
    one_fewer = [s for s in feasible if sum(s) == sum(trace.counts) - 1 and value[s] > trace.answer]
    if one_fewer:
        state = max(one_fewer, key=lambda s: value[s])
    else:
        state = min(feasible, key=lambda s: (sum(s), -value[s]))
    split = trace.split_for(state)
    if split is None:
        return None
    used: dict[str, int] = {}
    stages = []
    for kind_name, nodes in split:
        stages.append(Stage(DeviceSlot(kind_name, used.get(kind_name, 0)), nodes))
        used[kind_name] = used.get(kind_name, 0) + 1
    return Placement(tuple(stages))


def pipeline_order(problem: Problem, assignment: Mapping[int, DeviceSlot]) -> list[DeviceSlot] | None:
    """The devices of ``node -> device`` in an order where no forward edge goes back (None if none exists).

    A hand-made split names devices, not their pipeline order; it is contiguous exactly when
    the devices, linked by the forward edges between them, form no cycle. The order is then a
    topological order of that device graph (ties broken by the devices' sorted order).
    """
    devices = sorted(set(assignment.values()))
    after: dict[DeviceSlot, set[DeviceSlot]] = {d: set() for d in devices}
    graph = problem.graph
    for edge in graph.edges:
        source, target = graph.node_by_id[edge.source], graph.node_by_id[edge.target]
        if source.is_backward or target.is_backward or edge.source not in assignment or edge.target not in assignment:
            continue
        a, b = assignment[edge.source], assignment[edge.target]
        if a != b:
            after[a].add(b)
    waiting = {d: sum(d in targets for targets in after.values()) for d in devices}
    order: list[DeviceSlot] = []
    ready = [d for d in devices if waiting[d] == 0]
    while ready:
        device = ready.pop(0)
        order.append(device)
        for nxt in sorted(after[device]):
            waiting[nxt] -= 1
            if waiting[nxt] == 0:
                ready.append(nxt)
        ready.sort()
    return order if len(order) == len(devices) else None


# ----------------------------------------------------------------------------- why is this optimal
@dataclass(frozen=True)
class Explanation:
    """Why a plan is (or is not) optimal.

    ``lower_bound``: no plan of this graph on these devices has a smaller time per sample (the
    larger of the average of the cheapest compute over all devices, and the heaviest group's
    cheapest compute); ``ideals`` and ``pairs``: the DP's search space (every contiguous split
    is a chain of these ideals); ``bottleneck``: the device with the largest load.
    """

    time_per_sample: float
    lower_bound: float
    bound_reason: str
    ideals: int
    pairs: int
    bottleneck: DeviceSlot
    bottleneck_compute: float
    bottleneck_communication: float


def lower_bound(problem: Problem) -> tuple[float, str]:
    """A lower bound on the max-load of every placement, and which argument gives it.

    Communication is never negative, so each node costs at least its cheapest latency over the
    device types present; the loads then sum to at least the total cheapest compute, spread
    over at most every device; and the group (color class) holding the most cheapest compute
    must sit whole on one device.
    """
    graph, devices = problem.graph, problem.devices
    kinds = [kind for kind in devices.accelerators if kind.count > 0]

    def cheapest(node) -> float:
        options = [node.latency_on(kind) for kind in kinds if node.runs_on(kind)]
        if devices.cpus:
            options.append(node.cpu_latency)
        return min(options, default=math.inf)

    total_devices = devices.accelerator_count + devices.cpus
    cost = {node.id: cheapest(node) for node in graph.nodes}
    average = sum(cost.values()) / total_devices if total_devices else math.inf
    heaviest = max((sum(cost[n] for n in members) for members in contract(graph).members), default=0.0)
    if heaviest >= average:
        return heaviest, "the heaviest group (color class) must sit whole on one device"
    return average, f"the cheapest total compute spread evenly over all {total_devices} devices"


def explain_optimality(problem: Problem, placement: Placement) -> Explanation:
    """Explain a plan: its time per sample (evaluator), a lower bound, the DP's search space, its bottleneck."""
    from ..exact.dp import count_pairs  # the DP's own count of its search space

    evaluation = evaluate(problem, placement)
    bound, reason = lower_bound(problem)
    ideals, pairs = count_pairs(problem, reduce=False)
    top = max(evaluation.devices, key=lambda entry: entry.load)
    return Explanation(
        time_per_sample=evaluation.max_load,
        lower_bound=bound,
        bound_reason=reason,
        ideals=ideals,
        pairs=pairs,
        bottleneck=top.device,
        bottleneck_compute=top.compute,
        bottleneck_communication=top.communication,
    )
