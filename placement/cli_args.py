"""The command line's parser (:mod:`placement.cli`): subcommands, the method registry's flags, number types."""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from .budget import (
    DEFAULT_MAX_DP_WORK,
    DEFAULT_MAX_IP_SIZE,
)
from .errors import PlacementError, one_line, quote
from .pipeline.registry import TORCH_SCHEDULES
from .solve import METHODS, MemoryModel, Option


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
    "graph": "a transformer's graph priced by the performance model, in the paper's JSON format",
    "calibrate": "measure this device's kernel rates with torch and write a profile (JSON)",
    "measure": "time real training iterations of a Megatron-LM model with torch, against the prediction",
}


#: The other subcommands' help lines: given another known subcommand, each is registered with its name and help
#: only (never parsed), which saves building its flags at the start of every command (about 1 ms).
BASE_COMMANDS = {
    "solve": "find a placement of a graph",
    "evaluate": "max-load and latency of a given split",
    "compare": "every method side by side",
    "export": "a plan as Megatron-LM / torch / DeepSpeed pipeline config",
}


def _builds(command: str | None, name: str) -> bool:
    """Whether ``build_parser(command)`` gives subcommand ``name`` its flags: when it runs, when no or an unknown
    subcommand is named (help and errors list every subcommand as before), not when another one runs."""
    return command in (None, name) or (command not in BASE_COMMANDS and command not in PERF_COMMANDS)


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
    """The CLI's parser; given the ``command`` about to run, the other subcommands are stubs (lazy imports).

    A stub has the subcommand's name and help only: it is never parsed, since another subcommand runs.
    """
    parser = _Parser(prog="python -m placement", description="Exact device placement of DNN operator graphs.")
    parser.add_argument("--deadline", type=_number, default=None, help=DEADLINE_HELP)
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    builders = {
        "solve": _solve_parser,
        "evaluate": _evaluate_parser,
        "compare": _compare_parser,
        "export": _export_parser,
    }
    for name, text in BASE_COMMANDS.items():  # in this order (the order help and errors list them)
        sub = commands.add_parser(name, help=text)
        if _builds(command, name):
            builders[name](sub)
    if _builds(command, "predict"):
        from .perf.cli import register as register_predict  # the transformer performance model's subcommand

        register_predict(commands)
    else:  # never parsed: another subcommand runs (its name, help and the choices in errors are the same)
        commands.add_parser("predict", help=PERF_COMMANDS["predict"])
    if _builds(command, "plan"):
        from .perf.plan_cli import add_plan_parser  # the launchable-layout planner (placement/perf/search.py)

        add_plan_parser(commands, _count)
    else:
        commands.add_parser("plan", help=PERF_COMMANDS["plan"])
    if _builds(command, "graph"):
        from .modelling.graph_cli import register as register_graph  # a priced transformer graph file

        register_graph(commands)
    else:
        commands.add_parser("graph", help=PERF_COMMANDS["graph"])
    if _builds(command, "calibrate"):
        from .perf.calibrate import register as register_calibrate  # torch microbenchmarks -> a device profile

        register_calibrate(commands)
    else:
        commands.add_parser("calibrate", help=PERF_COMMANDS["calibrate"])
    if _builds(command, "measure"):
        from .perf.measure import register as register_measure  # timed training iterations vs the prediction

        register_measure(commands)
    else:
        commands.add_parser("measure", help=PERF_COMMANDS["measure"])
    for sub in commands.choices.values():  # also after the subcommand: ``solve g.json --deadline 5``
        sub.add_argument("--deadline", type=_number, default=argparse.SUPPRESS, help=DEADLINE_HELP)
    return parser


def _solve_parser(solve_cmd: argparse.ArgumentParser) -> None:
    """The ``solve`` subcommand's arguments."""
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
        "--trace",
        default=None,
        help="write the plan's pipeline schedule (1F1B for a training graph, else streaming inference; "
        "--trace-microbatches) as Chrome/Perfetto trace JSON",
    )
    solve_cmd.add_argument("--trace-microbatches", type=_count, default=8, help="microbatches traced (default 8)")
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


def _evaluate_parser(eval_cmd: argparse.ArgumentParser) -> None:
    """The ``evaluate`` subcommand's arguments."""
    eval_cmd.add_argument("graph")
    eval_cmd.add_argument("split", help="split file: {fpgas: [{nodes}], cpus: [{nodes}]}")
    _device_options(eval_cmd)
    eval_cmd.add_argument("--json", action="store_true")


def _compare_parser(compare_cmd: argparse.ArgumentParser) -> None:
    """The ``compare`` subcommand's arguments."""
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


def _export_parser(export_cmd: argparse.ArgumentParser) -> None:
    """The ``export`` subcommand's arguments."""
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
