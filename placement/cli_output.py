"""What the command line prints (:mod:`placement.cli`): ``--json`` objects (strict JSON) and the text tables."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any

from .evaluate import Evaluation, evaluate, latency_note
from .exact.limits import tie_break_note
from .model import CPU_KIND, Objective, Problem, Result
from .solve import METHODS, MemoryModel, recomputing_devices


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
