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

``--deadline SECONDS`` (before or after the subcommand) bounds the whole command's wall clock
(:mod:`placement.budget`): methods with a time limit get what is left; past it, one line and exit 2.

Bad input exits with status 2 and one line on stderr naming the file, the node/edge/field
and the rule broken - never a traceback. ``--json`` output is strict JSON (no ``Infinity``:
a non-finite number is ``null`` with a reason). A closed pipe (``... | head``) ends the
command quietly.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from collections.abc import Sequence
from typing import Any, NoReturn

from .budget import (
    DEFAULT_MAX_DP_WORK,
    DEFAULT_MAX_IP_SIZE,
    TooMuchSolveWorkError,
    deadline,
    precheck_solve,
    precheck_solve_raw,
    process_age,
    refusals_raw,
    remaining,
)
from .errors import InvalidGraphError, PlacementError, label, one_line, quote
from .evaluate import Evaluation, evaluate, latency_note
from .exact.limits import tie_break_note
from .io import graph_from_dict, load_placement, load_problem, parse_json, read_file_bytes
from .model import CPU_KIND, Objective, Problem, Result
from .pipeline.registry import TORCH_SCHEDULES
from .solve import METHODS, MemoryModel, Option, recomputing_devices, solve


class _Parser(argparse.ArgumentParser):
    """argparse that reports usage errors as one line and exit status 2."""

    def error(self, message: str) -> NoReturn:  # pragma: no cover - exercised through main()
        sys.stderr.write(f"{self.prog}: error: {one_line(message)}\n")
        raise SystemExit(2)


def _number(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {quote(text)}") from None
    if math.isnan(value) or value < 0:
        raise argparse.ArgumentTypeError(f"must be a non-negative number: {quote(text)}")
    return value


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {quote(text)}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be a non-negative integer: {quote(text)}")
    return value


#: Help of ``--deadline`` (a global option, also accepted after the subcommand).
DEADLINE_HELP = (
    "wall-clock seconds for the whole command: methods with a time limit get what is left (and report "
    "their best feasible plan); past it the command stops with one line and exit status 2"
)

#: Seconds of a ``--deadline`` kept back from a method's time limit, for reading its result and printing.
DEADLINE_MARGIN = 0.5


#: Subcommands of the transformer models (:mod:`placement.perf`), registered with their flags only when named:
#: their modules take about 0.05 s to import, which a refusal of ``solve`` should not pay (issue 27.2).
PERF_COMMANDS = {
    "predict": "iteration time, throughput and memory of a Megatron-LM run (flags after --)",
    "plan": "fastest launchable transformer layout (Megatron / torchtitan / DeepSpeed)",
}


def _subcommand(argv: Sequence[str]) -> str | None:
    """The subcommand named in ``argv`` (the first word not an option or ``--deadline``'s value), or None."""
    words = iter(argv)
    for word in words:
        if word == "--deadline":
            next(words, None)
        elif not word.startswith("-"):
            return word
    return None


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The CLI's parser; given the ``command`` about to run, the other perf subcommands are stubs (lazy imports)."""
    parser = _Parser(prog="python -m placement", description="Exact device placement of DNN operator graphs.")
    parser.add_argument("--deadline", type=_number, default=None, help=DEADLINE_HELP)
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    solve_cmd = commands.add_parser("solve", help="find a placement of a graph")
    solve_cmd.add_argument("graph", help="graph file in the paper's JSON format")
    solve_cmd.add_argument(
        "--method",
        default="dp",
        choices=sorted([*METHODS, "multidim"]),
        help="solver (default: dp): "
        + "; ".join(f"{n}: {m.title}" for n, m in METHODS.items())
        + "; multidim: data x tensor x pipeline parallelism of a Piper file or of our graph"
        + " (JSON or .onnx; options generated)",
    )
    solve_cmd.add_argument("--devices", type=_count, default=None, help="multidim: total devices (override)")
    solve_cmd.add_argument(
        "--count-step",
        type=_count,
        default=None,
        help="multidim, several kinds: stages on all but the last kind use multiples of this",
    )
    _device_options(solve_cmd)
    _method_flags(solve_cmd)
    solve_cmd.add_argument("--json", action="store_true", help="print one JSON object")
    solve_cmd.add_argument(
        "--max-work",
        type=_number,
        default=None,
        help=f"refuse a DP (dp, memory-aware, pipedream, an integer program's warm start) estimated past this many "
        f"kernel steps (default {DEFAULT_MAX_DP_WORK:,}; inf: no cap)",
    )
    solve_cmd.add_argument(
        "--max-ip-size",
        type=_number,
        default=None,
        help=f"refuse an integer program estimated past this size, (groups + edges) x devices "
        f"(default {DEFAULT_MAX_IP_SIZE:,}; inf: no cap)",
    )

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
    group = compare_cmd.add_argument_group(
        "training memory model (any of these: the DP and the contiguous IP plan with it, other plans are checked)"
    )
    spec = METHODS["memory-aware"]
    for name in MemoryModel.OPTION_NAMES:
        option = spec.option(name)
        if option.type is bool:
            group.add_argument(option.flag, dest=name, action="store_const", const=True, default=None, help=option.help)
        elif option.choices:
            _choice_flag(group, option, option.help)
        else:
            group.add_argument(
                option.flag,
                dest=name,
                type=_count if option.type is int else _number,
                default=None,
                help=f"{option.help} (default {option.default})",
            )
    compare_cmd.add_argument("--json", action="store_true")

    export_cmd = commands.add_parser("export", help="a plan as Megatron-LM / torch / DeepSpeed pipeline config")
    export_cmd.add_argument("plan", help="split file of the plan: {fpgas: [{nodes}], cpus: [{nodes}]}")
    export_cmd.add_argument(
        "--graph", required=True, help="the plan's graph file (module names from node names or a 'module' field)"
    )
    export_cmd.add_argument("--to", required=True, dest="target", help="megatron, torch or deepspeed")
    export_cmd.add_argument("--virtual", type=_count, default=1, help="virtual stages per device (default 1)")
    export_cmd.add_argument("--tensor-parallel", type=_count, default=1, help="Megatron tensor-parallel size")
    export_cmd.add_argument("--data-parallel", type=_count, default=1, help="Megatron data-parallel size")
    export_cmd.add_argument("--schedule", default="1f1b", help=f"torch: {', '.join(TORCH_SCHEDULES)}")
    export_cmd.add_argument("--json", action="store_true", help="print the configuration as JSON")
    if command in (None, "predict") or command not in commands.choices and command not in PERF_COMMANDS:
        from .perf.cli import register as register_predict  # the transformer performance model's subcommand

        register_predict(commands)
    else:  # never parsed: another subcommand runs (its name, help and the choices in errors are the same)
        commands.add_parser("predict", help=PERF_COMMANDS["predict"])
    if command in (None, "plan") or command not in commands.choices and command not in PERF_COMMANDS:
        from .perf.plan_cli import add_plan_parser  # the launchable-layout planner (placement/perf/search.py)

        add_plan_parser(commands, _count)
    else:
        commands.add_parser("plan", help=PERF_COMMANDS["plan"])
    for sub in commands.choices.values():  # also after the subcommand: ``solve g.json --deadline 5``
        sub.add_argument("--deadline", type=_number, default=argparse.SUPPRESS, help=DEADLINE_HELP)
    return parser


def _choice_flag(group: Any, option: Option, text: str) -> None:
    """A flag taking one of the option's choices; an option with a True alias also stands alone for it.

    ``--recompute`` alone is ``--recompute always`` (the flag was a switch before it took a value).
    """
    alone = next((choice for alias, choice in option.aliases if alias is True), None)
    extra: dict[str, Any] = {"nargs": "?", "const": alone} if alone is not None else {}
    group.add_argument(option.flag, dest=option.name, choices=option.choices, default=None, help=text, **extra)


def _method_options() -> dict[str, Option]:
    """Every option with a CLI flag, once (by name) across the registry."""
    options: dict[str, Option] = {}
    for spec in METHODS.values():
        for option in spec.options:
            if option.cli:
                options.setdefault(option.name, option)
    return options


def _method_flags(command: argparse.ArgumentParser) -> None:
    """One flag per method option of the registry; the help names the methods taking it."""
    group = command.add_argument_group("method options (each applies to the methods named)")
    for name, option in _method_options().items():
        takers = [m for m, spec in METHODS.items() if name in spec.option_names]
        default = f"; default {option.default}" if option.default is not None else ""
        text = f"{option.help} ({', '.join(takers)}{default})"
        if option.type is bool:
            group.add_argument(
                option.flag, dest=name, action="store_const", const=not option.default, default=None, help=text
            )
        elif option.choices:
            _choice_flag(group, option, text)
        else:
            parse = _count if option.type is int else _number
            group.add_argument(option.flag, dest=name, type=parse, default=None, help=text)


def _given_options(args: argparse.Namespace) -> dict[str, Any]:
    """The method options given on the command line; one the method does not take is an error."""
    spec = METHODS[args.method]
    given = {}
    for name, option in _method_options().items():
        value = getattr(args, name, None)
        if value is None:
            continue
        if name not in spec.option_names:
            takers = ", ".join(m for m, other in METHODS.items() if name in other.option_names)
            raise PlacementError(
                f"option {option.flag} does not apply to --method {args.method} (it applies to: {takers})"
            )
        given[name] = value
    return given


def _device_options(command: argparse.ArgumentParser) -> None:
    command.add_argument("--accelerators", type=_count, default=None, help="override the file's maxFPGAs")
    command.add_argument("--cpus", type=_count, default=None, help="override the file's maxCPUs")
    command.add_argument("--memory", type=_number, default=None, help="override maxSizePerFPGA (bytes)")


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


def _strict(value: Any) -> Any:
    """``value`` with every non-finite float replaced by None (strict JSON has no Infinity or NaN)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: _strict(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_strict(item) for item in value]
    return value


def _dumps(data: dict[str, Any]) -> str:
    return json.dumps(_strict(data), allow_nan=False)


def _latency_fields(problem: Problem, evaluation: Evaluation) -> dict[str, Any]:
    """``latency`` (None when not finite) and, then, ``latency_reason``."""
    out: dict[str, Any] = {"latency": _finite(evaluation.latency)}
    if out["latency"] is None:
        out["latency_reason"] = latency_note(problem, evaluation)
    return out


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
    if evaluation is not None and result.placement is not None:
        out["max_load"] = _finite(evaluation.max_load)
        out.update(_latency_fields(problem, evaluation))
        out["order"] = [str(stage.device) for stage in result.placement.stages]
    model = _memory_model_of(result)
    if model is not None and result.placement is not None:
        out["memory_model"] = model.describe()
        out["peak_memory"] = [
            {
                "device": str(b.device),
                "bytes": b.peak,
                "cap": b.cap,
                "weights": b.weights,
                "gradients": b.gradients,
                "optimizer": b.optimizer,
                "activations": b.activations,
                "free": b.free,
            }
            for b in model.breakdown(problem, result.placement, recomputing_devices(result))
        ]
    if result.reason:
        out["reason"] = result.reason
    out["stats"] = {key: value for key, value in result.stats}
    return _strict(out)


def _memory_model_of(result: Result) -> MemoryModel | None:
    """The training memory model a memory-aware result was planned with (from its stats), else None."""
    if not METHODS[result.method].takes_memory_model or result.stat("schedule") is None:
        return None
    settings = {name: result.stat(name) for name in MemoryModel.OPTION_NAMES}
    return MemoryModel(training=True, **settings)  # the DP reports its recompute choice, the IP a bool


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


def _latency_text(problem: Problem, evaluation: Evaluation) -> str:
    if math.isfinite(evaluation.latency):
        return _fmt(evaluation.latency)
    return f"not defined ({latency_note(problem, evaluation)})"


def _print_solution(problem: Problem, result: Result) -> None:
    print(f"method: {result.method}   status: {result.status}   seconds: {result.seconds:.3f}")
    if result.reason:
        print(f"reason: {result.reason}")
    if result.placement is None:
        return
    if (note := tie_break_note(result)) is not None:
        print(f"note: {note} (--tie-break-max-pairs inf makes the pass)")
    evaluation = evaluate(problem, result.placement)
    label = "time per sample (max-load)" if result.objective_kind == Objective.THROUGHPUT else "latency"
    print(f"{label}: {_fmt(result.objective)}")
    if result.gap:
        print(f"bound: {_fmt(result.bound)}   gap: {result.gap:.2%}")
    print(f"evaluator: max-load {_fmt(evaluation.max_load)}, latency {_latency_text(problem, evaluation)}")
    rows = [
        (
            str(d.device),
            len(d.nodes),
            _fmt(d.compute),
            _fmt(d.communication),
            _fmt(d.load),
            "-" if d.device.kind == CPU_KIND else f"{d.memory:,.0f}",
        )
        for d in evaluation.devices
    ]
    print(_table(rows, ("device", "nodes", "compute", "comm", "load", "memory")))
    model = _memory_model_of(result)
    if model is not None:
        print(f"memory model: {model.describe()}")
        gib = 2.0**30
        peaks = [
            (
                str(b.device),
                f"{b.peak:,.0f}",
                "-" if math.isinf(b.cap) else f"{b.cap:,.0f}",
                *(f"{part / gib:.3f}" for part in (b.weights, b.gradients, b.optimizer, b.activations)),
                "-" if math.isinf(b.free) else f"{b.free / gib:.3f}",
            )
            for b in model.breakdown(problem, result.placement, recomputing_devices(result))
        ]
        header = ("device", "peak memory", "capacity", "weights GiB", "grads GiB", "optimizer GiB", "activ. GiB")
        print(_table(peaks, (*header, "free GiB")))


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
    if shown:
        sys.stderr.write("\n")
    if args.json:
        print(_dumps(result_to_json(problem, result)))
    else:
        _print_solution(problem, result)
    return 0


def _cmd_evaluate(args: argparse.Namespace) -> int:
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
    try:
        # from the command line (argv None), a C call that outlives the deadline ends the process
        seconds = args.deadline
        if seconds is not None and argv is None:  # the whole command: the imports count too
            seconds = max(0.0, seconds - process_age())
        with deadline(seconds, args.command, hard=argv is None) as args.deadline_at:
            status = handlers[args.command](args)
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
