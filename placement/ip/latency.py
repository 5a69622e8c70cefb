"""Latency integer program (``"latency-ip"``): the placement of minimum single-sample latency.

Model (the evaluator's latency, :func:`placement.evaluate.latency`): every accelerator runs up to
``q`` calls one after another; CPU nodes run on unbounded cores. A call starts after its outside
inputs and the previous call on its device and lasts incoming + outgoing transfers + compute; a
node's finish time is its call's end (on a CPU core: its start + CPU latency).

Variables: ``x[v, c]`` (node ``v`` in call ``c``), ``y[v]`` (on a CPU core), call start/end
``s, e``, node finish ``f``, crossing ``z[u, c]`` and the makespan ``T``. Big-M constants are the
best incumbent's latency (every optimal schedule fits under it). When the graph has zero-cost
edges, integral "ranks" rule out zero-duration cycles that the times alone would allow.

Valid inequalities (they cut fractional points, never an integral schedule):

* ``h[v]`` = when ``v``'s own compute ends; along every edge ``u -> w`` it grows by ``w``'s
  time on its device, plus, per call, the transfer of ``u``'s output when exactly one end is in
  that call; and plus ``cost(u) * smin * (o + i)`` where ``k[u, w] = sum_c kept[u, w, c]``
  (``kept <= x[u, c], kept <= x[w, c]``) says both ends share a call, ``o >= 1 - y[u] - k``
  (the sender pays) and ``i >= 1 - y[w] - k`` (the receiver pays): a critical-path bound that
  sees communication.
* Memory covers: a connected set ``S`` of nodes larger than every accelerator's memory cannot
  sit in one call, so ``sum_{tree edges of S} (1 - k[e]) + sum_{v in S} y[v] >= 1``.

Symmetry rows (identical accelerators ordered by their first node) were tried and dropped: on the
BERT-3 operator graph they held HiGHS' bound at 62 after 30 s, against 369 without them.

Incumbents (:mod:`placement.ip.latency_search`): the greedy (both orders), the interval splits
(:mod:`placement.ip.latency_interval`), the DP's tie-broken split and a latency local search seeded
from each; the result is never worse than any of them. Lower bounds (:mod:`placement.ip.latency_bounds`:
critical path, work, chain and memory chain; the chain DPs count the ``k * q`` calls; and the
device-choice relaxation of :mod:`placement.ip.latency_relax`) are computed first, each within a share
of the time; the largest is a cut ``T >= bound`` and a floor of the reported bound. By default (``model="both"``) this program runs
first with half the time left, then the paper's (:mod:`placement.ip.latency_paper`), started from
the best plan so far, with the rest: the better plan and the larger bound are kept. One :class:`~placement.ip.common.Deadline`
covers the whole call (starts, model building, solver). The model is built, solved and read back in
three steps (:func:`build_latency_model`, :func:`placement.ip.common.solve_model`,
:func:`extract_latency`).
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import PlacementError
from ..model import Placement, Problem, Result, Status
from .common import (
    MAX_SUBGRAPHS_PER_ACCELERATOR,
    Deadline,
    DeadlinePassed,
    Outcome,
    check_devices,
    check_model_size,
    check_options,
    infeasible_result,
    make_result,
    skipped_outcome,
    solve_model,
    too_late_to_solve,
)
from .latency_bounds import latency_bounds
from .latency_model import (
    STRONG_CUTS_MAX_NODES,
    build_latency_model,
    extract_latency,
    latency_lower_bound,
    latency_start,
)
from .latency_relax import relaxation_bound
from .latency_search import baseline_placements, improve_all, latency_local_search, latency_of

__all__ = [
    "baseline_placements",
    "build_latency_model",
    "extract_latency",
    "latency_local_search",
    "latency_lower_bound",
    "solve_latency_ip",
]

METHOD = "latency-ip"
#: The integer programs ``solve_latency_ip(model=...)`` offers.
MODELS = ("both", "ours", "paper")
#: Share of the time left that ours gets when both programs run (the paper's gets the rest).
OURS_SHARE = 0.5
#: Share of the time limit the combinatorial bounds may take (the chain DP stops at it, keeping the paths done).
BOUNDS_SHARE = 0.2
#: Share of the time left that the device-choice relaxation (:mod:`placement.ip.latency_relax`) may take.
RELAXATION_SHARE = 0.15


def solve_latency_ip(
    problem: Problem,
    time_limit: float | None = None,
    gap: float | None = None,
    solver: str = "highs",
    subgraphs_per_accelerator: int = 1,
    warm_start: bool = True,
    q: int | None = None,
    local_search_seconds: float | None = None,
    strong_cuts: bool | None = None,
    model: str = "both",
) -> Result:
    """The placement of minimum single-sample latency, by an integer program.

    Parameters
    ----------
    problem : Problem
        Graph and devices; CPU nodes run on unbounded cores (when ``devices.cpus > 0``).
    time_limit, gap, solver
        As in :func:`placement.ip.throughput.solve_ip_contiguous`; ``time_limit`` is wall clock
        for the whole call (baselines, local search, model building, solver): when it passes,
        the best plan so far comes back "feasible" with its bound.
    subgraphs_per_accelerator : int
        ``q``: how many calls (subgraphs run one after another) each accelerator may make.
        ``q`` is an alias.
    warm_start : bool
        Start from the greedy and DP splits, each improved by a latency local search.
    local_search_seconds : float, optional
        Seconds for those local searches together (default: a sixth of ``time_limit``, at most
        10 s; 2 s without a time limit).
    strong_cuts : bool, optional
        Add the communication-aware critical-path rows and memory covers (default: on graphs
        of at most :data:`STRONG_CUTS_MAX_NODES` nodes).
    model : {"both", "ours", "paper"}
        Which integer program: ours (:func:`build_latency_model`), the paper's
        (:func:`placement.ip.latency_paper.build_paper_model`), or both one after the other
        (ours with :data:`OURS_SHARE` of the time left, then the paper's, started from the best
        plan so far): the result is the better plan and the larger bound of the two.

    Returns
    -------
    Result
        Method ``"latency-ip"``, objective kind ``"latency"``; accelerator stages carry ``calls``
        (in execution order) when ``q > 1``. Never worse than the greedy or the DP's split.
    """
    started = time.perf_counter()
    if q is not None:
        subgraphs_per_accelerator = q
    if (
        isinstance(subgraphs_per_accelerator, bool)
        or not isinstance(subgraphs_per_accelerator, int)
        or subgraphs_per_accelerator < 1
    ):
        raise PlacementError(
            f"subgraphs per accelerator must be a positive integer (got {subgraphs_per_accelerator!r})"
        )
    if subgraphs_per_accelerator > MAX_SUBGRAPHS_PER_ACCELERATOR:
        raise PlacementError(
            f"subgraphs per accelerator must be at most {MAX_SUBGRAPHS_PER_ACCELERATOR} "
            f"(got {subgraphs_per_accelerator:,})"
        )
    check_options(solver, time_limit, gap)
    if model not in MODELS:
        raise PlacementError(f"model must be one of: {', '.join(MODELS)} (got {model!r})")
    n_all_calls = problem.devices.accelerator_count * subgraphs_per_accelerator
    check_model_size(
        METHOD,
        (len(problem.graph.nodes) + len(problem.graph.edges)) * n_all_calls,
        f"{len(problem.graph.nodes):,} nodes and {len(problem.graph.edges):,} edges x {n_all_calls:,} calls",
    )
    reason = check_devices(problem)
    if reason:
        return infeasible_result(METHOD, reason, started, "latency")
    n_calls = subgraphs_per_accelerator
    graph, devices = problem.graph, problem.devices
    accels = [slot for slot in devices.slots() if not slot.is_cpu]
    deadline = Deadline.after(time_limit, started)
    bounds = latency_bounds(problem, n_calls, deadline.share(BOUNDS_SHARE))
    relaxed = relaxation_bound(problem, deadline.share(RELAXATION_SHARE), solver, n_calls)
    bounds["relaxation"] = relaxed.bound
    lower = max(bounds.values(), default=0.0)
    lower = lower if math.isfinite(lower) else 0.0
    stats: dict[str, Any] = {f"bound_{name}": v for name, v in bounds.items()}
    incumbents: list[Placement] = []
    baselines: list[Placement] = []
    if warm_start:
        incumbents = baseline_placements(problem, deadline, n_calls)
        baselines = list(incumbents)
        seconds = local_search_seconds
        if seconds is None:
            seconds = 2.0 if time_limit is None else min(10.0, time_limit / 6)
        incumbents += improve_all(problem, incumbents, deadline.share(1.0, cap=seconds))
    # Big-M: an achievable latency (the best incumbent's, else a schedule-free safe bound).
    max_scale = max((devices.transfer_scale(k) for k in devices.accelerators), default=1.0)
    safe = sum(max([node.cpu_latency] + [node.latency_on(k) for k in devices.accelerators]) for node in graph.nodes)
    safe += len(accels) * n_calls * sum(graph.output_cost.values()) * max_scale * 2
    values = [latency_of(problem, p) for p in incumbents]
    upper = min([safe] + values)
    if strong_cuts is None:
        strong_cuts = len(graph.nodes) <= STRONG_CUTS_MAX_NODES
    stats.update(big_m=upper, strong_cuts=bool(strong_cuts))
    settings = _Settings(problem, n_calls, lower, bool(strong_cuts), gap, solver)
    outcome, placement = _solve_models(settings, model, upper, incumbents, deadline, stats, baselines)
    if isinstance(outcome, str):
        return infeasible_result(METHOD, outcome, started, "latency")
    ip_bound = outcome.bound if outcome.bound is not None else -math.inf
    stats["bound_source"] = "ip" if ip_bound > lower * (1 + 1e-9) else max(bounds, key=bounds.__getitem__, default="ip")
    return make_result(
        METHOD,
        outcome,
        problem,
        placement,
        started,
        "latency",
        stats,
        incumbents,
        reason="the latency program is infeasible: no placement satisfies the memory, support and "
        "color rules with these devices",
        extra_bound=lower,
    )


@dataclass(frozen=True)
class _Settings:
    """What every program of one :func:`solve_latency_ip` call shares (``lower``: the combinatorial bound)."""

    problem: Problem
    n_calls: int
    lower: float
    strong_cuts: bool
    gap: float | None
    solver: str


def _solve_models(
    settings: _Settings,
    which: str,
    upper: float,
    incumbents: list[Placement],
    deadline: Deadline,
    stats: dict[str, Any],
    baselines: Sequence[Placement] = (),
) -> tuple[Outcome | str, Placement | None]:
    """Solve ours, the paper's, or both (see :func:`solve_latency_ip`): the combined outcome and its placement.

    Both programs are exact for the same latency, so either one's proven optimum (or infeasibility)
    is final, and the larger of their bounds holds. With both, ours starts from the best of
    ``baselines`` (before the local search; big-M its latency) and the paper's from the best plan
    so far: two starts, two searches (HiGHS searches near its start; on GNMT layers ours from the
    greedy's plan found 182.4533 in 30 s, from the local search's 182.4907 none better in 60 s).
    ``stats`` gets ``<model>_objective`` and ``<model>_bound`` per program solved, and
    ``incumbent_model`` (which program found the plan).
    """
    problem = settings.problem
    order = ["ours", "paper"] if which == "both" else [which]
    results: list[tuple[str, Outcome, Placement | None]] = []
    for k, name in enumerate(order):
        last = k == len(order) - 1
        part = deadline if last else deadline.share(OURS_SHARE)
        found = [p for _, o, p in results if p is not None]
        starts, big = incumbents + found, upper
        if which == "both" and name == "ours" and baselines:
            starts = [min(baselines, key=lambda p: latency_of(problem, p))]
            big = max(upper, latency_of(problem, starts[0]))
        elif found:
            big = min([upper] + [latency_of(problem, p) for p in found])
        sub_stats: dict[str, Any] = {}
        start = min(starts, key=lambda p: latency_of(problem, p)) if starts else None
        outcome, placement = _solve_program(settings, name, big, start, part, sub_stats)
        if isinstance(outcome, str):
            return outcome, None
        for key, val in sub_stats.items():
            stats[key if key not in stats or name == "ours" else f"{name}_{key}"] = val
        stats[f"{name}_objective"] = outcome.objective
        stats[f"{name}_bound"] = outcome.bound
        results.append((name, outcome, placement))
        if outcome.status in (Status.OPTIMAL, Status.INFEASIBLE):
            break
    final = [r for r in results if r[1].status in (Status.OPTIMAL, Status.INFEASIBLE)]
    if final:
        name, outcome, placement = final[0]
    else:
        solved = [r for r in results if r[1].has_solution and r[2] is not None]
        name, outcome, placement = (
            min(solved, key=lambda r: latency_of(problem, r[2])) if solved else results[-1]  # type: ignore[arg-type]
        )
    for other, o, p in results:
        if p is not None and other != name:
            incumbents.append(p)
    bounds = [r[1].bound for r in results if r[1].bound is not None]
    if bounds and outcome.status != Status.OPTIMAL:
        outcome = Outcome(outcome.status, outcome.objective, max(bounds), outcome.gap, outcome.solver, outcome.message)
    if outcome.has_solution:
        stats["incumbent_model"] = name
    return outcome, placement


def _solve_program(
    settings: _Settings, which: str, upper: float, start: Placement | None, deadline: Deadline, stats: dict[str, Any]
) -> tuple[Outcome | str, Placement | None]:
    """Build and solve the program within ``deadline``: (outcome, its placement), or the reason it is infeasible.

    ``start`` (the best plan so far, if any) is handed to the solver as its warm start.

    When the deadline passes while building, or too little time is left to hand the model over,
    the outcome is "no solution" (the caller then returns the best incumbent with its bound).
    """
    problem, n_calls = settings.problem, settings.n_calls
    skipped = skipped_outcome(settings.solver)
    if deadline.passed:
        stats["ip_skipped"] = "time limit reached before the integer program"
        return skipped, None
    built_at = deadline.now()
    try:
        if which == "paper":
            from .latency_paper import build_paper_model

            model = build_paper_model(problem, n_calls, upper, deadline)
        else:
            model = build_latency_model(problem, n_calls, upper, settings.strong_cuts, deadline)
    except DeadlinePassed:
        stats["ip_skipped"] = "time limit reached while building the integer program"
        return skipped, None
    if model.infeasible_reason:
        return model.infeasible_reason, None
    stats.update(model.stats)
    if too_late_to_solve(deadline, deadline.now() - built_at):
        stats["ip_skipped"] = "too little time left to hand the integer program to the solver"
        return skipped, None
    # The combinatorial bound as a cut (a hair below it, and never above the big-M, for float noise).
    model.prob += model.makespan >= min(settings.lower * (1 - 1e-9), upper)
    warm = latency_start(model, start) if start is not None else None
    outcome = solve_model(
        model.prob, model.makespan, settings.solver, deadline.solver_seconds(), settings.gap, warm, deadline
    )
    return outcome, (extract_latency(problem, model) if outcome.has_solution else None)
