"""Measure answering lowered device counts from the last DP table (issue 12, item 3).

For each graph: one fresh ``solve_dp`` at the file's counts; the table build
(``solve_dp_table``) with the chain bound (the default), with ``bound`` = ``ui.live.TABLE_BOUND`` x
the optimum (what the app keeps) and with ``bound=inf`` (every lower count answerable); then, for every lower count (each accelerator
kind and CPU cores, the solved counts excluded), ``SolvedTable.query`` + the evaluator's check
against a fresh ``solve_dp``. Prints one row per graph: seconds, how many lower counts each
table answers, the median answer and fresh-solve times, and whether every answer's max-load
equals the fresh solve's objective.

Usage: ``python -m scripts.bench_live_table [GRAPH ...] [--fresh N]`` (default: the shared layer
graphs and two operator graphs; ``--fresh 2`` compares only the two largest lower counts with a
fresh solve, for a graph whose solve takes seconds, e.g. ``sample_graphs/ours/inception_wide_inference.json``).
"""

from __future__ import annotations

import argparse
import itertools
import math
import statistics
import time
from dataclasses import replace
from pathlib import Path

from placement import Problem, evaluate, load_problem
from placement.exact.dp import solve_dp, solve_dp_table
from ui.live import TABLE_BOUND

ROOT = Path(__file__).resolve().parent.parent
DEFAULT = sorted((ROOT / "sample_graphs" / "throughput" / "layer").glob("*.json")) + [
    ROOT / "sample_graphs" / "throughput" / "operator" / "bert_l-3_inference.json",
    ROOT / "sample_graphs" / "throughput" / "operator" / "resnet50_inference.json",
]


def timed(function, *args, **kwargs):
    started = time.perf_counter()
    value = function(*args, **kwargs)
    return value, time.perf_counter() - started


def lower_counts(problem: Problem):
    kinds = problem.devices.accelerators
    ranges = [range(kind.count + 1) for kind in kinds] + [range(problem.devices.cpus + 1)]
    full = tuple(kind.count for kind in kinds) + (problem.devices.cpus,)
    for combo in itertools.product(*ranges):
        if combo != full:
            accelerators = tuple(combo[:-1])
            kinds_now = tuple(replace(kind, count=n) for kind, n in zip(kinds, accelerators))
            yield (
                accelerators,
                combo[-1],
                Problem(problem.graph, problem.devices.with_changes(accelerators=kinds_now, cpus=combo[-1])),
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("graphs", nargs="*", type=Path, default=DEFAULT)
    parser.add_argument(
        "--fresh",
        type=int,
        default=None,
        help="compare only the N largest lower counts with a fresh solve (all by default; a big graph: 2)",
    )
    args = parser.parse_args()
    solve_dp(load_problem(args.graphs[0]))  # numba compiles (or loads its cache) outside the timings
    header = (
        "graph",
        "solve_dp s",
        "table s",
        f"table {TABLE_BOUND:g}x s",
        "table inf s",
        "answered",
        f"answered {TABLE_BOUND:g}x",
        "answered inf",
        "answer ms",
        "fresh ms",
        "equal",
    )
    rows = []
    for path in args.graphs:
        problem = load_problem(path)
        full, solve_seconds = timed(solve_dp, problem)
        chain_table, chain_seconds = timed(solve_dp_table, problem)
        cut = TABLE_BOUND * full.objective if full.objective else math.inf
        app_table, app_seconds = timed(solve_dp_table, problem, bound=cut)
        table, inf_seconds = timed(solve_dp_table, problem, bound=math.inf)
        answered = answered_app = answered_inf = total = 0
        answer_times, fresh_times, equal = [], [], True
        lower = sorted(lower_counts(problem), key=lambda item: (-sum(item[0]) - item[1], item[:2]))
        for position, (accelerators, cpus, smaller) in enumerate(lower):
            total += 1
            if chain_table is not None and chain_table.query(accelerators, cpus) is not None:
                answered += 1
            if app_table is not None and app_table.query(accelerators, cpus) is not None:
                answered_app += 1
            answer, seconds = timed(table.query, accelerators, cpus) if table is not None else (None, 0.0)
            compare = args.fresh is None or position < args.fresh
            if compare:
                fresh, fresh_seconds = timed(solve_dp, smaller)
                fresh_times.append(fresh_seconds)
            if answer is None:
                continue
            answered_inf += 1
            answer_times.append(seconds)
            value, split = answer
            checked = evaluate(smaller, split).max_load
            equal &= value == checked and (not compare or (fresh.status == "optimal" and value == fresh.objective))
        rows.append(
            (
                "/".join(path.parts[-2:]),
                f"{solve_seconds:.3f}",
                f"{chain_seconds:.3f}",
                f"{app_seconds:.3f}",
                f"{inf_seconds:.3f}",
                f"{answered}/{total}",
                f"{answered_app}/{total}",
                f"{answered_inf}/{total}",
                f"{statistics.median(answer_times) * 1000:.2f}" if answer_times else "-",
                f"{statistics.median(fresh_times) * 1000:.1f}" if fresh_times else "-",
                "yes" if equal else "NO",
            )
        )
    widths = [max(len(str(r[i])) for r in rows + [header]) for i in range(len(header))]
    for row in [header] + rows:
        print("  ".join(str(cell).ljust(width) for cell, width in zip(row, widths)))


if __name__ == "__main__":
    main()
