"""The plan a scenario carries: the split picked on a page (Tradeoffs, Compare, Plan view), as plain data.

A shared link or scenario card with a picked plan opens on that plan, not on a fresh solve
(issue 26: "the receiver saw no picked plan"). Only the split itself, its devices and what the
method claimed (status, bound) travel; the receiver recomputes the plan's value from the split
with the independent evaluator (:func:`plan_result`), so a link cannot make a page show a number
its plan does not have. Malformed input raises :class:`~placement.errors.InvalidScenarioError`
with one line naming the field.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from .errors import InvalidScenarioError, PlacementError
from .io import devices_to_dict
from .model import Devices, DeviceSlot, Objective, Placement, Problem, Result, Stage, Status, make_result
from .scenario_devices import read_devices

#: Most nodes a carried plan may list (all stages together).
MAX_PLAN_NODES = 100_000
#: Most stages (devices) a carried plan may list.
MAX_PLAN_STAGES = 4096
MAX_PLAN_TEXT = 200
_STATUSES = (Status.OPTIMAL, Status.FEASIBLE)
_KINDS = tuple(Objective)

StagePlain = tuple[str, int, tuple[int, ...], tuple[tuple[int, ...], ...] | None]


@dataclass(frozen=True)
class PickedPlan:
    """A picked plan: its split, label, method and claims; ``devices`` when they differ from the scenario's.

    Parameters
    ----------
    label : str
        What the pages say about it ("Tradeoffs (devices): 6 x A100, ...").
    method : str
        The method that made it.
    stages : tuple of (kind, index, nodes, calls)
        The split: device kind and index, node ids, and the calls (None: one call).
    devices : Devices or None
        The plan's devices when they are not the scenario's (a Tradeoffs point with fewer cards).
    status : str
        ``"optimal"`` or ``"feasible"`` (what the method proved).
    objective_kind : str
        ``"throughput"`` or ``"latency"``.
    bound : float or None
        The method's lower bound, in ms.
    recompute : tuple of int
        Positions of the stages that recompute their activations (memory-aware plans).
    """

    label: str
    method: str
    stages: tuple[StagePlain, ...]
    devices: Devices | None = None
    status: str = Status.FEASIBLE.value
    objective_kind: str = Objective.THROUGHPUT.value
    bound: float | None = None
    recompute: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        where = "plan"
        for name in ("label", "method"):
            value = getattr(self, name)
            if not isinstance(value, str) or not value or len(value) > MAX_PLAN_TEXT:
                raise InvalidScenarioError(
                    f"{where}: field {name!r} must be a non-empty string of at most 200 characters"
                )
        if self.status not in _STATUSES:
            raise InvalidScenarioError(f"{where}: field 'status' must be one of {', '.join(_STATUSES)}")
        if self.objective_kind not in _KINDS:
            raise InvalidScenarioError(f"{where}: field 'objectiveKind' must be one of {', '.join(_KINDS)}")
        if self.devices is not None and not isinstance(self.devices, Devices):
            raise InvalidScenarioError(f"{where}: field 'devices' must be a Devices")
        bound = self.bound
        if bound is not None and (
            isinstance(bound, bool) or not isinstance(bound, (int, float)) or not math.isfinite(bound) or bound < 0
        ):
            raise InvalidScenarioError(f"{where}: field 'bound' must be a finite non-negative number or null")
        object.__setattr__(self, "stages", _check_stages(self.stages, f"{where}: field 'stages'"))
        recompute = self.recompute
        if not isinstance(recompute, (list, tuple)) or not all(
            _is_int(i) and 0 <= i < len(self.stages) for i in recompute
        ):
            raise InvalidScenarioError(f"{where}: field 'recompute' must list stage positions")
        object.__setattr__(self, "recompute", tuple(sorted(set(recompute))))

    def placement(self) -> Placement:
        """The split as a :class:`Placement` (:class:`InvalidScenarioError` when it is not one)."""
        try:
            return Placement(
                tuple(Stage(DeviceSlot(kind, index), nodes, calls) for kind, index, nodes, calls in self.stages)
            )
        except (PlacementError, TypeError, ValueError) as exc:
            raise InvalidScenarioError(f"plan: field 'stages': {exc}") from None


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _ids(value: Any, where: str) -> tuple[int, ...]:
    if not isinstance(value, (list, tuple)) or not all(_is_int(v) and v >= 0 for v in value):
        raise InvalidScenarioError(f"{where} must be a list of node ids (non-negative integers)")
    return tuple(value)


def _check_stages(stages: Any, where: str) -> tuple[StagePlain, ...]:
    if not isinstance(stages, (list, tuple)) or not stages or len(stages) > MAX_PLAN_STAGES:
        raise InvalidScenarioError(f"{where} must be a list of 1 to {MAX_PLAN_STAGES} stages")
    out: list[StagePlain] = []
    total = 0
    for position, stage in enumerate(stages):
        at = f"{where}[{position}]"
        if not isinstance(stage, (list, tuple)) or len(stage) not in (3, 4):
            raise InvalidScenarioError(f"{at} must be [kind, index, node ids] or [kind, index, node ids, calls]")
        kind, index, nodes = stage[0], stage[1], stage[2]
        if not isinstance(kind, str) or not kind or len(kind) > MAX_PLAN_TEXT:
            raise InvalidScenarioError(f"{at}: the device kind must be a non-empty string")
        if not _is_int(index) or index < 0:
            raise InvalidScenarioError(f"{at}: the device index must be a non-negative integer")
        ids = _ids(nodes, f"{at}: nodes")
        total += len(ids)
        if total > MAX_PLAN_NODES:
            raise InvalidScenarioError(f"{where}: at most {MAX_PLAN_NODES:,} nodes")
        calls_raw = stage[3] if len(stage) == 4 else None
        calls = None
        if calls_raw is not None:
            if not isinstance(calls_raw, (list, tuple)) or len(calls_raw) > len(ids):
                raise InvalidScenarioError(f"{at}: calls must be a list of node-id lists")
            calls = tuple(_ids(call, f"{at}: calls") for call in calls_raw)
        out.append((kind, index, ids, calls))
    return tuple(out)


def plan_from_result(result: Result, label: str, devices: Devices | None, recomputing=()) -> PickedPlan | None:
    """The :class:`PickedPlan` of ``result`` (None when it has no plan or is not optimal/feasible)."""
    if result.placement is None or result.status not in _STATUSES:
        return None
    recomputing = set(recomputing or ())
    stages = tuple((s.device.kind, s.device.index, tuple(s.nodes), s.calls) for s in result.placement.stages if s.nodes)
    kept = [s for s in result.placement.stages if s.nodes]
    bound = result.bound if result.bound is not None and math.isfinite(result.bound) else None
    return PickedPlan(
        label=label[:MAX_PLAN_TEXT] or result.method,
        method=result.method,
        stages=stages,
        devices=devices,
        status=str(result.status),
        objective_kind=str(result.objective_kind),
        bound=bound,
        recompute=tuple(i for i, s in enumerate(kept) if s.device in recomputing),
    )


def plan_result(plan: PickedPlan, problem: Problem, source: str = "link") -> Result:
    """The :class:`Result` the pages show for ``plan`` on ``problem``, its value recomputed from the split.

    The value is the evaluator's max-load (throughput; plus each recomputing stage's forward
    compute, as the memory-aware methods count it) or latency. Raises
    :class:`InvalidScenarioError` naming ``source`` when the split does not fit the problem
    (a node missing or twice, a device it does not have, memory).
    """
    from .evaluate import evaluate
    from .exact.memory_aware import plan_value

    placement = plan.placement()
    known = problem.graph.node_by_id
    for stage in placement.stages:  # the evaluator expects the graph's own nodes
        unknown = next((node for node in stage.nodes if node not in known), None)
        if unknown is not None:
            raise InvalidScenarioError(
                f"{source}: the picked plan does not fit this graph: {stage.device} holds node {unknown}, "
                "not a node of the graph"
            )
    evaluation = evaluate(problem, placement)
    if not evaluation.feasible:
        raise InvalidScenarioError(
            f"{source}: the picked plan does not fit this graph and devices: {evaluation.violations[0]}"
        )
    recomputing = tuple(placement.stages[i].device for i in plan.recompute)
    if plan.objective_kind == Objective.LATENCY:
        value = evaluation.latency
    else:
        value = plan_value(problem, placement, recomputing) if recomputing else evaluation.max_load
    if not math.isfinite(value):
        raise InvalidScenarioError(f"{source}: the picked plan has no finite {plan.objective_kind} value")
    bound = None if plan.bound is None else min(plan.bound, value)
    gap = None if bound is None else ((value - bound) / value if value > 0 else 0.0)
    stats = {"recompute_devices": ",".join(f"{d.kind}:{d.index}" for d in recomputing)} if recomputing else {}
    return make_result(
        plan.method,
        plan.status,
        seconds=0.0,
        objective=value,
        placement=placement,
        objective_kind=plan.objective_kind,
        bound=bound,
        gap=gap,
        stats=stats,
    )


def plan_to_plain(plan: PickedPlan) -> dict[str, Any]:
    """The plan as plain JSON data (its devices in :func:`placement.io.devices_to_dict`'s format)."""
    out: dict[str, Any] = {
        "label": plan.label,
        "method": plan.method,
        "status": plan.status,
        "objectiveKind": plan.objective_kind,
        "stages": [
            [kind, index, list(nodes)] + ([[list(c) for c in calls]] if calls is not None else [])
            for kind, index, nodes, calls in plan.stages
        ],
    }
    if plan.bound is not None:
        out["bound"] = plan.bound
    if plan.recompute:
        out["recompute"] = list(plan.recompute)
    if plan.devices is not None:
        out["devices"] = devices_to_dict(plan.devices)
    return out


_PLAN_KEYS = {"label", "method", "status", "objectiveKind", "stages", "bound", "recompute", "devices"}


def plan_from_plain(data: Any, where: str) -> PickedPlan:
    """Read :func:`plan_to_plain`'s data (and the older link format's devices); one-line errors naming ``where``."""
    if not isinstance(data, dict):
        raise InvalidScenarioError(f"{where} must be an object")
    unknown = sorted(set(data) - _PLAN_KEYS)
    if unknown:
        raise InvalidScenarioError(f"{where}: unknown field {unknown[0][:40]!r}")
    for key in ("label", "method", "stages"):
        if key not in data:
            raise InvalidScenarioError(f"{where}: missing field {key!r}")
    devices = read_devices(data["devices"], f"{where}: devices") if data.get("devices") is not None else None
    try:
        return PickedPlan(
            label=data["label"],
            method=data["method"],
            stages=data["stages"],
            devices=devices,
            status=data.get("status", Status.FEASIBLE.value),
            objective_kind=data.get("objectiveKind", Objective.THROUGHPUT.value),
            bound=data.get("bound"),
            recompute=data.get("recompute", ()),
        )
    except InvalidScenarioError as exc:
        raise InvalidScenarioError(str(exc).replace("plan: ", f"{where}: ", 1)) from None
