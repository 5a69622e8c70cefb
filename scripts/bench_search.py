"""Benchmark of the launchable-layout search (placement/perf/search.py), and the calibration-row comparison.

    PYTHONPATH=. python scripts/bench_search.py [--quick] [--calibration-only]

Table 1: model, GPUs, space, seconds (one search, wall clock, in-process, after one warm-up search that
imports and computes the calibration band), peak Python memory of the search (tracemalloc), and the plan.
Table 2: every row of sample_graphs/calibration/megatron_a100_2021.json: the published layout's prediction
against the Megatron-space optimum with the same GPUs, global batch and precision, and what differs.
"""

from __future__ import annotations

import argparse
import time
import tracemalloc

from placement.perf.calibration import load_calibration
from placement.perf.hardware import ACCELERATORS, Cluster
from placement.perf.plan_cli import describe_layout
from placement.perf.predict import predict
from placement.perf.search import search
from placement.perf.transformer import MODELS

CASES = [
    ("llama3-8b", "H100", 64, 256, 8192, "megatron"),
    ("llama3-70b", "H100", 1024, 1024, 8192, "megatron"),
    ("llama3-70b", "H100", 1024, 1024, 8192, "torchtitan"),
    ("llama3-70b", "H100", 1024, 1024, 8192, "deepspeed"),
    ("llama3-70b", "H100", 16384, 16384, 8192, "megatron"),
    ("llama3-405b", "H100", 16384, 16384, 8192, "megatron"),
    ("gpt3-175b", "A100", 1024, 1536, 2048, "megatron"),
    ("mixtral-8x7b", "H100", 256, 1024, 4096, "megatron"),
]


def _measure(model, cluster, batch, space, dtype=None):  # noqa: ANN001, ANN202
    tracemalloc.start()
    start = time.perf_counter()
    result = search(model, cluster, batch, space, dtype=dtype)
    seconds = time.perf_counter() - start
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return result, seconds, peak


def bench(quick: bool) -> None:
    search(MODELS["llama3-8b"], Cluster(ACCELERATORS["H100"], 8), 8)  # warm-up: imports, calibration band
    print("| model | GPUs | space | seconds | peak MiB | shapes | predictions | plan | iteration s | MFU |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name, gpu, gpus, batch, seq, space in CASES[:3] if quick else CASES:
        model = MODELS[name].with_changes(seq_length=seq)
        cluster = Cluster(ACCELERATORS[gpu], gpus, 8)
        # timed without tracemalloc (it slows Python down), peak memory from a second, traced run
        start = time.perf_counter()
        result = search(model, cluster, batch, space)
        seconds = time.perf_counter() - start
        _, _, peak = _measure(model, cluster, batch, space)
        plan = result.plan
        text = describe_layout(plan) if plan else f"infeasible: {result.reason}"
        it = f"{plan.iteration_seconds:.3f}" if plan else "-"
        mfu = f"{plan.prediction.mfu:.1%}" if plan else "-"
        print(
            f"| {name} s={seq} | {gpus} {gpu} | {space} | {seconds:.3f} | {peak / 2**20:.1f} | {result.stats.shapes} "
            f"| {result.stats.predictions} | {text} | {it} | {mfu} |"
        )


def calibration() -> None:
    print()
    for space in ("megatron-2021", "megatron"):
        print(f"\nspace {space}: the published layout (predicted) against the space's optimum, same GPUs, batch, fp16")
        print("| row | published layout | published s (model) | optimum s | speed-up | optimum layout | search s |")
        print("|---|---|---|---|---|---|---|")
        for row in load_calibration():
            pub = predict(row.model, row.cluster, row.layout)
            start = time.perf_counter()
            result = search(row.model, row.cluster, row.layout.global_batch, space, dtype=row.layout.dtype)
            seconds = time.perf_counter() - start
            plan = result.plan
            lay = row.layout
            published = f"t={lay.tensor} p={lay.pipeline} d={lay.data} v={lay.virtual_stages} b={lay.micro_batch}"
            if plan is None:
                print(
                    f"| {row.label} | {published} | {pub.iteration_seconds:.3f} | infeasible | - | - | {seconds:.2f} |"
                )
                continue
            print(
                f"| {row.label} | {published} | {pub.iteration_seconds:.3f} | {plan.iteration_seconds:.3f} "
                f"| {pub.iteration_seconds / plan.iteration_seconds:.2f}x | {describe_layout(plan)} | {seconds:.2f} |"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="the first three cases only")
    parser.add_argument("--calibration-only", action="store_true")
    args = parser.parse_args()
    if not args.calibration_only:
        bench(args.quick)
    calibration()


if __name__ == "__main__":
    main()
