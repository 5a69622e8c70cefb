"""Benchmark: the exact DP with three accelerator kinds, and a 30-point sweep.

For each shared layer graph (sample_graphs/throughput/layer/*.json) the inventory becomes
three kinds - 4 "fast" (speed 2, half the file's memory, 4.0/h), 4 "mid" (speed 1, the
file's memory, 2.0/h) and 2 "slow" (speed 0.5, twice the memory, half the link bandwidth,
0.8/h) - plus the file's CPU cores. Each is solved with the DP, the plan checked with the
independent evaluator; then one graph is swept over 30 bandwidth factors (0.1 to 10),
in this process and through a local process pool (cold, then reused), and the numbers
compared.

Usage::

    python scripts/bench_kinds.py [--sweep-graph gnmt_training] [--points 30] [--workers N]
"""

from __future__ import annotations

import argparse
import math
import os
import time
from pathlib import Path

from placement import AcceleratorKind, Devices, Problem, evaluate, is_contiguous, load_problem, solve_dp
from placement.explore.sweep import executor_for, pareto_front, sweep

ROOT = Path(__file__).resolve().parent.parent
LAYER = ROOT / "sample_graphs" / "throughput" / "layer"


def three_kinds(problem: Problem) -> Problem:
    memory = problem.devices.accelerators[0].memory
    kinds = (
        AcceleratorKind("fast", 4, memory / 2, speed=2.0, price_per_hour=4.0),
        AcceleratorKind("mid", 4, memory, speed=1.0, price_per_hour=2.0),
        AcceleratorKind("slow", 2, memory * 2, speed=0.5, bandwidth=0.5, price_per_hour=0.8),
    )
    return Problem(problem.graph, Devices(kinds, cpus=problem.devices.cpus, cpu_price_per_hour=0.1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--sweep-graph", default="gnmt_training", help="a layer graph name, or the path of any graph file"
    )
    parser.add_argument("--points", type=int, default=30)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args()

    print(f"machine: {os.cpu_count()} CPU cores")
    started = time.perf_counter()
    solve_dp(load_problem(LAYER / "bert24_inference.json"))  # load the compiled kernel once
    print(f"first DP call (kernel load/compile): {time.perf_counter() - started:.2f} s\n")

    print(
        f"{'graph':22} {'nodes':>5} {'ideals':>6} {'1 kind':>10} {'3 kinds':>10} {'solve s':>8}  stages by kind, "
        f"price/h"
    )
    for path in sorted(LAYER.glob("*.json")):
        base = load_problem(path)
        problem = three_kinds(base)
        one = solve_dp(base)
        t0 = time.perf_counter()
        result = solve_dp(problem)
        seconds = time.perf_counter() - t0
        check = evaluate(problem, result.placement)
        if not (
            check.feasible
            and math.isclose(check.max_load, result.objective, rel_tol=1e-9)
            and is_contiguous(problem, result.placement)
        ):
            raise SystemExit(f"{path.name}: the evaluator disagrees with the DP")
        used = {}
        for stage in result.placement.stages:
            used[stage.device.kind] = used.get(stage.device.kind, 0) + 1
        prices = {k.name: k.price_per_hour for k in problem.devices.accelerators}
        prices["cpu"] = problem.devices.cpu_price_per_hour
        price = sum(prices[s.device.kind] for s in result.placement.stages)
        print(
            f"{path.stem:22} {len(base.graph.nodes):5d} {result.stat('ideals'):6d} {one.objective:10.4f} "
            f"{result.objective:10.4f} {seconds:8.4f}  {used}, {price:.1f}"
        )

    path = Path(args.sweep_graph)
    if not path.suffix:
        path = LAYER / f"{args.sweep_graph}.json"
    problem = three_kinds(load_problem(path))
    values = [0.1 * 100 ** (k / (args.points - 1)) for k in range(args.points)]
    print(
        f"\nsweep: {path.stem} ({len(problem.graph.nodes)} nodes), 3 kinds, bandwidth factor over {args.points} values "
        f"({values[0]:.2f} to {values[-1]:.2f})"
    )
    t_seq, sequential = math.inf, ()
    for _ in range(2):
        t0 = time.perf_counter()
        points = sweep(problem, "bandwidth", values)
        if time.perf_counter() - t0 < t_seq:
            t_seq, sequential = time.perf_counter() - t0, points
    solve_total = sum(p.result.seconds for p in sequential)
    print(
        f"  sequential, this process (best of 2): {t_seq:7.3f} s  (sum of solve times {solve_total:.3f} s, "
        f"{solve_total / len(values) * 1000:.1f} ms per point)"
    )
    executor = executor_for(None, max_workers=args.workers)
    try:
        t0 = time.perf_counter()
        cold = sweep(problem, "bandwidth", values, executor=executor)
        t_cold = time.perf_counter() - t0
        t_warm = []
        for _ in range(3):
            t0 = time.perf_counter()
            warm = sweep(problem, "bandwidth", values, executor=executor)
            t_warm.append(time.perf_counter() - t0)
    finally:
        executor.shutdown()
    same = all(a.time_per_sample == b.time_per_sample == c.time_per_sample for a, b, c in zip(sequential, cold, warm))
    print(f"  process pool ({args.workers} workers), cold: {t_cold:7.3f} s  (includes starting the workers)")
    print(f"  process pool ({args.workers} workers), reused 3 times: " + ", ".join(f"{t:.3f} s" for t in t_warm))
    print(f"  same numbers in all three runs: {same}")
    first, last = sequential[0], sequential[-1]
    print(
        f"  time per sample: {first.time_per_sample:.4f} at x{first.value:.2f} .. {last.time_per_sample:.4f} at "
        f"x{last.value:.2f}; devices used {first.devices_used} .. {last.devices_used}"
    )
    front = pareto_front(sequential, x="price")
    print(f"  Pareto frontier on price/h: {len(front)} of {len(sequential)} points")
    if not same:
        raise SystemExit("the sweeps disagree")


if __name__ == "__main__":
    main()
