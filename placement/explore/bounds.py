"""A first look at the accelerator-count tradeoff without an exact solve: a band the optimum lies in.

For each count, the exact optimum (the DP's time per sample) lies between

* a **lower bound** (:func:`placement.explore.teaching.lower_bound`: the cheapest compute spread
  over every device, or the heaviest group that must sit whole on one device), and
* the time of a **valid plan** found in milliseconds: the PipeDream-style split
  (:func:`placement.heuristics.pipedream`: the optimal split of one topological order of the
  groups). Its stages are contiguous, so the exact DP, which searches every contiguous split,
  is never slower; the plan is valued by the evaluator.

Both take well under a second on graphs whose exact solve takes minutes (Inception-like: 40,339
ideals), so the Tradeoffs page draws this band at once and runs the exact sweeps on demand.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

from ..errors import PlacementError
from ..model import Problem, Result
from .sweeps import kind_label, vary

#: Most counts one band computes (each costs a chain DP: milliseconds).
MAX_BAND_POINTS = 256


@dataclass(frozen=True)
class BandPoint:
    """The band around the optimum at one value of the swept parameter.

    Attributes
    ----------
    value : int
        The accelerator count.
    lower : float
        A lower bound on the optimal time per sample (ms); ``inf`` when no device can run the graph.
    lower_reason : str
        Which argument gives it, in words.
    upper : float or None
        The time per sample (ms) of a valid plan (None when the heuristic found none).
    plan : Result or None
        That plan (method ``"pipedream"``; None when plans were not asked for).
    """

    value: int
    lower: float
    lower_reason: str
    upper: float | None
    plan: Result | None

    def __post_init__(self) -> None:
        if self.upper is not None and self.upper < self.lower * (1 - 1e-9):
            raise PlacementError(f"band at {self.value}: a plan ({self.upper}) below the lower bound ({self.lower})")


def count_band(
    problem: Problem, values: Iterable[int], kind: str | None = None, plans: bool = True
) -> tuple[BandPoint, ...]:
    """The band (lower bound, valid plan) of the optimal time per sample for each count of ``kind``.

    Parameters
    ----------
    problem : Problem
        The base problem (weights-only memory: the plan respects each device's memory).
    values : iterable of int
        Accelerator counts of ``kind``.
    kind : str, optional
        The accelerator kind whose count varies (default: the first kind).
    plans : bool
        Also find the valid plans (the upper side). Leave them out when the exact solver uses
        another memory model than the plan respects (training memory): the lower bound holds
        under every memory model, a weights-only plan may not fit training memory.

    Returns
    -------
    tuple of BandPoint
        One per value, in order.

    Raises
    ------
    PlacementError
        For an unknown kind, a bad count or more than :data:`MAX_BAND_POINTS` values.
    """
    from ..heuristics import pipedream
    from .teaching import lower_bound

    values = list(values)
    if len(values) > MAX_BAND_POINTS:
        raise PlacementError(f"a band has at most {MAX_BAND_POINTS} values (got {len(values)})")
    name = kind_label(problem.devices, kind)
    out = []
    for value in values:
        varied = vary(problem, "accelerators", value, name)
        bound, reason = lower_bound(varied)
        plan = pipedream(varied) if plans else None
        upper = plan.objective if plan is not None and plan.ok and plan.objective is not None else None
        upper = upper if upper is not None and math.isfinite(upper) else None
        out.append(BandPoint(int(value), float(bound), reason, upper, plan))
    return tuple(out)
