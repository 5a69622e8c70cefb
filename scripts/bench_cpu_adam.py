"""Measure the host Adam step per parameter on this machine's CPU (the ZeRO-Offload term of the performance model).

``placement.perf.params.PerfParams.host_adam_seconds_per_param`` is the seconds per parameter of the Adam
step that DeepSpeed's ZeRO-Offload runs on the host. This script times it on one core (and on every core
this process may use) with DeepSpeed's own ``DeepSpeedCPUAdam`` (built on first use: needs g++ and ninja),
and torch's fused and foreach CPU Adam for comparison, best of five steps of a 20 M parameter tensor::

    python scripts/bench_cpu_adam.py [--params 20000000]

Prints one row per implementation and thread count: ns per parameter. Needs torch (and deepspeed for its row):
``pip install -r requirements-export.txt``.
"""

from __future__ import annotations

import argparse
import os
import platform
import time


def _best_step(optimizer, repeats: int = 5) -> float:
    optimizer.step()  # first step: state allocation (and DeepSpeed's build)
    best = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        optimizer.step()
        best = min(best, time.perf_counter() - started)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--params", type=int, default=20_000_000, help="parameters in the tensor (default 20 M)")
    args = parser.parse_args()
    import torch

    n = args.params
    cores = len(os.sched_getaffinity(0))
    rows = []
    for threads in sorted({1, cores}):
        torch.set_num_threads(threads)
        makers = {
            "torch fused": lambda p: torch.optim.Adam([p], lr=1e-3, fused=True),
            "torch foreach": lambda p: torch.optim.Adam([p], lr=1e-3, foreach=True),
        }
        try:
            from deepspeed.ops.adam import DeepSpeedCPUAdam

            makers["DeepSpeedCPUAdam"] = lambda p: DeepSpeedCPUAdam([p], lr=1e-3)
        except ImportError as exc:
            rows.append(("DeepSpeedCPUAdam", threads, f"not available: {exc}"))
        for name, make in makers.items():
            parameter = torch.nn.Parameter(torch.randn(n))
            parameter.grad = torch.randn(n)
            try:
                seconds = _best_step(make(parameter))
            except Exception as exc:  # a build failure is a row, not a crash
                rows.append((name, threads, f"failed: {type(exc).__name__}: {str(exc)[:80]}"))
                continue
            rows.append((name, threads, f"{seconds / n * 1e9:.3f}"))
    print(f"{'implementation':<18} {'threads':>7}  ns per parameter")
    for name, threads, value in rows:
        print(f"{name:<18} {threads:>7}  {value}")
    load = os.getloadavg()
    print(f"\nmachine: {platform.processor() or platform.machine()}, {cores} cores usable, load average {load[0]:.2f}")


if __name__ == "__main__":
    main()
