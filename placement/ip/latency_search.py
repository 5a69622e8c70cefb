"""Incumbents for the latency IP: the cheap baselines and a latency local search, all under one deadline.

* :func:`baseline_placements`: the greedy (both orders), the interval splits of
  :mod:`placement.ip.latency_interval` (accelerator calls and CPU nodes cut from a topological order
  together) and the DP's tie-broken split (among the throughput-optimal splits, the least sum of
  stage durations: an upper bound on its latency). The
  DP runs only when at least :data:`DP_MIN_SECONDS` are left, and its progress callback stops it
  at its share of the deadline (the exact kernel reports about every 1 % of its search).
* :func:`latency_local_search`: first-improvement moves of color classes, and of short chains of
  them (a class with one successor class that has it as its only predecessor, and so on: a side
  branch such as a residual shortcut, which gains only when moved whole), between devices (one
  call each) and the CPU, valued by the evaluator, until no move improves or the deadline passes.
* :func:`improve_all`: the local search seeded from every baseline, sharing one budget.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence

from ..errors import PlacementError
from ..evaluate import evaluate
from ..model import CPU_KIND, DeviceSlot, Placement, Problem
from .common import Deadline, DeadlinePassed, color_groups
from .latency_interval import interval_placements

#: The DP warm start is skipped when fewer seconds than this are left (its set-up - ideals, tables,
#: the kernel's first load in a process - cannot be interrupted, only its search can).
DP_MIN_SECONDS = 2.0
#: Share of the time left that the DP warm start may use before it is stopped.
DP_SHARE = 0.25
#: Share of the time left that the interval splits (:mod:`placement.ip.latency_interval`) may use.
INTERVAL_SHARE = 0.3
#: Longest chain of color classes the local search moves at once.
MAX_CHAIN = 6


def latency_of(problem: Problem, placement: Placement) -> float:
    """The evaluator's latency (``inf`` for an infeasible placement)."""
    evaluation = evaluate(problem, placement)
    return evaluation.latency if evaluation.feasible else math.inf


def baseline_placements(problem: Problem, deadline: Deadline | None = None, n_calls: int = 1) -> list[Placement]:
    """Feasible placements of the cheap latency methods: greedy (both orders), interval splits and the DP's split.

    ``deadline`` bounds the DP (see the module docstring); the greedy is linear and always runs;
    ``n_calls`` (calls per accelerator) above 1 adds interval splits with that many calls.
    """
    from ..heuristics import greedy_latency

    deadline = deadline or Deadline()
    out: list[Placement] = []
    for order in ("paper", "lexicographic"):
        try:
            result = greedy_latency(problem, order=order)
        except PlacementError:
            continue
        if result.ok and result.placement is not None:
            out.append(result.placement)
    out += interval_placements(problem, deadline.share(INTERVAL_SHARE), n_calls)
    if deadline.left() >= DP_MIN_SECONDS:
        dp_deadline = deadline.share(DP_SHARE)

        def stop_when_late(done: int, total: int) -> None:
            dp_deadline.check()

        try:
            from ..exact.dp import solve_dp

            result = solve_dp(
                problem,
                tie_break=True,
                tie_break_max_pairs=math.inf,
                progress=stop_when_late if dp_deadline.limited else None,
            )
            if result.ok and result.placement is not None:
                out.append(result.placement)
        except (PlacementError, DeadlinePassed):
            pass
    return [p for p in out if math.isfinite(latency_of(problem, p))]


def latency_local_search(
    problem: Problem,
    placement: Placement,
    time_limit: float | None = None,
    seed: int = 0,
    deadline: Deadline | None = None,
) -> Placement:
    """Improve ``placement``'s latency by moving color classes between devices (one call each) and the CPU.

    First-improvement descent valued by the evaluator (moves in a seeded random order) until no
    move improves or the earlier of ``time_limit`` seconds and ``deadline`` passes; returns the
    best placement seen (never worse than the input).
    """
    limit = Deadline.after(time_limit)
    if deadline is not None and deadline.at < limit.at:
        limit = deadline
    graph, devices = problem.graph, problem.devices
    groups = color_groups(graph)
    targets = [slot for slot in devices.slots() if not slot.is_cpu]
    if devices.cpus > 0:
        targets.append(DeviceSlot(CPU_KIND, 0))
    device_of = placement.device_of
    assign = [device_of[members[0]] for members in groups]
    assign = [DeviceSlot(CPU_KIND, 0) if slot.is_cpu else slot for slot in assign]

    def build(a: Sequence[DeviceSlot]) -> Placement:
        mapping = {n: a[g] for g, members in enumerate(groups) for n in members}
        return Placement.from_assignment(mapping)

    best_value = latency_of(problem, build(assign))
    if not math.isfinite(best_value):
        return placement
    rng = random.Random(seed)
    succ, pred = _group_edges(problem, groups)
    blocks = [(g,) for g in range(len(groups))] + _chains(succ, pred)
    while not limit.passed:  # the best compound move (a few dozen, cheap), then single moves
        chosen = None
        for candidate in _parallelize(assign, blocks, succ, pred, targets):
            if limit.passed:
                break
            v = latency_of(problem, build(candidate))
            if v < best_value * (1 - 1e-12):
                chosen, best_value = candidate, v
        if chosen is not None:
            assign[:] = chosen
        before = best_value
        best_value = _descend(problem, assign, blocks, targets, build, best_value, rng, limit)
        if chosen is None and best_value >= before:
            break
    result = build(assign)
    return result if latency_of(problem, result) <= latency_of(problem, placement) else placement


def _descend(problem, assign, blocks, targets, build, best_value, rng, limit) -> float:
    """First-improvement moves of single blocks until none improves (``assign`` updated in place): the best value."""
    improved = True
    while improved and not limit.passed:
        improved = False
        moves = [(b, t) for b in range(len(blocks)) for t in range(len(targets))]
        rng.shuffle(moves)
        for b, t in moves:
            if limit.passed:
                break
            block = blocks[b]
            if all(assign[g] == targets[t] for g in block):
                continue
            old = [assign[g] for g in block]
            for g in block:
                assign[g] = targets[t]
            v = latency_of(problem, build(assign))
            if v < best_value * (1 - 1e-12):
                best_value, improved = v, True
            else:
                for g, slot in zip(block, old):
                    assign[g] = slot
    return best_value


def _reached(succ: list[set[int]], starts) -> set[int]:
    """Classes reachable from ``starts`` (included)."""
    reached: set[int] = set()
    frontier = list(starts)
    while frontier:
        h = frontier.pop()
        if h not in reached:
            reached.add(h)
            frontier.extend(succ[h])
    return reached


def _side_branch(block, succ, pred) -> bool:
    """Whether ``block`` runs from a fork (its one predecessor class has other successors) to a join
    (its one successor class has other predecessors): a branch that could run beside another."""
    before, after = pred[block[0]], succ[block[-1]]
    if len(before) != 1 or len(after) != 1:
        return False
    (fork,), (join,) = before, after
    return len(succ[fork]) >= 2 and len(pred[join]) >= 2


def _parallelize(assign, blocks, succ, pred, targets):
    """Compound moves that run a side branch beside its device's work, on free accelerators: the
    block; what its device runs after the block's predecessors and before its successors (the
    main branch); and what its device runs from the block's successors on (if anything). The
    device keeps the rest, which comes first.

    No move of a single block finds this: each part alone only adds transfers."""
    used = set(assign)
    free = [t for t in targets if not t.is_cpu and t not in used]
    if len(free) < 2:
        return
    for block in blocks:
        device = assign[block[0]]
        if device.is_cpu or any(assign[g] != device for g in block) or not _side_branch(block, succ, pred):
            continue
        inside = set(block)
        after = _reached(succ, [h for g in block for h in succ[g] if h not in inside])
        later = [h for h in after if assign[h] == device]
        middle = [
            h
            for h in _reached(succ, [u for g in block for u in pred[g] if u not in inside])
            if assign[h] == device and h not in inside and h not in after and not pred[h] & inside
        ]
        middle = [h for h in middle if h not in {u for g in block for u in pred[g]}]
        parts = [part for part in (middle, block, later) if part]
        if not middle or len(parts) > len(free):
            continue
        candidate = list(assign)
        for part, slot in zip(parts, free):
            for g in part:
                candidate[g] = slot
        yield candidate


def _group_edges(problem: Problem, groups: Sequence[Sequence[int]]) -> tuple[list[set[int]], list[set[int]]]:
    """Successor and predecessor color classes of every class (indices into ``groups``)."""
    group_of = {n: g for g, members in enumerate(groups) for n in members}
    succ: list[set[int]] = [set() for _ in groups]
    pred: list[set[int]] = [set() for _ in groups]
    for edge in problem.graph.edges:
        a, b = group_of[edge.source], group_of[edge.target]
        if a != b:
            succ[a].add(b)
            pred[b].add(a)
    return succ, pred


def _chains(succ: list[set[int]], pred: list[set[int]]) -> list[tuple[int, ...]]:
    """Chains of 2 .. :data:`MAX_CHAIN` color classes, each the only successor class of the one before
    and having it as its only predecessor class (indices into the classes)."""
    out = []
    for g in range(len(succ)):
        chain = [g]
        while len(chain) < MAX_CHAIN and len(succ[chain[-1]]) == 1:
            (nxt,) = succ[chain[-1]]
            if len(pred[nxt]) != 1:
                break
            chain.append(nxt)
            out.append(tuple(chain))
    return out


def improve_all(problem: Problem, starts: Sequence[Placement], deadline: Deadline) -> list[Placement]:
    """The local search from every start (best first), each given an equal share of what is left of ``deadline``.

    Returns the improved placements that differ from their start.
    """
    ranked = sorted(starts, key=lambda p: latency_of(problem, p))
    out = []
    for k, start in enumerate(ranked):
        if deadline.passed:
            break
        share = deadline.share(1.0 / (len(ranked) - k))
        improved = latency_local_search(problem, start, deadline=share, seed=k)
        if improved is not start:
            out.append(improved)
    return out
