"""Command-line interface: ``python -m placement solve|evaluate|compare ...``.

The shape of this interface is relied on by other tools; keep it stable:

* ``solve GRAPH [--method dp] [--accelerators K] [--cpus L] [--memory BYTES] [--json]``
* ``evaluate GRAPH SPLIT [--json]``
* ``compare GRAPH [--objective throughput|latency] [--json]``

Bad input exits with status 2 and one line on stderr naming the file, the node/edge/field
and the rule broken - never a traceback.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from typing import Any, Sequence

from .errors import PlacementError
from .evaluate import Evaluation, evaluate
from .io import load_placement, load_problem
from .model import CPU_KIND, Problem, Result
from .solve import METHODS, solve


class _Parser(argparse.ArgumentParser):
    """argparse that reports usage errors as one line and exit status 2."""

    def error(self, message: str) -> None:  # pragma: no cover - exercised through main()
        sys.stderr.write(f"{self.prog}: error: {message}\n")
        raise SystemExit(2)


def _number(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if math.isnan(value) or value < 0:
        raise argparse.ArgumentTypeError(f"must be a non-negative number: {text!r}")
    return value


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be a non-negative integer: {text!r}")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m placement", description="Exact device placement of DNN operator graphs.")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    solve_cmd = commands.add_parser("solve", help="find a placement of a graph")
    solve_cmd.add_argument("graph", help="graph file in the paper's JSON format")
    solve_cmd.add_argument("--method", default="dp", choices=sorted(METHODS), help="solver (default: dp)")
    _device_options(solve_cmd)
    solve_cmd.add_argument("--time-limit", type=_number, default=None, help="seconds (integer programs)")
    solve_cmd.add_argument("--gap", type=_number, default=None, help="relative MIP gap to stop at")
    solve_cmd.add_argument("--subgraphs-per-accelerator", type=_count, default=None,
                           help="latency IP: contiguous subgraphs per accelerator (default 1)")
    solve_cmd.add_argument("--solver", choices=("highs", "cbc"), default=None,
                           help="integer-program solver (default highs; cbc is PuLP's bundled fallback)")
    solve_cmd.add_argument("--seed", type=_count, default=None, help="local search: random seed")
    solve_cmd.add_argument("--json", action="store_true", help="print one JSON object")

    eval_cmd = commands.add_parser("evaluate", help="max-load and latency of a given split")
    eval_cmd.add_argument("graph")
    eval_cmd.add_argument("split", help="split file: {fpgas: [{nodes}], cpus: [{nodes}]}")
    _device_options(eval_cmd)
    eval_cmd.add_argument("--json", action="store_true")

    compare_cmd = commands.add_parser("compare", help="every method side by side")
    compare_cmd.add_argument("graph")
    compare_cmd.add_argument("--objective", choices=("throughput", "latency"), default="throughput")
    compare_cmd.add_argument("--time-limit", type=_number, default=60.0, help="seconds per method (default 60)")
    _device_options(compare_cmd)
    compare_cmd.add_argument("--json", action="store_true")
    return parser


def _device_options(command: argparse.ArgumentParser) -> None:
    command.add_argument("--accelerators", type=_count, default=None, help="override the file's maxFPGAs")
    command.add_argument("--cpus", type=_count, default=None, help="override the file's maxCPUs")
    command.add_argument("--memory", type=_number, default=None, help="override maxSizePerFPGA (bytes)")


def _problem(args: argparse.Namespace) -> Problem:
    problem = load_problem(args.graph)
    devices = problem.devices
    if args.accelerators is not None or args.memory is not None:
        first = devices.accelerators[0]
        changes: dict[str, Any] = {}
        if args.accelerators is not None:
            changes["count"] = args.accelerators
        if args.memory is not None:
            changes["memory"] = args.memory
        devices = devices.with_kind(first.name, **changes)
    if args.cpus is not None:
        devices = devices.with_changes(cpus=args.cpus)
    return Problem(problem.graph, devices)


def _device_entries(problem: Problem, evaluation: Evaluation | None) -> dict[str, list[dict[str, Any]]]:
    """One entry per device of the inventory: ``{"load", "nodes"}`` (accelerators carry their kind)."""
    by_device = {entry.device: entry for entry in evaluation.devices} if evaluation else {}
    accelerators, cpus = [], []
    for slot in problem.devices.slots():
        entry = by_device.get(slot)
        item: dict[str, Any] = {"load": entry.load if entry else 0.0, "nodes": list(entry.nodes) if entry else []}
        if slot.is_cpu:
            cpus.append(item)
        else:
            accelerators.append({"kind": slot.kind, **item})
    return {"accelerators": accelerators, "cpus": cpus}


def _finite(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None


def result_to_json(problem: Problem, result: Result) -> dict[str, Any]:
    """The ``solve --json`` object (loads recomputed by the independent evaluator)."""
    evaluation = evaluate(problem, result.placement) if result.placement is not None else None
    out: dict[str, Any] = {
        "status": result.status,
        "objective": _finite(result.objective),
        "objective_kind": result.objective_kind,
        "method": result.method,
        "seconds": result.seconds,
        **_device_entries(problem, evaluation),
        "bound": _finite(result.bound),
        "gap": _finite(result.gap),
    }
    if evaluation is not None:
        out["max_load"] = evaluation.max_load
        out["latency"] = _finite(evaluation.latency)
        out["order"] = [str(stage.device) for stage in result.placement.stages]
    if result.reason:
        out["reason"] = result.reason
    out["stats"] = {key: value for key, value in result.stats}
    return out


def _table(rows: Sequence[Sequence[Any]], header: Sequence[str]) -> str:
    cells = [list(map(str, header))] + [[str(c) for c in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _fmt(value: float | None) -> str:
    if value is None:
        return "-"
    if math.isinf(value):
        return "inf"
    return f"{value:.6g}"


def _print_solution(problem: Problem, result: Result) -> None:
    print(f"method: {result.method}   status: {result.status}   seconds: {result.seconds:.3f}")
    if result.reason:
        print(f"reason: {result.reason}")
    if result.placement is None:
        return
    evaluation = evaluate(problem, result.placement)
    label = "time per sample (max-load)" if result.objective_kind == "throughput" else "latency"
    print(f"{label}: {_fmt(result.objective)}")
    if result.gap:
        print(f"bound: {_fmt(result.bound)}   gap: {result.gap:.2%}")
    print(f"evaluator: max-load {_fmt(evaluation.max_load)}, latency {_fmt(evaluation.latency)}")
    rows = [
        (str(d.device), len(d.nodes), _fmt(d.compute), _fmt(d.communication), _fmt(d.load),
         "-" if d.device.kind == CPU_KIND else f"{d.memory:,.0f}")
        for d in evaluation.devices
    ]
    print(_table(rows, ("device", "nodes", "compute", "comm", "load", "memory")))


def _cmd_solve(args: argparse.Namespace) -> int:
    problem = _problem(args)
    from .compare import method_options

    given = {name: getattr(args, name) for name in ("time_limit", "gap", "subgraphs_per_accelerator", "solver", "seed")}
    options = method_options(args.method, {k: v for k, v in given.items() if v is not None})
    shown = []
    if args.method == "dp":  # progress on stderr (never in --json output) once a solve passes 1 s
        started = time.perf_counter()

        def progress(done: int, total: int) -> None:
            if time.perf_counter() - started > 1.0:
                sys.stderr.write(f"\rdp: {done:,} / {total:,} ideals ({100 * done // max(total, 1)}%)")
                sys.stderr.flush()
                shown.append(done)

        options["progress"] = progress
    result = solve(problem, args.method, **options)
    if shown:
        sys.stderr.write("\n")
    if args.json:
        print(json.dumps(result_to_json(problem, result)))
    else:
        _print_solution(problem, result)
    return 0


def _cmd_evaluate(args: argparse.Namespace) -> int:
    problem = _problem(args)
    placement = load_placement(args.split, problem.graph, problem.devices)
    evaluation = evaluate(problem, placement)
    if args.json:
        out = {
            "max_load": evaluation.max_load,
            "latency": _finite(evaluation.latency),
            "feasible": evaluation.feasible,
            "violations": list(evaluation.violations),
            **_device_entries(problem, evaluation),
        }
        print(json.dumps(out))
    else:
        print(f"max-load (time per sample): {_fmt(evaluation.max_load)}")
        print(f"latency: {_fmt(evaluation.latency)}")
        print("feasible" if evaluation.feasible else "NOT feasible: " + "; ".join(evaluation.violations))
        rows = [(str(d.device), len(d.nodes), _fmt(d.compute), _fmt(d.communication), _fmt(d.load))
                for d in evaluation.devices]
        print(_table(rows, ("device", "nodes", "compute", "comm", "load")))
    return 0


def _cmd_compare(args: argparse.Namespace) -> int:
    from .compare import compare  # imports PuLP lazily

    problem = _problem(args)
    rows = compare(problem, objective=args.objective, time_limit=args.time_limit)
    if args.json:
        from .compare import rows_to_records

        records = [{k: (_finite(v) if isinstance(v, float) else v) for k, v in r.items()} for r in rows_to_records(rows)]
        print(json.dumps({"objective": args.objective, "rows": records}))
    else:
        table = [(r.method, _fmt(r.objective), _fmt(r.ratio_to_best), r.status,
                  _fmt(r.bound), "-" if r.gap is None else f"{r.gap:.2%}", f"{r.seconds:.2f}") for r in rows]
        print(_table(table, ("method", args.objective, "ratio to best", "status", "bound", "gap", "seconds")))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit status (2 for bad input)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    handlers = {"solve": _cmd_solve, "evaluate": _cmd_evaluate, "compare": _cmd_compare}
    try:
        return handlers[args.command](args)
    except PlacementError as exc:
        sys.stderr.write(f"error: {exc}\n")
        return 2
    except KeyboardInterrupt:  # pragma: no cover
        sys.stderr.write("interrupted\n")
        return 130
