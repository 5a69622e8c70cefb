"""A device profile: the rates ``python -m placement calibrate`` measured on one device, as validated data.

A profile is JSON (never code): the device (name, kind, memory, driver and library versions, date), the
per-kernel launch cost, matrix-product rates over a grid of shapes per data type, fused attention (SDPA)
forward and backward rates by head dimension and sequence length, streaming bandwidths (copy, norm,
elementwise) and, when measured under ``torchrun``, collective times by message size. :func:`load_profile`
refuses a file over :data:`MAX_PROFILE_BYTES`, wrong types, NaN or infinite values and values outside
physical bounds (``1e308`` FLOP/s) in one line naming the file and field.

The performance model reads a profile through :func:`placement.perf.profiled.accelerator_from_profile`: an
:class:`~placement.perf.hardware.Accelerator` whose peaks are the measured ones and whose ``measured`` field
holds the profile; :mod:`placement.perf.kernels` then prices every GEMM, attention and streaming kernel from
the measured rates (interpolated in log space by shape) instead of the spec sheet's fractions.
Imports the standard library only (the calibration machine may lack the solver's dependencies).
"""

from __future__ import annotations

import bisect
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import InvalidDevicesError, label, quote

#: Format tag written into and required from every profile.
PROFILE_FORMAT = "placement-device-profile/1"
#: Largest profile file read (a calibration writes a few tens of kilobytes).
MAX_PROFILE_BYTES = 2 * 1024 * 1024
#: Physical bounds of the measured values (a profile outside them is corrupt, not fast).
MAX_FLOPS = 1e17  # FLOP/s (a B200 runs fp8 at 4.5e15)
MAX_BYTES_PER_S = 1e14
MAX_DIM = 2**22
MAX_ENTRIES = 5000
DTYPES = ("fp32", "tf32", "bf16", "fp16", "fp8")
STREAMING_KINDS = ("copy", "norm", "elementwise")
COLLECTIVES = ("all_reduce", "all_gather", "reduce_scatter", "p2p")


@dataclass(frozen=True)
class GemmRate:
    """Measured rate of ``(m x k) @ (k x n)`` in ``dtype``: FLOP/s (``2 m n k`` FLOPs per product)."""

    dtype: str
    m: int
    n: int
    k: int
    flops_per_s: float


@dataclass(frozen=True)
class AttentionRate:
    """Measured causal SDPA rates at ``head_dim`` and sequence length ``seq``, in the model's FLOP convention:
    forward ``2 s^2 d`` per head (causal half of ``4 s^2 d``), backward 2.5 times that."""

    dtype: str
    head_dim: int
    seq: int
    fwd_flops_per_s: float
    bwd_flops_per_s: float


@dataclass(frozen=True)
class CollectiveTime:
    """Measured time of one collective over ``ranks`` GPUs on a message of ``nbytes`` per rank."""

    op: str
    ranks: int
    nbytes: float
    seconds: float


@dataclass(frozen=True)
class DeviceProfile:
    """What :mod:`placement.perf.calibrate` measured on one device (see the module docstring).

    Parameters
    ----------
    name : str
        Device name as the driver reports it (``"NVIDIA H200"``, a CPU model name).
    kind : str
        ``"cuda"`` or ``"cpu"``.
    memory_bytes : float
        Device memory (GPU memory, or the host's RAM for a CPU).
    versions : tuple of (str, str)
        Driver and library versions (torch, CUDA, cuDNN, driver), and the host's thread count.
    date : str
        When the calibration ran (ISO 8601, UTC).
    launch_seconds : float
        Fixed cost of one kernel (a tiny op's time, launch included).
    gemm, attention, collectives : tuple
        The measured rates (:class:`GemmRate`, :class:`AttentionRate`, :class:`CollectiveTime`).
    streaming : tuple of (str, float)
        Bytes/s (read + written) of a large copy, an RMS norm and an elementwise kernel.
    """

    name: str
    kind: str
    memory_bytes: float
    versions: tuple[tuple[str, str], ...]
    date: str
    launch_seconds: float
    gemm: tuple[GemmRate, ...]
    attention: tuple[AttentionRate, ...]
    streaming: tuple[tuple[str, float], ...]
    collectives: tuple[CollectiveTime, ...] = ()

    def dtypes(self) -> tuple[str, ...]:
        """Data types with GEMM measurements."""
        return tuple(dt for dt in DTYPES if any(g.dtype == dt for g in self.gemm))

    def peak_flops(self, dtype: str) -> float:
        """The fastest measured GEMM rate of ``dtype`` (0.0 when it was not measured)."""
        return max((g.flops_per_s for g in self.gemm if g.dtype == dtype), default=0.0)

    def streaming_bytes_per_s(self, kind: str | None = None) -> float:
        """Measured bandwidth of ``kind`` (default: the mean of norm and elementwise, what layers stream)."""
        rates = dict(self.streaming)
        if kind is not None:
            return rates[kind]
        return (rates["norm"] + rates["elementwise"]) / 2.0

    def gemm_rate(self, dtype: str, m: float, n: float, k: float) -> float:
        """FLOP/s of a GEMM of shape (m, n, k): trilinear in log space over the measured grid.

        Past the largest measured dimension the rate stays; below the smallest it falls in proportion (a
        product that small runs in a fixed time).
        """
        table = _gemm_grid(self, _measured_dtype(self, dtype, "GEMM"))
        axes, values = table
        return math.exp(_interp(axes, values, (m, n, k)))

    def attention_rates(self, dtype: str, head_dim: float, seq: float) -> tuple[float, float]:
        """(forward, backward) FLOP/s of causal fused attention, bilinear in log space over the measured grid."""
        dt = dtype if any(a.dtype == dtype for a in self.attention) else None
        if dt is None:  # fp8 attention runs in bf16; else the closest measured type
            dt = next((d for d in ("bf16", "fp16", "fp32") if any(a.dtype == d for a in self.attention)), None)
        if dt is None:
            raise InvalidDevicesError(f"profile of {label(self.name)}: no attention measurements")
        axes, fwd, bwd = _attention_grid(self, dt)
        point = (head_dim, seq)
        return math.exp(_interp(axes, fwd, point)), math.exp(_interp(axes, bwd, point))

    def as_dict(self) -> dict[str, Any]:
        """The JSON form that :func:`profile_from_dict` reads."""
        return {
            "format": PROFILE_FORMAT,
            "device": {"name": self.name, "kind": self.kind, "memory_bytes": self.memory_bytes},
            "versions": dict(self.versions),
            "date": self.date,
            "launch_seconds": self.launch_seconds,
            "gemm": [vars(g) for g in self.gemm],
            "attention": [vars(a) for a in self.attention],
            "streaming": dict(self.streaming),
            "collectives": [vars(c) for c in self.collectives],
        }


def _measured_dtype(profile: DeviceProfile, dtype: str, what: str) -> str:
    if any(g.dtype == dtype for g in profile.gemm):
        return dtype
    if dtype == "tf32" and any(g.dtype == "fp32" for g in profile.gemm):
        return "fp32"
    raise InvalidDevicesError(
        f"profile of {label(profile.name)}: no {dtype} {what} measurements "
        f"(measured: {', '.join(profile.dtypes()) or 'none'}); calibrate with --dtypes {dtype}"
    )


def _gemm_grid(profile: DeviceProfile, dtype: str) -> tuple[tuple[list[float], ...], dict]:
    rows = [g for g in profile.gemm if g.dtype == dtype]
    axes = tuple(sorted({float(getattr(g, d)) for g in rows}) for d in "mnk")
    return axes, {(g.m, g.n, g.k): math.log(g.flops_per_s) for g in rows}


def _attention_grid(profile: DeviceProfile, dtype: str) -> tuple[tuple[list[float], ...], dict, dict]:
    rows = [a for a in profile.attention if a.dtype == dtype]
    axes = (sorted({float(a.head_dim) for a in rows}), sorted({float(a.seq) for a in rows}))
    fwd = {(a.head_dim, a.seq): math.log(a.fwd_flops_per_s) for a in rows}
    bwd = {(a.head_dim, a.seq): math.log(a.bwd_flops_per_s) for a in rows}
    return axes, fwd, bwd


def _bracket(axis: list[float], x: float) -> tuple[float, float, float, float]:
    """(lower node, upper node, weight of the upper, log-rate correction below the grid) along one axis."""
    x = max(x, 1e-9)
    if x <= axis[0]:
        return axis[0], axis[0], 0.0, math.log(x / axis[0])
    if x >= axis[-1]:
        return axis[-1], axis[-1], 0.0, 0.0
    i = bisect.bisect_right(axis, x)
    lo, hi = axis[i - 1], axis[i]
    return lo, hi, math.log(x / lo) / math.log(hi / lo), 0.0


def _interp(axes: tuple[list[float], ...], values: dict, point: tuple[float, ...]) -> float:
    """Multilinear interpolation of ``values`` (log rates at grid nodes) at ``point`` in log coordinates."""
    brackets = [_bracket(axis, x) for axis, x in zip(axes, point, strict=True)]
    total = sum(b[3] for b in brackets)
    for corner in range(2 ** len(axes)):
        weight, key = 1.0, []
        for i, (lo, hi, w, _) in enumerate(brackets):
            upper = corner >> i & 1
            weight *= w if upper else 1.0 - w
            key.append(int(hi if upper else lo))
        if weight:
            total += weight * values[tuple(key)]
    return total


# --- reading -------------------------------------------------------------------------------------------


class _Reader:
    """Checks of one profile's fields; every failure is one line naming the source and the field."""

    def __init__(self, source: str) -> None:
        self.source = label(source)

    def fail(self, where: str, rule: str) -> InvalidDevicesError:
        return InvalidDevicesError(f"{self.source}: {where}: {rule}")

    def obj(self, value: Any, where: str) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise self.fail(where, f"must be an object, got {type(value).__name__}")
        return value

    def items(self, value: Any, where: str) -> list[Any]:
        if not isinstance(value, list):
            raise self.fail(where, f"must be a list, got {type(value).__name__}")
        if len(value) > MAX_ENTRIES:
            raise self.fail(where, f"{len(value):,} entries, over the {MAX_ENTRIES:,} a profile may hold")
        return value

    def text(self, value: Any, where: str, choices: tuple[str, ...] | None = None) -> str:
        if not isinstance(value, str) or len(value) > 200:
            raise self.fail(where, "must be a string of at most 200 characters")
        if choices is not None and value not in choices:
            raise self.fail(where, f"{quote(value)} is not one of {', '.join(choices)}")
        return value

    def number(self, value: Any, where: str, low: float, high: float, low_open: bool = True) -> float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self.fail(where, f"must be a number, got {type(value).__name__}")
        value = float(value)
        if not math.isfinite(value) or value > high or value < low or (low_open and value == low):
            side = "(" if low_open else "["
            raise self.fail(where, f"{value!r} is outside {side}{low:g}, {high:g}]")
        return value

    def dim(self, value: Any, where: str) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_DIM:
            raise self.fail(where, f"must be an integer from 1 to {MAX_DIM:,}")
        return value


def _gemm_rows(r: _Reader, data: Any) -> tuple[GemmRate, ...]:
    rows = []
    for i, entry in enumerate(r.items(data, "gemm")):
        e = r.obj(entry, f"gemm[{i}]")
        m, n, k = (r.dim(e.get(d), f"gemm[{i}].{d}") for d in "mnk")
        rate = r.number(e.get("flops_per_s"), f"gemm[{i}].flops_per_s", 0.0, MAX_FLOPS)
        rows.append(GemmRate(r.text(e.get("dtype"), f"gemm[{i}].dtype", DTYPES), m, n, k, rate))
    if not rows:
        raise r.fail("gemm", "no measurements")
    for dt in DTYPES:
        grid = {(g.m, g.n, g.k) for g in rows if g.dtype == dt}
        sizes = [len({key[j] for key in grid}) for j in range(3)]
        if grid and len(grid) != sizes[0] * sizes[1] * sizes[2]:
            raise r.fail("gemm", f"the {dt} shapes must form a full grid of m, n and k values (one row each)")
        if sum(1 for g in rows if g.dtype == dt) != len(grid):
            raise r.fail("gemm", f"a {dt} shape is given twice")
    return tuple(rows)


def _attention_rows(r: _Reader, data: Any) -> tuple[AttentionRate, ...]:
    rows = []
    for i, entry in enumerate(r.items(data, "attention")):
        e = r.obj(entry, f"attention[{i}]")
        rows.append(AttentionRate(
            r.text(e.get("dtype"), f"attention[{i}].dtype", DTYPES),
            r.dim(e.get("head_dim"), f"attention[{i}].head_dim"),
            r.dim(e.get("seq"), f"attention[{i}].seq"),
            r.number(e.get("fwd_flops_per_s"), f"attention[{i}].fwd_flops_per_s", 0.0, MAX_FLOPS),
            r.number(e.get("bwd_flops_per_s"), f"attention[{i}].bwd_flops_per_s", 0.0, MAX_FLOPS),
        ))  # fmt: skip
    if not rows:
        raise r.fail("attention", "no measurements")
    for dt in DTYPES:
        grid = {(a.head_dim, a.seq) for a in rows if a.dtype == dt}
        count = sum(1 for a in rows if a.dtype == dt)
        if grid and (count != len(grid) or len(grid) != len({g[0] for g in grid}) * len({g[1] for g in grid})):
            raise r.fail("attention", f"the {dt} rows must form a full grid of head_dim and seq, one row each")
    return tuple(rows)


def _collective_rows(r: _Reader, data: Any) -> tuple[CollectiveTime, ...]:
    rows = []
    for i, entry in enumerate(r.items(data, "collectives")):
        e = r.obj(entry, f"collectives[{i}]")
        rows.append(CollectiveTime(
            r.text(e.get("op"), f"collectives[{i}].op", COLLECTIVES),
            r.dim(e.get("ranks"), f"collectives[{i}].ranks"),
            r.number(e.get("nbytes"), f"collectives[{i}].nbytes", 0.0, 1e12),
            r.number(e.get("seconds"), f"collectives[{i}].seconds", 0.0, 100.0),
        ))  # fmt: skip
    return tuple(rows)


def profile_from_dict(data: Any, source: str = "profile") -> DeviceProfile:
    """Validate a profile's JSON object (see :func:`load_profile`)."""
    r = _Reader(source)
    top = r.obj(data, "top level")
    if top.get("format") != PROFILE_FORMAT:
        raise r.fail("format", f"must be {PROFILE_FORMAT!r} (a file written by python -m placement calibrate)")
    device = r.obj(top.get("device"), "device")
    versions = r.obj(top.get("versions", {}), "versions")
    if len(versions) > 50:
        raise r.fail("versions", "more than 50 entries")
    streaming = r.obj(top.get("streaming"), "streaming")
    return DeviceProfile(
        name=r.text(device.get("name"), "device.name"),
        kind=r.text(device.get("kind"), "device.kind", ("cuda", "cpu")),
        memory_bytes=r.number(device.get("memory_bytes"), "device.memory_bytes", 0.0, 1e14),
        versions=tuple((r.text(k, "versions"), r.text(v, f"versions.{k}")) for k, v in versions.items()),
        date=r.text(top.get("date"), "date"),
        launch_seconds=r.number(top.get("launch_seconds"), "launch_seconds", 0.0, 0.1, low_open=False),
        gemm=_gemm_rows(r, top.get("gemm")),
        attention=_attention_rows(r, top.get("attention")),
        streaming=tuple(
            (kind, r.number(streaming.get(kind), f"streaming.{kind}", 0.0, MAX_BYTES_PER_S)) for kind in STREAMING_KINDS
        ),
        collectives=_collective_rows(r, top.get("collectives", [])),
    )


def _no_constant(name: str) -> float:
    raise ValueError(f"{name} is not a number JSON allows")


def load_profile(path: str | Path) -> DeviceProfile:
    """Read and validate the profile at ``path``.

    Raises
    ------
    InvalidDevicesError
        One line naming the file and the field: not a regular file, over :data:`MAX_PROFILE_BYTES`, not
        JSON, NaN or Infinity, a wrong type, a value outside physical bounds, an incomplete shape grid.
    """
    from ..io import read_file_bytes  # noqa: PLC0415 - the package's one bounded file reader

    return profile_from_bytes(read_file_bytes(path, InvalidDevicesError), str(path))


def profile_from_bytes(data: bytes, source: str = "profile") -> DeviceProfile:
    """Validate a profile given as the bytes of its file (an upload); ``source`` names it in messages.

    Raises
    ------
    InvalidDevicesError
        One line naming ``source`` and the field, as :func:`load_profile`.
    """
    shown = label(source)
    if len(data) > MAX_PROFILE_BYTES:
        raise InvalidDevicesError(f"{shown}: file is {len(data):,} bytes, over the {MAX_PROFILE_BYTES:,}-byte limit")
    try:
        parsed = json.loads(data.decode("utf-8"), parse_constant=_no_constant)
    except UnicodeDecodeError:
        raise InvalidDevicesError(f"{shown}: not UTF-8 text (is it a profile?)") from None
    except json.JSONDecodeError as exc:
        raise InvalidDevicesError(f"{shown}: not valid JSON ({exc.msg} at line {exc.lineno})") from None
    except (ValueError, RecursionError) as exc:
        raise InvalidDevicesError(f"{shown}: not valid JSON ({label(str(exc))})") from None
    return profile_from_dict(parsed, source)


def save_profile(profile: DeviceProfile, path: str | Path) -> None:
    """Write ``profile`` as indented JSON."""
    Path(path).write_text(json.dumps(profile.as_dict(), indent=1, allow_nan=False) + "\n", encoding="utf-8")
