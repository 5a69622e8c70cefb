"""What the performance model's error is known to be for one prediction: :func:`error_statement`.

A number is shown with an error only where measured runs justify it:

* **calibrated**: the run lies inside every property of the calibration runs
  (:func:`placement.perf.coverage.outside_calibration` finds none outside): the calibration band
  (:func:`placement.perf.predict.calibration_band`) applies;
* **measured-device**: framework ``torch-eager`` on the GPU kind of the measured device runs the project
  ships (:mod:`placement.perf.device_runs`): the error on their held-out runs, stated as extrapolated (other
  shapes than those runs);
* **extrapolated**: everything else. No error value: "no measured runs of this framework on this GPU" (another
  GPU kind, framework or a power limit), or the run is outside the calibration runs in the properties listed.

``predict`` (text and ``--json``), ``plan`` (text, ``--json`` and its claims), the meeting scenario and the app's
transformer sections all state the error through this function.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Protocol

from ..errors import PlacementError
from .calibration import CalibrationBand
from .coverage import calibration_lines, properties

if TYPE_CHECKING:
    from .hardware import Accelerator

#: The kinds of error statement (the ``kind`` of :meth:`ErrorStatement.as_dict`).
KINDS = ("calibrated", "extrapolated", "measured-device")

#: The framework of the measured device runs (:mod:`placement.perf.eager`'s name).
EAGER = "torch-eager"


class Predicted(Protocol):
    """What :func:`error_statement` reads of a :class:`~placement.perf.predict.Prediction` (its band, its
    properties outside the calibration runs, its framework); a protocol, so that this module does not import
    ``predict``, which imports it."""

    @property
    def band(self) -> CalibrationBand | None: ...

    @property
    def outside_calibration(self) -> tuple[str, ...]: ...

    @property
    def framework(self) -> str: ...


@dataclass(frozen=True)
class ErrorStatement:
    """The error a prediction may be stated with.

    Parameters
    ----------
    kind : str
        ``"calibrated"``, ``"extrapolated"`` or ``"measured-device"`` (:data:`KINDS`).
    value : float or None
        The largest relative error of the iteration time measured on the runs that apply (None: none apply).
    source : str
        Which runs (file and count) or why none apply.
    headline : str
        The words shown beside the iteration time (``"calibration band ±5.7%"``, ``"extrapolated: ..."``).
    band : CalibrationBand or None
        The calibration runs' band (shown for reference; it applies only when ``kind`` is calibrated).
    outside : tuple of str
        The run's properties outside the calibration runs.
    """

    kind: str
    value: float | None
    source: str
    headline: str
    band: CalibrationBand | None = None
    outside: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise PlacementError(f"error statement kind {self.kind!r}: must be one of {', '.join(KINDS)}")
        if self.value is not None and not (math.isfinite(self.value) and 0 <= self.value < 1):
            raise PlacementError(f"error statement value {self.value!r}: must be a relative error from 0 to below 1")
        if self.kind != "extrapolated" and self.value is None:
            raise PlacementError(f"error statement {self.kind}: needs the measured error (value)")

    @property
    def applies(self) -> bool:
        """The calibration band applies (the run is inside the calibration runs)."""
        return self.kind == "calibrated"

    def as_dict(self) -> dict[str, object]:
        """``{"kind", "value", "source"}`` (the ``error`` field of the JSON outputs)."""
        return {"kind": self.kind, "value": self.value, "source": self.source}

    def span(self, value: float, inverse: bool = False) -> tuple[float, float] | None:
        """The range of a time-derived ``value`` under the stated error (``inverse`` for rates such as tokens/s);
        None when no error is stated (extrapolated)."""
        if self.value is None:
            return None
        low, high = 1.0 - self.value, 1.0 + self.value
        return (value / high, value / low) if inverse else (value * low, value * high)

    def lines(self, indent: str = "  ") -> list[str]:
        """The text lines: the statement, then the calibration runs and the run's properties outside them."""
        return [f"error: {self.headline}", *calibration_lines(self.band, self.outside, indent)]


def error_statement(
    prediction: Predicted | None = None, *, framework: str | None = None, accelerator: Accelerator | None = None
) -> ErrorStatement:
    """The error a prediction may be stated with (the rule of this module's docstring).

    Parameters
    ----------
    prediction : Prediction or None
        A :func:`~placement.perf.predict.predict` result (its band, its properties outside the calibration runs
        and its framework). None for the ``torch-eager`` physics (give ``accelerator``).
    framework : str or None
        Default: the prediction's (``"torch-eager"`` selects the measured device runs).
    accelerator : Accelerator or None
        The GPU of a ``torch-eager`` prediction.

    Returns
    -------
    ErrorStatement
    """
    framework = framework or (prediction.framework if prediction is not None else "megatron")
    if framework == EAGER:
        return _eager_statement(accelerator)
    if prediction is None:
        raise PlacementError(f"error_statement: framework {framework} needs the prediction")
    band, outside = prediction.band, prediction.outside_calibration
    if band is not None and not outside:
        return ErrorStatement(
            "calibrated", band.max_abs_error, f"{band.rows} measured runs ({band.source})",
            f"calibration band ±{band.max_abs_error:.1%}", band, (),
        )  # fmt: skip
    if band is None:
        return ErrorStatement(
            "extrapolated", None, "no calibration runs apply (priced from a device profile, or no table installed)",
            "extrapolated: no measured runs of this framework on this GPU",
        )  # fmt: skip
    foreign = [item for item in outside if item.startswith(("GPU ", "framework ", "power limit "))]
    if foreign:
        headline = "extrapolated: no measured runs of this framework on this GPU"
    else:
        headline = f"extrapolated: outside the calibration runs in {properties(len(outside))}, no error measured there"
    source = f"{band.rows} calibration runs ({band.source}) do not cover {properties(len(outside))} of this run"
    return ErrorStatement("extrapolated", None, source, headline, band, outside)


def _eager_statement(accelerator: Accelerator | None) -> ErrorStatement:
    """torch-eager: the held-out device runs' error on their GPU kind, else extrapolated."""
    rows, family, source, worst, mean = _device_runs()
    name = _kind(accelerator)
    if accelerator is None or name != family or accelerator.power_limit_watts is not None:
        return ErrorStatement(
            "extrapolated", None, f"the measured {EAGER} runs ({source}) are on {family}",
            "extrapolated: no measured runs of this framework on this GPU",
        )  # fmt: skip
    headline = (
        f"extrapolated; on the {rows} held-out runs measured with measure on an {family} the error is at most "
        f"{worst:.0%}, mean {mean:.0%} (docs/fidelity-devices.md)"
    )
    if accelerator.measured is None:
        headline += (
            "; those runs were priced from their device's profile, this one from the spec sheet (give --profile)"
        )
    return ErrorStatement("measured-device", worst, f"{rows} held-out runs ({source})", headline)


def _kind(accelerator: Accelerator | None) -> str | None:
    """The catalogue kind of an accelerator (a profiled one: the kind its device name denotes)."""
    if accelerator is None:
        return None
    if accelerator.measured is None:
        return accelerator.name
    from .profiled import catalogue_match

    match = catalogue_match(accelerator.measured.name)
    return None if match is None else match.name


@lru_cache(maxsize=1)
def _device_runs() -> tuple[int, str, str, float, float]:
    """(held-out runs, their catalogue kind, runs file, worst and mean |predicted / measured - 1|)."""
    from .device_runs import RUN_FILES, RUNS_DIR, device_run_rows
    from .profiled import catalogue_match

    rows = [r for name in RUN_FILES for r in device_run_rows(RUNS_DIR / name) if r.held_out]
    match = catalogue_match(rows[0].device)
    errors = [abs(r.ratio - 1.0) for r in rows]
    source = ", ".join(name.rsplit("/", 1)[-1] for name in RUN_FILES)
    kind = match.name if match is not None else rows[0].device
    return len(rows), kind, source, max(errors), sum(errors) / len(errors)
