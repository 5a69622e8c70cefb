"""Compare every method on the shared workloads: objective, status, bound, gap and seconds.

Usage::

    python scripts/bench_methods.py [--time-limit 60] [--only NAME ...] [--methods M ...] [--json OUT]
                                  [--workloads DIR] [--no-built] [--no-inception]

Throughput workloads (``<workloads>/throughput/*/*.json``) run the throughput methods, latency
workloads (``<workloads>/latency/*/*.json``) the latency methods, each with ``--time-limit``
seconds where the method takes a limit (the IPs, the local search). The latency table also has
layer and operator graphs built by :mod:`placement.modelling.builders` (ResNet-50 and a 6-layer BERT on 4
accelerators holding 40 % of the weights each, and 8 CPU cores, like the paper's latency inputs).
Each row ends with the 1-minute load average (``os.getloadavg``) after its workload ran: on a
shared machine a 60 s limit gives less CPU under load. The last line times the exact DP on
``sample_graphs/ours/inception_wide_inference.json`` (in process, after a warm-up that compiles
the kernel). ``workloads`` defaults to
``/work/shared/workloads`` when it exists, else ``sample_graphs/``. ``--only`` keeps the
workloads whose name contains one of its words (for example ``--only gnmt_inference``);
the DP timing runs when no ``--only`` is given or one matches
``ours/inception_wide_inference``; ``--no-inception`` skips it (minutes before the DP is made fast).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import time
from pathlib import Path

from placement import load_problem
from placement.explore.compare import DEFAULT_METHODS, rows_to_records, run_method, with_ratios
from placement.modelling.builders import CnnConfig, build_cnn, build_transformer
from placement.perf.transformer import TransformerSpec

REPO = Path(__file__).resolve().parent.parent
SHARED = Path("/work/shared/workloads")
INCEPTION = REPO / "sample_graphs" / "ours" / "inception_wide_inference.json"


def built_latency_problems() -> dict:
    """Latency inputs made by the model builders: memory 40 % of the weights per accelerator, 8 CPU cores."""
    out = {}
    for granularity in ("layer", "operator"):
        makers = {
            "resnet50": lambda memory, granularity=granularity: build_cnn(
                CnnConfig(),
                {"H100": 4},
                cpus=8,
                granularity=granularity,
                memory=None if memory is None else {"H100": memory},
            ),
            "gpt6": lambda memory, granularity=granularity: build_transformer(
                TransformerSpec(layers=6, hidden=768, heads=12, seq_length=512, vocab=30522, name="GPT-6"),
                {"H100": 4},
                cpus=8,
                granularity=granularity,
                memory=None if memory is None else {"H100": memory},
            ),
        }
        for name, make in makers.items():
            total = sum(node.size for node in make(None).graph.nodes)
            out[f"built/{granularity}/{name}"] = make(total / 2.5)
    return out


def _fmt(value, digits=4):
    if value is None:
        return "-"
    if isinstance(value, float) and not math.isfinite(value):
        return "inf"
    return f"{value:.{digits}g}" if abs(value) >= 1e4 else f"{value:.{digits}f}"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--time-limit", type=float, default=60.0, help="seconds per method (default 60)")
    parser.add_argument("--only", nargs="*", default=None, help="substrings of workload names to run")
    parser.add_argument("--methods", nargs="*", default=None, help="methods to run (default: all for the objective)")
    parser.add_argument("--workloads", default=None, help="folder with throughput/ and latency/ (default: shared)")
    parser.add_argument("--no-built", action="store_true", help="skip the builders' latency graphs")
    parser.add_argument("--no-inception", action="store_true", help="skip the DP timing on the Inception-like graph")
    parser.add_argument("--json", default=None, help="also write the rows to this JSON file")
    args = parser.parse_args(argv)
    root = Path(args.workloads) if args.workloads else (SHARED if SHARED.is_dir() else REPO / "sample_graphs")
    cases: list[tuple[str, str, object]] = []
    for objective in ("throughput", "latency"):
        for path in sorted((root / objective).glob("*/*.json")):
            cases.append((objective, str(path.relative_to(root)), path))
    if not args.no_built:
        cases.extend(("latency", name, problem) for name, problem in built_latency_problems().items())
    out = []
    print(
        f"{'workload':40} {'method':16} {'objective':>11} {'ratio':>6} {'status':11} {'bound':>11} {'gap':>8} "
        f"{'seconds':>8} {'load':>5}",
        flush=True,
    )
    for objective, name, source in cases:
        if args.only and not any(part in name for part in args.only):
            continue
        problem = load_problem(source) if isinstance(source, Path) else source
        methods = [m for m in (args.methods or DEFAULT_METHODS[objective]) if m in DEFAULT_METHODS[objective]]
        rows = with_ratios([run_method(problem, m, objective, time_limit=args.time_limit) for m in methods])
        load = os.getloadavg()[0]  # the machine is shared: the 1-minute load average after the runs
        for row in rows:
            print(
                f"{name:40} {row.method:16} {_fmt(row.objective):>11} {_fmt(row.ratio_to_best, 3):>6} "
                f"{row.status:11} {_fmt(row.bound):>11} {_fmt(row.gap, 4):>8} {row.seconds:8.2f} {load:5.2f}",
                flush=True,
            )
        out.extend(dict(record, workload=name, load=load) for record in rows_to_records(rows))
    inception_name = "ours/inception_wide_inference"
    wanted = not args.only or any(part in inception_name for part in args.only)
    if not args.no_inception and wanted and INCEPTION.exists():
        from placement.exact.dp import solve_dp

        problem = load_problem(INCEPTION)
        solve_dp(load_problem(REPO / "sample_graphs" / "ours" / "tiny_training.json"))  # compile the kernel
        started = time.perf_counter()
        result = solve_dp(problem)
        seconds = time.perf_counter() - started
        print(
            f"{'ours/inception_wide_inference (DP time)':40} {'dp':16} {_fmt(result.objective):>11} {'':>6} "
            f"{result.status:11} {_fmt(result.bound):>11} {_fmt(result.gap, 4):>8} {seconds:8.2f} "
            f"{os.getloadavg()[0]:5.2f}",
            flush=True,
        )
        out.append(
            {
                "workload": "ours/inception_wide_inference",
                "method": "dp",
                "objective": result.objective,
                "status": result.status,
                "seconds": seconds,
                "ideals": result.stat("ideals"),
            }
        )
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
