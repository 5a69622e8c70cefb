"""Benchmark: how fast oversized graphs are refused (issue 16), each case in a fresh process.

    python scripts/bench_bounds.py [--quick]

For each generated graph it prints the nodes, the width found, the seconds to load the file,
the seconds ``solve_dp`` takes to refuse (contraction, reduction, the antichain bound and the
refusal), the whole process's seconds and its peak RSS (``os.wait4``), and the outcome.
Target: a 50,000-node antichain is refused in under 1 s and under 300 MB.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CHILD = r"""
import json, sys, time
from placement import TooManyIdealsError, load_problem
from placement.exact.dp import solve_dp
from placement.exact.ideals import contract, ideal_bounds
started = time.perf_counter()
problem = load_problem(sys.argv[1])
loaded = time.perf_counter()
cpu = time.process_time()
try:
    result = solve_dp(problem)
    outcome = f"solved ({result.status})"
except TooManyIdealsError as exc:
    outcome = "refused"
refused = time.perf_counter()
cpu = time.process_time() - cpu
width = ideal_bounds(contract(problem.graph)).describe_width() if len(sys.argv) > 2 else "-"
print(json.dumps({"load_s": loaded - started, "refuse_s": refused - loaded, "refuse_cpu_s": cpu, "outcome": outcome, "width": width}))
"""


def _graph(n: int, edges) -> dict:
    return {
        "maxFPGAs": 4,
        "maxCPUs": 1,
        "nodes": [
            {"id": i, "supportedOnFpga": 1, "cpuLatency": 1.0, "fpgaLatency": 0.5, "isBackwardNode": 0}
            for i in range(n)
        ],
        "edges": [{"sourceId": a, "destId": b, "cost": 0.1} for a, b in edges],
    }


def cases(quick: bool) -> dict[str, dict]:
    out = {
        "antichain 1,000": _graph(1000, []),
        "star, 2,000 leaves": _graph(2001, [(0, i) for i in range(1, 2001)]),
        "20 chains of 50 (width 20)": _graph(
            1000, [(c * 50 + i, c * 50 + i + 1) for c in range(20) for i in range(49)]
        ),
    }
    if not quick:
        out["antichain 50,000"] = _graph(50_000, [])
    return out


def run(path: Path, width: bool) -> tuple[dict, float, float]:
    started = time.perf_counter()
    args = [sys.executable, "-c", CHILD, str(path)] + (["width"] if width else [])
    process = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - started
    out = json.loads(process.stdout.read())
    process.returncode = os.waitstatus_to_exitcode(status)
    return out, wall, usage.ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="skip the 50,000-node case")
    args = parser.parse_args()
    header = f"{'graph':<28} {'nodes':>7} {'width':>16} {'load s':>7} {'refuse s':>9} {'refuse cpu s':>12} {'process s':>10} {'peak MB':>8}  outcome"
    print(header)
    print("-" * len(header))
    with tempfile.TemporaryDirectory() as tmp:
        for name, graph in cases(args.quick).items():
            path = Path(tmp) / "graph.json"
            path.write_text(json.dumps(graph))
            timing, wall, peak = run(path, width=False)
            width = run(path, width=True)[0]["width"]
            print(
                f"{name:<28} {len(graph['nodes']):>7,} {width:>16} {timing['load_s']:>7.2f} {timing['refuse_s']:>9.3f} "
                f"{timing['refuse_cpu_s']:>12.3f} {wall:>10.2f} {peak:>8.0f}  {timing['outcome']}"
            )
    print(
        f"\nmachine: {os.cpu_count()} cores; python {platform.python_version()}; load average "
        f"{os.getloadavg()[0]:.1f}; 'refuse s' = solve_dp until it refuses (wall; cpu: its CPU time), 'process s' and peak MB = the whole "
        "child process (imports and file reading included)"
    )


if __name__ == "__main__":
    main()
