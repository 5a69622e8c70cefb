"""Single-sample latency on every latency input: ours (``latency-ip``), the paper's greedy and the DP split.

Usage::

    python scripts/bench_latency.py [--time-limit 60] [--only NAME ...] [--workloads DIR] [--no-built]
                                    [--no-throughput-files] [--json OUT]

Inputs: ``<workloads>/latency/*/*.json`` (the paper's latency inputs), the layer and operator graphs
of :func:`bench_methods.built_latency_problems` (ResNet-50 and BERT-6 on 4 accelerators holding 40 %
of the weights each, 8 CPU cores), and the inference graphs of ``<workloads>/throughput/*/`` with
their own devices (GNMT, ResNet-50, BERT-24 layers; BERT-3 and ResNet-50 operators). Each row:
objective (the evaluator's latency), proven bound and gap (``latency-ip`` only), which bound is
active (``critical_path``, ``work``, ``chain`` or ``ip``: the solvers'), the objectives of our program
and the paper's (``model="both"`` runs them one after the other) and which gave the plan
(``ours``, ``paper``; ``start`` when a warm start was better than both), wall-clock seconds, whether
the call ran over ``limit * 1.05`` (``OVER``), and the 1-minute load average after the row (the
machine may be shared: a limit then buys less CPU). ``workloads`` defaults to
``/work/shared/workloads`` when it exists, else ``sample_graphs/``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import time
from pathlib import Path

from bench_methods import SHARED, built_latency_problems

from placement import evaluate, load_problem, solve

REPO = Path(__file__).resolve().parent.parent


def _fmt(value, digits=4):
    if value is None:
        return "-"
    if isinstance(value, float) and not math.isfinite(value):
        return "inf"
    return f"{value:.{digits}f}"


def cases(root: Path, built: bool, throughput_files: bool) -> list[tuple[str, object]]:
    """(name, path or Problem) of every latency input."""
    out: list[tuple[str, object]] = [(str(p.relative_to(root)), p) for p in sorted((root / "latency").glob("*/*.json"))]
    if built:
        out += list(built_latency_problems().items())
    if throughput_files:
        out += [(str(p.relative_to(root)), p) for p in sorted((root / "throughput").glob("*/*inference.json"))]
    return out


def run(problem, method: str, time_limit: float) -> dict:
    """One method's row: objective (latency), status, bound, gap, bound source, seconds."""
    options = {"time_limit": time_limit} if method == "latency-ip" else {}
    started = time.perf_counter()
    result = solve(problem, method, **options)
    seconds = time.perf_counter() - started
    latency = evaluate(problem, result.placement).latency if result.placement is not None else None
    own = method == "latency-ip"
    return {
        "method": "dp split" if method == "dp" else method,
        "objective": latency,
        "status": str(result.status.value) if own else ("feasible" if latency is not None else result.status.value),
        "bound": result.bound if own else None,
        "gap": result.gap if own else None,
        "bound_source": result.stat("bound_source") if own else None,
        "ours_ip": result.stat("ours_objective") if own else None,
        "paper_ip": result.stat("paper_objective") if own else None,
        "from": ("start" if result.stat("from_start") else result.stat("incumbent_model")) if own else None,
        "seconds": seconds,
        "limit": time_limit if own else None,
        "over": own and seconds > time_limit * 1.05,
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--time-limit", type=float, default=60.0, help="seconds for latency-ip (default 60)")
    parser.add_argument("--only", nargs="*", default=None, help="substrings of input names to run")
    parser.add_argument("--workloads", default=None, help="folder with latency/ and throughput/ (default: shared)")
    parser.add_argument("--no-built", action="store_true", help="skip the builders' graphs")
    parser.add_argument("--no-throughput-files", action="store_true", help="skip the throughput inference files")
    parser.add_argument("--json", default=None, help="also write the rows to this JSON file")
    args = parser.parse_args(argv)
    root = Path(args.workloads) if args.workloads else (SHARED if SHARED.is_dir() else REPO / "sample_graphs")
    solve(load_problem(REPO / "sample_graphs/latency/layer/bert24_inference.json"), "dp")  # the kernel's first load
    print(
        f"{'input':42} {'method':14} {'objective':>11} {'status':9} {'bound':>11} {'gap':>7} {'active':>13} "
        f"{'seconds':>8} {'over':>4} {'load':>5} {'ours IP':>11} {'paper IP':>11} {'from':>6}",
        flush=True,
    )
    rows = []
    for name, source in cases(root, not args.no_built, not args.no_throughput_files):
        if args.only and not any(part in name for part in args.only):
            continue
        problem = load_problem(source) if isinstance(source, Path) else source
        for method in ("latency-ip", "greedy-latency", "dp"):
            row = dict(run(problem, method, args.time_limit), input=name)
            row["load"] = os.getloadavg()[0]
            rows.append(row)
            gap = "-" if row["gap"] is None else f"{100 * row['gap']:.2f}%"
            print(
                f"{name:42} {row['method']:14} {_fmt(row['objective']):>11} {row['status']:9} "
                f"{_fmt(row['bound']):>11} {gap:>7} {row['bound_source'] or '-':>13} {row['seconds']:8.2f} "
                f"{'OVER' if row['over'] else '':>4} {row['load']:5.2f} {_fmt(row['ours_ip']):>11} "
                f"{_fmt(row['paper_ip']):>11} {row['from'] or '-':>6}",
                flush=True,
            )
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
