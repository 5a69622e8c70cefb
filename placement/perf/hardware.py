"""Accelerators and clusters for the transformer training performance model, read from the catalogue.

The figures of every accelerator kind and of one CPU core live in one data file, ``catalogue.json`` beside
this module (shipped as package data): vendor spec-sheet peaks per data type (dense math, no structured
sparsity), memory, HBM, NVLink, NIC and PCIe bandwidths (**bytes per second, one direction, per GPU** once
read), streaming multiprocessors, two measured fractions with their sources and a default price in USD per
device-hour with the date it was read. What the software reaches of these peaks beyond those fractions (GEMM
efficiency by shape, NCCL bus bandwidth) is not a hardware fact: it lives in
:class:`placement.perf.params.PerfParams`.

``matmul_fraction`` is the fastest large bf16 matrix product over the dense peak and ``copy_fraction`` a large
device-to-device copy over the HBM peak; each entry's ``fraction_source`` says where they come from (measured,
published, or assumed). The CPU entry (:func:`cpu_core`) is one core, priced by the same kernels.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, replace
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import InvalidDevicesError

if TYPE_CHECKING:
    from .profile import DeviceProfile

GB = 1e9
GIB = 2.0**30
TFLOP = 1e12


class Dtype(str, Enum):
    """Arithmetic type of the matrix products (``Dtype.BF16 == "bf16"``)."""

    FP32 = "fp32"
    TF32 = "tf32"
    BF16 = "bf16"
    FP16 = "fp16"
    FP8 = "fp8"

    def __str__(self) -> str:
        return str(self.value)


@dataclass(frozen=True)
class Accelerator:
    """Spec-sheet figures of one GPU model.

    Parameters
    ----------
    name : str
        Canonical name (``"A100"``, ``"H100"``, ...).
    fp32_tflops, tf32_tflops, bf16_tflops, fp16_tflops, fp8_tflops : float
        Dense peak TFLOP/s per data type; 0 means the type is not supported.
    memory_bytes : float
        Device memory in bytes.
    hbm_bytes_per_s : float
        Peak device-memory bandwidth.
    nvlink_bytes_per_s : float
        Scale-up link bandwidth per GPU, one direction (0: none, peers talk over PCIe).
    nic_bytes_per_s : float
        Scale-out network bandwidth per GPU, one direction.
    pcie_bytes_per_s : float
        Host link bandwidth, one direction.
    sm_count : int
        Streaming multiprocessors (compute units).
    matmul_fraction : float
        Measured: the fastest large dense 16-bit matrix product over the dense peak (the "maximum achievable
        matmul FLOP/s"); the model's GEMM efficiency is relative to it.
    copy_fraction : float
        Measured: a large device-to-device copy's bandwidth (bytes read + written) over the HBM peak.
    price_per_hour : float or None
        Optional rental price (any currency) per GPU-hour set by the user (the planner's cost).
    usd_per_hour : float
        The catalogue's default price in USD per device-hour (see ``price_date``).
    price_date : str
        When the catalogue's price was read (``"2026-12"``).
    fraction_source : str
        Where ``matmul_fraction`` and ``copy_fraction`` come from.
        Optional rental price (any currency) per GPU-hour.
    measured : DeviceProfile or None
        Rates measured on the device (:func:`placement.perf.profiled.accelerator_from_profile`); the kernels
        price GEMMs, attention and streaming from them instead of the spec-sheet fractions.
    tdp_watts : float or None
        Board power of the vendor figures (W): the reference of :meth:`with_power_limit` (None: not stated).
    power_limit_watts : float or None
        A power limit below ``tdp_watts`` set by :meth:`with_power_limit` (the peaks are already scaled).
    source : str
        Where the figures come from (the vendor's datasheet).
    """

    name: str
    fp32_tflops: float
    tf32_tflops: float
    bf16_tflops: float
    fp16_tflops: float
    fp8_tflops: float
    memory_bytes: float
    hbm_bytes_per_s: float
    nvlink_bytes_per_s: float
    nic_bytes_per_s: float
    pcie_bytes_per_s: float
    sm_count: int = 108
    matmul_fraction: float = 0.80
    copy_fraction: float = 0.90
    price_per_hour: float | None = None
    usd_per_hour: float = 0.0
    price_date: str = ""
    fraction_source: str = ""
    measured: DeviceProfile | None = None
    tdp_watts: float | None = None
    power_limit_watts: float | None = None
    source: str = ""

    def __post_init__(self) -> None:
        for field_name in ("fp32_tflops", "tf32_tflops", "bf16_tflops", "fp16_tflops", "fp8_tflops"):
            value = getattr(self, field_name)
            if not (math.isfinite(value) and value >= 0):
                raise InvalidDevicesError(f"accelerator {self.name}: {field_name} must be a finite number >= 0")
        for field_name in ("memory_bytes", "hbm_bytes_per_s", "nic_bytes_per_s", "pcie_bytes_per_s"):
            value = getattr(self, field_name)
            if not (math.isfinite(value) and value > 0):
                raise InvalidDevicesError(f"accelerator {self.name}: {field_name} must be a finite number > 0")
        if not (math.isfinite(self.nvlink_bytes_per_s) and self.nvlink_bytes_per_s >= 0):
            raise InvalidDevicesError(f"accelerator {self.name}: nvlink_bytes_per_s must be a finite number >= 0")
        for field_name in ("matmul_fraction", "copy_fraction"):
            if not 0 < getattr(self, field_name) <= 1:
                raise InvalidDevicesError(f"accelerator {self.name}: {field_name} must be in (0, 1]")
        if not (math.isfinite(self.usd_per_hour) and self.usd_per_hour >= 0):
            raise InvalidDevicesError(f"accelerator {self.name}: usd_per_hour must be a finite number >= 0")
        if self.sm_count < 1:
            raise InvalidDevicesError(f"accelerator {self.name}: sm_count must be >= 1")
        for field_name in ("tdp_watts", "power_limit_watts"):
            value = getattr(self, field_name)
            if value is not None and not (math.isfinite(value) and value > 0):
                raise InvalidDevicesError(f"accelerator {self.name}: {field_name} must be a finite number > 0")

    def with_power_limit(self, watts: float) -> Accelerator:
        """This kind run under a power limit of ``watts`` (the documented model of :func:`power_clock_factor`).

        The dense peaks scale by ``power_clock_factor(watts, tdp)``; HBM, NVLink, NIC and PCIe bandwidths do
        not change. A limit at the TDP returns the kind unchanged.

        Raises
        ------
        InvalidDevicesError
            Without a TDP in the catalogue, for a profiled device (its rates were measured at its own power
            setting), or for ``watts`` outside ``[POWER_FLOOR x TDP, TDP]`` (one line naming ``--power-limit``).
        """
        if self.measured is not None:
            raise InvalidDevicesError(
                f"--power-limit: {self.name} is priced from a measured profile (measured at its own power setting)"
            )
        if self.tdp_watts is None:
            raise InvalidDevicesError(f"--power-limit: the catalogue states no TDP for {self.name}")
        factor = power_clock_factor(watts, self.tdp_watts)
        if factor == 1.0:
            return self
        peaks = {f: getattr(self, f) * factor for f in ("fp32_tflops", "tf32_tflops", "bf16_tflops", "fp16_tflops",
                                                        "fp8_tflops")}  # fmt: skip
        return replace(self, **peaks, power_limit_watts=float(watts))

    def peak_flops(self, dtype: Dtype | str) -> float:
        """Dense peak FLOP/s for ``dtype`` (0.0 when the accelerator lacks it)."""
        return float(getattr(self, f"{Dtype(dtype).value}_tflops")) * TFLOP

    @property
    def scale_up_bytes_per_s(self) -> float:
        """Bandwidth between GPUs of one node: NVLink (or Infinity Fabric), else PCIe."""
        return self.nvlink_bytes_per_s if self.nvlink_bytes_per_s > 0 else self.pcie_bytes_per_s


#: The lowest power limit accepted, as a fraction of the TDP (below it the clock model is not a fair guess).
POWER_FLOOR = 0.4


def power_clock_factor(watts: float, tdp: float) -> float:
    """The SM clock (and dense peak) factor of a power limit: ``min(1, (watts / tdp) ** (1/3))``.

    A physical assumption, not measured on this project's devices: dynamic power grows about as the cube of
    the clock (power ~ C V^2 f with the voltage following the clock), so a board held at ``watts`` runs its
    streaming multiprocessors at ``(watts / tdp) ** (1/3)`` of the boost clock. Memory, NVLink and network
    bandwidths are taken as unchanged (their clocks are not the SMs').

    Raises
    ------
    InvalidDevicesError
        ``watts`` not a finite number from ``POWER_FLOOR x tdp`` to ``tdp`` (one line naming ``--power-limit``).
    """
    low = POWER_FLOOR * tdp
    if (
        isinstance(watts, bool)
        or not isinstance(watts, int | float)
        or not (math.isfinite(watts) and low <= watts <= tdp)
    ):
        raise InvalidDevicesError(
            f"--power-limit {watts!r}: must be from {low:g} W ({POWER_FLOOR:.0%} of the TDP) to the TDP {tdp:g} W"
        )
    return min(1.0, (watts / tdp) ** (1.0 / 3.0))


def power_note(acc: Accelerator) -> str:
    """One line on a power-limited accelerator: the factor, the assumption behind it and what does not change."""
    watts, tdp = acc.power_limit_watts, acc.tdp_watts
    if watts is None or tdp is None:
        return f"{acc.name}: no power limit"
    factor = power_clock_factor(watts, tdp)
    return (
        f"power limit {watts:g} W of the {acc.name}'s {tdp:g} W TDP: dense peaks x{factor:.3f} (SM clock taken as "
        "(W / TDP)^(1/3), dynamic power ~ f^3: a physical assumption, not measured on this project's devices; "
        "extrapolated); HBM, NVLink, network and PCIe bandwidths unchanged"
    )


#: The catalogue file (package data).
CATALOGUE_FILE = Path(__file__).with_name("catalogue.json")


def _number(entry: dict[str, Any], key: str, where: str) -> float:
    value = entry.get(key)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidDevicesError(f"{where}: {key} must be a number, got {value!r}")
    return float(value)


def _entry(entry: dict[str, Any], price_date: str) -> Accelerator:
    """One catalogue entry as an :class:`Accelerator` (units converted to bytes and bytes/s)."""
    where = f"{CATALOGUE_FILE.name}: {entry.get('name', '?')!r}"
    peaks = entry.get("peak_tflops")
    if not isinstance(peaks, dict):
        raise InvalidDevicesError(f"{where}: peak_tflops must be an object of fp32, tf32, bf16, fp16, fp8")
    if "memory_gib" in entry:
        memory = _number(entry, "memory_gib", where) * GIB
    else:
        memory = _number(entry, "memory_gb", where) * GB
    return Accelerator(
        str(entry["name"]),
        fp32_tflops=_number(peaks, "fp32", where),
        tf32_tflops=_number(peaks, "tf32", where),
        bf16_tflops=_number(peaks, "bf16", where),
        fp16_tflops=_number(peaks, "fp16", where),
        fp8_tflops=_number(peaks, "fp8", where),
        memory_bytes=memory,
        hbm_bytes_per_s=_number(entry, "hbm_tb_per_s", where) * 1e12,
        nvlink_bytes_per_s=_number(entry, "nvlink_gb_per_s", where) * GB,
        nic_bytes_per_s=_number(entry, "nic_gb_per_s", where) * GB,
        pcie_bytes_per_s=_number(entry, "pcie_gb_per_s", where) * GB,
        sm_count=int(_number(entry, "sm_count", where)),
        matmul_fraction=_number(entry, "matmul_fraction", where),
        copy_fraction=_number(entry, "copy_fraction", where),
        usd_per_hour=_number(entry, "usd_per_hour", where),
        price_date=price_date,
        fraction_source=str(entry.get("fraction_source", "")),
        tdp_watts=None if entry.get("tdp_w") is None else _number(entry, "tdp_w", where),
        source=str(entry.get("source", "")),
    )


def load_catalogue(path: Path | str = CATALOGUE_FILE) -> tuple[dict[str, Accelerator], Accelerator, dict[str, str]]:
    """(accelerators by canonical name, the CPU core, aliases lower-case -> canonical name) of a catalogue file.

    Raises
    ------
    InvalidDevicesError
        If the file is not a catalogue (one line naming the entry and field).
    """
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        date = str(data.get("price_date", ""))
        accelerators = {e["name"]: _entry(e, date) for e in data["accelerators"]}
        cpu = _entry(data["cpu"], date)
        aliases = {str(a).lower(): e["name"] for e in data["accelerators"] for a in e.get("aliases", ())}
    except InvalidDevicesError:
        raise
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise InvalidDevicesError(
            f"{Path(path).name}: not a hardware catalogue ({type(exc).__name__}: {exc})"
        ) from None
    return accelerators, cpu, aliases


#: The catalogue's accelerators keyed by canonical name (look names up with :func:`accelerator`).
ACCELERATORS, _CPU_CORE, _ALIASES = load_catalogue()


def cpu_core() -> Accelerator:
    """The catalogue's CPU core (its peaks, per-core memory bandwidth and price), for the kernels' formulas."""
    return _CPU_CORE


def accelerator(name: str) -> Accelerator:
    """The preset called ``name`` (case-insensitive; ``"a100"``, ``"H100-SXM"``, ...).

    Raises
    ------
    InvalidDevicesError
        For an unknown name (the message lists the known ones).
    """
    key = name.strip().lower()
    for canonical in ACCELERATORS:
        if canonical.lower() == key:
            return ACCELERATORS[canonical]
    if key in _ALIASES:
        return ACCELERATORS[_ALIASES[key]]
    raise InvalidDevicesError(f"--gpu {name!r}: unknown accelerator (known: {', '.join(ACCELERATORS)})")


@dataclass(frozen=True)
class Cluster:
    """``gpus`` accelerators in nodes of ``gpus_per_node``, NVLink inside a node, one NIC per GPU across nodes.

    Parameters
    ----------
    accelerator : Accelerator
        The GPU model (all GPUs alike).
    gpus : int
        Number of GPUs.
    gpus_per_node : int
        GPUs sharing one scale-up domain (NVLink/NVSwitch); ``gpus`` is a multiple of it or smaller.
    nvlink_bytes_per_s, nic_bytes_per_s : float or None
        Overrides of the accelerator's link bandwidths (bytes/s, one direction, per GPU).
    intra_latency_s, inter_latency_s : float
        Per-message latency (alpha) inside a node and across nodes, seconds.
    host_memory_per_gpu : float
        CPU memory per GPU in bytes, for offloaded optimizer state and weights (default 256 GiB: a DGX H100's
        2 TiB over 8 GPUs); the PCIe bandwidth is the accelerator's ``pcie_bytes_per_s``.
    """

    accelerator: Accelerator
    gpus: int
    gpus_per_node: int = 8
    nvlink_bytes_per_s: float | None = None
    nic_bytes_per_s: float | None = None
    intra_latency_s: float = 5e-6
    inter_latency_s: float = 10e-6
    host_memory_per_gpu: float = 256 * 2.0**30

    def __post_init__(self) -> None:
        if isinstance(self.accelerator, str):
            object.__setattr__(self, "accelerator", accelerator(self.accelerator))
        if not isinstance(self.gpus, int) or self.gpus < 1:
            raise InvalidDevicesError(f"--gpus {self.gpus!r}: must be a positive integer")
        if not isinstance(self.gpus_per_node, int) or self.gpus_per_node < 1:
            raise InvalidDevicesError(f"--gpus-per-node {self.gpus_per_node!r}: must be a positive integer")
        if self.gpus > self.gpus_per_node and self.gpus % self.gpus_per_node:
            raise InvalidDevicesError(
                f"--gpus {self.gpus} is not a multiple of --gpus-per-node {self.gpus_per_node} (whole nodes only)"
            )
        for name in ("nvlink_bytes_per_s", "nic_bytes_per_s"):
            value = getattr(self, name)
            if value is not None and not (math.isfinite(value) and value > 0):
                raise InvalidDevicesError(f"{name}: must be a finite number > 0")
        for name in ("intra_latency_s", "inter_latency_s"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value >= 0):
                raise InvalidDevicesError(f"{name}: must be a finite number >= 0")

    @property
    def nodes(self) -> int:
        """Number of nodes (the last one may be partial only when there is a single node)."""
        return max(1, -(-self.gpus // self.gpus_per_node))

    @property
    def intra_bytes_per_s(self) -> float:
        """Spec bandwidth between two GPUs of one node (one direction)."""
        return self.nvlink_bytes_per_s or self.accelerator.scale_up_bytes_per_s

    @property
    def inter_bytes_per_s(self) -> float:
        """Spec network bandwidth per GPU across nodes (one direction)."""
        return self.nic_bytes_per_s or self.accelerator.nic_bytes_per_s

    def with_changes(self, **changes: object) -> Cluster:
        """A copy with some fields replaced (validated again)."""
        return replace(self, **changes)  # type: ignore[arg-type]
