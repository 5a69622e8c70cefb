"""``python -m placement measure``: time real training iterations of a Megatron-LM model against the prediction.

``python -m placement measure [--device cuda|cpu] [--profile P] [--steps N] [--json] -- <Megatron flags>``
builds the model in plain torch (:mod:`placement.perf.torch_model`) on one device, runs warm-up iterations
and ``N`` timed ones (every micro-batch's forward and backward, then an AdamW step), and prints the measured
seconds per iteration (the median of the timed ones) and peak memory (the allocator's peak on a GPU, the
growth of the resident set on a CPU) beside what the torch-eager framework of the model
(:mod:`placement.perf.eager`: the kernels plain torch launches and the host that issues them) says for the
same run on this device: from the profile given, else from the catalogue GPU the device's name matches. Bad input is one line: no torch, no
GPU for ``--device cuda``, a parallel layout (one device only), fp8, and a model whose predicted memory
exceeds the device's free memory (checked before anything is allocated).
"""

from __future__ import annotations

import argparse
import json
import math
import resource
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..errors import PlacementError, label
from .calibrate import CPU_CLOCK, import_torch, torch_device, torch_message
from .eager import EagerPrediction, check_one_device, eager_predict
from .hardware import Accelerator, Dtype
from .layout import Layout, Recompute
from .megatron import parse_megatron_args
from .profile import DeviceProfile, load_profile
from .profiled import accelerator_from_profile, catalogue_match, profile_params
from .transformer import TransformerSpec


@dataclass(frozen=True)
class Measurement:
    """Measured and predicted seconds per iteration and peak memory (bytes) of one model on one device."""

    device: str
    predicted_by: str
    predicted_seconds: float
    measured_seconds: float
    predicted_memory: float
    measured_memory: float
    step_seconds: tuple[float, ...]
    parameters: int
    catalogue_seconds: float | None = None

    @property
    def ratio(self) -> float:
        """Predicted over measured seconds."""
        return self.predicted_seconds / self.measured_seconds

    def as_dict(self) -> dict[str, Any]:
        """The ``--json`` object."""
        return {
            "device": self.device,
            "predicted_by": self.predicted_by,
            "predicted_seconds": self.predicted_seconds,
            "measured_seconds": self.measured_seconds,
            "ratio": self.ratio,
            "predicted_memory": self.predicted_memory,
            "measured_memory": self.measured_memory,
            "memory_ratio": self.predicted_memory / self.measured_memory if self.measured_memory > 0 else None,
            "step_seconds": list(self.step_seconds),
            "parameters": self.parameters,
            "catalogue_predicted_seconds": self.catalogue_seconds,
        }


def _device_accelerator(torch: Any, dev: Any, profile: DeviceProfile | None) -> tuple[Accelerator, str]:
    """The device as the model sees it, and which source priced it."""
    if profile is not None:
        if profile.kind != dev.type:
            raise PlacementError(f"--profile was measured on a {profile.kind} device, but --device is {dev.type}")
        base = catalogue_match(profile.name)
        return accelerator_from_profile(profile, base), f"profile of {profile.name} ({profile.date})"
    if dev.type == "cuda":
        name = torch.cuda.get_device_name(dev)
        base = catalogue_match(name)
        if base is None:
            raise PlacementError(
                f"{label(name)} is not in the catalogue: give --profile (python -m placement calibrate)"
            )
        return base, f"catalogue {base.name} (spec sheet)"
    raise PlacementError("--device cpu needs --profile: python -m placement calibrate --device cpu -o cpu.json")


def _available_memory(torch: Any, dev: Any) -> float:
    if dev.type == "cuda":
        free, _ = torch.cuda.mem_get_info(dev)
        return float(free)
    try:
        with open("/proc/meminfo", encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("MemAvailable:"):
                    return float(line.split()[1]) * 1024
    except OSError:
        pass
    return 4e9


def _rss_bytes() -> float:
    try:
        with open("/proc/self/statm", encoding="utf-8") as handle:
            return float(handle.read().split()[1]) * resource.getpagesize()
    except OSError:
        return 0.0


def _peak_rss_bytes() -> float:
    return float(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024  # KiB on Linux


def train_steps(
    torch: Any, dev: Any, model_spec: TransformerSpec, layout: Layout, steps: int, warmup: int,
    clock: Callable[[], float] = time.perf_counter,
) -> tuple[list[float], float, int]:  # fmt: skip
    """Seconds of each timed iteration (by ``clock``), the peak memory growth (bytes) and the parameter count."""
    from .torch_model import build  # noqa: PLC0415 - imports torch

    torch.manual_seed(0)
    if dev.type == "cuda":
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats(dev)
        base = float(torch.cuda.memory_allocated(dev))
    else:
        base = _rss_bytes()
    model = build(model_spec, dev, recompute=layout.recompute is Recompute.FULL)
    model.train()
    try:
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-5, fused=True)
    except (RuntimeError, TypeError):
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-5)
    amp = {Dtype.BF16: torch.bfloat16, Dtype.FP16: torch.float16}.get(layout.dtype)
    b, s = layout.micro_batch, model_spec.seq_length
    micro = layout.global_batch // (layout.micro_batch * layout.data)
    tokens = torch.randint(0, model_spec.vocab, (b, s + 1), device=dev)
    times = []
    for step in range(warmup + steps):
        start = clock()
        for _ in range(micro):
            with torch.autocast(dev.type, dtype=amp, enabled=amp is not None):
                loss = model(tokens[:, :-1], tokens[:, 1:]) / micro
            loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        if dev.type == "cuda":
            torch.cuda.synchronize(dev)
        if step >= warmup:
            times.append(clock() - start)
    if dev.type == "cuda":
        peak = float(torch.cuda.max_memory_allocated(dev)) - base
    else:
        peak = _peak_rss_bytes() - base
    parameters = sum(p.numel() for p in model.parameters())
    return times, max(peak, 0.0), parameters


def device_prediction(
    model_spec: TransformerSpec, layout: Layout, acc: Accelerator, profile: DeviceProfile | None = None
) -> EagerPrediction:
    """What the model predicts for ``measure``'s loop on one device ``acc``: the torch-eager framework
    (:mod:`placement.perf.eager`), host and kernels in series on a CPU, overlapped on a GPU."""
    params = profile_params(profile) if profile is not None else _default_params()
    micro = layout.global_batch // (layout.micro_batch * layout.data)
    serial = profile is not None and profile.kind == "cpu"
    return eager_predict(model_spec, acc, layout.micro_batch, micro, params, model_spec.parameters(), layout.dtype,
                         serial)  # fmt: skip


def measure(
    flags: list[str], device: str = "cpu", profile: DeviceProfile | None = None, steps: int = 3, warmup: int = 2
) -> Measurement:
    """Build the model of Megatron-LM ``flags``, train it ``steps`` timed iterations, compare with the prediction.

    Parameters
    ----------
    flags : list of str
        Megatron-LM flags of a model on one device (no tensor, pipeline, context, expert or data parallelism).
    device : str
        ``"cuda"`` or ``"cpu"``.
    profile : DeviceProfile or None
        Measured rates of the device (required on a CPU; on a GPU the catalogue's spec sheet otherwise). A
        profile timed by CPU time (``calibrate --cpu-time``) is matched: one thread, CPU seconds.
    steps, warmup : int
        Timed and untimed iterations.

    Raises
    ------
    PlacementError
        No torch, no GPU for ``cuda``, a parallel or fp8 layout, a model too large for the device's free
        memory (predicted, before anything is allocated), bad flags.
    """
    torch = import_torch()
    dev = torch_device(torch, device)
    model_spec, layout, _ = parse_megatron_args(flags)  # data parallel 1: one device
    check_one_device(layout)
    acc, source = _device_accelerator(torch, dev, profile)
    pred = device_prediction(model_spec, layout, acc, profile)
    need, free = pred.memory, _available_memory(torch, dev)
    if need > 0.9 * free:
        raise PlacementError(
            f"the model needs about {need / 2**30:.1f} GiB (predicted), over 90 % of the {free / 2**30:.1f} GiB "
            f"free on {device}: too large to measure here (fewer layers, a smaller batch or recomputation)"
        )
    base = catalogue_match(profile.name) if profile is not None and dev.type == "cuda" else None
    catalogue = None if base is None else device_prediction(model_spec, layout, base).iteration_seconds
    clock, threads = time.perf_counter, torch.get_num_threads()
    if profile is not None and dict(profile.versions).get("clock") == CPU_CLOCK:  # as the profile was timed
        torch.set_num_threads(1)
        clock = time.process_time
    try:
        times, peak, parameters = train_steps(torch, dev, model_spec, layout, steps, warmup, clock)
    except (RuntimeError, torch.cuda.OutOfMemoryError) as exc:  # memory the prediction did not see, a missing kernel
        raise PlacementError(f"measure: torch failed while training: {torch_message(exc)}") from None
    finally:
        torch.set_num_threads(threads)
    name = profile.name if profile is not None else acc.name
    return Measurement(name, source, pred.iteration_seconds, statistics.median(times), need, peak, tuple(times),
                       parameters, catalogue)  # fmt: skip


def _default_params() -> Any:
    from .params import DEFAULT_PARAMS  # noqa: PLC0415

    return DEFAULT_PARAMS


def _steps(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if not 1 <= value <= 1000:
        raise argparse.ArgumentTypeError(f"must be an integer from 1 to 1000: {text!r}")
    return value


def register(commands: Any) -> None:
    """Add the ``measure`` subcommand."""
    cmd = commands.add_parser(
        "measure",
        help="time real training iterations of a Megatron-LM model with torch, against the prediction",
        description="Build the model of the Megatron-LM flags (after --) in torch, train it, compare with predict.",
    )
    cmd.add_argument("--device", choices=("cuda", "cpu"), default=None, help="default: cuda when a GPU is visible")
    cmd.add_argument("--profile", default=None, help="device profile from calibrate (default: the catalogue GPU)")
    cmd.add_argument("--steps", type=_steps, default=3, help="timed iterations (default 3)")
    cmd.add_argument("--warmup", type=_steps, default=2, help="untimed iterations first (default 2)")
    cmd.add_argument("--json", action="store_true", help="print one JSON object")
    cmd.add_argument("megatron", nargs=argparse.REMAINDER, help="-- then Megatron-LM flags")


def _text(m: Measurement) -> str:
    lines = [
        f"device {m.device}; predicted by {m.predicted_by}",
        f"parameters {m.parameters:,}",
        f"seconds per iteration: predicted {m.predicted_seconds:.4g}, measured {m.measured_seconds:.4g} "
        f"(median of {len(m.step_seconds)}), ratio {m.ratio:.3f}",
        f"peak memory: predicted {m.predicted_memory / 2**30:.3g} GiB, measured {m.measured_memory / 2**30:.3g} GiB"
        + (f", ratio {m.predicted_memory / m.measured_memory:.3f}" if m.measured_memory > 0 else ""),
    ]
    if m.catalogue_seconds is not None:
        lines.append(
            f"catalogue (spec sheet) prediction {m.catalogue_seconds:.4g} s, ratio {m.catalogue_seconds / m.measured_seconds:.3f}"
        )
    return "\n".join(lines)


def cmd_measure(args: argparse.Namespace) -> int:
    """Run ``measure``."""
    flags = list(args.megatron)
    if flags and flags[0] == "--":
        flags = flags[1:]
    if not flags:
        raise PlacementError("measure: give the model's Megatron-LM flags after -- (--num-layers ... --seq-length ...)")
    torch = import_torch()
    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    profile = load_profile(args.profile) if args.profile is not None else None
    result = measure(flags, device, profile, args.steps, args.warmup)
    if args.json:
        print(json.dumps(result.as_dict(), allow_nan=False))
    else:
        print(_text(result))
    if not math.isfinite(result.ratio):  # pragma: no cover - a zero-time step cannot happen
        sys.stderr.write("warning: the measured time is zero\n")
    return 0
