"""``python -m placement solve FILE --method multidim``: read a Piper file, plan, print the stages.

FILE may also be one of our graphs (paper format, a saved builder graph, or an ``.onnx`` model): its options
come from :func:`~placement.multidim.convert.options_from_graph`.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import replace

from ..budget import precheck_multidim
from ..errors import InvalidDevicesError, InvalidGraphError
from .convert import DEFAULT_MICROBATCHES, options_from_graph
from .dp import solve_multidim
from .evaluate import evaluate_plan
from .io import is_piper_dict, piper_from_dict
from .model import MultiProblem


def problem_from_args(args: argparse.Namespace) -> MultiProblem:
    """The Piper file (or our graph, with generated options) with ``--devices``, ``--microbatches`` and
    ``--memory`` overrides applied."""
    problem = _read(args)
    devices = getattr(args, "devices", None)
    memory = getattr(args, "memory", None)
    if devices is not None or memory is not None:
        if len(problem.kinds) != 1:
            raise InvalidDevicesError(f"{args.graph}: --devices/--memory need a file with one device kind")
        kind = problem.kinds[0]
        kind = replace(
            kind, count=kind.count if devices is None else devices, memory=kind.memory if memory is None else memory
        )
        problem = replace(problem, kinds=(kind,))
    if getattr(args, "microbatches", None) is not None:
        problem = replace(problem, microbatches=args.microbatches)
    return problem


def _read(args: argparse.Namespace) -> MultiProblem:
    """A Piper file as is; a paper-format/builder JSON graph or an ONNX model through ``options_from_graph``."""
    from ..io import parse_json, parse_problem, read_file_bytes  # noqa: PLC0415

    path = str(args.graph)
    microbatches = getattr(args, "microbatches", None) or DEFAULT_MICROBATCHES
    if path.lower().endswith(".onnx"):
        from ..modelling.onnx import import_onnx  # noqa: PLC0415

        graph = import_onnx(read_file_bytes(path, InvalidGraphError), path).graph
        return options_from_graph(graph, microbatches=microbatches)
    data = read_file_bytes(path, InvalidGraphError)
    parsed = parse_json(data, path, InvalidGraphError)
    precheck_multidim(parsed)  # refuses a lattice certainly past the caps before any model is built
    if is_piper_dict(parsed):
        return piper_from_dict(parsed, path)
    return options_from_graph(parse_problem(data, path), microbatches=microbatches)


def plan_records(problem: MultiProblem, plan) -> list[dict]:
    """One JSON-ready record per stage, with the evaluator's numbers (units in the keys: ms, bytes)."""
    ev = evaluate_plan(problem, plan)
    out = []
    for stage, cost in zip(plan.stages, ev.stages):
        out.append(
            {
                "nodes": list(stage.nodes),
                "d": stage.d,
                "t": stage.t,
                "kind": stage.kind,
                "options": list(stage.options),
                "y": cost.y,
                "memory_bytes": cost.memory,
                "memory_cap_bytes": cost.memory_cap,
                "time_per_sample_ms": cost.time,
            }
        )
    return out


def cmd_solve(args: argparse.Namespace) -> int:
    """Run the planner and print a table (or ``--json``); times in ms, memory in GiB (bytes in JSON)."""
    problem = problem_from_args(args)
    result = solve_multidim(problem, count_step=getattr(args, "count_step", None) or 1)
    records = plan_records(problem, result.plan) if result.plan is not None else []
    if getattr(args, "json", False):
        print(
            json.dumps(
                {
                    "status": str(result.status),
                    "method": result.method,
                    "time_per_sample_ms": result.time_per_sample if records else None,
                    "bound_ms": result.bound,
                    "restriction": result.restriction,
                    "reason": result.reason,
                    "seconds": result.seconds,
                    "stages": records,
                }
            )
        )
        return 0
    restriction = f" ({result.restriction})" if result.restriction else ""
    print(f"status: {result.status}{restriction}" + (f": {result.reason}" if result.reason else ""))
    if not records:
        return 0
    print(f"time per sample: {result.time_per_sample:.6g} ms   stages: {len(records)}   solve: {result.seconds:.2f} s")
    print(f"{'stage':>5} {'nodes':>12} {'d x t':>9} {'kind':>8} {'recompute':>9} {'memory GiB':>14} {'ms/sample':>12}")
    for k, r in enumerate(records):
        nodes = f"{r['nodes'][0]}..{r['nodes'][-1]}" if len(r["nodes"]) > 1 else str(r["nodes"][0])
        recompute = sum("recomp" in o for o in r["options"])
        memory = f"{r['memory_bytes'] / 2**30:>6.2f}/{r['memory_cap_bytes'] / 2**30:<7.2f}"
        print(
            f"{k:>5} {nodes:>12} {str(r['d']) + ' x ' + str(r['t']):>9} {r['kind']:>8} {recompute:>9} "
            f"{memory} {r['time_per_sample_ms']:>12.6g}"
        )
    return 0
