"""``python -m placement calibrate``: measure a device's kernel rates with torch and write a profile.

Microbenchmarks, each run once to warm up, then timed (the wall clock, with the GPU synchronised) in three
windows of back-to-back calls of a third of a target time each; the median window gives the time:

* **GEMM**: ``(m x k) @ (k x n)`` over a full grid of m, n, k values (skinny to large) per data type (fp32,
  tf32, bf16, fp16 on a GPU; fp8 through ``torch._scaled_mm`` where the GPU has it); the rate is
  ``2 m n k / t``.
* **Fused attention**: causal ``scaled_dot_product_attention`` forward, and forward + backward, by head
  dimension and sequence length, as rates in the model's FLOP convention (forward ``2 s^2 d`` per head,
  backward 2.5 times that).
* **Streaming**: a large copy (bytes read + written), an RMS norm (read + write) and an elementwise add (two
  reads, one write), in bytes per second.
* **Launch** (first): the time of a one-element op, back to back: the fixed cost of a kernel. The rates above
  are net of it (a kernel's time less one launch), as the model adds one launch to every kernel it prices.
* **Collectives** (only under ``torchrun`` with several GPUs): all-reduce, all-gather, reduce-scatter and a
  point-to-point send by message size; rank 0 writes the profile.

The time is bounded (``--budget``, default 110 s; ``--quick`` about 30 s on a GPU) by giving each remaining
benchmark its share of what is left; the memory is bounded by the shapes (at most about 2 GB on a GPU, 0.2 GB
on a CPU). Imports torch and the standard library only.
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import sys
import time
from collections.abc import Callable
from typing import Any

from ..errors import PlacementError
from .profile import AttentionRate, CollectiveTime, DeviceProfile, GemmRate, save_profile

#: The ``clock`` version entry of a profile timed by CPU time on one thread (``calibrate --cpu-time``).
CPU_CLOCK = "process cpu time, 1 thread"
INSTALL_HINT = "install PyTorch: scripts/setup.sh --export, or pip install torch==2.13.0"


def import_torch() -> Any:
    """torch, or a one-line :class:`PlacementError` saying how to install it."""
    try:
        import torch  # noqa: PLC0415
    except ImportError:
        raise PlacementError(f"this command needs PyTorch, which is not installed ({INSTALL_HINT})") from None
    return torch


def torch_device(torch: Any, device: str) -> Any:
    """``torch.device`` for ``"cuda"`` or ``"cpu"``; ``cuda`` without a visible GPU is a one-line error."""
    if device == "cuda":
        if not torch.cuda.is_available():
            build = "built without CUDA" if torch.version.cuda is None else "no GPU visible"
            raise PlacementError(
                f"--device cuda: torch {torch.__version__} sees no CUDA GPU ({build}); use --device cpu"
            )
        return torch.device("cuda", torch.cuda.current_device())
    return torch.device("cpu")


def torch_message(exc: BaseException) -> str:
    """The first line of a torch error, shortened."""
    text = str(exc).strip().splitlines()
    return (text[0] if text else type(exc).__name__)[:300]


class Progress:
    """A progress bar on stderr (redrawn in place on a terminal, one line per tenth otherwise)."""

    def __init__(self, total: int, stream: Any = None) -> None:
        self.total, self.done, self.stream = max(1, total), 0, stream or sys.stderr
        self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        self.started = time.perf_counter()
        self.shown_tenth = -1

    def step(self, what: str) -> None:
        self.done += 1
        tenth = 10 * self.done // self.total
        if not self.tty and tenth == self.shown_tenth:
            return
        self.shown_tenth = tenth
        bar = "#" * (20 * self.done // self.total)
        line = f"calibrate [{bar:20s}] {self.done}/{self.total} {time.perf_counter() - self.started:5.1f}s {what}"
        self.stream.write(f"\r{line[:100]:100s}" if self.tty else line + "\n")
        if self.tty and self.done == self.total:
            self.stream.write("\n")
        self.stream.flush()


class Timer:
    """Times a callable: one warm-up, then repetitions until ``target`` seconds (shrunk as the budget runs out)."""

    def __init__(
        self, torch: Any, dev: Any, budget_s: float, target_s: float, clock: Callable[[], float] = time.perf_counter
    ) -> None:
        self.torch, self.dev, self.target, self.clock = torch, dev, target_s, clock
        self.deadline = time.perf_counter() + budget_s
        self.launch = 0.0  # per-kernel fixed cost, once measured: the model adds it to each kernel's work

    def work(self, seconds: float, kernels: int = 1) -> float:
        """Seconds of ``kernels`` kernels less their fixed costs (at least half of them: the work)."""
        return max(seconds - kernels * self.launch, 0.5 * seconds)

    def _sync(self) -> None:
        if self.dev.type == "cuda":
            self.torch.cuda.synchronize(self.dev)

    def seconds(self, fn: Callable[[], object], remaining_items: int = 1) -> float:
        """Seconds of one ``fn()`` call: the median of three windows of repeated calls (robust to a preemption)."""
        left = max(0.0, self.deadline - time.perf_counter())
        target = min(self.target, left / max(1, remaining_items) / 2.0) / 3.0
        fn()  # warm-up (and the first-call costs: plans, allocations)
        self._sync()
        reps = 1
        while True:
            per_call = self._window(fn, reps)
            if per_call * reps >= target or reps >= 1 << 16:
                break
            reps = min(1 << 16, max(reps * 2, int(1.2 * target / max(per_call, 1e-9))))
        return sorted([per_call, self._window(fn, reps), self._window(fn, reps)])[1]

    def _window(self, fn: Callable[[], object], reps: int) -> float:
        start = self.clock()
        for _ in range(reps):
            fn()
        self._sync()
        return (self.clock() - start) / reps


def _plan(device: str, quick: bool, dtypes: list[str]) -> dict[str, Any]:
    """Shapes of the benchmarks (bounded memory: about 2 GB on a GPU, 0.2 GB on a CPU)."""
    if device == "cuda":
        sizes = [256, 512, 1024, 2048, 4096, 8192, 16384]  # powers of two: a model's shapes lie between two
        if not quick:
            sizes = [128, *sizes]
        return {
            "gemm": {dt: sizes if dt != "fp32" else [256, 1024, 4096, 8192] for dt in dtypes},  # fp32: slow
            "attention": ([64, 128], [512, 1024, 2048, 4096, 8192])
            if quick
            else ([64, 128, 256], [512, 1024, 2048, 4096, 8192, 16384]),
            "tokens": 1 << 18,  # batch x heads x sequence of the attention benchmark
            "stream_elements": 1 << 27,
            "target_s": 0.01 if quick else 0.025,
        }
    sizes = [128, 512, 2048] if quick else [64, 256, 1024, 2048]
    return {
        "gemm": {dt: sizes for dt in dtypes},
        "attention": ([64], [256, 512, 1024]) if quick else ([64, 128], [256, 512, 1024, 2048]),
        "tokens": 1 << 14,
        "stream_elements": 1 << 22,
        "target_s": 0.05 if quick else 0.2,
    }


_TORCH_DTYPES = {"fp32": "float32", "tf32": "float32", "bf16": "bfloat16", "fp16": "float16", "fp8": "float8_e4m3fn"}


def _gemm_fn(torch: Any, dev: Any, dtype: str, m: int, n: int, k: int) -> Callable[[], object]:
    if dtype == "fp8":
        a = torch.randn(m, k, device=dev).to(torch.float8_e4m3fn)
        b = torch.randn(n, k, device=dev).to(torch.float8_e4m3fn).t()  # column-major, as _scaled_mm needs
        one = torch.ones((), device=dev)
        return lambda: torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
    tdt = getattr(torch, _TORCH_DTYPES[dtype])
    a = torch.randn(m, k, device=dev, dtype=tdt)
    b = torch.randn(k, n, device=dev, dtype=tdt)
    out = torch.empty(m, n, device=dev, dtype=tdt)
    return lambda: torch.mm(a, b, out=out)


def _fp8_available(torch: Any, dev: Any) -> bool:
    if dev.type != "cuda" or not hasattr(torch, "float8_e4m3fn"):
        return False
    return bool(torch.cuda.get_device_capability(dev) >= (8, 9))


def _measure_gemms(torch: Any, dev: Any, plan: dict, timer: Timer, progress: Progress) -> list[GemmRate]:
    rows = []
    jobs = [(dt, m, n, k) for dt, sizes in plan["gemm"].items() for m in sizes for n in sizes for k in sizes]
    for i, (dt, m, n, k) in enumerate(jobs):
        torch.backends.cuda.matmul.allow_tf32 = dt == "tf32"
        fn = _gemm_fn(torch, dev, dt, m, n, k)
        seconds = timer.seconds(fn, len(jobs) - i + 20)
        rows.append(GemmRate(dt, m, n, k, 2.0 * m * n * k / timer.work(seconds)))
        progress.step(f"gemm {dt} {m}x{n}x{k}")
        del fn
    torch.backends.cuda.matmul.allow_tf32 = False
    return rows


def _attention_rate(torch: Any, dev: Any, tdt: Any, d: int, s: int, heads: int, timer: Timer) -> tuple[float, float]:
    """(forward, backward) FLOP/s of causal SDPA on ``heads`` heads of length ``s`` and dimension ``d``."""
    sdpa = torch.nn.functional.scaled_dot_product_attention
    q, k, v = (torch.randn(1, heads, s, d, device=dev, dtype=tdt, requires_grad=True) for _ in range(3))
    grad = torch.randn(1, heads, s, d, device=dev, dtype=tdt)

    def fwd() -> object:
        with torch.no_grad():
            return sdpa(q, k, v, is_causal=True)

    def fwd_bwd() -> object:
        sdpa(q, k, v, is_causal=True).backward(grad)
        q.grad = k.grad = v.grad = None
        return None

    t_fwd = timer.seconds(fwd, 20)
    t_bwd = max(timer.seconds(fwd_bwd, 20) - t_fwd, 1e-3 * t_fwd)
    flops = 2.0 * heads * s * s * d  # causal: half of 4 s^2 d
    return flops / timer.work(t_fwd), 2.5 * flops / timer.work(t_bwd)


def _measure_attention(
    torch: Any, dev: Any, dtype: str, plan: dict, timer: Timer, progress: Progress
) -> list[AttentionRate]:
    tdt = getattr(torch, _TORCH_DTYPES["bf16" if dtype == "fp8" else dtype])
    rows = []
    head_dims, seqs = plan["attention"]
    for d in head_dims:
        for s in seqs:
            fwd, bwd = _attention_rate(torch, dev, tdt, d, s, max(1, plan["tokens"] // s), timer)
            rows.append(AttentionRate(dtype, d, s, fwd, bwd))
            progress.step(f"attention {dtype} d={d} s={s}")
    return rows


def _measure_streaming(
    torch: Any, dev: Any, dtype: str, plan: dict, timer: Timer, progress: Progress
) -> tuple[tuple[str, float], ...]:
    tdt = getattr(torch, _TORCH_DTYPES["bf16" if dtype == "fp8" else dtype])
    n = plan["stream_elements"]
    e = torch.finfo(tdt).bits // 8
    hidden = 4096 if dev.type == "cuda" else 512
    a = torch.randn(n // hidden, hidden, device=dev, dtype=tdt)
    b, out = torch.randn_like(a), torch.empty_like(a)
    w = torch.ones(hidden, device=dev, dtype=tdt)
    kernels = {
        "copy": (lambda: out.copy_(a), 2 * n * e),
        "norm": (lambda: torch.nn.functional.rms_norm(a, (hidden,), w, 1e-5), 2 * n * e),
        "elementwise": (lambda: torch.add(a, b, out=out), 3 * n * e),
    }
    rates = []
    for name, (fn, nbytes) in kernels.items():
        rates.append((name, nbytes / timer.work(timer.seconds(fn, 10))))
        progress.step(f"streaming {name}")
    return tuple(rates)


def _measure_launch(torch: Any, dev: Any, timer: Timer, progress: Progress) -> float:
    x = torch.zeros(1, device=dev)

    def hundred() -> None:
        for _ in range(100):
            x.add_(1.0)

    timer.launch = timer.seconds(hundred, 5) / 100
    progress.step("launch")
    return timer.launch


def _measure_collectives(torch: Any, dev: Any, timer: Timer, progress: Progress) -> list[CollectiveTime]:
    """Collectives over the ``torchrun`` world (NCCL); [] when there is one process."""
    import torch.distributed as dist  # noqa: PLC0415

    if not dist.is_initialized():
        return []
    world, rank = dist.get_world_size(), dist.get_rank()
    rows = []
    for nbytes in (1 << 16, 1 << 20, 1 << 24, 1 << 28):
        n = nbytes // 2
        x = torch.ones(n, device=dev, dtype=torch.bfloat16)
        gathered = torch.empty(n * world, device=dev, dtype=torch.bfloat16)
        shard = torch.empty(max(1, n // world), device=dev, dtype=torch.bfloat16)
        ops: dict[str, Callable[[], object]] = {
            "all_reduce": lambda: dist.all_reduce(x),  # noqa: B023 - used inside this iteration only
            "all_gather": lambda: dist.all_gather_into_tensor(gathered, x),  # noqa: B023
            "reduce_scatter": lambda: dist.reduce_scatter_tensor(shard, x[: shard.numel() * world]),  # noqa: B023
        }
        if world >= 2:
            ops["p2p"] = lambda: (dist.send(x, 1) if rank == 0 else dist.recv(x, 0)) if rank < 2 else None  # noqa: B023
        for op, fn in ops.items():
            dist.barrier()
            rows.append(CollectiveTime(op, world if op != "p2p" else 2, float(nbytes), timer.seconds(fn, 10)))
            progress.step(f"{op} {nbytes >> 10} KiB")
    return rows


def _device_facts(torch: Any, dev: Any) -> tuple[str, float, tuple[tuple[str, str], ...]]:
    versions = {
        "torch": torch.__version__,
        "python": platform.python_version(),
        "threads": str(torch.get_num_threads()),
    }
    if dev.type == "cuda":
        props = torch.cuda.get_device_properties(dev)
        versions["cuda"] = str(torch.version.cuda)
        versions["cudnn"] = str(torch.backends.cudnn.version())
        versions["capability"] = ".".join(map(str, torch.cuda.get_device_capability(dev)))
        versions["driver"] = _nvidia_driver()
        return str(props.name), float(props.total_memory), tuple(versions.items())
    return _cpu_name(), _host_memory(), tuple(versions.items())


def _nvidia_driver() -> str:
    """The NVIDIA driver's version: NVML where installed, else the kernel module's file, else unknown."""
    try:
        import pynvml  # noqa: PLC0415 - optional (nvidia-ml-py)

        pynvml.nvmlInit()
        version = pynvml.nvmlSystemGetDriverVersion()
        return str(version.decode() if isinstance(version, bytes) else version)[:200]
    except Exception:  # noqa: BLE001 - absent or unusable NVML: the next source
        pass
    try:
        with open("/proc/driver/nvidia/version", encoding="utf-8") as handle:
            return handle.readline().strip()[:200]
    except OSError:
        return "unknown"


def _cpu_name() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()[:200]
    except OSError:
        pass
    return (platform.processor() or platform.machine() or "cpu")[:200]


def _host_memory() -> float:
    try:
        return float(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):
        return 8e9


def calibrate(
    device: str = "cpu", dtypes: list[str] | None = None, quick: bool = False, budget_s: float | None = None,
    stream: Any = None, cpu_time: bool = False,
) -> DeviceProfile:  # fmt: skip
    """Run the microbenchmarks on ``device`` (``"cpu"`` or ``"cuda"``) and return the profile.

    Parameters
    ----------
    device : str
        ``"cuda"`` (the current GPU) or ``"cpu"``.
    dtypes : list of str or None
        GEMM data types (default: bf16, fp16, fp32, tf32 and fp8 where available on a GPU; fp32 on a CPU).
    quick : bool
        Fewer shapes and shorter timings (about 30 s on a GPU, 10 s on a CPU).
    budget_s : float or None
        Upper bound of the benchmarks' time (default 110 s, 30 s with ``quick``).
    stream : file-like or None
        Where the progress bar goes (default stderr).
    cpu_time : bool
        On a CPU, time by the process's CPU time on one thread (:data:`CPU_CLOCK`), so that other processes
        of a shared host do not count; ``measure`` with this profile times the same way.
    """
    torch = import_torch()
    dev = torch_device(torch, device)
    if cpu_time and dev.type != "cpu":
        raise PlacementError("--cpu-time applies to --device cpu only")
    threads = torch.get_num_threads()
    if cpu_time:
        torch.set_num_threads(1)
    try:
        return _run(torch, dev, dtypes, quick, budget_s, stream, cpu_time)
    finally:
        torch.set_num_threads(threads)


def _run(
    torch: Any, dev: Any, dtypes: list[str] | None, quick: bool, budget_s: float | None, stream: Any, cpu_time: bool
) -> DeviceProfile:
    """The benchmarks of :func:`calibrate`, in order."""
    if dtypes is None:
        dtypes = ["bf16", "fp16", "tf32", "fp32"] if dev.type == "cuda" else ["fp32"]
        if _fp8_available(torch, dev):
            dtypes.append("fp8")
    elif "fp8" in dtypes and not _fp8_available(torch, dev):
        raise PlacementError(f"--dtypes fp8: not available on this device ({dev.type})")
    plan = _plan(dev.type, quick, dtypes)
    budget = budget_s if budget_s is not None else (30.0 if quick else 110.0)
    timer = Timer(torch, dev, budget, plan["target_s"], time.process_time if cpu_time else time.perf_counter)
    main_dtype = dtypes[0]
    head_dims, seqs = plan["attention"]
    total = sum(len(s) ** 3 for s in plan["gemm"].values()) + len(head_dims) * len(seqs) + 4
    progress = Progress(total, stream)
    launch = _measure_launch(torch, dev, timer, progress)  # first: the rates below are net of it
    gemm = _measure_gemms(torch, dev, plan, timer, progress)
    attention = _measure_attention(torch, dev, main_dtype, plan, timer, progress)
    streaming = _measure_streaming(torch, dev, main_dtype, plan, timer, progress)
    collectives = _measure_collectives(torch, dev, timer, progress)
    name, memory, versions = _device_facts(torch, dev)
    versions += (("clock", CPU_CLOCK if cpu_time else "wall"),)
    date = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    return DeviceProfile(name, dev.type, memory, versions, date, launch, tuple(gemm), tuple(attention), streaming,
                         tuple(collectives))  # fmt: skip


def summary_lines(profile: DeviceProfile) -> list[str]:
    """A short text summary of a profile (what ``calibrate`` prints)."""
    lines = [f"device {profile.name} ({profile.kind}, {profile.memory_bytes / 2**30:.1f} GiB), {profile.date}"]
    lines.append("versions " + ", ".join(f"{k} {v}" for k, v in profile.versions))
    for dt in profile.dtypes():
        lines.append(
            f"gemm {dt}: best {profile.peak_flops(dt) / 1e12:.3g} TFLOP/s over {sum(g.dtype == dt for g in profile.gemm)} shapes"
        )
    best = max(profile.attention, key=lambda a: a.fwd_flops_per_s)
    lines.append(
        f"attention {best.dtype}: best forward {best.fwd_flops_per_s / 1e12:.3g} TFLOP/s, backward "
        f"{max(a.bwd_flops_per_s for a in profile.attention) / 1e12:.3g} TFLOP/s (d={best.head_dim}, s={best.seq})"
    )
    lines.append("streaming " + ", ".join(f"{k} {v / 1e9:.3g} GB/s" for k, v in profile.streaming))
    lines.append(f"launch {profile.launch_seconds * 1e6:.3g} us per kernel")
    if profile.collectives:
        big = [c for c in profile.collectives if c.nbytes == max(x.nbytes for x in profile.collectives)]
        lines.append("collectives " + ", ".join(f"{c.op} {c.nbytes / c.seconds / 1e9:.3g} GB/s" for c in big))
    return lines


def register(commands: Any) -> None:
    """Add the ``calibrate`` subcommand."""
    cmd = commands.add_parser(
        "calibrate",
        help="measure this device's kernel rates with torch and write a profile (JSON)",
        description="Microbenchmarks (GEMMs, fused attention, streaming, launch, collectives under torchrun).",
    )
    cmd.add_argument("--device", choices=("cuda", "cpu"), default=None, help="default: cuda when a GPU is visible")
    cmd.add_argument("--quick", action="store_true", help="fewer shapes, shorter timings")
    cmd.add_argument("--dtypes", default=None, help="comma-separated GEMM data types: fp32,tf32,bf16,fp16,fp8")
    cmd.add_argument("--budget", type=float, default=None, help="upper bound of the benchmarks' seconds")
    cmd.add_argument(
        "--cpu-time", action="store_true", help="CPU only: time by process CPU time on one thread (a shared host)"
    )
    cmd.add_argument("-o", dest="output", metavar="PROFILE", required=True, help="profile file to write")


def cmd_calibrate(args: argparse.Namespace) -> int:
    """Run ``calibrate``; bad input is a one-line :class:`PlacementError`."""
    dtypes = None
    if args.dtypes is not None:
        dtypes = [d.strip().lower() for d in args.dtypes.split(",") if d.strip()]
        bad = [d for d in dtypes if d not in _TORCH_DTYPES]
        if bad or not dtypes:
            raise PlacementError(f"--dtypes {args.dtypes!r}: each must be one of {', '.join(_TORCH_DTYPES)}")
    if args.budget is not None and not (math.isfinite(args.budget) and 1 <= args.budget <= 3600):
        raise PlacementError(f"--budget {args.budget!r}: must be from 1 to 3600 seconds")
    torch = import_torch()
    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    _init_distributed(torch, device)
    try:
        profile = calibrate(device, dtypes, args.quick, args.budget, cpu_time=args.cpu_time)
    except (RuntimeError, torch.cuda.OutOfMemoryError) as exc:  # a kernel the device or build lacks, memory
        if isinstance(exc, PlacementError):
            raise
        raise PlacementError(f"calibrate: torch failed: {torch_message(exc)}") from None
    if int(os.environ.get("RANK", "0")) == 0:
        save_profile(profile, args.output)
        print("\n".join(summary_lines(profile)))
        print(f"profile written to {args.output}")
    return 0


def _init_distributed(torch: Any, device: str) -> None:
    """Under ``torchrun`` with several processes, join the NCCL (GPU) or gloo (CPU) group."""
    if int(os.environ.get("WORLD_SIZE", "1")) <= 1:
        return
    import torch.distributed as dist  # noqa: PLC0415

    if device == "cuda":
        torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
    dist.init_process_group("nccl" if device == "cuda" else "gloo")
