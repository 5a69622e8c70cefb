"""Benchmark of the exact multidimensional planner on Piper's workloads.

Each case runs in a fresh subprocess; "seconds" is the in-process solve time (reading the file and
importing excluded), "peak MiB" the process's maximum resident set. The plan is re-checked by the
independent evaluator ("evaluated"); "Piper" is Piper's own time per sample where its README states
one (n/a: not published with the workloads). "CPU s" is the process CPU time of the solve (less
sensitive than wall-clock seconds to other work on a shared machine; numpy here is single-threaded).
The load average of the machine is printed before and after. Usage::

    python -m scripts.bench_multidim [--cases bert-own,bert-512,resnet-own,gnmt-own] [--timeout 600]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

GiB = 2**30
#: Piper's own figure per case, where its README states one (only BERT-32 on 512 devices).
PIPER = {"bert-512": "~2.56"}  # ms (its README: about 0.00256 s)
CASES = {
    "bert-own": ("bert32a100.json", {}),
    "bert-512": ("bert32a100.json", {"count": 512, "memory": 8 * GiB, "bandwidth": 25 * GiB, "N": 1920}),
    "resnet-own": ("resnet.json", {}),
    "gnmt-own": ("gnmt.json", {}),
}


def run_case(name: str) -> dict:
    import resource
    from dataclasses import replace
    from pathlib import Path

    from placement.multidim.dp import solve_multidim
    from placement.multidim.evaluate import evaluate_plan
    from placement.multidim.io import read_piper

    file, changes = CASES[name]
    problem = read_piper(Path(__file__).resolve().parent.parent / "sample_graphs" / "piper" / file)
    kind = problem.kinds[0]
    if changes:
        kind = replace(kind, count=changes["count"], memory=changes["memory"], bandwidth=changes["bandwidth"])
        problem = replace(problem, kinds=(kind,), microbatches=changes["N"])
    import time

    cpu = time.process_time()
    result = solve_multidim(problem)
    cpu = time.process_time() - cpu
    ev = evaluate_plan(problem, result.plan) if result.plan else None
    return {
        "case": name,
        "nodes": len(problem.nodes),
        "devices": kind.count,
        "N": problem.microbatches,
        "status": result.status,
        "tps": result.time_per_sample,
        "evaluated": ev.time_per_sample if ev else None,
        "feasible": bool(ev and ev.feasible),
        "stages": len(result.plan.stages) if result.plan else 0,
        "ideals": result.ideals,
        "probes": result.probes,
        "seconds": result.seconds,
        "cpu": cpu,
        "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--timeout", type=float, default=600)
    parser.add_argument("--one", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(run_case(args.one)))
        return
    import os

    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())} ({os.cpu_count()} cores)")
    print(
        f"{'case':<11} {'nodes':>5} {'devices':>7} {'N':>5} {'status':>9} {'TPS (ms)':>12} {'evaluated':>12} "
        f"{'Piper':>9} {'stages':>6} {'ideals':>7} {'probes':>6} {'seconds':>8} {'CPU s':>6} {'peak MiB':>9}"
    )
    for name in args.cases.split(","):
        try:
            out = subprocess.run(
                [sys.executable, "-m", "scripts.bench_multidim", "--one", name],
                capture_output=True,
                text=True,
                timeout=args.timeout,
            )
            row = json.loads(out.stdout.strip().splitlines()[-1])
        except subprocess.TimeoutExpired:
            print(f"{name:<11} timed out after {args.timeout:.0f} s")
            continue
        except (json.JSONDecodeError, IndexError):
            print(f"{name:<11} failed: {out.stderr.strip().splitlines()[-1] if out.stderr.strip() else '?'}")
            continue
        print(
            f"{row['case']:<11} {row['nodes']:>5} {row['devices']:>7} {row['N']:>5} {row['status']:>9} "
            f"{row['tps']:>12.6g} {row['evaluated'] or float('nan'):>12.6g} {PIPER.get(name, 'n/a'):>9} "
            f"{row['stages']:>6} {row['ideals']:>7} {row['probes']:>6} "
            f"{row['seconds']:>8.2f} {row['cpu']:>6.2f} {row['peak_mib']:>9.0f}"
        )
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
