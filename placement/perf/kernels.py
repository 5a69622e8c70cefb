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

A :class:`Work` records one kernel's shape so that it can be priced on any accelerator of the catalogue (the
transformer's per-layer terms of :mod:`placement.perf.layer_cost` and the graph pricing of
:mod:`placement.modelling.pricing` are both lists of them).

An accelerator with a measured profile (``Accelerator.measured``, see :mod:`placement.perf.profile`) runs the
same formulas on measured rates: a GEMM's rate interpolated by shape from the profile's grid, attention's
forward and backward rates by head dimension and sequence length, streaming at the measured norm/elementwise
bandwidth, and the measured launch cost (``PerfParams.kernel_launch_s``, set by
:func:`placement.perf.profiled.profile_params`); the spec-sheet fractions of :class:`PerfParams` do not apply.

Times in seconds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields

from ..errors import PlacementError
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


#: The kernel families a :class:`Work` names.
WORK_KINDS = ("gemm", "attention", "stream")


@dataclass(frozen=True)
class Work:
    """One kernel's shape, enough to price it on any accelerator (or the CPU core) in both passes.

    Parameters
    ----------
    kind : str
        ``"gemm"``: ``batch`` products of shape (m, n, k) (forward one GEMM, backward dgrad + wgrad);
        ``"attention"``: fused attention over ``batch`` heads, ``m`` queries and ``n`` keys of width ``k``
        (``causal``); ``"stream"``: a memory-bound kernel moving ``nbytes`` in ``launches`` kernels, its
        backward ``backward_factor`` times the bytes (``None``: ``PerfParams.elementwise_bwd_factor``).
    m, n, k, batch : float
        Shape (GEMM and attention).
    nbytes : float
        Bytes moved (streaming kernels).
    launches : int
        Kernel launches (streaming kernels).
    element_bytes : float
        Bytes per element of the operands (GEMM traffic).
    causal : bool
        Causal mask (attention).
    backward_factor : float or None
        Streaming kernels: backward bytes over forward bytes (0: no backward kernel).
    dtype : str or None
        Type of the products (``"bf16"``, ``"fp32"``...); ``None``: the caller's.
    wgrad_dtype : str or None
        Type of the weight gradient's product when it differs (torchao's ``rowwise_with_gw_hp``: bf16 beside
        float8 products); its operands are read at 2 bytes per element (4 in fp32).
    """

    kind: str
    m: float = 0.0
    n: float = 0.0
    k: float = 0.0
    batch: float = 1.0
    nbytes: float = 0.0
    launches: int = 1
    element_bytes: float = 2.0
    causal: bool = False
    backward_factor: float | None = None
    dtype: str | None = None
    wgrad_dtype: str | None = None

    def __post_init__(self) -> None:
        if self.kind not in WORK_KINDS:
            raise PlacementError(f"work kind {self.kind!r}: must be one of {', '.join(WORK_KINDS)}")
        for name in ("dtype", "wgrad_dtype"):
            value = getattr(self, name)
            if value is not None and value not in {d.value for d in Dtype}:
                raise PlacementError(f"work {self.kind}: {name} {value!r} must be one of {', '.join(Dtype)}")
        if isinstance(self.launches, bool) or not isinstance(self.launches, int) or not 0 <= self.launches <= 10**6:
            raise PlacementError(f"work {self.kind}: launches must be an integer from 0 to 1000000")
        for name in ("m", "n", "k", "batch", "nbytes", "element_bytes"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value < math.inf:
                raise PlacementError(f"work {self.kind}: {name} must be a finite number >= 0, got {value!r}")
        factor = self.backward_factor
        if factor is not None and (
            isinstance(factor, bool) or not isinstance(factor, int | float) or not 0 <= factor < math.inf
        ):
            raise PlacementError(f"work {self.kind}: backward_factor must be a finite number >= 0")

    def seconds(self, acc: Accelerator, dtype: Dtype, params: PerfParams) -> tuple[float, float]:
        """(forward, backward) seconds on ``acc`` with products in ``dtype``."""
        dtype = usable_dtype(acc, Dtype(self.dtype) if self.dtype is not None else dtype)
        if self.kind == "gemm":
            if self.wgrad_dtype is None:
                return training_gemm_seconds(self.m, self.n, self.k, acc, dtype, params, self.batch, self.element_bytes)
            m, n, k, batch = self.m, self.n, self.k, self.batch
            wgrad = usable_dtype(acc, Dtype(self.wgrad_dtype))
            wgrad_bytes = 4.0 if wgrad in (Dtype.FP32, Dtype.TF32) else 2.0
            return gemm_seconds(m, n, k, acc, dtype, params, batch, self.element_bytes), gemm_seconds(
                m, k, n, acc, dtype, params, batch, self.element_bytes
            ) + gemm_seconds(k, n, m, acc, wgrad, params, batch, wgrad_bytes)
        if self.kind == "attention":
            return flash_attention_seconds(self.batch, self.m, self.n, self.k, self.causal, acc, dtype, params)
        factor = params.elementwise_bwd_factor if self.backward_factor is None else self.backward_factor
        fwd = streaming_seconds(self.nbytes, acc, params, self.launches)
        return fwd, streaming_seconds(self.nbytes * factor, acc, params, self.launches)

    @property
    def flops(self) -> float:
        """Forward floating-point operations (a multiply-add counts 2; streaming kernels count 0)."""
        if self.kind == "gemm":
            return 2.0 * self.m * self.n * self.k * self.batch
        if self.kind == "attention":
            return 4.0 * self.batch * self.m * self.n * self.k * (0.5 if self.causal else 1.0)
        return 0.0

    @property
    def bytes_moved(self) -> float:
        """Forward bytes through device memory (operands and result of a product, or the streamed bytes)."""
        e = self.element_bytes
        if self.kind == "gemm":
            return e * (self.m * self.k + self.k * self.n + self.m * self.n) * self.batch
        if self.kind == "attention":
            return e * self.batch * (2 * self.m + 2 * self.n) * self.k
        return self.nbytes

    def as_dict(self) -> dict[str, object]:
        """The fields that differ from the defaults (a graph file's ``work`` entry)."""
        out: dict[str, object] = {"kind": self.kind}
        for f in fields(self)[1:]:
            value = getattr(self, f.name)
            if value != f.default:
                out[f.name] = value
        return out

    @classmethod
    def from_dict(cls, raw: object) -> Work:
        """Inverse of :meth:`as_dict`; a malformed entry raises :class:`PlacementError` (one line)."""
        if not isinstance(raw, dict):
            raise PlacementError(f"work entry must be an object, got {type(raw).__name__}")
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(raw) - known)
        if unknown:
            raise PlacementError(f"work entry: unknown field {unknown[0]!r}")
        try:
            return cls(**raw)
        except TypeError as exc:
            raise PlacementError(f"work entry: {exc}") from None


def usable_dtype(acc: Accelerator, dtype: Dtype) -> Dtype:
    """``dtype``, or the nearest type ``acc`` runs when it lacks it (fp8 -> fp16/bf16, bf16 -> fp16 -> fp32)."""
    for candidate in (dtype, Dtype.FP16, Dtype.BF16, Dtype.TF32, Dtype.FP32):
        if acc.peak_flops(candidate) > 0:
            return candidate
    raise PlacementError(f"accelerator {acc.name}: no non-zero peak FLOP/s")
