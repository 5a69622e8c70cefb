"""Benchmark of the exact DP on every sample graph: ideals, pairs, seconds, peak memory.

Each graph runs in a fresh process (so peak memory is that graph's own): the process
first runs the app's solve-worker warm-up (``ui.solve_pool.warm``: small solves of each kind
and the compiled ideal walk, loading the kernels' machine code from numba's cache, or
compiling it), as every app solve runs in a worker warmed this way; then it times
``solve_dp`` on the graph. A checkout without that warm-up (``--ref`` to an old one) solves a
tiny graph instead. Columns:

* ideals - ideals of the lattice the DP searches (after contracting color classes and
  merging free nodes, see placement/exact/ideals.py);
* pairs searched - ideal pairs (I, J) the DP visited (pruned by the chain upper bound; in the
  kernel's pair mode the pairs whose stage was evaluated);
* all pairs - every comparable pair I <= J, as the paper's code counts them (only with --all-pairs; slow on wide graphs);
* solve s - wall-clock seconds of solve_dp after warm-up; cpu s - its CPU seconds, all threads
  together (the DP fills each lattice level on every CPU of the process, so cpu s may exceed
  solve s; on a shared machine compare both with the load); process s - the whole child
  process (Python start, imports, kernel load, solve);
* peak MB - the child's maximum resident set size.

``--ref DIR`` also runs every graph with the ``placement`` package of another checkout (for
example ``git worktree add /tmp/before <commit>``) and prints its row under this one's, marked
``before``, so a change is measured side by side in one run. Children import the package of
this checkout (or of ``--ref``) through ``PYTHONPATH``.

``--repeat N`` solves each graph N times in its process and shows the median solve s and cpu s
(the first solve also loads the few kernels the warm-up's small lattices do not use, ~15 ms, and on
this shared machine single runs vary by 15 %); ``process s`` then covers all N solves.

``--processes N`` runs each graph in N child processes per checkout, taking turns with ``--ref``'s (this,
before, this, before, ...), and shows the median of the processes' solve s (each its own median of ``--repeat``
solves) with their range; with ``--ref`` it ends with the ratio of the two medians per graph. On this machine
one process's median moves by up to 25 % from the next one's (the same checkout, the same graph: Inception-v3
training 1.58-2.35 s over six processes), far more than the solves inside one process, so a side-by-side
comparison needs several processes per checkout.

``--timeout S`` stops a child after S seconds (default 600) and prints "timed out" for it,
so one slow graph (the Inception-v3 training graph) does not hold up the table.

Usage: python scripts/bench_dp.py [--all-pairs] [--ref DIR] [--repeat N] [--processes N] [--timeout S] [GRAPH ...]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "sample_graphs"


def _child(path: str, all_pairs: bool, repeat: int = 1) -> None:
    started = time.perf_counter()
    from placement import Devices, Edge, Graph, Node, Problem, load_problem, solve_dp
    from placement.exact.dp import count_pairs

    try:
        from ui.solve_pool import warm  # noqa: PLC0415 - the checkout's own (PYTHONPATH)
    except ImportError:  # an old checkout: a tiny solve loads the kernel
        tiny = Problem(Graph((Node(1, 1, 1), Node(2, 1, 1)), (Edge(1, 2, 1),)), Devices.paper(1, 1))
        solve_dp(tiny)
    else:
        warm()
    problem = load_problem(path)
    walls, cpus = [], []
    for _ in range(max(1, repeat)):  # every solve the same (deterministic): its times, median taken
        t0, c0 = time.perf_counter(), time.process_time()
        result = solve_dp(problem)
        walls.append(time.perf_counter() - t0)
        cpus.append(time.process_time() - c0)
    seconds, cpu = statistics.median(walls), statistics.median(cpus)
    out = {
        "nodes": len(problem.graph.nodes),
        "status": result.status,
        "objective": result.objective,
        "ideals": result.stat("ideals"),
        "pairs": result.stat("pairs"),
        "seconds": seconds,
        "cpu": cpu,
    }
    if all_pairs:
        out["all_pairs"] = count_pairs(problem)[1]
    out["process_seconds"] = time.perf_counter() - started
    out["peak_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps(out))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("graphs", nargs="*", help="graph files (default: every file in sample_graphs/)")
    parser.add_argument("--all-pairs", action="store_true", help="also count every comparable ideal pair")
    parser.add_argument("--ref", help="another checkout to measure side by side (rows marked 'before')")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per child process (default 600)")
    parser.add_argument(
        "--repeat", type=int, default=1, help="solves per graph in its process, median shown (default 1: the first)"
    )
    parser.add_argument(
        "--processes", type=int, default=1, help="child processes per graph and checkout, interleaved (default 1)"
    )
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(args.child, args.all_pairs, args.repeat)
        return
    graphs = [Path(g) for g in args.graphs] or sorted(
        p
        for p in SAMPLES.rglob("*.json")
        if not {"expert-splits", "piper", "calibration"}
        & set(p.parts)  # piper/: multidim format; calibration/: measured runs
    )
    header = (
        f"{'graph':44} {'nodes':>6} {'ideals':>8} {'pairs searched':>15} {'all pairs':>13} "
        f"{'solve s':>8} {'cpu s':>8} {'process s':>9} {'peak MB':>8}  objective"
    )
    print(header)
    print("-" * len(header))
    trees = [("", ROOT)] + ([("before ", Path(args.ref).resolve())] if args.ref else [])
    ratios: list[tuple[str, float, float]] = []
    for path in graphs:
        command = [sys.executable, __file__, "--child", str(path), "--repeat", str(args.repeat)] + (
            ["--all-pairs"] if args.all_pairs else []
        )
        shown = path.resolve()
        name = str(shown.relative_to(SAMPLES)) if shown.is_relative_to(SAMPLES) else str(shown)
        runs: dict[str, list[dict]] = {label: [] for label, _ in trees}
        for _ in range(max(1, args.processes)):  # the checkouts take turns, so a slow spell hits both
            for label, tree in trees:
                row = _run_child(command, tree, f"{label}{name}"[:44], args.timeout)
                if row is not None:
                    runs[label].append(row)
        medians = {label: _print_row(f"{label}{name}"[:44], rows) for label, rows in runs.items() if rows}
        if args.ref and len(medians) == 2:
            ratios.append((name, medians[""], medians["before "]))
    print(
        f"\nmachine: {resource.getpagesize()} B pages; python {sys.version.split()[0]}; "
        "times are wall-clock on this machine, "
        + ("single run" if args.repeat <= 1 else f"median of {args.repeat} solves in one process")
        + (f"; median of {args.processes} processes per checkout, interleaved" if args.processes > 1 else "")
    )
    if ratios:
        print(f"\n{'graph':44} {'this s':>8} {'before s':>8} {'this / before':>13}")
        for name, this, before in ratios:
            print(f"{name[:44]:44} {this:>8.3f} {before:>8.3f} {this / before:>13.3f}")


def _run_child(command: list[str], tree: Path, title: str, timeout: float) -> dict | None:
    """One child process's row (None, after printing why, when it timed out or failed)."""
    env = dict(os.environ, PYTHONPATH=str(tree))
    try:
        done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=tree, timeout=timeout)
    except subprocess.TimeoutExpired:
        print(f"{title:44} timed out after {timeout:.0f} s", flush=True)
        return None
    if done.returncode != 0:
        print(f"{title:44} failed: {done.stderr.strip().splitlines()[-1] if done.stderr.strip() else done.returncode}")
        return None
    return json.loads(done.stdout.strip().splitlines()[-1])


def _print_row(title: str, rows: list[dict]) -> float:
    """Print the row of one graph and checkout (medians over its processes); returns the median solve s."""
    row = rows[0]
    seconds = statistics.median(r["seconds"] for r in rows)
    cpu = statistics.median(r["cpu"] for r in rows)
    process = statistics.median(r["process_seconds"] for r in rows)
    peak = max(r["peak_mb"] for r in rows)
    all_pairs = f"{row['all_pairs']:,}" if "all_pairs" in row else "-"
    spread = (
        f"  [{min(r['seconds'] for r in rows):.3f}-{max(r['seconds'] for r in rows):.3f} s]" if len(rows) > 1 else ""
    )
    print(
        f"{title:44} {row['nodes']:>6} {row['ideals']:>8,} {row['pairs']:>15,} {all_pairs:>13} "
        f"{seconds:>8.3f} {cpu:>8.3f} {process:>9.2f} {peak:>8.0f}  "
        f"{row['objective']:.10g} ({row['status']}){spread}",
        flush=True,
    )
    return seconds


if __name__ == "__main__":
    main()
