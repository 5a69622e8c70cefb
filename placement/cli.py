"""Command-line interface: ``python -m placement solve|evaluate|compare ...``.

The shape of this interface is relied on by other tools; keep it stable:

* ``solve GRAPH [--method dp] [--accelerators K] [--cpus L] [--memory BYTES] [--json]``
  plus one flag per method option of the registry (:data:`placement.solve.METHODS`):
  ``--time-limit``, ``--gap``, ``--solver``, ``--schedule``, ``--microbatches``, ... A flag
  the chosen method does not take is an error (exit 2).
* ``evaluate GRAPH SPLIT [--json]``
* ``compare GRAPH [--objective throughput|latency] [--json]``
* ``export PLAN --graph GRAPH --to megatron|torch|deepspeed [--virtual V] [--tensor-parallel T]
  [--data-parallel D] [--schedule S] [--json]``
* ``graph --model PRESET|CONFIG.json --gpu KIND[:N,...] [--seq-length S] [--micro-batch B] [--training]
  [--granularity layer|operator] [--dtype D] [--cpus L] -o FILE`` (:mod:`placement.modelling.graph_cli`)

``--deadline SECONDS`` (before or after the subcommand) bounds the whole command's wall clock
(:mod:`placement.budget`): methods with a time limit get what is left; past it, one line and exit 2.

Bad input exits with status 2 and one line on stderr naming the file, the node/edge/field
and the rule broken - never a traceback. ``--json`` output is strict JSON (no ``Infinity``:
a non-finite number is ``null`` with a reason). A closed pipe (``... | head``) ends the
command quietly.

The parser is :mod:`placement.cli_args`, the printed and ``--json`` output :mod:`placement.cli_output`;
this module reads the inputs and runs the commands. :mod:`placement.cli_output` and :mod:`placement.evaluate`
are imported by the handlers that print with them, so that ``solve --method multidim`` (whose output is
:mod:`placement.multidim.cli`'s) does not import them at start-up.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from collections.abc import Sequence
from typing import Any

from .budget import (
    TooMuchSolveWorkError,
    deadline,
    precheck_solve,
    precheck_solve_raw,
    process_age,
    refusals_raw,
    remaining,
)
from .cli_args import DEADLINE_MARGIN, _given_options, _subcommand, build_parser
from .errors import InvalidGraphError, PlacementError, label
from .io import graph_from_dict, load_placement, load_problem, parse_json, read_file_bytes
from .model import Problem
from .solve import METHODS, MemoryModel, solve


def _read_problem(args: argparse.Namespace, check: Any = None) -> Problem:
    """:func:`load_problem` of ``args.graph``; ``check`` sees the parsed JSON before the graph is validated."""
    if check is None:
        return load_problem(args.graph)
    source = str(args.graph)
    parsed = parse_json(read_file_bytes(source, InvalidGraphError), source, InvalidGraphError)
    check(parsed)
    graph, devices = graph_from_dict(parsed, source)
    try:
        return Problem(graph, devices)
    except InvalidGraphError as exc:
        raise InvalidGraphError(f"{label(source)}: {exc}") from None


def _problem(args: argparse.Namespace, check: Any = None) -> Problem:
    problem = _read_problem(args, check)
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


#: Seconds a DP solve runs before ``solve`` reports its progress (ideals done / total) on stderr.
PROGRESS_AFTER = 1.0


def _fit_time_limit(args: argparse.Namespace, options: dict[str, Any]) -> None:
    """Under ``--deadline``, a method taking a time limit gets at most what is left (less a margin)."""
    spec = METHODS[args.method]
    left = remaining(getattr(args, "deadline_at", None))
    if "time_limit" not in spec.option_names or math.isinf(left):
        return
    given = options.get("time_limit", spec.option("time_limit").default)
    fitted = max(0.1, left - DEADLINE_MARGIN)
    options["time_limit"] = fitted if given is None else min(given, fitted)


def _cmd_solve(args: argparse.Namespace) -> int:
    if args.method == "multidim":
        from .multidim.cli import cmd_solve

        return cmd_solve(args)
    options = _given_options(args)
    _fit_time_limit(args, options)  # under --deadline an integer program is timed: not refused as untimed
    caps = {"max_dp_work": args.max_work, "max_ip_size": args.max_ip_size}

    def estimate(parsed: Any) -> None:  # before a dense graph's validation (seconds on 180,000 edges)
        precheck_solve_raw(parsed, args.method, options, args.accelerators, args.cpus, **caps)

    problem = _problem(args, estimate)
    precheck_solve(problem, args.method, options, **caps)  # the exact groups (a shape the raw check skipped)
    _fit_time_limit(args, options)
    shown = []
    if args.method == "dp":  # progress on stderr (never in --json output) once a solve passes PROGRESS_AFTER
        started = time.perf_counter()

        def progress(done: int, total: int) -> None:
            if time.perf_counter() - started > PROGRESS_AFTER:
                sys.stderr.write(f"\rdp: {done:,} / {total:,} ideals ({100 * done // max(total, 1)}%)")
                sys.stderr.flush()
                shown.append(done)

        options["progress"] = progress
    result = solve(problem, args.method, **options)
    from .cli_output import _dumps, _print_solution, result_to_json  # noqa: PLC0415 - see the module docstring

    if shown:
        sys.stderr.write("\n")
    if getattr(args, "trace", None) is not None:
        _write_trace(problem, result, args.trace, args.trace_microbatches)
    if args.json:
        print(_dumps(result_to_json(problem, result)))
    else:
        _print_solution(problem, result)
    return 0


def _write_trace(problem: Problem, result: Any, path: str, microbatches: int) -> None:
    """The solved plan's pipeline schedule as a Chrome/Perfetto trace (one process per device) at ``path``."""
    from .pipeline.schedule import simulate
    from .pipeline.trace import chrome_trace_json

    if not result.ok or result.placement is None:
        raise PlacementError(f"--trace {path}: no plan to draw ({result.status})")
    kind = "1f1b" if problem.graph.is_training else "inference"
    text = chrome_trace_json(simulate(problem, result.placement, microbatches, kind))
    try:
        with open(path, "w", encoding="utf-8") as out:
            out.write(text)
    except OSError as exc:
        raise PlacementError(f"--trace {path}: cannot write ({exc.strerror})") from None


def _cmd_evaluate(args: argparse.Namespace) -> int:
    from .cli_output import _device_entries, _dumps, _finite, _fmt, _latency_fields, _latency_text, _table  # noqa: PLC0415
    from .evaluate import evaluate  # noqa: PLC0415

    problem = _problem(args)
    placement = load_placement(args.split, problem.graph, problem.devices)
    evaluation = evaluate(problem, placement)
    if args.json:
        out = {
            "max_load": _finite(evaluation.max_load),
            **_latency_fields(problem, evaluation),
            "feasible": evaluation.feasible,
            "violations": list(evaluation.violations),
            **_device_entries(problem, evaluation),
        }
        if out["max_load"] is None:
            out["max_load_reason"] = "some device has an infinite load: " + "; ".join(evaluation.violations[:3])
        print(_dumps(out))
    else:
        print(f"max-load (time per sample): {_fmt(evaluation.max_load)}")
        print(f"latency: {_latency_text(problem, evaluation)}")
        print("feasible" if evaluation.feasible else "NOT feasible: " + "; ".join(evaluation.violations))
        rows = [
            (str(d.device), len(d.nodes), _fmt(d.compute), _fmt(d.communication), _fmt(d.load))
            for d in evaluation.devices
        ]
        print(_table(rows, ("device", "nodes", "compute", "comm", "load")))
    return 0


def _compared_methods(objective: str, model: MemoryModel) -> list[str]:
    """The methods ``compare`` runs (a training memory model runs each method's memory-aware variant)."""
    from .explore.compare import DEFAULT_METHODS  # noqa: PLC0415

    names = list(DEFAULT_METHODS[objective])
    if model.training:
        names = [METHODS[name].memory_variant or name for name in names]
    return names


def _cmd_compare(args: argparse.Namespace) -> int:
    from .cli_output import _dumps, _fmt, _table  # noqa: PLC0415
    from .explore.compare import compare  # imports PuLP lazily

    given = {name: getattr(args, name) for name in MemoryModel.OPTION_NAMES if getattr(args, name) is not None}
    model = MemoryModel(training=True, **given) if given else MemoryModel()
    left = remaining(getattr(args, "deadline_at", None))
    time_limit = min(args.time_limit, max(0.1, left - DEADLINE_MARGIN))  # each method: at most what is left
    names = _compared_methods(args.objective, model)
    refused: dict[str, str] = {}

    def estimate(parsed: Any) -> None:  # every method estimated from the raw JSON, before the graph is built
        refused.update(refusals_raw(parsed, names, {"time_limit": time_limit}, args.accelerators, args.cpus))
        if len(refused) == len(names):
            raise TooMuchSolveWorkError(
                f"compare: every method is estimated past its cap; {names[0]}: {refused[names[0]]}"
            )

    problem = _problem(args, estimate)
    for method, why in refused.items():  # one line each; the table lists them as errors (run_method's estimate)
        sys.stderr.write(f"compare: {method} skipped: {why}\n")
    rows = compare(problem, objective=args.objective, time_limit=time_limit, memory_model=model)
    if args.json:
        from .explore.compare import rows_to_records

        print(_dumps({"objective": args.objective, "rows": rows_to_records(rows)}))
    else:
        table = [
            (
                r.method,
                _fmt(r.objective),
                _fmt(r.ratio_to_best),
                r.status,
                _fmt(r.bound),
                "-" if r.gap is None else f"{r.gap:.2%}",
                f"{r.seconds:.2f}",
                r.reason or "",
            )
            for r in rows
        ]
        print(_table(table, ("method", args.objective, "ratio to best", "status", "bound", "gap", "seconds", "note")))
    return 0


def _cmd_export(args: argparse.Namespace) -> int:
    from .pipeline.export import export_json, export_plan

    problem = load_problem(args.graph)
    placement = load_placement(args.plan, problem.graph, problem.devices)
    export = export_plan(
        problem,
        placement,
        args.target,
        virtual=args.virtual,
        tensor_parallel=args.tensor_parallel,
        data_parallel=args.data_parallel,
        schedule=args.schedule,
    )
    print(export_json(export) if args.json else export.text, end="" if not args.json else "\n")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit status (2 for bad input)."""
    parser = build_parser(_subcommand(sys.argv[1:] if argv is None else argv))
    args = parser.parse_args(argv)
    handlers = {"solve": _cmd_solve, "evaluate": _cmd_evaluate, "compare": _cmd_compare, "export": _cmd_export}
    if args.command == "predict":
        from .perf.cli import cmd_predict

        handlers["predict"] = cmd_predict
    elif args.command == "plan":
        from .perf.plan_cli import run_plan

        handlers["plan"] = run_plan
    elif args.command == "graph":
        from .modelling.graph_cli import cmd_graph

        handlers["graph"] = cmd_graph
    elif args.command == "calibrate":
        from .perf.calibrate import cmd_calibrate

        handlers["calibrate"] = cmd_calibrate
    elif args.command == "measure":
        from .perf.measure import cmd_measure

        handlers["measure"] = cmd_measure
    try:
        # from the command line (argv None), a C call that outlives the deadline ends the process
        seconds = args.deadline
        if seconds is not None and argv is None:  # the whole command: the imports count too
            seconds = max(0.0, seconds - process_age())
        with deadline(seconds, args.command, hard=argv is None) as args.deadline_at:
            status = handlers[args.command](args)
            if sys.stdout is not None:  # (None when the command runs with stdout closed, ``>&-``)
                sys.stdout.flush()  # a closed pipe surfaces here, inside the handler below
        return status
    except PlacementError as exc:
        sys.stderr.write(f"error: {exc}\n")
        return 2
    except BrokenPipeError:
        # The reader went away (``| head``): stop quietly, and keep Python from complaining at exit.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
    except KeyboardInterrupt:  # pragma: no cover
        sys.stderr.write("interrupted\n")
        return 130
