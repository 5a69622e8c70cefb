"""A profiled device as the performance model sees it: an accelerator with measured rates, and its constants.

:func:`accelerator_from_profile` turns a :class:`~placement.perf.profile.DeviceProfile` into an
:class:`~placement.perf.hardware.Accelerator` whose ``measured`` field the kernels price from;
:func:`profile_params` gives the model's constants on it; :func:`catalogue_match` names the catalogue GPU a
device name denotes (for its link bandwidths and its spec-sheet prediction). :func:`measured_kind` is the
profiled device as an inventory kind of its own (``"H100 (measured 2026-12-04)"``) for graph pricing, and
:func:`profile_source` the line saying where its times come from.
"""

from __future__ import annotations

from dataclasses import replace

from .hardware import ACCELERATORS, GB, TFLOP, Accelerator
from .params import DEFAULT_PARAMS, PerfParams
from .profile import DTYPES, DeviceProfile


def accelerator_from_profile(profile: DeviceProfile, base: Accelerator | None = None) -> Accelerator:
    """The device of ``profile`` as the performance model's :class:`~placement.perf.hardware.Accelerator`.

    Its peaks are the fastest measured GEMM rates (``matmul_fraction`` 1: the measured rates are what
    kernels reach), its memory bandwidth the measured copy, and ``measured`` the profile, from which the
    kernels take their rates. Link bandwidths (NVLink, network, PCIe) come from ``base`` (the catalogue GPU
    the profile was measured on, when known), else a device without scale-up links.
    """
    peaks = {dt: profile.peak_flops(dt) / TFLOP for dt in DTYPES}
    if peaks["tf32"] == 0.0:
        peaks["tf32"] = peaks["fp32"]
    return Accelerator(
        name=profile.name[:80],
        fp32_tflops=peaks["fp32"],
        tf32_tflops=peaks["tf32"],
        bf16_tflops=peaks["bf16"],
        fp16_tflops=peaks["fp16"],
        fp8_tflops=peaks["fp8"],
        memory_bytes=profile.memory_bytes,
        hbm_bytes_per_s=profile.streaming_bytes_per_s("copy"),
        nvlink_bytes_per_s=base.nvlink_bytes_per_s if base else 0.0,
        nic_bytes_per_s=base.nic_bytes_per_s if base else 12.5 * GB,
        pcie_bytes_per_s=base.pcie_bytes_per_s if base else 16 * GB,
        sm_count=base.sm_count if base else 1,
        matmul_fraction=1.0,
        copy_fraction=1.0,
        price_per_hour=base.price_per_hour if base else None,
        measured=profile,
    )


def catalogue_match(name: str) -> Accelerator | None:
    """The catalogue accelerator a device name (``"NVIDIA H100 80GB HBM3"``) denotes, or None."""
    upper = name.upper().replace(" ", "")
    if "PCIE" in upper and "H100" in upper:
        return ACCELERATORS["H100-PCIe"]
    for key in ("H200", "H100", "B200", "MI300X", "L4", "V100"):
        if key in upper:
            return ACCELERATORS[key]
    if "A100" in upper:
        return ACCELERATORS["A100-40GB" if "40GB" in upper else "A100"]
    return None


def profile_params(profile: DeviceProfile, base: PerfParams | None = None) -> PerfParams:
    """The model's constants on a profiled device: the measured launch cost replaces the assumed one."""
    return (base or DEFAULT_PARAMS).with_changes(kernel_launch_s=profile.launch_seconds)


def measured_kind(profile: DeviceProfile) -> Accelerator:
    """The profiled device as an inventory kind: its measured rates, the links and default price of the catalogue
    GPU it matches (:func:`catalogue_match`), named ``"<catalogue kind> (measured <date>)"`` (the device's own
    name when no catalogue GPU matches)."""
    base = catalogue_match(profile.name)
    acc = accelerator_from_profile(profile, base)
    stem = base.name if base is not None else profile.name[:60]
    name = f"{stem} (measured {profile.date[:10]})"
    if base is None:
        return replace(acc, name=name)
    return replace(acc, name=name, usd_per_hour=base.usd_per_hour, price_date=base.price_date)


def profile_source(profile: DeviceProfile) -> str:
    """``"priced from the profile of <device> measured <date>"``: where a measured kind's times come from."""
    return f"priced from the profile of {profile.name} measured {profile.date}"
