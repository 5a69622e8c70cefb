"""Sensitivity of the optimal plan: how far a parameter moves before the plan changes.

Found by bracketing and bisection with real solves (:func:`placement.explore.sweeps.solve_point`):
the smallest increase and decrease at which another plan becomes strictly faster, or the plan no
longer fits.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, cast

from ..errors import PlacementError
from ..evaluate import evaluate
from ..model import CPU_KIND, Placement, Problem, Result
from .sweeps import PARAMETERS, current_value, format_parameter, format_value, kind_label, solve_point, vary

# ----------------------------------------------------------------------------- sensitivity


@dataclass(frozen=True)
class Change:
    """Where, moving a parameter one way, the current plan stops being optimal.

    Attributes
    ----------
    value : float
        The first value (within the bisection tolerance) at which it happens.
    objective : float or None
        The new optimum there (None when nothing fits).
    plan_objective : float or None
        The current plan's time per sample there (None when it no longer fits).
    result : Result
        The solve at ``value``.
    reason : str
        ``"faster plan"`` or ``"plan does not fit"``.
    """

    value: float
    objective: float | None
    plan_objective: float | None
    result: Result
    reason: str


@dataclass(frozen=True)
class Sensitivity:
    """How far ``parameter`` can move before the optimal plan changes.

    ``down``/``up`` are None when no change was found within the searched range
    (``low``..``high``). ``sentence`` says it in words for the UI.
    """

    parameter: str
    kind: str | None
    value: float
    objective: float | None
    placement: Placement | None
    down: Change | None
    up: Change | None
    low: float
    high: float
    solves: int
    sentence: str
    tie: float | None = None  # a value where another plan ties with this one (within ``tie_tol``), if seen


def sensitivity(
    problem: Problem,
    parameter: str,
    kind: str | None = None,
    method: str = "dp",
    result: Result | None = None,
    max_factor: float = 1024.0,
    max_count: int = 64,
    rel_tol: float = 1e-3,
    tie_tol: float = 1e-6,
    **options: Any,
) -> Sensitivity:
    """The smallest increase and decrease of ``parameter`` at which the optimal plan changes.

    "Changes" means: at the new value the current plan no longer fits (memory, device
    count) or another plan is faster by more than ``tie_tol`` (relative; found by a real
    solve). Another plan within ``tie_tol`` is a tie, not a change: both are optimal up to
    rounding, and the first value where one was seen is reported as ``tie``. Counts are searched
    by integer bisection up to ``max_count``; continuous parameters (bandwidth factor,
    memory, speed) by doubling/halving until the change happens (at most ``max_factor``),
    then bisection to ``rel_tol``. Decreases of memory and counts are exact without search:
    the plan fits as long as the kind keeps the devices and memory it uses.

    Parameters
    ----------
    problem : Problem
        The problem with the current parameter values.
    parameter : str
        ``"bandwidth"``, ``"memory"``, ``"speed"``, ``"accelerators"`` or ``"cpus"``.
    kind : str, optional
        The accelerator kind for per-kind parameters (default: the first kind).
    method : str
        Solver method (the DP by default).
    result : Result, optional
        The current optimal result (solved here if not given).
    max_factor, max_count, rel_tol : float, int, float
        Search limits.
    tie_tol : float
        Relative difference of time per sample below which two plans tie (default 1e-6:
        far above the rounding of a sum of loads, far below any difference that matters).

    Returns
    -------
    Sensitivity
    """
    if parameter not in PARAMETERS:
        raise PlacementError(f"unknown parameter {parameter!r}; choose one of: {', '.join(PARAMETERS)}")
    if parameter in ("accelerators", "memory", "speed"):
        kind = kind_label(problem.devices, kind)
    else:
        kind = None
    frozen = tuple(sorted(options.items()))
    solves = 0

    def solve_at(value):
        nonlocal solves
        solves += 1
        varied = vary(problem, parameter, value, kind)
        return varied, solve_point(varied, method, frozen)

    if result is None:
        result = solve_point(problem, method, frozen)
        solves += 1
    base = current_value(problem, parameter, kind)
    integer = parameter in ("accelerators", "cpus")
    if not result.ok:
        return Sensitivity(
            parameter,
            kind,
            base,
            None,
            None,
            None,
            None,
            base,
            base,
            solves,
            f"No plan to analyse: {result.reason or result.status}.",
        )
    plan = cast(Placement, result.placement)  # ok: a placement is available

    tie_at: list[float] = []

    def changed(value) -> Change | None:
        varied, found = solve_at(value)
        ev = evaluate(varied, plan)
        plan_value = ev.max_load if ev.feasible else None
        if plan_value is None:
            return Change(float(value), found.objective if found.ok else None, None, found, "plan does not fit")
        if found.ok and found.objective < plan_value * (1 - tie_tol) - 1e-12:
            return Change(float(value), found.objective, plan_value, found, "faster plan")
        if found.ok and found.objective < plan_value and found.placement != plan and not tie_at:
            tie_at.append(float(value))
        return None

    def bisect(good, bad, change):
        """``good``: no change; ``bad``: change. Narrow down to the first bad value."""
        while True:
            if integer:
                if bad - good <= 1:
                    return change
                mid = (good + bad) // 2
            else:
                if abs(bad - good) <= rel_tol * max(abs(good), abs(bad)):
                    return change
                mid = math.sqrt(good * bad) if good > 0 and bad > 0 else (good + bad) / 2
            found = changed(mid)
            if found is None:
                good = mid
            else:
                bad, change = mid, found

    used_kind = [s for s in plan.stages if s.nodes and (s.device.kind == (CPU_KIND if parameter == "cpus" else kind))]
    # ---- decrease
    down = None
    low = base
    if parameter in ("accelerators", "cpus"):
        needed: float = len(used_kind)
        low = 0
        if needed > 0:
            down = changed(needed - 1)
    elif parameter == "memory":
        needed = max((sum(problem.graph.node_by_id[n].size for n in s.nodes) for s in used_kind), default=0.0)
        low = 0.0
        if needed > 0:
            below = math.nextafter(needed, 0.0)
            down = changed(below)
    else:
        low = base / max_factor
        good, value = base, base
        while value > low:
            value = max(value / 2, low)
            found = changed(value)
            if found is not None:
                down = bisect(good, value, found)
                break
            good = value
    # ---- increase
    up = None
    if integer:
        high: float = max_count
        if base < high:
            found = changed(high)
            if found is not None:
                up = bisect(base, high, found)
    else:
        high = base * max_factor if math.isfinite(base) else base
        if parameter == "memory" and math.isfinite(base):
            unlimited = changed(math.inf)
            if unlimited is not None:
                hi = base * max_factor
                if unlimited.result.ok:
                    hi = max(
                        (
                            sum(problem.graph.node_by_id[n].size for n in s.nodes)
                            for s in cast(Placement, unlimited.result.placement).stages
                            if s.device.kind == kind
                        ),
                        default=hi,
                    )
                hi = max(hi, base * (1 + 2 * rel_tol))
                found = changed(hi)
                if found is not None:
                    up = bisect(base, hi, found)
                high = hi
            else:
                high = math.inf
        elif math.isfinite(base):
            good, value = base, base
            while value < high:
                value = min(value * 2, high)
                found = changed(value)
                if found is not None:
                    up = bisect(good, value, found)
                    break
                good = value
    sentence = _sentence(parameter, kind, base, result.objective, down, up, low, high)
    tie = tie_at[0] if tie_at else None
    if tie is not None:
        sentence += (
            f" At {format_parameter(parameter, tie)} another plan ties with it (within {tie_tol:g} "
            "relative): both are optimal."
        )
    return Sensitivity(
        parameter, kind, float(base), result.objective, plan, down, up, float(low), float(high), solves, sentence, tie
    )


def _distinct(a: float, b: float) -> tuple[str, str]:
    """Format two different numbers with enough digits to tell them apart."""
    for digits in range(4, 13):
        left, right = f"{a:.{digits}g}", f"{b:.{digits}g}"
        if left != right:
            return left, right
    return left, right


def _what(parameter: str, kind: str | None) -> str:
    prefix = "" if kind in (None, "accelerator") else f"{kind} "
    return {
        "accelerators": f"{prefix}accelerators",
        "memory": f"memory per {prefix}accelerator",
        "speed": f"{prefix}accelerator speed",
        "bandwidth": "the bandwidth factor",
        "cpus": "CPU cores",
    }[parameter]


def _sentence(parameter, kind, base, objective, down, up, low, high) -> str:
    what = _what(parameter, kind)
    parts = [f"With {what} at {format_parameter(parameter, base)} the plan's time per sample is {objective:.4g}."]
    for change, word in ((down, "below"), (up, "above")):
        if change is None:
            continue
        limit = change.value
        text = (
            f"With {format_value(limit)}"
            if parameter in ("accelerators", "cpus")
            else f"At {format_parameter(parameter, limit)}"
        )
        relative = (limit - base) / base * 100 if base and math.isfinite(base) else None
        rel = f" ({relative:+.1f} %)" if relative is not None and math.isfinite(relative) else ""
        if change.reason == "plan does not fit":
            if change.objective is None:
                new = "nothing fits"
            elif math.isclose(change.objective, objective, rel_tol=1e-6):
                new = "another plan with the same time per sample takes over"
            else:
                new = f"the best plan takes {change.objective:.4g}"
            parts.append(f"{text}{rel} the plan no longer fits ({new}).")
        else:
            new, old = _distinct(change.objective, change.plan_objective)
            parts.append(f"{text}{rel} a different plan is faster ({new} vs {old} for this plan).")
    if down is None and up is None:
        parts.append(
            f"The plan stays optimal for every value searched ({format_parameter(parameter, low)} to "
            f"{format_parameter(parameter, high)})."
        )
    elif down is None:
        parts.append(f"Lowering it (down to {format_parameter(parameter, low)}) keeps the plan optimal.")
    elif up is None:
        parts.append(f"Raising it (up to {format_parameter(parameter, high)}) keeps the plan optimal.")
    return " ".join(parts)
