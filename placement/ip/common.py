"""Plumbing shared by the integer programs: solver choice, status reading, bound and gap, results.

Solver: HiGHS in process (PuLP's ``pulp.HiGHS``, needs ``highspy``), or PuLP's bundled CBC when
HiGHS is missing or ``solver="cbc"``. Status: only a solver's *proven* optimum (``sol_status ==
1`` and a relative gap <= :data:`PROVEN_GAP`) is ``"optimal"``; a run stopped by its time or gap
limit with an incumbent is ``"feasible"`` (both solvers then report ``status == 1`` but
``sol_status == 2``); ``"no solution"`` without an incumbent; ``"infeasible"`` when proven.
Values are read from the variable objects (``var.varValue``), and only when the solver has an
incumbent (CBC leaves junk otherwise). Every result's objective is recomputed by the
independent evaluator (:mod:`placement.evaluate`).
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pulp

from ..deadline import limit_clock
from ..errors import PlacementError
from ..evaluate import evaluate
from ..model import CPU_KIND, AcceleratorKind, Graph, Objective, Placement, Problem, Result, Status
from ..model import make_result as _result  # this module's make_result builds an IP's Result with it

#: Relative gap under which a solver's "optimal" is reported as proven.
PROVEN_GAP = 1e-6
#: Seconds reading a HiGHS answer back costs per second of handing the model over (measured about 0.5-1
#: on the GNMT and Inception-like latency models; the larger keeps a time limit).
HANDOFF_READBACK = 1.0
#: Share of a time limit kept from HiGHS: it checks its clock between LP iterations and nodes, and
#: overshot 5 s limits by 0.3-0.5 s at a load of 14 on 2 cores (the evaluator's re-check follows too).
SOLVER_MARGIN = 0.04
#: Gap given to the solver when the caller gives none (HiGHS' own default, 1e-4, is too coarse).
DEFAULT_GAP = 1e-7


#: Largest integer program built (binary variables, estimated before building): PuLP keeps each
#: variable as a Python object of about 1 KB, so this bounds the model at a few hundred MB.
MAX_IP_VARIABLES = 400_000
#: Most calls (subgraphs run one after another) per accelerator in the latency IP.
MAX_SUBGRAPHS_PER_ACCELERATOR = 64


class DeadlinePassed(Exception):
    """Raised by :meth:`Deadline.check` inside a step the deadline interrupts; the method catches it."""


@dataclass(frozen=True)
class Deadline:
    """One deadline shared by every step of a call (warm starts, baselines, local search, solver).

    ``at`` is a reading of the deadline's clock (``math.inf``: no limit): :func:`time.perf_counter`, or
    with ``cpu`` the process's CPU time (:func:`time.process_time`, under
    :func:`placement.deadline.cpu_time_limits`), and then ``guard`` is a :func:`time.perf_counter`
    reading past which the deadline has passed too (the wall-clock guard). Steps take a share of what
    is left (:meth:`share`) and check it (:meth:`check`, :attr:`passed`); the solver gets
    :meth:`solver_seconds`. Invariant: no sub-deadline ends after its parent.

    Examples
    --------
    >>> Deadline.after(None).left()
    inf
    >>> d = Deadline.after(10.0)
    >>> 9.0 < d.left() <= 10.0, d.share(0.5).at <= d.at, d.passed
    (True, True, False)
    """

    at: float = math.inf
    cpu: bool = False
    guard: float = math.inf

    @classmethod
    def after(cls, seconds: float | None, started: float | None = None) -> Deadline:
        """The deadline ``seconds`` after ``started`` (a ``perf_counter`` reading; default: now); None: no limit.

        Under :func:`placement.deadline.cpu_time_limits` the seconds are CPU seconds from now (``started``
        only moves the wall-clock guard) and the guard is the clock's :meth:`~placement.deadline.WorkClock.guard`.
        """
        if seconds is None:
            return cls(math.inf)
        begun = time.perf_counter() if started is None else started
        clock = limit_clock()
        if clock is None:
            return cls(begun + float(seconds))
        return cls(time.process_time() + float(seconds), True, begun + clock.guard(float(seconds)))

    @property
    def limited(self) -> bool:
        return math.isfinite(self.at)

    def now(self) -> float:
        """The current reading of this deadline's clock."""
        return time.process_time() if self.cpu else time.perf_counter()

    def wall_left(self) -> float:
        """Wall-clock seconds left: to ``at`` (wall clock) or to the guard (CPU clock); ``inf`` without either."""
        until = self.guard if self.cpu else self.at
        return max(0.0, until - time.perf_counter()) if math.isfinite(until) else math.inf

    def left(self) -> float:
        """Seconds until the deadline (never negative; ``inf`` without a limit); the guard's, when nearer."""
        if not self.limited:
            return math.inf
        own = max(0.0, self.at - self.now())
        return min(own, self.wall_left()) if self.cpu else own

    @property
    def passed(self) -> bool:
        return self.limited and self.left() <= 0.0

    def check(self) -> None:
        """Raise :class:`DeadlinePassed` once the deadline has passed."""
        if self.passed:
            raise DeadlinePassed

    def share(self, fraction: float, cap: float | None = None) -> Deadline:
        """A sub-deadline on the same clock: ``fraction`` of the time left, at most ``cap`` seconds."""
        seconds = self.left() * fraction if self.limited else math.inf
        if cap is not None:
            seconds = min(seconds, cap)
        if not math.isfinite(seconds):
            return Deadline()
        if self.cpu:
            return Deadline(time.process_time() + seconds, True, self.guard)
        return Deadline(time.perf_counter() + seconds)

    def solver_seconds(self, reserve: float = 0.0) -> float | None:
        """Seconds for a solver, ``reserve`` seconds kept back for reading its answer (None: no limit)."""
        if not self.limited:
            return None
        return max(0.01, self.left() - reserve)


class TimedProblem(pulp.LpProblem):
    """A PuLP problem whose rows check a :class:`Deadline` while the model is built (every 256 rows).

    Building a large model in PuLP takes seconds; with this, the build stops with
    :class:`DeadlinePassed` when the call's time is up, and the method returns its best start.
    """

    def __init__(self, name: str, deadline: Deadline | None = None):
        super().__init__(name, pulp.LpMinimize)
        self._deadline = deadline or Deadline()
        self._rows = 0

    def addConstraint(self, constraint, name=None):  # PuLP's name
        self._rows += 1
        if self._rows % 256 == 0:
            self._deadline.check()
        return super().addConstraint(constraint, name)


#: A program is solved only if this many seconds per second it took to build are left: handing it to
#: HiGHS and reading the answer back cost about 1x the build time each (measured on the GNMT and
#: Inception-like latency models).
HANDOFF_PER_BUILD_SECOND = 2.0


def too_late_to_solve(deadline: Deadline, build_seconds: float) -> bool:
    """Whether too little of ``deadline`` is left to hand a model built in ``build_seconds`` to the solver."""
    return deadline.limited and deadline.left() < HANDOFF_PER_BUILD_SECOND * build_seconds + 0.05


def skipped_outcome(solver: str) -> Outcome:
    """The outcome of a program not solved for lack of time (the caller returns its best start)."""
    return Outcome(Status.NO_SOLUTION, None, None, None, solver)


def solve_in_time(prob, load, solver: str, deadline: Deadline, built_at: float, gap, start, stats: dict) -> Outcome:
    """Solve ``prob`` within ``deadline``, or skip it (``stats["ip_skipped"]`` says why) when too little is left.

    ``built_at`` is when the model's building began (``deadline.now()``, the deadline's clock): the hand-over to the solver
    takes about as long again, see :func:`too_late_to_solve`.
    """
    if too_late_to_solve(deadline, deadline.now() - built_at):
        stats["ip_skipped"] = "too little time left to hand the integer program to the solver"
        return skipped_outcome(solver)
    return solve_model(prob, load, solver, deadline.solver_seconds(), gap, start, deadline)


def check_model_size(method: str, variables: int, what: str) -> None:
    """Refuse (one line, naming the limit) an integer program that would not fit in memory."""
    if variables > MAX_IP_VARIABLES:
        raise PlacementError(
            f"{method}: the integer program would need about {variables:,} binary variables ({what}), over the "
            f"{MAX_IP_VARIABLES:,} limit: use fewer devices or coarsen the graph"
        )


def color_groups(graph: Graph) -> tuple[tuple[int, ...], ...]:
    """Nodes that must share a device (color classes; singletons otherwise), by first topological position."""
    return graph.color_groups


@dataclass(frozen=True)
class Outcome:
    """What a solve gave back, in plain values (read the variables themselves for the solution)."""

    status: Status
    objective: float | None
    bound: float | None
    gap: float | None
    solver: str
    message: str = ""

    @property
    def has_solution(self) -> bool:
        return self.status in (Status.OPTIMAL, Status.FEASIBLE)


def value(var: pulp.LpVariable | None) -> float:
    """The solved value of ``var`` (0 for a missing variable or value); call only when a solution exists."""
    if var is None or var.varValue is None:
        return 0.0
    return float(var.varValue)


def lp_sum(pairs: Iterable[tuple[Any, float]]) -> pulp.LpAffineExpression:
    """sum coef * var over ``pairs``, adding the coefficients of a variable that appears more than once."""
    total: dict = {}
    for var, coef in pairs:
        if coef != 0:
            total[var] = total.get(var, 0) + coef
    return pulp.LpAffineExpression([(var, coef) for var, coef in total.items() if coef != 0])


def highs_available() -> bool:
    """Whether PuLP can run HiGHS in process (``highspy`` installed)."""
    try:
        return bool(pulp.HiGHS(msg=False).available())
    except Exception:  # noqa: BLE001  # pragma: no cover - depends on the installation
        return False


class _HiGHSWithStart(pulp.HiGHS):
    """PuLP's in-process HiGHS, plus a (possibly partial) MIP start, a read-back of the dual bound and a CPU limit.

    ``until`` is the :func:`time.perf_counter` reading by which the answer must be back; ``cpu_until``, when
    given, the :func:`time.process_time` reading past which HiGHS is interrupted (its interrupt callbacks),
    the limit of :func:`placement.deadline.cpu_time_limits` (HiGHS' own ``time_limit`` is wall clock only).
    """

    def __init__(
        self,
        start: Mapping[Any, float] | None = None,
        report: dict | None = None,
        until: float | None = None,
        cpu_until: float | None = None,
        **kwargs: Any,
    ):
        super().__init__(**kwargs)
        self._start = dict(start or {})
        self._report = report if report is not None else {}
        self._until = until  # perf_counter reading by which the answer must be back (None: no limit)
        self._cpu_until = cpu_until
        self._created = time.perf_counter()
        self._created_cpu = time.process_time()
        self._margin = 0.0 if until is None else SOLVER_MARGIN * max(0.0, until - self._created)

    def callSolver(self, lp):  # PuLP's name
        model = lp.solverModel
        if self._until is not None:
            # The time limit is wall clock from solve_model's call: the model's hand-over to HiGHS
            # (PuLP copies it row by row) is spent already, and reading the answer back costs about
            # half as much again, so HiGHS gets what is left after both.
            now = time.perf_counter()
            handoff = now - self._created
            left = self._until - now - HANDOFF_READBACK * handoff - self._margin
            model.setOptionValue("time_limit", max(0.01, left))
        if self._cpu_until is not None:
            self._interrupt_on_cpu(model, self._cpu_until)
        if self._start:
            index = np.asarray([var.index for var in self._start], dtype=np.int32)
            values = np.asarray([float(v) for v in self._start.values()], dtype=np.float64)
            # A partial start: HiGHS fixes the given integers and completes the continuous variables.
            model.setSolution(len(index), index, values)
        model.run()
        info = model.getInfo()
        self._report["dual_bound"] = float(info.mip_dual_bound)
        self._report["mip_gap"] = float(info.mip_gap)
        self._report["nodes"] = int(info.mip_node_count)
        self._report["has_solution"] = int(info.primal_solution_status) != 0

    def _interrupt_on_cpu(self, model: Any, limit: float) -> None:
        """Interrupt HiGHS once the process's CPU time passes ``limit`` (less the read-back, as above)."""
        now = time.process_time()
        handoff = now - self._created_cpu
        cpu_until = max(now + 0.01, limit - HANDOFF_READBACK * handoff - SOLVER_MARGIN * max(0.0, limit - now))

        def stop_past_limit(event: Any) -> None:
            if time.process_time() >= cpu_until:
                event.data_in.user_interrupt = True

        for hook in (model.cbMipInterrupt, model.cbSimplexInterrupt, model.cbIpmInterrupt):
            hook.subscribe(stop_past_limit)


def check_options(solver: str, time_limit: float | None, gap: float | None) -> None:
    """Raise :class:`PlacementError` for an unknown solver or a bad limit."""
    if solver not in ("highs", "cbc"):
        raise PlacementError(f"unknown solver {solver!r}; choose 'highs' or 'cbc'")
    if time_limit is not None and (
        isinstance(time_limit, bool) or not isinstance(time_limit, (int, float)) or time_limit <= 0
    ):
        raise PlacementError(f"time limit must be a positive number of seconds (got {time_limit!r})")
    if gap is not None and (isinstance(gap, bool) or not isinstance(gap, (int, float)) or not 0 <= gap < 1):
        raise PlacementError(f"gap must be a fraction in [0, 1) (got {gap!r})")


def solve_model(
    prob: pulp.LpProblem,
    objective_var,
    solver: str,
    time_limit: float | None,
    gap: float | None,
    start: Mapping[Any, float] | None,
    deadline: Deadline | None = None,
) -> Outcome:
    """Solve ``prob`` (minimising) and read its status, bound and gap (see the module docstring).

    ``start`` maps variables to values (a MIP start; HiGHS completes a partial one).
    ``time_limit`` is seconds from this call, the model's hand-over to HiGHS included: wall clock, or
    CPU seconds of this process when ``deadline`` counts CPU time (:attr:`Deadline.cpu`; its wall-clock
    guard then bounds HiGHS' own limit; CBC counts its own CPU time).
    """
    check_options(solver, time_limit, gap)
    rel_gap = DEFAULT_GAP if gap is None else float(gap)
    report: dict = {}
    if solver == "highs" and not highs_available():
        solver = "cbc"
    cpu = time_limit is not None and deadline is not None and deadline.cpu
    if solver == "highs":
        now = time.perf_counter()
        wall = deadline.wall_left() if cpu and deadline is not None else time_limit
        until = None if wall is None or not math.isfinite(wall) else now + wall
        cpu_until = time.process_time() + time_limit if cpu and time_limit is not None else None
        engine = _HiGHSWithStart(
            start=start,
            report=report,
            until=until,
            cpu_until=cpu_until,
            msg=False,
            timeLimit=None if until is None else wall,
            gapRel=rel_gap,
            gapAbs=1e-9,
        )
    else:
        for var, v in (start or {}).items():
            var.setInitialValue(v)
        engine = pulp.PULP_CBC_CMD(
            msg=False,
            timeLimit=time_limit,
            gapRel=rel_gap,
            warmStart=bool(start),
            timeMode="cpu" if cpu else "elapsed",
        )
    try:
        prob.solve(engine)
    except pulp.PulpSolverError as exc:
        return Outcome(Status.ERROR, None, None, None, solver, f"solver failed: {exc}")
    status, sol_status = prob.status, prob.sol_status
    if status == pulp.LpStatusInfeasible:
        return Outcome(Status.INFEASIBLE, None, None, None, solver)
    if status == pulp.LpStatusUnbounded:
        return Outcome(Status.ERROR, None, None, None, solver, "the model is unbounded (a bug)")
    bound = report.get("dual_bound")
    if bound is not None and not math.isfinite(bound):
        bound = None
    if sol_status not in (pulp.LpSolutionOptimal, pulp.LpSolutionIntegerFeasible) or not report.get(
        "has_solution", True
    ):  # PuLP reads an interrupted HiGHS as "integer feasible" even without an incumbent
        return Outcome(Status.NO_SOLUTION, None, bound, None, solver)
    objective = float(objective_var.varValue) if objective_var.varValue is not None else None
    if solver == "cbc":
        bound = objective if sol_status == pulp.LpSolutionOptimal else None
    status = Status.OPTIMAL if sol_status == pulp.LpSolutionOptimal else Status.FEASIBLE
    if bound is not None and objective is not None:
        bound = min(bound, objective)
        gap_value = (objective - bound) / abs(objective) if objective else 0.0
        if gap_value > PROVEN_GAP and objective - bound > 1e-9:
            status = Status.FEASIBLE
    else:
        gap_value = 0.0 if status == Status.OPTIMAL else None
    return Outcome(status, objective, bound, gap_value, solver)


def check_devices(problem: Problem) -> str | None:
    """A reason when no placement can exist for trivial reasons (a node with nowhere to run)."""
    devices = problem.devices
    if devices.cpus == 0:
        for node in problem.graph.nodes:
            if not any(kind.count > 0 and node.runs_on(kind) for kind in devices.accelerators):
                return f"node {node.label} cannot run on any accelerator and there are no CPU cores"
    return None


def nowhere(problem: Problem, members: Sequence[int]) -> str:
    """The reason for a group of nodes that fits no device."""
    labels = ", ".join(problem.graph.node_by_id[n].label for n in members[:5])
    more = f" (and {len(members) - 5} more)" if len(members) > 5 else ""
    return (
        f"nodes {labels}{more} (which must share a device) fit no device: unsupported on every accelerator kind "
        "or larger than its memory, and there are no CPU cores"
    )


def objective_of(problem: Problem, placement: Placement, objective_kind: str) -> tuple[bool, float, tuple]:
    """(feasible, value, violations) of ``placement`` by the evaluator: max-load or latency."""
    evaluation = evaluate(problem, placement)
    v = evaluation.max_load if objective_kind == Objective.THROUGHPUT else evaluation.latency
    return evaluation.feasible, v, evaluation.violations


def make_result(
    method: str,
    outcome: Outcome,
    problem: Problem,
    placement: Placement | None,
    started: float,
    objective_kind: str,
    stats: dict,
    incumbents: Sequence[Placement] = (),
    reason: str | None = None,
    extra_bound: float | None = None,
) -> Result:
    """The Result of an IP: the best of the solver's placement and ``incumbents``, valued by the evaluator.

    ``extra_bound`` is a lower bound proven outside the solver (for example a combinatorial
    one); the bound reported is the larger of it and the solver's.
    """
    stats = dict(stats, solver=outcome.solver)
    if outcome.objective is not None:
        stats["ip_objective"] = outcome.objective
    seconds = time.perf_counter() - started
    if outcome.status == Status.INFEASIBLE:
        return _result(
            method,
            Status.INFEASIBLE,
            seconds=seconds,
            objective_kind=objective_kind,
            reason=reason
            or "the integer program is infeasible: no placement satisfies the memory, "
            "support and color rules with these devices",
            stats=stats,
        )
    if outcome.status == Status.ERROR:
        return _result(
            method, Status.ERROR, seconds=seconds, objective_kind=objective_kind, reason=outcome.message, stats=stats
        )
    best, best_value = None, math.inf
    if placement is not None and outcome.has_solution:
        feasible, v, violations = objective_of(problem, placement, objective_kind)
        if not feasible:  # pragma: no cover - a modelling bug, or a memory row met only within tolerance
            if not incumbents:
                return _result(
                    method,
                    Status.ERROR,
                    seconds=seconds,
                    placement=placement,
                    objective_kind=objective_kind,
                    reason="the solver's placement breaks a rule: " + "; ".join(violations[:3]),
                    stats=stats,
                )
            stats["rejected"] = "; ".join(violations[:3])
            outcome = Outcome(Status.FEASIBLE, outcome.objective, outcome.bound, outcome.gap, outcome.solver)
        elif math.isfinite(v):
            best, best_value = placement, v
    for candidate in incumbents:
        # Never return worse than a start (a solver may reject a start on tolerances).
        feasible, v, _ = objective_of(problem, candidate, objective_kind)
        if feasible and v < best_value * (1 - 1e-12):
            best, best_value = candidate, v
            stats["from_start"] = True
    bounds = [b for b in (outcome.bound, extra_bound) if b is not None and math.isfinite(b)]
    bound = max(bounds) if bounds else None
    if best is None:
        if placement is not None and outcome.has_solution:  # pragma: no cover - would be a modelling bug
            return _result(
                method,
                Status.ERROR,
                seconds=seconds,
                objective_kind=objective_kind,
                reason="the solver's placement has no finite value (its calls wait for each other)",
                stats=stats,
            )
        return _result(
            method,
            Status.NO_SOLUTION,
            seconds=seconds,
            objective_kind=objective_kind,
            bound=bound,
            reason="no solution found within the limits",
            stats=stats,
        )
    status = Status.OPTIMAL if outcome.status == Status.OPTIMAL else Status.FEASIBLE
    if bound is not None:
        bound = min(bound, best_value)
    if status == Status.OPTIMAL:
        # Proven by the solver for its own optimum; an incumbent can only tie it (the evaluator agrees).
        bound, gap = (best_value if bound is None else bound), 0.0
    elif bound is not None:
        gap = (best_value - bound) / best_value if best_value > 0 else 0.0
        if gap <= PROVEN_GAP:
            status, gap = Status.OPTIMAL, 0.0
    else:
        gap = None
    found: dict[str, Any] = {"objective": best_value, "placement": best, "bound": bound, "gap": gap}
    return _result(method, status, seconds=seconds, objective_kind=objective_kind, stats=stats, **found)


def infeasible_result(method: str, reason: str, started: float, objective_kind: str) -> Result:
    """A proven-infeasible Result (no placement can exist)."""
    return _result(method, Status.INFEASIBLE, started=started, objective_kind=objective_kind, reason=reason)


def device_types(problem: Problem) -> list[tuple[str, AcceleratorKind | None, int]]:
    """Device types with a positive count: (name, AcceleratorKind or None for CPU, count)."""
    out: list[tuple[str, AcceleratorKind | None, int]] = [
        (kind.name, kind, kind.count) for kind in problem.devices.accelerators if kind.count > 0
    ]
    if problem.devices.cpus > 0:
        out.append((CPU_KIND, None, problem.devices.cpus))
    return out


def group_compute(problem: Problem, members: Sequence[int], kind) -> float:
    """Compute time of ``members`` on ``kind`` (None: a CPU core); inf when one cannot run there."""
    graph = problem.graph
    if kind is None:
        return sum(graph.node_by_id[n].cpu_latency for n in members)
    if not all(graph.node_by_id[n].runs_on(kind) for n in members):
        return math.inf
    return sum(graph.node_by_id[n].latency_on(kind) for n in members)


def crossing_nodes(graph: Graph, nodes: set[int]) -> set[int]:
    """Nodes with an edge crossing the boundary of ``nodes`` (either direction): whose output is transferred."""
    counted = set()
    for edge in graph.edges:
        if (edge.source in nodes) != (edge.target in nodes):
            counted.add(edge.source)
    return counted
