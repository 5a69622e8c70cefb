"""Compare every method on the shared workloads (sample_graphs/): objective, status, gap, seconds.

Usage::

    python scripts/bench_methods.py [--time-limit 60] [--only NAME ...] [--methods M ...] [--json OUT]

Throughput workloads (sample_graphs/throughput/*) run the throughput methods; latency workloads
(sample_graphs/latency/*) the latency methods. Each method gets ``--time-limit`` seconds where it
takes a limit (the IPs, the local search).
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

from placement import load_problem
from placement.compare import DEFAULT_METHODS, compare, rows_to_records

ROOT = Path(__file__).resolve().parent.parent / "sample_graphs"


def _fmt(value, digits=3):
    if value is None:
        return "-"
    if isinstance(value, float) and not math.isfinite(value):
        return "inf"
    return f"{value:.{digits}f}"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--time-limit", type=float, default=60.0, help="seconds per method (default 60)")
    parser.add_argument("--only", nargs="*", default=None, help="substrings of workload paths to run")
    parser.add_argument("--methods", nargs="*", default=None, help="methods to run (default: all for the objective)")
    parser.add_argument("--json", default=None, help="also write the rows to this JSON file")
    args = parser.parse_args(argv)
    out = []
    print(f"{'workload':42} {'method':17} {'objective':>10} {'ratio':>6} {'status':11} {'gap':>8} {'seconds':>8}")
    for objective, folder in (("throughput", "throughput"), ("latency", "latency")):
        for path in sorted((ROOT / folder).glob("*/*.json")):
            name = str(path.relative_to(ROOT))
            if args.only and not any(part in name for part in args.only):
                continue
            problem = load_problem(path)
            methods = [m for m in (args.methods or DEFAULT_METHODS[objective]) if m in DEFAULT_METHODS[objective]]
            rows = compare(problem, objective, methods=methods, time_limit=args.time_limit)
            for row in rows:
                print(f"{name:42} {row.method:17} {_fmt(row.objective):>10} {_fmt(row.ratio_to_best):>6} "
                      f"{row.status:11} {_fmt(row.gap, 4):>8} {row.seconds:8.2f}", flush=True)
            out.extend(dict(record, workload=name) for record in rows_to_records(rows))
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
