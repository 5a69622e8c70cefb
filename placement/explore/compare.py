"""Run several methods on one problem and line their results up (the CLI's and the app's Compare).

Every row holds the value of the requested objective for the method's placement as the
independent evaluator computes it (max-load for ``"throughput"``, single-sample latency for
``"latency"``), the ratio to the best valid value in the table, and the method's own status,
bound and gap. A method that optimises the other objective (e.g. the DP in a latency table) is
shown with status "feasible" and no bound: its placement is valid, nothing is claimed about it.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, cast

from ..budget import precheck_solve
from ..errors import PlacementError
from ..evaluate import LATENCY_INFERENCE_ONLY, evaluate
from ..model import Objective, Placement, Problem, Result, Status
from ..solve import METHODS, MemoryModel, method_spec, recomputing_devices, solve

#: Methods run by default for each objective (read-only).
DEFAULT_METHODS: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        "throughput": ("dp", "ip", "ip-noncontiguous", "pipedream", "local-search", "one-accelerator"),
        "latency": ("latency-ip", "greedy-latency", "dp"),
    }
)

OBJECTIVES = tuple(o.value for o in Objective)
#: The reason column of a plan made without the training memory model, whose plan fits it. Its
#: status and bound stay true: the training peak is at least the weights, so the weights-only
#: problem is a relaxation (its bound holds, and its optimum, fitting, is optimal here too).
WEIGHTS_ONLY_NOTE = (
    "plans with weights only (the training memory model does not apply to this method); "
    "its plan was checked against the training memory and fits"
)
#: The status of a row whose objective does not apply (latency of a training graph); not a solve status.
NOT_APPLICABLE = "not applicable"


@dataclass(frozen=True)
class CompareRow:
    """One method's line in a comparison.

    Attributes
    ----------
    method : str
        Method name (a key of :data:`placement.solve.METHODS`).
    objective : float or None
        The evaluator's max-load (throughput) or latency of the method's placement.
    ratio_to_best : float or None
        ``objective`` divided by the best valid objective in the table (1.0 for the best).
    status : str
        The method's status ("optimal", "feasible", "infeasible", "no solution", "error"), or
        "not applicable" (latency of a training graph: see :data:`LATENCY_INFERENCE_ONLY`).
    bound, gap : float or None
        Proven lower bound and relative gap (for the method's own objective only).
    seconds : float
        Wall-clock time of the method.
    objective_kind : str
        "throughput" or "latency" (the table's objective).
    reason : str or None
        Why there is no placement (infeasible, error, no solution).
    placement : Placement or None
        The method's placement.
    """

    method: str
    objective: float | None
    ratio_to_best: float | None
    status: str
    bound: float | None
    gap: float | None
    seconds: float
    objective_kind: str = "throughput"
    reason: str | None = None
    placement: Placement | None = None


def method_options(method: str, options: dict[str, Any]) -> dict[str, Any]:
    """The subset of ``options`` that ``method`` takes (its registry entry, :data:`placement.solve.METHODS`).

    Lets one set of options (``time_limit``, ``gap``, ``subgraphs_per_accelerator``, ...) be
    passed to every method of a table: e.g. ``solve(problem, "dp", **method_options("dp", options))``.
    An option that no method of the registry takes raises :class:`PlacementError` naming it.
    """
    known = {name for spec in METHODS.values() for name in spec.option_names}
    for key in options:
        if key not in known:
            raise PlacementError(f"no method has an option {key!r}")
    names = method_spec(method).option_names
    return {key: value for key, value in options.items() if key in names}


def run_method(
    problem: Problem,
    method: str,
    objective: str = "throughput",
    time_limit: float | None = 60.0,
    memory_model: MemoryModel | None = None,
    **options: Any,
) -> CompareRow:
    """Run one method and turn its result into a :class:`CompareRow` (``ratio_to_best`` left None).

    ``time_limit`` goes to the methods that take one; ``options`` to those whose registry
    entry lists them. Under a training ``memory_model`` a method with a memory-aware variant
    runs as that variant (the row is named after it), and any other plan whose schedule peak
    does not fit is listed "infeasible" with the device that runs out of memory.
    """
    if objective not in OBJECTIVES:
        raise PlacementError(f"unknown objective {objective!r}; choose 'throughput' or 'latency'")
    memory_model = memory_model or MemoryModel()
    if memory_model.training and (variant := method_spec(method).memory_variant):
        method = variant  # e.g. the DP plans as the memory-aware DP
    spec = method_spec(method)
    given = method_options(method, dict(options, time_limit=time_limit))
    if memory_model.training and spec.takes_memory_model:
        given.update(memory_model.options())
    if objective == Objective.LATENCY and problem.graph.is_training:
        return CompareRow(method, None, None, NOT_APPLICABLE, None, None, 0.0, objective, LATENCY_INFERENCE_ONLY)
    started = time.perf_counter()
    try:
        precheck_solve(problem, method, given)  # the method's estimated work past its cap: an error row, one line
        result: Result = solve(problem, method, **given)
    except PlacementError as exc:
        return CompareRow(
            method, None, None, Status.ERROR, None, None, time.perf_counter() - started, objective, reason=str(exc)
        )
    value = None
    status, bound, gap, reason = result.status, result.bound, result.gap, result.reason
    if result.ok:
        placement = cast(Placement, result.placement)  # ok: a placement is available
        evaluation = evaluate(problem, placement)
        value = evaluation.max_load if objective == Objective.THROUGHPUT else evaluation.latency
        if spec.objective != objective:
            status, bound, gap = Status.FEASIBLE, None, None  # scored on an objective it does not optimise
        if not math.isfinite(value):
            status, bound, gap = Status.INFEASIBLE, None, None
            reason = "its placement has no finite latency (calls depend on each other in a cycle)"
        recomputing = recomputing_devices(result)  # a per-stage plan's own choice
        out_of_memory = memory_model.violations(problem, placement, recomputing) if memory_model.training else ()
        if out_of_memory:
            status, bound, gap = Status.INFEASIBLE, None, None
            reason = "runs out of memory: " + "; ".join(out_of_memory[:2])
        elif memory_model.training and spec.memory_variant is None:
            reason = WEIGHTS_ONLY_NOTE
    elif result.objective is not None and spec.objective == objective:
        value = result.objective  # e.g. one accelerator ignoring memory: shown, not ranked
    return CompareRow(
        method,
        value,
        None,
        status,
        bound,
        gap,
        result.seconds,
        objective,
        reason,
        result.placement if result.ok else None,
    )


def compare(
    problem: Problem,
    objective: str = "throughput",
    methods: Sequence[str] | None = None,
    time_limit: float | None = 60.0,
    memory_model: MemoryModel | None = None,
    **options: Any,
) -> list[CompareRow]:
    """Run ``methods`` on ``problem`` and return one row per method, in the order given.

    Parameters
    ----------
    problem : Problem
    objective : {"throughput", "latency"}
        Which value the table compares (max-load, or single-sample latency).
    methods : sequence of str, optional
        Method names (default: :data:`DEFAULT_METHODS` for the objective).
    time_limit : float, optional
        Seconds for each method that takes a time limit (the IPs, the local search).
    memory_model : MemoryModel, optional
        Under a training model the memory-aware methods plan with it and every other plan
        is checked against it (default: weights only, the paper's model).
    **options
        Passed to every method whose registry entry lists them (``gap``, ``solver``,
        ``subgraphs_per_accelerator``, ``seed``, ``restarts``, ...); an option no method
        takes is an error.

    Returns
    -------
    list of CompareRow
        ``ratio_to_best`` is set on rows with a valid (optimal/feasible, finite) objective.
    """
    if objective not in OBJECTIVES:
        raise PlacementError(f"unknown objective {objective!r}; choose 'throughput' or 'latency'")
    names = list(DEFAULT_METHODS[objective] if methods is None else methods)
    for name in names:
        method_spec(name)
    method_options(names[0] if names else "dp", options)  # an option no method takes is an error
    rows = [run_method(problem, name, objective, time_limit, memory_model, **options) for name in names]
    return with_ratios(rows)


def with_ratios(rows: Iterable[CompareRow]) -> list[CompareRow]:
    """Rows with ``ratio_to_best`` filled in against the best valid objective."""
    from dataclasses import replace

    rows = list(rows)
    valid = [
        r.objective
        for r in rows
        if r.status in (Status.OPTIMAL, Status.FEASIBLE) and r.objective is not None and math.isfinite(r.objective)
    ]
    best = min(valid, default=None)
    out = []
    for row in rows:
        ratio = None
        if best is not None and row.objective is not None and math.isfinite(row.objective):
            ratio = row.objective / best if best > 0 else (1.0 if row.objective == 0 else math.inf)
        out.append(replace(row, ratio_to_best=ratio))
    return out


def rows_to_records(rows: Iterable[CompareRow]) -> list[dict[str, Any]]:
    """Plain dicts (JSON-ready) of the rows, without the placements."""
    return [
        {
            "method": r.method,
            "objective_kind": str(r.objective_kind),
            "objective": r.objective,
            "ratio_to_best": r.ratio_to_best,
            "status": str(r.status),
            "bound": r.bound,
            "gap": r.gap,
            "seconds": r.seconds,
            "reason": r.reason,
        }
        for r in rows
    ]


def rows_to_frame(rows: Iterable[CompareRow]):
    """A pandas DataFrame of the rows (one line per method; no placements)."""
    import pandas as pd

    columns = ["method", "objective_kind", "objective", "ratio_to_best", "status", "bound", "gap", "seconds", "reason"]
    return pd.DataFrame(rows_to_records(rows), columns=columns)
