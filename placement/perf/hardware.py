"""Accelerators and clusters for the transformer training performance model.

Every figure is a vendor spec-sheet value (dense math, no structured sparsity); bandwidths are in
**bytes per second, one direction, per GPU** and memory in bytes. What the software reaches of these
peaks (GEMM efficiency, NCCL bus bandwidth, achievable HBM bandwidth) is not a hardware fact: it lives in
:class:`placement.perf.params.PerfParams`.

=========  =====  =====  =====  =====  ======  =========  ========  ========  ======
name       fp32   tf32   bf16   fp8    memory  HBM        NVLink    NIC       PCIe
           TFLOP/s                     GB      TB/s       GB/s      GB/s      GB/s
=========  =====  =====  =====  =====  ======  =========  ========  ========  ======
V100       15.7   -      -      -      32      0.90       150       12.5      16
A100-40GB  19.5   156    312    -      40      1.555      300       25        32
A100       19.5   156    312    -      80      2.039      300       25        32
H100       67     495    989    1979   80      3.35       450       50        64
H100-PCIe  51     378    756    1513   80      2.0        (PCIe)    50        64
H200       67     495    989    1979   141     4.8        450       50        64
B200       75     1100   2250   4500   180     8.0        900       50        64
MI300X     163.4  653.7  1307   2615   192     5.3        448       50        64
L4         30.3   60     121    242.5  24      0.3        (PCIe)    12.5      32
=========  =====  =====  =====  =====  ======  =========  ========  ========  ======

(V100 runs fp16 at 125 TFLOP/s and has no bf16; the A100 and L4 fp16 peaks equal bf16. NIC: one
InfiniBand/RoCE port per GPU as in DGX/HGX nodes: 200 Gb/s HDR for A100, 400 Gb/s NDR for H100/H200/B200.)

Two measured (not spec-sheet) fractions per accelerator say what software reaches of the peaks:
``matmul_fraction``, the fastest large bf16 matrix product over the dense peak, and ``copy_fraction``, a
large device-to-device copy over the HBM peak. Sources: H100 0.80 and 0.90 (8192^3 bf16 product at 769-798
TFLOP/s and a 3.0 TB/s copy, measured on this project's lent H100 machine, ``.library/device/KINDS.md``);
H200 0.797 and 0.90 (788 TFLOP/s, 4.3 TB/s, same source); A100 0.859 and MI300X 0.598 (S. Bekman,
*Machine Learning Engineering*, "maximum achievable matmul FLOPS" table: 267.9 of 312 and 781.9 of 1307
TFLOP/s). The others are **assumed** (0.80 and 0.90, Hopper-like), not measured.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from enum import Enum
from typing import TYPE_CHECKING

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
        Optional rental price (any currency) per GPU-hour.
    measured : DeviceProfile or None
        Rates measured on the device (:func:`placement.perf.profiled.accelerator_from_profile`); the kernels
        price GEMMs, attention and streaming from them instead of the spec-sheet fractions.
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
    measured: DeviceProfile | None = None

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
        if self.sm_count < 1:
            raise InvalidDevicesError(f"accelerator {self.name}: sm_count must be >= 1")

    def peak_flops(self, dtype: Dtype | str) -> float:
        """Dense peak FLOP/s for ``dtype`` (0.0 when the accelerator lacks it)."""
        return float(getattr(self, f"{Dtype(dtype).value}_tflops")) * TFLOP

    @property
    def scale_up_bytes_per_s(self) -> float:
        """Bandwidth between GPUs of one node: NVLink (or Infinity Fabric), else PCIe."""
        return self.nvlink_bytes_per_s if self.nvlink_bytes_per_s > 0 else self.pcie_bytes_per_s


def _acc(name: str, fp32: float, tf32: float, bf16: float, fp16: float, fp8: float, mem: float, hbm: float,
         nvl: float, nic: float, pcie: float, sms: int, matmul: float = 0.80) -> Accelerator:  # fmt: skip
    return Accelerator(name, fp32, tf32, bf16, fp16, fp8, mem, hbm * 1e12, nvl * GB, nic * GB, pcie * GB, sms, matmul)


#: Spec-sheet presets keyed by canonical name (look names up with :func:`accelerator`).
ACCELERATORS: dict[str, Accelerator] = {
    a.name: a
    for a in (
        _acc("V100", 15.7, 15.7, 0.0, 125.0, 0.0, 32 * GIB, 0.9, 150, 12.5, 16, 80),
        _acc("A100-40GB", 19.5, 156.0, 312.0, 312.0, 0.0, 40 * GIB, 1.555, 300, 25, 32, 108, 0.859),
        _acc("A100", 19.5, 156.0, 312.0, 312.0, 0.0, 80 * GIB, 2.039, 300, 25, 32, 108, 0.859),
        _acc("H100", 67.0, 494.7, 989.4, 989.4, 1978.9, 80 * GIB, 3.35, 450, 50, 64, 132, 0.80),
        _acc("H100-PCIe", 51.2, 378.0, 756.0, 756.0, 1513.0, 80 * GIB, 2.0, 0, 50, 64, 114),
        _acc("H200", 67.0, 494.7, 989.4, 989.4, 1978.9, 141 * GB, 4.8, 450, 50, 64, 132, 0.797),
        _acc("B200", 75.0, 1100.0, 2250.0, 2250.0, 4500.0, 180 * GB, 8.0, 900, 50, 64, 148),
        _acc("MI300X", 163.4, 653.7, 1307.4, 1307.4, 2614.9, 192 * GB, 5.3, 448, 50, 64, 304, 0.598),
        _acc("L4", 30.3, 60.0, 121.0, 121.0, 242.5, 24 * GB, 0.3, 0, 12.5, 32, 58),
    )
}

_ALIASES = {
    "a100-80gb": "A100",
    "a100-sxm": "A100",
    "a100-80gb-sxm": "A100",
    "a100-40": "A100-40GB",
    "h100-sxm": "H100",
    "h100-80gb": "H100",
    "h100pcie": "H100-PCIe",
    "mi300": "MI300X",
    "v100-32gb": "V100",
}


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
