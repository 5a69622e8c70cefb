"""Exact multidimensional planner: DP over ideals x sum of data-parallel degrees x devices used.

Stages are built from the last to the first. For a threshold tau, the *decision* DP computes

    h_j[s, c] = fewest devices of the last kind for a plan of the nodes outside ideal j whose stages
                all take at most tau per sample, with sum of d equal to s and c devices used of each
                other kind (c is a vector; empty with one kind),

by ``h_j[s + d, c + dt e_K] = min h_i[s, c] (+ d t if K is the last kind)`` over ideals i above j, tensor
degrees t, kinds K and data-parallel degrees d with ``T(I_i \\ I_j, t, K, d, y) <= tau`` where
``y = ceil((s + d) / d)``. T, the fastest option choice under the memory cap, comes from exact Pareto
fronts (:mod:`.options`) and is non-decreasing in y, so the test is ``s + d <= d * ymax(tau)``.
The lattice is over groups: nodes, with free nodes merged into a neighbour (:func:`plan_groups`).

The optimum is one of the finitely many values T takes: a binary search over them, each probe one
decision DP, finds the smallest tau that is feasible. That tau is the optimal time per sample and the
plan is read back from the tables of the last feasible probe -- a proof of optimality in the model
(every smaller candidate was shown infeasible).

Restriction: with several kinds and ``count_step`` q > 1, stages on kinds other than the last may only
use multiples of q devices (the state counts them in steps of q); the result is then optimal within that
space and says so (``MultiResult.restriction``). With q = 1 (or one kind) nothing is restricted.

Units: times in ms per sample, sizes in bytes, bandwidths in bytes/s (:mod:`.model`).

The work is split by topic: :mod:`.lattice` (groups and ideals), :mod:`.choice` (one stage's option
choice, the upper bound), :mod:`.front_steps` and :mod:`.stages` (every stage's option front),
:mod:`.tables` (stage times as step functions of y), :mod:`.recurrence` (the decision DP) and
:mod:`.readback` (the plan); this module is the driver.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from ..errors import InvalidDevicesError, TooManyIdealsError
from ..exact import ideals
from ..model import Objective, Status
from . import limits
from .choice import Prune, ideal_work, stage_choice, upper_bound
from .lattice import NodeLattice, count_stages, free_nodes, node_lattice, plan_groups
from .model import MultiProblem, Plan
from .readback import read_front_plan, read_plan
from .recurrence import decide, decide_front
from .stages import stage_fronts
from .tables import StageTables

__all__ = [
    "DEFAULT_MAX_IDEALS",
    "DEFAULT_MAX_STAGES",
    "MultiResult",
    "count_stages",
    "free_nodes",
    "node_lattice",
    "plan_groups",
    "solve_multidim",
    "stage_choice",
    "stage_fronts",
]


@dataclass(frozen=True)
class MultiResult:
    """Outcome of :func:`solve_multidim`, shaped like :class:`placement.model.Result` (times in ms).

    Attributes
    ----------
    status : Status
        :attr:`Status.OPTIMAL` (proven, within ``restriction`` when it is not empty) or
        :attr:`Status.INFEASIBLE` (proven: no plan fits the devices and their memory).
    plan : Plan or None
    time_per_sample : float
        The optimum, ms per sample (inf when infeasible), as the solver computes it (the evaluator agrees).
    seconds : float
        Wall time of the solve in seconds (as ``Result.seconds``).
    bound : float or None
        A proven lower bound on the time per sample (ms) in the searched space: the optimum itself, since
        every smaller candidate time was shown infeasible (None when infeasible), as ``Result.bound``.
    restriction : str
        Empty, or the restriction the optimum holds within (device-count steps, ``count_step``).
    reason : str or None
        Why there is no plan (infeasible), as ``Result.reason``.
    ideals, probes, candidates : int
        Lattice size, decision DPs run, distinct stage times searched (also in :attr:`stats`).
    """

    status: Status
    plan: Plan | None
    time_per_sample: float
    seconds: float
    bound: float | None = None
    restriction: str = ""
    reason: str | None = None
    ideals: int = 0
    probes: int = 0
    candidates: int = 0

    #: The method name and objective, as in :class:`placement.model.Result`.
    method: ClassVar[str] = "multidim"
    objective_kind: ClassVar[Objective] = Objective.THROUGHPUT

    def __post_init__(self) -> None:
        object.__setattr__(self, "status", Status(self.status))

    @property
    def objective(self) -> float | None:
        """The time per sample (ms) when there is a plan, else None (as ``Result.objective``)."""
        return self.time_per_sample if self.plan is not None else None

    @property
    def gap(self) -> float | None:
        """0.0 when optimal (proven), None otherwise (as ``Result.gap``)."""
        return 0.0 if self.status is Status.OPTIMAL else None

    @property
    def ok(self) -> bool:
        """True when a plan is available."""
        return self.plan is not None and self.status is Status.OPTIMAL

    @property
    def stats(self) -> tuple[tuple[str, Any], ...]:
        """``(("ideals", n), ("probes", n), ("candidates", n))`` (as ``Result.stats``)."""
        return (("ideals", self.ideals), ("probes", self.probes), ("candidates", self.candidates))

    def stat(self, key: str, default: Any = None) -> Any:
        return dict(self.stats).get(key, default)


#: Default cap on the lattice size (after the free-node merge): the package's one ideal cap,
#: :data:`placement.exact.ideals.DEFAULT_MAX_IDEALS`. The planner's work and memory follow the number of
#: stages (pairs of nested ideals), which :data:`DEFAULT_MAX_STAGES` caps; every non-empty ideal i gives
#: the stage (empty, i), so the lattice is enumerated only up to ``max_stages + 1`` ideals.
DEFAULT_MAX_IDEALS = ideals.DEFAULT_MAX_IDEALS

#: Default cap on the number of stages (pairs j < i of nested ideals), and on stages x tensor degrees:
#: each gets option fronts and table rows (28,729 on resnet.json take a few CPU seconds). The other
#: tables are capped by :mod:`.limits` before they are allocated.
DEFAULT_MAX_STAGES = 100_000

#: ``MultiResult.reason`` when there are no devices (or no microbatches) to plan on.
NO_DEVICES = "no devices to plan on (min(microbatches, devices) is 0)"

#: ``MultiResult.reason`` when no plan fits (proven: every candidate stage time was infeasible).
NO_PLAN = "no plan fits the devices and their memory"


def solve_multidim(
    problem: MultiProblem,
    count_step: int = 1,
    max_ideals: int = DEFAULT_MAX_IDEALS,
    max_stages: int = DEFAULT_MAX_STAGES,
    front_cache: dict | None = None,
    front_horizon: int | None = None,
) -> MultiResult:
    """Optimal plan (minimum time per sample, ms) of ``problem`` in Piper's model.

    Parameters
    ----------
    problem : MultiProblem
    count_step : int
        With several device kinds: stages on kinds other than the last use multiples of this many
        devices (reported in ``MultiResult.restriction``). 1 = unrestricted.
    max_ideals : int
        Cap on the lattice size (:class:`~placement.errors.TooManyIdealsError` beyond).
    max_stages : int
        Cap on the number of stages, pairs of nested ideals (the same one-line error beyond): the
        planner's time and memory follow it.
    front_cache : dict, optional
        Reuse of the option fronts between solves of the same nodes and edges (e.g. a device-count
        sweep): pass the same dict; it is keyed on the largest memory cap and the horizon.
    front_horizon : int, optional
        Build the fronts for y up to this (at least the solve's own largest y, min(N, devices)); a sweep
        passes its largest value so that one set of fronts serves every point.
    """
    start = time.perf_counter()
    if isinstance(count_step, bool) or not isinstance(count_step, int) or count_step < 1:
        raise InvalidDevicesError(f"count_step must be a positive integer (got {count_step!r})")
    s_max = limits.check_sum_degrees(problem)  # every table spans 0..s_max: capped before anything else
    lattice, horizon = _checked_lattice(problem, count_step, max_ideals, max_stages, front_horizon, s_max)
    restriction = ""
    if len(problem.kinds) > 1 and count_step > 1:
        restriction = (
            f"optimal among plans whose stages on kinds "
            f"{', '.join(k.name for k in problem.kinds[:-1])} use multiples of {count_step} devices"
        )
    done: dict[str, Any] = {"restriction": restriction, "ideals": lattice.count}
    if not problem.nodes:
        return MultiResult(Status.OPTIMAL, Plan(()), 0.0, time.perf_counter() - start, bound=0.0, **done)
    if s_max == 0:
        return MultiResult(Status.INFEASIBLE, None, np.inf, time.perf_counter() - start, reason=NO_DEVICES, **done)
    upper = upper_bound(problem, s_max) if len(problem.kinds) == 1 else np.inf  # a one-stage plan, one kind
    prune = _prune(problem, lattice, s_max, upper)
    stages = _fronts(problem, lattice, horizon, s_max, prune, front_cache)
    tables = StageTables(problem, lattice, s_max, count_step, stages, upper, prune)
    single = len(problem.kinds) == 1

    def decide_at(tau: float):
        if single:
            return decide_front(tables, lattice, problem, s_max, tau)
        return decide(tables, lattice, problem, s_max, count_step, tau)

    best, probes = _search(tables.candidates, decide_at)
    done.update(probes=probes, candidates=len(tables.candidates))
    if best is None:
        return MultiResult(Status.INFEASIBLE, None, np.inf, time.perf_counter() - start, reason=NO_PLAN, **done)
    tau, h, yc = best
    if single:
        plan = read_front_plan(problem, lattice, tables, h)
    else:
        plan = read_plan(problem, lattice, tables, h, yc, s_max, count_step)
    # every candidate below tau was shown infeasible: tau is also the proven lower bound
    return MultiResult(Status.OPTIMAL, plan, tau, time.perf_counter() - start, bound=tau, **done)


def _checked_lattice(
    problem: MultiProblem, count_step: int, max_ideals: int, max_stages: int, front_horizon: int | None, s_max: int
) -> tuple[NodeLattice, int]:
    """The lattice and the fronts' horizon, once every table's estimated size is within its cap."""
    limit = min(max_ideals, max_stages + 1)  # more ideals than this: more than max_stages stages
    try:
        lattice = node_lattice(problem, limit)
    except TooManyIdealsError as exc:
        if limit < max_ideals:
            raise limits.TooMuchWorkError(
                f"multidim planner: more than {limit:,} ideals give more than {max_stages:,} stages (pairs of "
                f"nested ideals), each needing option fronts and table rows (max_stages={max_stages:,}); merge "
                f"nodes into layers (fewer parallel branches give fewer ideals) or raise max_stages"
            ) from None
        raise TooManyIdealsError(
            f"multidim planner: {exc} (it builds a table per pair of nested ideals; max_ideals={max_ideals})"
        ) from None
    stages_count = count_stages(lattice, max_stages)
    if stages_count > max_stages:
        raise limits.TooMuchWorkError(
            f"multidim planner: {lattice.count:,} ideals give more than {max_stages:,} stages (pairs of nested "
            f"ideals), each needing option fronts and table rows (max_stages={max_stages:,}); merge nodes "
            f"into layers (fewer parallel branches give fewer ideals) or raise max_stages"
        )
    horizon = max(s_max, min(front_horizon or 0, limits.MAX_SUM_DEGREES))
    limits.check_work(limits.estimate_work(problem, lattice.count, stages_count, count_step, horizon), max_stages)
    return lattice, horizon


def _prune(problem: MultiProblem, lattice, s_max: int, upper: float) -> Prune | None:
    """The cuts of the upper bound ``upper`` (one kind; None when it is infinite): :class:`Prune`."""
    if upper == np.inf:
        return None
    kind = problem.kinds[0]
    usable = tuple(limits.usable_degrees(problem.microbatches, s_max))
    # a zero bound (every node free) leaves no devices argument: W / (speed bound) is 0 / 0
    work = ideal_work(problem, lattice.masks) if upper > 0 else None
    return Prune(upper, s_max, kind.count, kind.speed, usable, work)


def _fronts(
    problem: MultiProblem, lattice, horizon: int, s_max: int, prune: Prune | None, front_cache: dict | None
) -> list:
    """Every stage's option front (:func:`stage_fronts`), from ``front_cache`` when it has them.

    Without a cache the fronts are pruned by ``prune`` (the upper bound's cuts, one kind).
    """
    cap = max(k.memory for k in problem.kinds)
    memories = tuple(sorted({k.memory for k in problem.kinds}))
    if front_cache is not None:
        if (memories, horizon) not in front_cache:
            front_cache[(memories, horizon)] = stage_fronts(problem, lattice, cap, horizon, memories[0], memories)
        return front_cache[(memories, horizon)]
    return stage_fronts(problem, lattice, cap, horizon, memories[0], memories, prune)


def _search(values: np.ndarray, decide_at) -> tuple[tuple | None, int]:
    """Binary search over the candidate stage times: (the last feasible probe's (tau, tables, ycount), probes).

    Invariant: every candidate <= lo is infeasible, the best found so far (at hi) is feasible.
    """
    probes = 0
    best = None
    lo, hi = -np.inf, np.inf
    while len(values):
        values = values[(values > lo) & (values < hi)]
        if len(values) == 0:
            break
        tau = float(np.partition(values, len(values) // 2)[len(values) // 2])
        feasible, h, yc = decide_at(tau)
        probes += 1
        if feasible:
            best, hi = (tau, h, yc), tau
        else:
            lo = tau
    return best, probes
