"""Benchmark of the launchable-layout search (placement/perf/search.py), and the calibration-row comparison.

    PYTHONPATH=. python scripts/bench_search.py [--quick | --main] [--calibration-only] [--pareto SECONDS]

Table 1: model, GPUs, space, seconds (one search, wall clock, in-process, after one warm-up search that
imports and computes the calibration band), peak Python memory of the search (tracemalloc), and the plan.
Table 2: every row of sample_graphs/calibration/megatron_a100_2021.json: the published layout's prediction
against the Megatron-space optimum with the same GPUs, global batch and precision, and what differs.
``--main``: only Llama 3 70B on 1,024 H100s (three spaces) and Llama 3 405B on 16,384 H100s. ``--pareto S``: also
time the Pareto front of 70B on 1,024 H100s (four GPU counts) in a child process stopped after S seconds.
"""

from __future__ import annotations

import argparse
import time
import tracemalloc
from dataclasses import replace

from placement.perf.calibration import load_calibration
from placement.perf.hardware import ACCELERATORS, Cluster
from placement.perf.pareto import pareto_front
from placement.perf.plan_cli import describe_layout
from placement.perf.predict import predict
from placement.perf.search import search
from placement.perf.spaces import get_space
from placement.perf.transformer import MODELS

MAIN = [
    ("llama3-70b", "H100", 1024, 1024, 8192, "megatron"),
    ("llama3-70b", "H100", 1024, 1024, 8192, "torchtitan"),
    ("llama3-70b", "H100", 1024, 1024, 8192, "deepspeed"),
    ("llama3-405b", "H100", 16384, 16384, 8192, "megatron"),
    ("llama3-405b", "H100", 16384, 16384, 8192, "torchtitan"),
    ("llama3-405b", "H100", 16384, 16384, 8192, "deepspeed"),
]

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


def bench(quick: bool, main: bool = False) -> None:
    search(MODELS["llama3-8b"], Cluster(ACCELERATORS["H100"], 8), 8)  # warm-up: imports, calibration band
    print("| model | GPUs | space | seconds | peak MiB | shapes | predictions | plan | iteration s | MFU |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name, gpu, gpus, batch, seq, space in MAIN if main else CASES[:3] if quick else CASES:
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


_KNOBS = (("tensor", "t"), ("pipeline", "p"), ("data", "d"), ("context", "cp"), ("virtual_stages", "v"),
          ("micro_batch", "b"), ("sequence_parallel", "SP"), ("zero_stage", "ZeRO"), ("recompute", "recompute"),
          ("recompute_method", "recompute method"), ("recompute_layers", "recompute layers"),
          ("first_stage_layers", "first"), ("last_stage_layers", "last"), ("attention", "attention"),
          ("overlap_grad_reduce", "overlap grad reduce"), ("overlap_param_gather", "overlap param gather"),
          ("tp_async_backward", "async TP backward"))  # fmt: skip


def why(published, optimum) -> str:  # noqa: ANN001
    """The knobs that differ and the model's time terms that move most (seconds, optimum minus published)."""
    a, b = published.layout, optimum.layout
    knobs = [f"{name} {getattr(a, f)}->{getattr(b, f)}" for f, name in _KNOBS if getattr(a, f) != getattr(b, f)]
    ta, tb = published.prediction.time.as_dict(), optimum.prediction.time.as_dict()
    deltas = sorted(((tb[k] - ta[k], k) for k in ta if k != "total"), key=lambda x: abs(x[0]), reverse=True)
    terms = [f"{k} {d:+.3f}" for d, k in deltas[:3] if abs(d) >= 5e-4]
    if not knobs:
        return "same layout"
    return "; ".join(knobs) + " | " + ", ".join(terms)


def calibration() -> None:
    from placement.perf.search import Plan

    print()
    for space in ("megatron-2021", "megatron"):
        print(f"\nspace {space}: the published layout (predicted) against the space's optimum, same GPUs, batch, fp16")
        print(
            "| row | published layout | published s (model) | optimum s | speed-up | optimum layout | search s | why |"
        )
        print("|---|---|---|---|---|---|---|---|")
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
                    f"| {row.label} | {published} | {pub.iteration_seconds:.3f} | infeasible | - | - | {seconds:.2f} | - |"
                )
                continue
            reason = why(Plan(lay, pub, row.cluster.gpus), plan)
            print(
                f"| {row.label} | {published} | {pub.iteration_seconds:.3f} | {plan.iteration_seconds:.3f} "
                f"| {pub.iteration_seconds / plan.iteration_seconds:.2f}x | {describe_layout(plan)} | {seconds:.2f} "
                f"| {reason} |"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="the first three cases only")
    parser.add_argument("--main", action="store_true", help="70B @ 1,024 and 405B @ 16,384 only, no calibration")
    parser.add_argument("--calibration-only", action="store_true")
    parser.add_argument("--pareto", type=float, default=None, help="time the 70B @ 1,024 Pareto front (limit, s)")
    args = parser.parse_args()
    if not args.calibration_only:
        bench(args.quick, args.main)
    if args.pareto is not None:
        pareto(args.pareto)
    if not args.main:
        calibration()


def _front(queue, uneven: bool) -> None:  # noqa: ANN001
    model = MODELS["llama3-70b"].with_changes(seq_length=8192)
    space = replace(get_space("megatron"), uneven=uneven)
    start = time.perf_counter()
    front = pareto_front(model, Cluster(ACCELERATORS["H100"], 1024, 8), 1024, space)
    queue.put((time.perf_counter() - start, len(front)))


def pareto(limit: float) -> None:
    """The Pareto front of 70B on 1,024 H100s (GPU counts 128..1,024), layers split evenly only and with
    uneven first/last ranks, each in a child process stopped after ``limit`` seconds."""
    import multiprocessing

    print("\n| Pareto front, llama3-70b s=8192, H100 x 128/256/512/1024, global batch 1024 | plans | seconds |")
    print("|---|---|---|")
    for uneven in (False, True):
        label = "megatron, uneven first/last splits" if uneven else "megatron, even splits only"
        queue: multiprocessing.Queue = multiprocessing.Queue()
        child = multiprocessing.Process(target=_front, args=(queue, uneven))
        child.start()
        child.join(limit)
        if child.is_alive():
            child.terminate()
            child.join()
            print(f"| {label} | - | not finished in {limit:.0f} |")
            continue
        seconds, size = queue.get()
        print(f"| {label} | {size} | {seconds:.1f} |")


if __name__ == "__main__":
    main()
