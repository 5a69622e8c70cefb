"""The few physical constants of the performance model that are not on a spec sheet.

Each is a fraction of a hardware peak (or a size, or a time) with a physical meaning, set once for all
accelerators and checked against the published runs of ``sample_graphs/calibration/`` (see
``scripts/bench_calibration.py``); none is fitted per run.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields, replace

from ..errors import PlacementError


@dataclass(frozen=True)
class PerfParams:
    """Achievable fractions of the peaks, kernel shape constants and fixed costs.

    Parameters
    ----------
    gemm_fraction : float
        Fraction of the accelerator's maximum achievable matmul rate (``Accelerator.matmul_fraction`` of the
        peak) that a large GEMM of a training step reaches (sustained clocks under a full training load,
        non-square and transposed operands).
    gemm_half_dim : float
        The matrix dimension at which a GEMM runs at half of its large-shape efficiency along that
        dimension: efficiency = peak_fraction * prod(x / (x + half_dim) for x in (m, n, k)).
    kernel_launch_s : float
        Fixed cost of one kernel (launch and tail), seconds.
    streaming_fraction : float
        Fraction of the accelerator's copy bandwidth (``Accelerator.copy_fraction`` of the HBM peak) reached by
        streaming kernels (norms, activations, dropout, softmax, optimizer).
    flash_fwd_fraction, flash_bwd_fraction : float
        Fraction of the maximum achievable matmul rate reached by fused attention forward / backward at head
        dimension 128 (FlashAttention-2 reaches about 70 % and 55 % of the A100's; not in the A100 table, which
        used unfused attention).
    nvlink_fraction, nic_fraction : float
        NCCL bus bandwidth as a fraction of the NVLink / NIC spec bandwidth.
    tp_overlap_slowdown : float
        With ``--tp-comm-overlap``: fraction of the overlapped communication time still paid (SM contention).
    grad_bucket_fraction : float
        With ``--overlap-grad-reduce``/``--overlap-param-gather``: fraction of the reduction that can never be
        hidden (the last bucket).
    elementwise_bwd_factor : float
        Bytes moved by the backward of an elementwise/norm kernel, relative to its forward.
    optimizer_bytes_per_param : float
        HBM bytes one Adam step moves per locally owned parameter (read grad, master, 2 moments; write them
        and the half-precision copy; the gradient-norm pass).
    reserve_bytes : float
        Memory taken by the runtime beside the model (CUDA context, NCCL and cuBLAS workspaces, allocator
        fragmentation).
    iteration_overhead_s : float
        Fixed host-side cost per iteration (data loading, logging, synchronisation).
    host_adam_seconds_per_param : float
        Seconds of DeepSpeed's CPU Adam per parameter of a GPU's optimizer shard under optimizer offload
        (the host cores one GPU can use; an assumption, not calibrated: 2.5 ns, about 0.4 billion parameters
        per second per GPU).
    stage_jitter : float
        Coefficient of variation of a pipeline rank's time per micro-batch step (kernel timing noise, clock
        and thermal variation). Every step of a pipelined schedule waits for the slowest of the ``p`` ranks,
        whose expected excess over the mean is ``stage_jitter * sqrt(2 ln p)`` (the Gaussian maximum bound).
    """

    gemm_fraction: float = 0.92
    gemm_half_dim: float = 48.0
    kernel_launch_s: float = 4e-6
    streaming_fraction: float = 0.90
    flash_fwd_fraction: float = 0.75
    flash_bwd_fraction: float = 0.60
    nvlink_fraction: float = 0.80
    nic_fraction: float = 0.85
    tp_overlap_slowdown: float = 0.15
    grad_bucket_fraction: float = 0.05
    elementwise_bwd_factor: float = 2.0
    optimizer_bytes_per_param: float = 36.0
    reserve_bytes: float = 3.0e9
    iteration_overhead_s: float = 0.02
    stage_jitter: float = 0.025
    host_adam_seconds_per_param: float = 2.5e-9

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if not (isinstance(value, int | float) and math.isfinite(value) and value >= 0):
                raise PlacementError(f"PerfParams.{f.name}: must be a finite number >= 0, got {value!r}")
        for name in ("gemm_fraction", "streaming_fraction", "flash_fwd_fraction", "flash_bwd_fraction",
                     "nvlink_fraction", "nic_fraction"):  # fmt: skip
            if not 0 < getattr(self, name) <= 1:
                raise PlacementError(f"PerfParams.{name}: must be in (0, 1]")

    def with_changes(self, **changes: float) -> PerfParams:
        """A copy with some constants replaced (validated again)."""
        return replace(self, **changes)


#: The constants used by :func:`placement.perf.predict`.
DEFAULT_PARAMS = PerfParams()
