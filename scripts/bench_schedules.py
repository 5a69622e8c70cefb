"""Bubble, makespan and peak memory of every schedule on the shared training workloads (DP plans).

Usage: python scripts/bench_schedules.py [MICROBATCHES ...]   (default 4 8 16)
Prints one table row per (workload, microbatches): bubble fraction of 1F1B and ZB-H1 (and GPipe),
and the peak memory of the fullest device (Adam, optimizer multiplier 2).
"""

from __future__ import annotations

import glob
import sys
import time
from pathlib import Path

from placement import load_problem, solve_dp
from placement.pipeline.memory import memory_profile
from placement.pipeline.schedule import gradients_flow_forward, simulate

ROOT = Path(__file__).resolve().parent.parent
WORKLOADS = sorted(glob.glob("/work/shared/workloads/throughput/*/*training*.json")) or sorted(
    str(p) for p in (ROOT / "sample_graphs" / "throughput").glob("*/*training*.json")
)


def main() -> None:
    counts = [int(a) for a in sys.argv[1:]] or [4, 8, 16]
    header = (
        "workload",
        "stages",
        "M",
        "gpipe",
        "1f1b",
        "zbh1",
        "zbh1 < 1f1b",
        "peak 1f1b GiB",
        "peak zbh1 GiB",
        "grads flow fwd",
        "seconds",
    )
    print(" | ".join(header))
    for path in WORKLOADS:
        problem = load_problem(path)
        placement = solve_dp(problem).placement
        name = "/".join(Path(path).parts[-2:])
        for m in counts:
            started = time.perf_counter()
            runs = {kind: simulate(problem, placement, m, kind) for kind in ("gpipe", "1f1b", "zbh1")}
            peaks = {
                kind: max(d.peak for d in memory_profile(problem, runs[kind], 2.0).devices) / 2**30
                for kind in ("1f1b", "zbh1")
            }
            row = (
                name,
                len(placement.stages),
                m,
                *(f"{runs[k].bubble_fraction:.1%}" for k in ("gpipe", "1f1b", "zbh1")),
                runs["zbh1"].bubble_fraction < runs["1f1b"].bubble_fraction,
                f"{peaks['1f1b']:.3g}",
                f"{peaks['zbh1']:.3g}",
                gradients_flow_forward(problem, placement),
                f"{time.perf_counter() - started:.2f}",
            )
            print(" | ".join(map(str, row)))


if __name__ == "__main__":
    main()
