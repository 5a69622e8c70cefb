"""Single-sample latency over layer graphs and a grid of device settings: ``latency-ip`` beside the baselines.

Usage::

    python scripts/bench_latency.py [--quick] [--time-limit 60] [--only NAME ...] [--workloads DIR]
                                    [--json OUT] [--markdown OUT]

Graphs (layer granularity): BERT-24 (``latency/layer``), GNMT and ResNet-50 (``throughput/layer``,
inference), Inception-v3 (``sample_graphs/ours``), and the builders' BERT-6 transformer and ResNet-50
CNN. Each is recast for latency over a grid: ``k`` accelerators of its first kind (2, 4, 8), memory per
accelerator ``f * total weights / k`` for ``f`` in 0.5 (tight: half the weights must run on CPU
cores), 1.2 and unlimited, ``q`` calls per accelerator (1, 2, 3), 8 CPU cores (the latency model
gives CPU nodes cores of their own, so their count does not change any number); ``--accelerators``,
``--memory`` and ``--calls`` choose other values. Every ``<workloads>/latency/layer/*.json`` is also run
with its own settings (``own``) for each ``q``: the paper's held-back latency inputs, put in such a
folder and named with ``--workloads``, are checked the same way.

``--quick``: BERT-24 and GNMT at ``k = 2``, tight memory, ``q`` 1 and 2, 5 s (a CI-size check).

Each row: ``latency-ip``'s objective (the evaluator's latency), proven bound and gap, which bound
is active (``critical_path``, ``work``, ``chain``, ``relaxation``, or ``ip``: the solvers'),
seconds and ``OVER`` when past ``limit * 1.05``; our program's and the paper's objectives (they
run one after the other) and which gave the plan (``ours``, ``paper``; ``start`` when a warm start
beat both); the greedy's and the DP split's latency; and the 1-minute load average after the row
(the machine may be shared: a limit then buys less CPU).
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import platform
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

from bench_methods import SHARED

from placement import Problem, evaluate, load_problem, solve
from placement.modelling.builders import CnnConfig, TransformerConfig, build_cnn, build_transformer

REPO = Path(__file__).resolve().parent.parent
ACCELERATORS = (2, 4, 8)
MEMORY = (0.5, 1.2, math.inf)
CALLS = (1, 2, 3)
CPUS = 8


def graphs(root: Path) -> dict:
    """(name -> Problem) of the layer graphs, each with its file's or builder's own devices."""
    files = {
        "bert24": root / "latency/layer/bert24_inference.json",
        "gnmt": root / "throughput/layer/gnmt_inference.json",
        "resnet50": root / "throughput/layer/resnet50_inference.json",
        "inception_v3": REPO / "sample_graphs/ours/inception_v3_inference.json",
    }
    out = {name: load_problem(path) for name, path in files.items() if path.exists()}
    out["built/bert6"] = build_transformer(
        TransformerConfig(style="bert", layers=6), accelerators=2, granularity="layer"
    )
    out["built/resnet50"] = build_cnn(CnnConfig(), accelerators=2, granularity="layer")
    return out


def grid(
    root: Path, quick: bool, accelerators=ACCELERATORS, memory=MEMORY, calls=CALLS
) -> list[tuple[str, str, int, Problem]]:
    """(graph, setting label, q, problem) of every benchmark instance (``quick``: the CI-size grid)."""
    out = []
    found = graphs(root)
    if quick:
        found = {name: found[name] for name in ("bert24", "gnmt") if name in found}
    for name, base in found.items():
        total = sum(node.size for node in base.graph.nodes)
        for k in (2,) if quick else accelerators:
            for f in (0.5,) if quick else memory:
                kind = replace(base.devices.accelerators[0], count=k, memory=total / k * f)
                devices = base.devices.with_changes(accelerators=(kind,), cpus=CPUS)
                label = f"k={k} mem={'inf' if math.isinf(f) else f}"
                for q in (1, 2) if quick else calls:
                    out.append((name, label, q, Problem(base.graph, devices)))
    if not quick:
        for path in sorted((root / "latency/layer").glob("*.json")):
            for q in calls:
                out.append((f"file/{path.stem}", "own", q, load_problem(path)))
    return out


def row(name: str, setting: str, q: int, problem: Problem, time_limit: float) -> dict:
    """``latency-ip`` and the baselines on one instance."""
    started = time.perf_counter()
    result = solve(problem, "latency-ip", time_limit=time_limit, subgraphs_per_accelerator=q)
    seconds = time.perf_counter() - started
    baselines = {}
    for method in ("greedy-latency", "dp"):
        other = solve(problem, method)
        baselines[method] = evaluate(problem, other.placement).latency if other.placement is not None else None
    return {
        "input": name,
        "commit": COMMIT,
        "setting": setting,
        "q": q,
        "objective": result.objective,
        "status": result.status,
        "bound": result.bound,
        "gap": result.gap,
        "bound_source": result.stat("bound_source"),
        "ours_ip": result.stat("ours_objective"),
        "paper_ip": result.stat("paper_objective"),
        "from": "start" if result.stat("from_start") else result.stat("incumbent_model"),
        "greedy": baselines["greedy-latency"],
        "dp_split": baselines["dp"],
        "seconds": seconds,
        "limit": time_limit,
        "over": seconds > time_limit * 1.05,
        "load": os.getloadavg()[0],
    }


def _commit() -> str:
    """The checkout's commit (short hash; ``+`` when files differ from it), or ``?`` outside git."""
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True)
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=REPO, capture_output=True)
    except OSError:
        return "?"
    return head.stdout.strip() + ("+" if dirty.stdout.strip() else "") if head.returncode == 0 else "?"


#: The commit this process runs (read once: later commits in the checkout do not change the loaded code).
COMMIT = _commit()


def _fmt(value, digits=4) -> str:
    if value is None:
        return "-"
    if isinstance(value, float) and not math.isfinite(value):
        return "inf"
    return f"{value:.{digits}f}"


COLUMNS = (
    ("input", "input", lambda r: r["input"]),
    ("setting", "setting", lambda r: r["setting"]),
    ("q", "q", lambda r: str(r["q"])),
    ("latency", "objective", lambda r: _fmt(r["objective"])),
    ("bound", "bound", lambda r: _fmt(r["bound"])),
    ("gap", "gap", lambda r: "-" if r["gap"] is None else f"{100 * r['gap']:.2f}%"),
    ("active", "bound_source", lambda r: r["bound_source"] or "-"),
    ("seconds", "seconds", lambda r: f"{r['seconds']:.1f}" + (" OVER" if r["over"] else "")),
    ("ours IP", "ours_ip", lambda r: _fmt(r["ours_ip"])),
    ("paper IP", "paper_ip", lambda r: _fmt(r["paper_ip"])),
    ("from", "from", lambda r: r["from"] or "-"),
    ("greedy", "greedy", lambda r: _fmt(r["greedy"])),
    ("DP split", "dp_split", lambda r: _fmt(r["dp_split"])),
    ("load", "load", lambda r: f"{r['load']:.1f}"),
)


def markdown(rows: list[dict], command: str) -> str:
    """The rows as a markdown table, with the command, date, machine and the worst gap."""
    gaps = [r["gap"] for r in rows if r["gap"] is not None]
    head = [
        f"Command: `{command}`",
        "",
        f"Run {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC on {platform.machine()}, "
        f"{os.cpu_count()} CPUs; 1-minute load average from {min(r['load'] for r in rows):.1f} to "
        f"{max(r['load'] for r in rows):.1f} (a shared machine: each limit bought less CPU than its seconds).",
        "",
        f"Commit: {', '.join(sorted({r.get('commit', '?') for r in rows}))}.",
        "",
        f"Rows: {len(rows)}; gap at most 5 %: {sum(g <= 0.05 for g in gaps)}; worst gap "
        f"{100 * max(gaps, default=0.0):.2f} %; over the limit by more than 5 %: {sum(r['over'] for r in rows)}.",
        "",
        "| " + " | ".join(title for title, _, _ in COLUMNS) + " |",
        "|" + "---|" * len(COLUMNS),
    ]
    body = ["| " + " | ".join(show(r) for _, _, show in COLUMNS) + " |" for r in rows]
    return "\n".join(head + body) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a CI-size grid: 4 instances, 5 s each")
    parser.add_argument("--time-limit", type=float, default=None, help="seconds for latency-ip (60; 5 with --quick)")
    parser.add_argument("--accelerators", nargs="*", type=int, default=ACCELERATORS, help="k values (2 4 8)")
    parser.add_argument("--memory", nargs="*", type=float, default=MEMORY, help="memory fractions (0.5 1.2 inf)")
    parser.add_argument("--calls", nargs="*", type=int, default=CALLS, help="q values (1 2 3)")
    parser.add_argument("--only", nargs="*", default=None, help="substrings of graph names to run")
    parser.add_argument("--workloads", default=None, help="folder with latency/ and throughput/ (default: shared)")
    parser.add_argument("--json", default=None, help="also write the rows to this JSON file")
    parser.add_argument("--markdown", default=None, help="also write the table (with command and date) here")
    parser.add_argument("--command", default=None, help="with --render: the command that made the rows")
    parser.add_argument("--render", nargs="*", default=None, help="only write --markdown from these JSON files")
    args = parser.parse_args(argv)
    if args.render is not None:
        rows = [r for path in args.render for r in json.loads(Path(path).read_text())]
        Path(args.markdown).write_text(markdown(rows, args.command or "python scripts/bench_latency.py"))
        return 0
    limit = args.time_limit or (5.0 if args.quick else 60.0)
    root = Path(args.workloads) if args.workloads else (SHARED if SHARED.is_dir() else REPO / "sample_graphs")
    solve(load_problem(REPO / "sample_graphs/latency/layer/bert24_inference.json"), "dp")  # the kernel's first load
    print(" ".join(f"{title:>10}" for title, _, _ in COLUMNS), flush=True)
    rows = []
    for name, setting, q, problem in grid(root, args.quick, args.accelerators, args.memory, args.calls):
        if args.only and not any(part in name for part in args.only):
            continue
        rows.append(row(name, setting, q, problem, limit))
        print(" ".join(f"{show(rows[-1]):>10}" for _, _, show in COLUMNS), flush=True)
        if args.json:
            Path(args.json).write_text(json.dumps(rows, indent=1, default=str))
    if args.markdown and rows:
        command = "python scripts/bench_latency.py " + " ".join(sys.argv[1:] if argv is None else argv)
        Path(args.markdown).write_text(markdown(rows, command.strip()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
