"""The device presets of the Devices page (plain functions of the devices, no session state)."""

from __future__ import annotations

from dataclasses import replace

import placement

#: Device presets of the Devices page, in button order.
PRESETS = (
    "File's own settings",
    "Paper model",
    "2x memory",
    "Half memory",
    "Unlimited memory",
    "Half bandwidth",
    "2x bandwidth",
    "2x accelerator speed",
)


def device_preset(name: str, current: placement.Devices, file_devices: placement.Devices) -> placement.Devices:
    """The devices a preset gives, from the current ones (and the file's own for the first preset).

    * "File's own settings": the devices of the loaded file;
    * "Paper model": one kind of identical accelerators (the current total count, the first kind's
      memory, speed 1), the current CPU cores, bandwidth x1, no overlap (the paper's model);
    * the others scale every accelerator kind's memory or speed, or the global bandwidth factor.
    """
    if name == "File's own settings":
        return file_devices
    if name == "Paper model":
        memory = current.accelerators[0].memory if current.accelerators else float("inf")
        return placement.Devices.paper(current.accelerator_count, current.cpus, memory)
    if name in ("2x memory", "Half memory", "Unlimited memory"):
        factor = {"2x memory": 2.0, "Half memory": 0.5, "Unlimited memory": float("inf")}[name]
        kinds = tuple(replace(k, memory=k.memory * factor) for k in current.accelerators)
        return current.with_changes(accelerators=kinds)
    if name in ("Half bandwidth", "2x bandwidth"):
        return current.with_changes(bandwidth=current.bandwidth * (0.5 if name == "Half bandwidth" else 2.0))
    if name == "2x accelerator speed":
        return current.with_changes(accelerators=tuple(replace(k, speed=k.speed * 2) for k in current.accelerators))
    raise ValueError(f"unknown preset {name!r}")
