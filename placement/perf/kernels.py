"""Time of the kernels of a transformer layer on one GPU: matrix products, fused attention, streaming ops.

* **GEMM** ``(m x k) @ (k x n)``, ``batch`` times: ``2 m n k batch`` FLOPs at an efficiency that saturates
  with each dimension, ``eta = M * f * m/(m+c) * n/(n+c) * k/(k+c)`` (``M``: the accelerator's measured
  large-matmul fraction of its peak, ``f``: the fraction of that a training GEMM reaches, ``c``: the
  half-efficiency dimension; ``f`` and ``c`` in :class:`PerfParams`), but never faster than its
  operands stream through HBM (roofline), plus a launch cost.
* **Fused attention** (FlashAttention-2 style): forward ``4 s_q s_k d`` FLOPs per head (half of it under a
  causal mask), backward 2.5 times that, at their own fractions of the peak, scaled by the head dimension
  like a GEMM's k.
* **Streaming kernels** (norms, activations, dropout, residual adds, softmax, optimizer): bytes at the
  achievable HBM bandwidth.

An accelerator with a measured profile (``Accelerator.measured``, see :mod:`placement.perf.profile`) runs the
same formulas on measured rates: a GEMM's rate interpolated by shape from the profile's grid, attention's
forward and backward rates by head dimension and sequence length, streaming at the measured norm/elementwise
bandwidth, and the measured launch cost (``PerfParams.kernel_launch_s``, set by
:func:`placement.perf.profiled.profile_params`); the spec-sheet fractions of :class:`PerfParams` do not apply.

Times in seconds.
"""

from __future__ import annotations

from .hardware import Accelerator, Dtype
from .params import PerfParams


def gemm_efficiency(
    m: float, n: float, k: float, acc: Accelerator, params: PerfParams, dtype: Dtype = Dtype.BF16
) -> float:
    """Fraction of the dense peak a GEMM of this shape reaches when compute-bound."""
    if acc.measured is not None:
        return acc.measured.gemm_rate(str(dtype), m, n, k) / acc.peak_flops(dtype)
    c = params.gemm_half_dim
    return acc.matmul_fraction * params.gemm_fraction * (m / (m + c)) * (n / (n + c)) * (k / (k + c))


def hbm_bytes_per_s(acc: Accelerator, params: PerfParams) -> float:
    """Bandwidth streaming kernels reach."""
    if acc.measured is not None:
        return acc.measured.streaming_bytes_per_s()
    return acc.hbm_bytes_per_s * acc.copy_fraction * params.streaming_fraction


def gemm_seconds(
    m: float, n: float, k: float, acc: Accelerator, dtype: Dtype, params: PerfParams,
    batch: float = 1.0, element_bytes: float = 2.0,
) -> float:  # fmt: skip
    """Time of ``batch`` GEMMs of shape (m, n, k): max(compute, HBM traffic) + one launch."""
    if m <= 0 or n <= 0 or k <= 0 or batch <= 0:
        return 0.0
    compute = 2.0 * m * n * k * batch / (acc.peak_flops(dtype) * gemm_efficiency(m, n, k, acc, params, dtype))
    traffic = element_bytes * (m * k + k * n + m * n) * batch / hbm_bytes_per_s(acc, params)
    return max(compute, traffic) + params.kernel_launch_s


def training_gemm_seconds(
    m: float, n: float, k: float, acc: Accelerator, dtype: Dtype, params: PerfParams,
    batch: float = 1.0, element_bytes: float = 2.0,
) -> tuple[float, float]:  # fmt: skip
    """(forward, backward) time of a linear layer's GEMM: the backward is dgrad (m, k, n) and wgrad (k, n, m)."""
    fwd = gemm_seconds(m, n, k, acc, dtype, params, batch, element_bytes)
    bwd = gemm_seconds(m, k, n, acc, dtype, params, batch, element_bytes) + gemm_seconds(
        k, n, m, acc, dtype, params, batch, element_bytes
    )
    return fwd, bwd


def flash_attention_seconds(
    heads: float, s_q: float, s_k: float, head_dim: float, causal: bool, acc: Accelerator, dtype: Dtype,
    params: PerfParams,
) -> tuple[float, float]:  # fmt: skip
    """(forward, backward) time of fused attention over ``heads`` (batch x heads) on one GPU."""
    if heads <= 0:
        return 0.0, 0.0
    flops = 4.0 * heads * s_q * s_k * head_dim * (0.5 if causal else 1.0)
    if acc.measured is not None:
        fwd_rate, bwd_rate = acc.measured.attention_rates(str(dtype), head_dim, s_k)
        return flops / fwd_rate + params.kernel_launch_s, 2.5 * flops / bwd_rate + params.kernel_launch_s
    c = params.gemm_half_dim
    shape = (head_dim / (head_dim + c)) / (128.0 / (128.0 + c))  # 1 at head dim 128
    peak = acc.peak_flops(Dtype.BF16 if dtype is Dtype.FP8 else dtype) * acc.matmul_fraction
    fwd = flops / (peak * min(1.0, params.flash_fwd_fraction * shape)) + params.kernel_launch_s
    bwd = 2.5 * flops / (peak * min(1.0, params.flash_bwd_fraction * shape)) + params.kernel_launch_s
    return fwd, bwd


def streaming_seconds(nbytes: float, acc: Accelerator, params: PerfParams, kernels: int = 1) -> float:
    """Time of memory-bound kernels moving ``nbytes`` through HBM in total."""
    if nbytes <= 0:
        return 0.0
    return nbytes / hbm_bytes_per_s(acc, params) + kernels * params.kernel_launch_s
