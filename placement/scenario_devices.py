"""The devices of a scenario card or shared link: :mod:`placement.io`'s device fields, and the older link format.

Cards and links write the one device serializer, :func:`placement.io.devices_to_dict`
(``{"maxFPGAs": 6, "maxCPUs": 1, "maxSizePerFPGA": "inf"}``, plus ``deviceKinds`` and the other fields of the
graph file when the inventory is not the paper's), and :func:`read_devices` reads it back with
:func:`placement.io.devices_from_dict` (unknown fields refused).

Links and cards shared before (until issue 24) wrote the :class:`~placement.model.Devices` dataclass fields
(``{"accelerators": [{"name", "count", "memory", "speed", "bandwidth", "price_per_hour"}], "cpus", "bandwidth",
"overlap", "cpu_price_per_hour", "cpu_bandwidth"}``). They still open: :func:`read_devices` recognises them by
their keys (:data:`LEGACY_KEYS`; the old writer wrote every field) and reads them with the old rules. Nothing
writes that format any more.

Every error is one :class:`~placement.errors.InvalidScenarioError` line naming ``where`` and the field.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from .errors import InvalidGraphError, InvalidScenarioError, PlacementError, quote
from .io import decode_unlimited, devices_from_dict
from .model import AcceleratorKind, Devices

#: Most devices (accelerators of all kinds, or CPU cores) a scenario may ask for.
MAX_DEVICES = 4096
#: Most accelerator kinds a scenario may list.
MAX_KINDS = 64
#: Keys only the older link format has (``overlap`` is in both): a ``devices`` object with one of them is old.
LEGACY_KEYS = frozenset({"accelerators", "cpus", "bandwidth", "cpu_price_per_hour", "cpu_bandwidth"})


def read_devices(data: Any, where: str) -> Devices:
    """The :class:`Devices` of a card's or link's ``devices`` object, in either format.

    Parameters
    ----------
    data : object
        Parsed JSON: the device fields of :func:`placement.io.devices_to_dict`, or the older link format.
    where : str
        Named by every error (``"link: parameter 'devices'"``, ``"card.json: devices"``).

    Raises
    ------
    InvalidScenarioError
        One line naming ``where``, the field and the rule broken.
    """
    if not isinstance(data, dict):
        raise InvalidScenarioError(f"{where} must be an object")
    devices = _read_legacy(data, where) if LEGACY_KEYS & data.keys() else _read_current(data, where)
    if devices.accelerator_count > MAX_DEVICES or devices.cpus > MAX_DEVICES:
        raise InvalidScenarioError(f"{where}: at most {MAX_DEVICES} accelerators and {MAX_DEVICES} CPU cores")
    return devices


def _read_current(data: Mapping[str, Any], where: str) -> Devices:
    kinds = data.get("deviceKinds")
    if isinstance(kinds, list) and len(kinds) > MAX_KINDS:
        raise InvalidScenarioError(f"{where}: field 'deviceKinds' must be a list of at most {MAX_KINDS} kinds")
    try:
        return devices_from_dict(data, where, strict=True)
    except InvalidGraphError as exc:  # its message names ``where`` and the field already
        raise InvalidScenarioError(str(exc)) from None
    except PlacementError as exc:  # a value Devices refuses
        raise InvalidScenarioError(f"{where}: {exc}") from None


def _legacy_value(value: Any) -> Any:
    """A field of the older format: ``"inf"``, ``"Infinity"``, null or >= 1e300 as the old writer meant them."""
    if isinstance(value, (str, float)):
        return decode_unlimited(value)
    return value


def _read_legacy(data: Mapping[str, Any], where: str) -> Devices:
    """The older link format (the dataclass fields of :class:`Devices`), read as before; never written."""
    known = {f.name for f in dataclasses.fields(Devices)}
    kind_fields = {f.name for f in dataclasses.fields(AcceleratorKind)}
    unknown = sorted(set(data) - known, key=str)
    if unknown:
        raise InvalidScenarioError(f"{where}: unknown field {quote(unknown[0], 40)}")
    fields = {k: _legacy_value(v) for k, v in data.items() if k != "accelerators"}
    kinds_raw = data.get("accelerators", [])
    if not isinstance(kinds_raw, list) or len(kinds_raw) > MAX_KINDS:
        raise InvalidScenarioError(f"{where}: field 'accelerators' must be a list of at most {MAX_KINDS} kinds")
    kinds = []
    for position, raw in enumerate(kinds_raw):
        if not isinstance(raw, dict):
            raise InvalidScenarioError(f"{where}.accelerators[{position}] must be an object")
        unknown = sorted(set(raw) - kind_fields, key=str)
        if unknown:
            raise InvalidScenarioError(f"{where}.accelerators[{position}]: unknown field {quote(unknown[0], 40)}")
        try:
            # A memory of null is unlimited too (as in io); elsewhere null is None (cpu_bandwidth).
            values = {k: decode_unlimited(v) if k == "memory" else _legacy_value(v) for k, v in raw.items()}
            kinds.append(AcceleratorKind(**values))
        except (PlacementError, TypeError, ValueError) as exc:
            raise InvalidScenarioError(f"{where}.accelerators[{position}]: {exc}") from None
    try:
        return Devices(accelerators=tuple(kinds), **fields)
    except (PlacementError, TypeError, ValueError) as exc:
        raise InvalidScenarioError(f"{where}: {exc}") from None
