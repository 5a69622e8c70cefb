"""Benchmark of the launchable-layout search (placement/perf/search.py), and the calibration-row comparison.

    PYTHONPATH=. python scripts/bench_search.py [--quick | --main] [--calibration-only] [--pareto SECONDS]
    PYTHONPATH=. python scripts/bench_search.py --compare-with DIR      # before/after, side by side
    PYTHONPATH=. python scripts/bench_search.py --scaling               # 70B at 1,024 / 4,096 / 16,384 GPUs

Table 1: model, GPUs, space, seconds (one search, wall clock, in-process, after one warm-up search that
imports and computes the calibration band), peak Python memory of the search (tracemalloc), and the plan.
Table 2: every row of sample_graphs/calibration/megatron_a100_2021.json: the published layout's prediction
against the Megatron-space optimum with the same GPUs, global batch and precision, and what differs.
``--main``: only Llama 3 70B on 1,024 H100s (three spaces) and Llama 3 405B on 16,384 H100s. ``--pareto S``: also
time the Pareto front of 70B on 1,024 H100s (four GPU counts) in a child process stopped after S seconds.
``--compare-with DIR``: every case searched by the package in DIR (e.g. an export of main: ``git archive main |
tar -x -C DIR``) and by this one, alternately, each in a fresh child process (warm-up, then the median of three
searches, wall and CPU seconds), in one table with the load average; then the best free split of named shapes against their
first/last split; with ``--pareto S`` also the 70B Pareto fronts by both (wall and CPU seconds, a hash of the front).
"""

from __future__ import annotations

import argparse
import time
import tracemalloc
from dataclasses import replace

from placement.perf.calibration import load_calibration
from placement.perf.hardware import ACCELERATORS, Cluster
from placement.perf.layout import stage_layers
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


_CHILD = """
import json, sys, time
from placement.perf.hardware import ACCELERATORS, Cluster
from placement.perf.plan_cli import describe_layout
from placement.perf.search import search
from placement.perf.transformer import MODELS
name, gpu, gpus, batch, seq, space = json.loads(sys.argv[1])
search(MODELS["llama3-8b"], Cluster(ACCELERATORS["H100"], 8), 8)
model = MODELS[name].with_changes(seq_length=seq)
cluster = Cluster(ACCELERATORS[gpu], gpus, 8)
times, cpus = [], []
for _ in range(3):
    start, cpu = time.perf_counter(), time.process_time()
    result = search(model, cluster, batch, space)
    times.append(time.perf_counter() - start)
    cpus.append(time.process_time() - cpu)
plan = result.plan
print(json.dumps({"seconds": sorted(times)[1], "cpu": sorted(cpus)[1], "plan": describe_layout(plan) if plan else "infeasible",
                  "iteration": plan.iteration_seconds if plan else None}))
"""


_SCALING_CHILD = """
import json, resource, sys, time, tracemalloc
from placement.perf.hardware import ACCELERATORS, Cluster
from placement.perf.plan_cli import describe_layout
from placement.perf.search import search
from placement.perf.transformer import MODELS
gpus = int(sys.argv[1])
search(MODELS["llama3-8b"], Cluster(ACCELERATORS["H100"], 8), 8)
model = MODELS["llama3-70b"].with_changes(seq_length=8192)
cluster = Cluster(ACCELERATORS["H100"], gpus, 8)
times, cpus = [], []
for _ in range(3):
    start, cpu = time.perf_counter(), time.process_time()
    result = search(model, cluster, gpus, "megatron")
    times.append(time.perf_counter() - start)
    cpus.append(time.process_time() - cpu)
tracemalloc.start()
search(model, cluster, gpus, "megatron")
peak = tracemalloc.get_traced_memory()[1]
tracemalloc.stop()
plan = result.plan
print(json.dumps({"seconds": sorted(times)[1], "cpu": sorted(cpus)[1], "peak": peak,
                  "rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, "shapes": result.stats.shapes,
                  "predictions": result.stats.predictions, "plan": describe_layout(plan) if plan else "infeasible",
                  "iteration": plan.iteration_seconds if plan else None}))
"""


def scaling() -> None:
    """The Megatron-space search for Llama 3 70B (s = 8192, global batch = GPUs) at 1,024, 4,096 and 16,384 H100s,
    each in a fresh child process: median of three searches (wall, CPU), the peak Python memory of a fourth
    (tracemalloc) and the child's peak resident set (imports included)."""
    import json
    import os
    import subprocess
    import sys

    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print("| GPUs | global batch | seconds (CPU s) | peak Python MiB | process peak RSS MiB | shapes | predictions "
          "| plan | iteration s |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|")
    for gpus in (1024, 4096, 16384):
        done = subprocess.run([sys.executable, "-c", _SCALING_CHILD, str(gpus)], capture_output=True, text=True,
                              check=True, env={**os.environ, "PYTHONPATH": os.getcwd()})  # fmt: skip
        r = json.loads(done.stdout.strip().splitlines()[-1])
        print(f"| {gpus:,} | {gpus:,} | {r['seconds']:.3f} ({r['cpu']:.3f}) | {r['peak'] / 2**20:.1f} "
              f"| {r['rss'] / 1024:.0f} | {r['shapes']:,} | {r['predictions']:,} | {r['plan']} "
              f"| {r['iteration']:.3f} |")  # fmt: skip
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


def compare(before: str) -> None:
    """Each case searched by the package in ``before`` and by this one (child processes, alternately)."""
    import json
    import os
    import subprocess
    import sys

    print(f"load average before: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f}")
    print(
        "| model | GPUs | space | before s (CPU s) | after s (CPU s) | before plan | after plan | iteration s before / after |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for case in CASES:
        out = {}
        for label, path in (("before", before), ("after", os.getcwd())):
            env = {**os.environ, "PYTHONPATH": path}
            done = subprocess.run([sys.executable, "-c", _CHILD, json.dumps(case)], env=env, capture_output=True,
                                  text=True, check=True, cwd=path)  # fmt: skip
            out[label] = json.loads(done.stdout.strip().splitlines()[-1])
        b, a = out["before"], out["after"]
        same = "same" if a["plan"] == b["plan"] else a["plan"]
        it = f"{b['iteration']:.3f} / {a['iteration']:.3f}" if a["iteration"] and b["iteration"] else "-"
        name, gpu, gpus, _, seq, space = case
        print(f"| {name} s={seq} | {gpus} {gpu} | {space} | {b['seconds']:.3f} ({b['cpu']:.3f}) "
              f"| {a['seconds']:.3f} ({a['cpu']:.3f}) | {b['plan']} "
              f"| {same} | {it} |")  # fmt: skip
    print(f"load average after: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f}")
    shapes()


_FRONT_CHILD = """
import hashlib, json, sys, time
from dataclasses import replace
from placement.perf.hardware import ACCELERATORS, Cluster
from placement.perf.pareto import pareto_front
from placement.perf.spaces import get_space
from placement.perf.transformer import MODELS
model = MODELS["llama3-70b"].with_changes(seq_length=8192)
space = replace(get_space("megatron"), uneven=json.loads(sys.argv[1]))
wall, cpu = time.perf_counter(), time.process_time()
front = pareto_front(model, Cluster(ACCELERATORS["H100"], 1024, 8), 1024, space)
wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
key = repr([(p.iteration_seconds, p.memory_bytes, p.gpus,
             sorted((k, str(v)) for k, v in vars(p.layout).items() if k != "pipeline_layers")) for p in front])
print(json.dumps({"wall": wall, "cpu": cpu, "plans": len(front), "hash": hashlib.sha1(key.encode()).hexdigest()[:12]}))
"""


def pareto_compare(before: str, rounds: int = 2) -> None:
    """The 70B @ 1,024 front (even, then uneven splits) by the package in ``before`` and by this one, alternately."""
    import json
    import os
    import subprocess
    import sys

    print(f"\nload average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print("| Pareto front, llama3-70b s=8192, H100 x 128..1024 | code | wall s | CPU s | plans | hash |")
    print("|---|---|---|---|---|---|")
    for _ in range(rounds):
        for uneven in (False, True):
            for label, path in (("before", before), ("after", os.getcwd())):
                env = {**os.environ, "PYTHONPATH": path}
                done = subprocess.run([sys.executable, "-c", _FRONT_CHILD, json.dumps(uneven)], env=env,
                                      capture_output=True, text=True, check=True, cwd=path)  # fmt: skip
                r = json.loads(done.stdout.strip().splitlines()[-1])
                splits = "uneven splits (first/last, and free where the code has them)" if uneven else "even splits"
                print(f"| {splits} | {label} | {r['wall']:.1f} | {r['cpu']:.1f} | {r['plans']} | {r['hash']} |")
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


#: Named shapes whose best free split is compared with their first/last split (405B on 16,384 H100s, s = 8192).
SHAPES = [
    ("llama3-405b", "H100", 16384, 16384, 8192,
     dict(tensor=4, pipeline=16, data=64, context=4, sequence_parallel=True, zero_stage=1, first_stage_layers=7,
          last_stage_layers=7)),
    ("llama3-405b", "H100", 16384, 16384, 8192,
     dict(tensor=4, pipeline=32, data=32, context=4, virtual_stages=2, sequence_parallel=True, zero_stage=1,
          first_stage_layers=4, last_stage_layers=2)),
]  # fmt: skip


def shapes() -> None:
    """The best free split of each named shape (recompute none, selective, full) against its first/last split."""
    from placement.perf.free_split import best_free_split, free_template
    from placement.perf.layout import Layout, Recompute
    from placement.perf.params import DEFAULT_PARAMS

    print("\n| shape | first/last split s (GiB) | best free split (recompute) | s (GiB) |")
    print("|---|---|---|---|")
    for name, gpu, gpus, batch, seq, knobs in SHAPES:
        model = MODELS[name].with_changes(seq_length=seq)
        cluster = Cluster(ACCELERATORS[gpu], gpus, 8)
        lay = Layout(global_batch=batch, overlap_grad_reduce=True, overlap_param_gather=True, **knobs)
        ref = predict(model, cluster, lay)
        best = None
        for mode in (Recompute.NONE, Recompute.SELECTIVE, Recompute.FULL):
            for free in best_free_split(model, cluster, free_template(lay, mode), DEFAULT_PARAMS,
                                        cluster.accelerator.memory_bytes):  # fmt: skip
                pred = predict(model, cluster, free)
                if best is None or pred.iteration_seconds < best[1].iteration_seconds:
                    best = (free, pred)
        text, sec = "none fits", "-"
        if best is not None:
            counts = "/".join(str(n) for n in stage_layers(model, best[0]))
            text = f"{counts} ({best[0].recompute})"
            sec = f"{best[1].iteration_seconds:.3f} ({best[1].memory.total / 2**30:.1f})"
        fits = "" if ref.fits else ", does not fit"
        print(f"| {name} {describe_layout(lay)} | {ref.iteration_seconds:.3f} ({ref.memory.total / 2**30:.1f}{fits}) "
              f"| {text} | {sec} |")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="the first three cases only")
    parser.add_argument("--main", action="store_true", help="70B @ 1,024 and 405B @ 16,384 only, no calibration")
    parser.add_argument("--calibration-only", action="store_true")
    parser.add_argument("--pareto", type=float, default=None, help="time the 70B @ 1,024 Pareto front (limit, s)")
    parser.add_argument("--compare-with", default=None, help="a directory holding the package before (e.g. main)")
    parser.add_argument("--scaling", action="store_true", help="70B, Megatron space, at 1,024 / 4,096 / 16,384 GPUs")
    args = parser.parse_args()
    if args.scaling:
        scaling()
        return
    if args.compare_with:
        compare(args.compare_with)
        if args.pareto is not None:
            pareto_compare(args.compare_with)
        return
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
        label = "megatron, uneven splits (first/last and free)" if uneven else "megatron, even splits only"
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
