"""The Devices page's forms as plain functions (no Streamlit): widget values <-> devices, the inventory table.

* :func:`widget_values` and :func:`slider_bounds` show the devices in the page's widgets;
  :func:`devices_from_widgets` reads them back (an untouched memory keeps the file's exact bytes).
* :func:`inventory_frame` and :func:`kinds_from_frame` show and read the accelerator inventory table.
* :func:`catalogue_rows`, :func:`with_catalogue_kind` and :func:`only_catalogue_kind` put the hardware
  catalogue's GPUs (memory, link and price prefilled by :func:`placement.modelling.pricing.devices_for`) into
  the inventory.
* :func:`read_profile`, :func:`with_measured_kind`, :func:`without_measured_kind` and :func:`profile_note` put a
  device profile written by ``python -m placement calibrate`` into the inventory as a measured kind and take it out.
* :func:`memory_model_from_widgets` builds the memory model; :func:`rule_rows` lists latency multipliers.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import pandas as pd

import placement
from placement.model import MAX_DEVICE_COUNT, Recompute, ScheduleKind
from placement.modelling.pricing import devices_for
from placement.patterns import compile_pattern
from placement.perf.hardware import ACCELERATORS, Accelerator
from placement.perf.profile import MAX_PROFILE_BYTES, profile_from_bytes
from placement.perf.profiled import catalogue_match, measured_kind, profile_source
from placement.pipeline.registry import schedule_title
from ui.widgets import stable_maximum

GIB = 2**30
#: Memory (GiB) shown in the disabled memory field while memory is unlimited.
DEFAULT_MEMORY_GIB = 16.0
#: The sliders' usual range of speed and bandwidth factors (a file, link or card may lie outside: issue 27).
FACTOR_RANGE = (0.05, 8.0)
#: The widgets that show the devices (the first accelerator kind, CPU cores, the global factors).
WIDGETS = (
    "dev_count",
    "dev_cpus",
    "dev_memory_limited",
    "dev_memory_gib",
    "dev_speed",
    "dev_bandwidth",
    "dev_overlap",
    "dev_cpu_pays",
    "dev_cpu_bandwidth",
)
MEMORY_MODELS = {
    "weights": "Weights only (the paper's model)",
    "training": "Training: weights + optimizer state + activations in flight",
}
TRAINING_SCHEDULES = {kind.value: schedule_title(kind) for kind in (ScheduleKind.ONE_F_ONE_B, ScheduleKind.GPIPE)}
RECOMPUTE_LABELS = {
    Recompute.NONE.value: "No recomputation",
    Recompute.ALWAYS.value: "Every stage",
    Recompute.PER_STAGE.value: "Per stage (exact DP)",
}
INVENTORY_COLUMNS = {
    "name": "string",
    "count": "int64",
    "memory (GiB)": "float64",
    "speed": "float64",
    "bandwidth": "float64",
    "price/hour": "float64",
}


def first_kind(devices: placement.Devices) -> placement.AcceleratorKind:
    """The kind the page's sliders show: the first accelerator kind (an empty one when there is none)."""
    return devices.accelerators[0] if devices.accelerators else placement.AcceleratorKind("accelerator", 0)


def widget_values(devices: placement.Devices) -> dict[str, Any]:
    """Widget key -> value showing ``devices``."""
    kind = first_kind(devices)
    limited = math.isfinite(kind.memory)
    return {
        "dev_count": kind.count,
        "dev_cpus": devices.cpus,
        "dev_memory_limited": limited,
        "dev_memory_gib": kind.memory / GIB if limited else DEFAULT_MEMORY_GIB,
        "dev_speed": kind.speed,
        "dev_bandwidth": devices.bandwidth,
        "dev_overlap": devices.overlap,
        "dev_cpu_pays": devices.cpu_bandwidth is not None,
        "dev_cpu_bandwidth": devices.cpu_bandwidth if devices.cpu_bandwidth is not None else 1.0,
    }


def slider_bounds(devices: placement.Devices) -> tuple[int, int, tuple[float, float], tuple[float, float]]:
    """(max count, max CPU cores, speed range, bandwidth range), computed when the devices changed elsewhere."""
    first = first_kind(devices)
    low, high = FACTOR_RANGE
    return (
        min(MAX_DEVICE_COUNT, stable_maximum(first.count)),
        min(MAX_DEVICE_COUNT, stable_maximum(devices.cpus)),
        (min(low, first.speed), max(high, first.speed)),
        (min(low, devices.bandwidth), max(high, devices.bandwidth)),
    )


def devices_from_widgets(
    devices: placement.Devices, values: Mapping[str, Any], shown: Mapping[str, Any]
) -> placement.Devices:
    """The devices the widgets ``values`` describe, from ``devices`` (``shown``: what :func:`widget_values` gave).

    Only the first kind changes; a memory left as shown keeps the file's exact byte count; an
    inventory emptied by the table stays empty while the count is 0.
    """
    first = first_kind(devices)
    memory = values["dev_memory_gib"] * GIB if values["dev_memory_limited"] else math.inf
    if (
        values["dev_memory_limited"]
        and values["dev_memory_gib"] == shown["dev_memory_gib"]
        and math.isfinite(first.memory)
    ):
        memory = first.memory  # untouched: keep the exact byte count of the file
    new_first = replace(first, count=int(values["dev_count"]), memory=memory, speed=float(values["dev_speed"]))
    kinds = (new_first,) + tuple(devices.accelerators[1:])
    if not devices.accelerators and new_first.count == 0:
        kinds = ()  # the inventory table removed every kind: do not bring one back
    return devices.with_changes(
        accelerators=kinds,
        cpus=int(values["dev_cpus"]),
        bandwidth=float(values["dev_bandwidth"]),
        overlap=bool(values["dev_overlap"]),
        cpu_bandwidth=float(values["dev_cpu_bandwidth"]) if values["dev_cpu_pays"] else None,
    )


def memory_model_from_widgets(values: Mapping[str, Any]) -> placement.MemoryModel:
    """The memory model the page's widgets describe (raises :class:`placement.PlacementError` for a bad one)."""
    optimizer = values["dev_mm_optimizer"]
    return placement.MemoryModel(
        training=values["dev_mm_kind"] == "training",
        schedule=values["dev_mm_schedule"],
        microbatches=int(values["dev_mm_microbatches"]),
        optimizer_multiplier=None if optimizer is None else float(optimizer),
        recompute=values["dev_mm_recompute"],
    )


def memory_model_values(model: placement.MemoryModel) -> dict[str, Any]:
    """Widget key -> value showing ``model``."""
    return {
        "dev_mm_kind": "training" if model.training else "weights",
        "dev_mm_schedule": model.schedule,
        "dev_mm_microbatches": model.microbatches,
        "dev_mm_optimizer": model.optimizer_multiplier,
        "dev_mm_recompute": model.recompute,
    }


def inventory_frame(devices: placement.Devices) -> pd.DataFrame:
    """The inventory table: one row per accelerator kind (memory in GiB, empty = unlimited)."""
    rows = [
        {
            "name": k.name,
            "count": k.count,
            "memory (GiB)": k.memory / GIB if math.isfinite(k.memory) else None,
            "speed": k.speed,
            "bandwidth": k.bandwidth,
            "price/hour": k.price_per_hour,
        }
        for k in devices.accelerators
    ]
    return pd.DataFrame(rows, columns=list(INVENTORY_COLUMNS)).astype(INVENTORY_COLUMNS)


def kinds_from_frame(frame: pd.DataFrame, before: tuple) -> tuple:
    """Accelerator kinds from the edited table (unchanged rows keep their exact values).

    Raises :class:`placement.InvalidDevicesError` naming the row for a missing name, speed or bandwidth.
    """
    kinds = []
    for position, row in enumerate(frame.to_dict("records")):

        def value(column, default, row=row):
            item = row.get(column)
            return default if item is None or (isinstance(item, float) and math.isnan(item)) or item is pd.NA else item

        name = str(value("name", "")).strip()
        if not name:
            raise placement.InvalidDevicesError(f"inventory row {position + 1}: a name is required")
        memory_gib = value("memory (GiB)", None)
        for column in ("speed", "bandwidth"):  # no silent default for a new row
            if value(column, None) is None:
                raise placement.InvalidDevicesError(
                    f"inventory row {position + 1} ({name}): enter a {column} (1 = like the reference accelerator)"
                )
        kind = placement.AcceleratorKind(
            name=name,
            count=int(value("count", 0)),
            memory=float(memory_gib) * GIB if memory_gib is not None else math.inf,
            speed=float(value("speed", 1.0)),
            bandwidth=float(value("bandwidth", 1.0)),
            price_per_hour=float(value("price/hour", 0.0)),
        )
        for old in before:  # the table rounds nothing, but GiB <-> bytes may: keep the original bytes
            if (
                old.name == kind.name
                and math.isfinite(old.memory)
                and math.isfinite(kind.memory)
                and abs(old.memory - kind.memory) <= 1e-9 * old.memory
            ):
                kind = replace(kind, memory=old.memory)
        kinds.append(kind)
    return tuple(kinds)


def catalogue_rows() -> list[dict[str, Any]]:
    """One row per catalogue kind: memory, bf16 peak, HBM and NVLink bandwidth, default price and its date."""
    return [
        {
            "kind": name,
            "memory (GiB)": round(acc.memory_bytes / GIB, 1),
            "bf16 TFLOP/s": acc.bf16_tflops,
            "HBM TB/s": acc.hbm_bytes_per_s / 1e12,
            "NVLink GB/s": acc.nvlink_bytes_per_s / 1e9,
            "USD per GPU-hour": acc.usd_per_hour,
            "price as of": acc.price_date,
        }
        for name, acc in ACCELERATORS.items()
    ]


def _catalogue_kind(name: str, count: int, devices: placement.Devices) -> placement.AcceleratorKind:
    """A catalogue kind (memory, link and price from the catalogue), its link relative to the inventory's reference.

    The reference is the inventory's first catalogue kind (the graph's edge costs are priced on its link).
    """
    names = [k.name for k in devices.accelerators if k.name in ACCELERATORS]
    return devices_for({name: count}, reference=names[0] if names else name).accelerators[0]


def with_catalogue_kind(devices: placement.Devices, name: str, count: int) -> placement.Devices:
    """``devices`` with ``count`` cards of catalogue kind ``name``.

    A kind of that name already in the inventory keeps its fields (speed, price, memory as edited) and gets
    the count; a new one is added after the others with the catalogue's memory, link bandwidth and price.
    """
    kinds = list(devices.accelerators)
    for position, kind in enumerate(kinds):
        if kind.name == name:
            kinds[position] = replace(kind, count=int(count))
            return devices.with_changes(accelerators=tuple(kinds))
    return devices.with_changes(accelerators=(*kinds, _catalogue_kind(name, int(count), devices)))


def only_catalogue_kind(devices: placement.Devices, name: str, count: int) -> placement.Devices:
    """``devices`` with ``count`` cards of catalogue kind ``name`` as the only accelerators (CPU cores kept)."""
    return devices.with_changes(accelerators=(_catalogue_kind(name, int(count), placement.Devices()),))


def read_profile(name: str, data: bytes) -> Accelerator:
    """The measured device of an uploaded profile file (data, never code: JSON checked field by field).

    Raises
    ------
    placement.InvalidDevicesError
        One line naming the file and the field: over :data:`MAX_PROFILE_BYTES`, not JSON, NaN, a wrong type,
        a value outside physical bounds (:func:`placement.perf.profile.profile_from_bytes`).
    """
    if len(data) > MAX_PROFILE_BYTES:
        raise placement.InvalidDevicesError(
            f"{name}: file is {len(data):,} bytes, over the {MAX_PROFILE_BYTES:,}-byte limit"
        )
    return measured_kind(profile_from_bytes(data, name))


def _catalogue_name(kind: Accelerator) -> str | None:
    base = catalogue_match(kind.measured.name) if kind.measured is not None else None
    return base.name if base is not None else None


def with_measured_kind(
    devices: placement.Devices, kind: Accelerator, count: int, previous: str | None = None
) -> placement.Devices:
    """``devices`` with the measured device ``kind`` in the place of the kind it replaces.

    It replaces the ``previous`` measured kind, else a kind of its own name, else the catalogue kind it was
    measured on (``H100`` for an H100's profile): that kind's count, speed, link bandwidth and price stay, the
    memory becomes the measured one. Otherwise it is added after the others with ``count`` cards and the
    catalogue GPU's link and price.
    """
    kinds = list(devices.accelerators)
    for name in (previous, kind.name, _catalogue_name(kind)):
        for position, old in enumerate(kinds):
            if name is not None and old.name == name:
                kinds[position] = replace(old, name=kind.name, memory=kind.memory_bytes)
                return devices.with_changes(accelerators=tuple(kinds))
    names = [k.name for k in kinds if k.name in ACCELERATORS]
    added = devices_for({kind: int(count)}, reference=names[0] if names else kind).accelerators[0]
    return devices.with_changes(accelerators=(*kinds, added))


def without_measured_kind(devices: placement.Devices, kind: Accelerator) -> placement.Devices:
    """``devices`` with the measured ``kind`` back to the catalogue kind it was measured on (count, speed, link
    and price kept, the catalogue's memory); dropped when there is no such kind or the inventory has it already."""
    base = _catalogue_name(kind)
    present = any(k.name == base for k in devices.accelerators)
    kinds = []
    for old in devices.accelerators:
        if old.name != kind.name:
            kinds.append(old)
        elif base is not None and not present:
            kinds.append(replace(old, name=base, memory=ACCELERATORS[base].memory_bytes))
    return devices.with_changes(accelerators=tuple(kinds))


def profile_note(kind: Accelerator, file_name: str, in_inventory: bool, has_kernels: bool = True) -> str:
    """The line under the uploader: which kind the profile prices, from which file, and that no band applies.

    ``has_kernels``: whether the loaded graph records kernels (a graph without, like the paper's, keeps its
    own times and cannot be priced from a profile).
    """
    profile = kind.measured
    if profile is None:
        return ""
    if not in_inventory:
        return (
            f"{file_name} ({profile_source(profile)}) is kept, but its kind {kind.name} is not in the inventory: "
            "upload it again to put it back."
        )
    if not has_kernels:
        return (
            f"{kind.name} comes from {file_name} ({profile_source(profile)}), but the loaded graph records no "
            "kernels (its times are the file's own): it runs the graph's reference times. A graph built or "
            "imported by the app is priced from the profile."
        )
    return (
        f"{kind.name} is {profile_source(profile)} ({file_name}): the published calibration band (Megatron A100 "
        "runs) does not apply to it; `python -m placement measure` on that device gives its error."
    )


def rule_rows(
    rules: Sequence[tuple[str, float]], names: Sequence[str], counts: Sequence[int] | None = None
) -> list[dict[str, Any]]:
    """One row per latency multiplier: its pattern, factor and how many node names it matches.

    ``counts`` (one per rule) are the matches when already counted elsewhere (the page counts them in a worker
    process, :func:`ui.worker.count_matches`); otherwise they are counted here.
    """
    if counts is None:
        counts = [sum(1 for n in names if compile_pattern(p).matches(n)) for p, _ in rules]
    return [{"pattern": p, "factor": f, "matching nodes": count} for (p, f), count in zip(rules, counts)]
