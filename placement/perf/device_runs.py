"""Measured training runs on real devices (``measure``'s output kept as data) and their re-prediction.

A runs file (``placement-measured-runs/1``) names the device, the framework, the profile measured on that
device (a file beside it) and, per run, the Megatron-LM flags, the measured seconds per iteration and peak
allocator memory. :func:`device_run_rows` predicts every run again from the shipped profile with the
framework physics ``measure`` uses (:mod:`placement.perf.eager` for plain torch eager).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from ..errors import InvalidDevicesError
from .eager import eager_predict
from .megatron import parse_megatron_args
from .profile import load_profile
from .profiled import accelerator_from_profile, catalogue_match, profile_params

#: The measured-run sets the project ships.
RUNS_DIR = Path(__file__).resolve().parents[2] / "sample_graphs" / "calibration"
RUN_FILES = ("h200_torch_eager_2026-12-04/h200_torch_eager_runs.json",)


@dataclass(frozen=True)
class DeviceRunRow:
    """One measured run and its prediction."""

    device: str
    name: str
    parameters: int
    held_out: bool
    predicted_seconds: float
    measured_seconds: float
    predicted_memory: float
    measured_memory: float

    @property
    def ratio(self) -> float:
        """Predicted over measured seconds."""
        return self.predicted_seconds / self.measured_seconds

    @property
    def memory_ratio(self) -> float:
        """Predicted over measured peak memory."""
        return self.predicted_memory / self.measured_memory


def device_run_rows(path: Path | str) -> list[DeviceRunRow]:
    """Re-predict every run of the runs file ``path`` from the profile it names.

    Raises
    ------
    InvalidDevicesError
        A file that is not a runs file (one line naming the file and field).
    """
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        runs = data["runs"]
        profile = load_profile(path.parent / Path(str(data["profile"])).name)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise InvalidDevicesError(f"{path.name}: not a measured-runs file ({type(exc).__name__}: {exc})") from None
    acc = accelerator_from_profile(profile, catalogue_match(profile.name))
    params = profile_params(profile)
    rows = []
    for run in runs:
        model, layout, _ = parse_megatron_args([str(f) for f in run["flags"]])
        micro = layout.global_batch // layout.micro_batch
        pred = eager_predict(model, acc, layout.micro_batch, micro, params, model.parameters(), layout.dtype)
        rows.append(DeviceRunRow(profile.name, str(run["name"]), model.parameters(), run.get("set") != "scripts/device_calibrate.sh",
                                 pred.iteration_seconds, float(run["measured_seconds"]), pred.memory,
                                 float(run["measured_memory"])))  # fmt: skip
    return rows


def eager_band_line() -> str:
    """The torch-eager physics' measured error on the shipped runs (held out), as one line."""
    rows = [r for name in RUN_FILES for r in device_run_rows(RUNS_DIR / name) if r.held_out]
    errors = [abs(r.ratio - 1.0) for r in rows]
    return (
        f"extrapolated; on the {len(rows)} held-out runs measured with measure on an {rows[0].device} the error is "
        f"at most {max(errors):.0%}, mean {sum(errors) / len(errors):.0%} (docs/fidelity-devices.md)"
    )
