"""Claims with error bars: is the planner's optimum faster than a given layout, once the model's error counts?

Each prediction may be off by its band (a relative error of the iteration time: the calibration band of
the published runs, or what ``measure`` found on the user's device). The ratio of two predicted times is then
known only within ``[r (1 - e_b) / (1 + e_o), r (1 + e_b) / (1 - e_o)]`` (``r`` = baseline / optimum, ``e_b``
and ``e_o`` the two bands; the worst case, as if the errors were unrelated). A ratio whose range holds 1 is a
**tie**, not a speed-up; only a range entirely above 1 is reported as faster.

A prediction outside the calibration runs has no band (:func:`placement.perf.error_statement.error_statement`:
extrapolated): its speed-up is then **not a finding** - reported, with no range and no verdict of faster or
slower, unless the user states the error to allow (``--band``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..errors import PlacementError
from .predict import Prediction


@dataclass(frozen=True)
class Claim:
    """The optimum's predicted speed-up over a baseline layout, with its range under both predictions' bands."""

    baseline_seconds: float
    optimum_seconds: float
    baseline_band: float | None
    optimum_band: float | None

    @property
    def extrapolated(self) -> bool:
        """No error band applies to one of the two predictions: the speed-up is not a finding."""
        return self.baseline_band is None or self.optimum_band is None

    @property
    def speedup(self) -> float:
        """Predicted baseline time over predicted optimum time."""
        return self.baseline_seconds / self.optimum_seconds

    @property
    def low(self) -> float | None:
        """Smallest speed-up the bands allow (None: extrapolated)."""
        if self.baseline_band is None or self.optimum_band is None:
            return None
        return self.speedup * (1.0 - self.baseline_band) / (1.0 + self.optimum_band)

    @property
    def high(self) -> float | None:
        """Largest speed-up the bands allow (None: extrapolated)."""
        if self.baseline_band is None or self.optimum_band is None:
            return None
        return self.speedup * (1.0 + self.baseline_band) / (1.0 - self.optimum_band)

    @property
    def verdict(self) -> str:
        """``"faster"`` (the whole range above 1), ``"slower"`` (below 1), ``"tie"``, or
        ``"not a finding (extrapolated)"`` without a band."""
        if self.low is None or self.high is None:
            return "not a finding (extrapolated)"
        if self.low > 1.0:
            return "faster"
        if self.high < 1.0:
            return "slower"
        return "tie"

    def text(self) -> str:
        """One line for a person."""
        if self.low is None or self.high is None:
            return (
                f"not a finding (extrapolated): the optimum is predicted {self.speedup:.2f}x the baseline's speed, "
                "but no measured runs bound the model's error on these runs (give --band to compare within one)"
            )
        bands = f"bands ±{self.baseline_band:.1%} and ±{self.optimum_band:.1%}"
        span = f"{self.low:.2f}x to {self.high:.2f}x"
        if self.verdict == "tie":
            return f"a tie: the optimum is predicted {self.speedup:.2f}x the baseline's speed, within the model's error ({span}, {bands})"
        return f"the optimum is {self.verdict}: {self.speedup:.2f}x the baseline's speed ({span} within the model's {bands})"

    def as_dict(self) -> dict[str, object]:
        """JSON form."""
        return {
            "baseline_seconds": self.baseline_seconds,
            "optimum_seconds": self.optimum_seconds,
            "speedup": self.speedup,
            "speedup_low": self.low,
            "speedup_high": self.high,
            "baseline_band": self.baseline_band,
            "optimum_band": self.optimum_band,
            "verdict": self.verdict,
        }


def prediction_band(pred: Prediction, band: float | None = None) -> float | None:
    """The relative error to allow a prediction: ``band`` when given, else the error its statement justifies
    (:attr:`Prediction.error`: the calibration band inside the calibration runs; None when extrapolated)."""
    if band is None:
        return pred.error.value
    if not (math.isfinite(band) and 0 <= band < 1):
        raise PlacementError(f"--band {band!r}: must be a relative error from 0 to below 1 (0.1 for ±10 %)")
    return band


def compare_claim(baseline: Prediction, optimum: Prediction, band: float | None = None) -> Claim:
    """The optimum against a baseline layout, each allowed its band (or ``band`` for both).

    Parameters
    ----------
    baseline, optimum : Prediction
        The user's layout and the planner's, predicted on the same cluster.
    band : float or None
        Relative error of each prediction (default: each one's stated error; none when extrapolated, and the
        claim is then not a finding).

    Examples
    --------
    >>> from placement.perf.claims import Claim
    >>> Claim(1.03, 1.0, 0.057, 0.057).verdict, Claim(1.45, 1.0, 0.057, 0.057).verdict
    ('tie', 'faster')
    >>> Claim(2.18, 1.0, None, None).verdict
    'not a finding (extrapolated)'
    """
    return Claim(
        baseline.iteration_seconds,
        optimum.iteration_seconds,
        prediction_band(baseline, band),
        prediction_band(optimum, band),
    )
