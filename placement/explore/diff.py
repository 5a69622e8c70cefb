"""Differences between two plans of one graph ("Compare two plans").

Both plans are scored by the independent evaluator (:func:`placement.evaluate`); the diff lists
the nodes whose device changed, every device's load and memory in each plan with the delta,
and both times per sample. The plans may use different devices (e.g. pinned with 6
accelerators, compared with 4): a device absent from a plan counts as unused there.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import InvalidSplitError
from ..evaluate import evaluate
from ..model import DeviceSlot, Placement, Problem


@dataclass(frozen=True)
class DeviceDelta:
    """One device in both plans (0 load and memory where the plan does not use it)."""

    device: DeviceSlot
    load_a: float
    load_b: float
    memory_a: float
    memory_b: float
    nodes_a: int
    nodes_b: int

    @property
    def load_delta(self) -> float:
        return self.load_b - self.load_a

    @property
    def memory_delta(self) -> float:
        return self.memory_b - self.memory_a


@dataclass(frozen=True)
class PlanDiff:
    """Plan B against plan A: ``moved`` holds ``(node id, device in A, device in B)``."""

    moved: tuple[tuple[int, DeviceSlot | None, DeviceSlot | None], ...]
    devices: tuple[DeviceDelta, ...]
    time_a: float
    time_b: float
    stages_a: int
    stages_b: int

    @property
    def time_delta(self) -> float:
        return self.time_b - self.time_a

    @property
    def identical(self) -> bool:
        return not self.moved and all(d.load_delta == 0 and d.memory_delta == 0 for d in self.devices)


def plan_diff(problem_a: Problem, placement_a: Placement, problem_b: Problem, placement_b: Placement) -> PlanDiff:
    """Compare plan B with plan A (two plans of the same graph's nodes).

    Parameters
    ----------
    problem_a, problem_b : Problem
        The problems the plans belong to (same node ids; devices and latencies may differ).
    placement_a, placement_b : Placement
        The plans.

    Returns
    -------
    PlanDiff
        Moved nodes in node-id order; devices in plan A's pipeline order, then plan B's new ones.

    Raises
    ------
    InvalidSplitError
        When the two graphs do not have the same node ids.
    """
    ids_a = {node.id for node in problem_a.graph.nodes}
    ids_b = {node.id for node in problem_b.graph.nodes}
    if ids_a != ids_b:
        extra = sorted(ids_a ^ ids_b)[:3]
        raise InvalidSplitError(f"plan diff: the two plans are for different graphs (node ids {extra} differ)")
    eval_a, eval_b = evaluate(problem_a, placement_a), evaluate(problem_b, placement_b)
    where_a, where_b = placement_a.device_of, placement_b.device_of
    moved = tuple(
        (node, where_a.get(node), where_b.get(node)) for node in sorted(ids_a) if where_a.get(node) != where_b.get(node)
    )
    order = [stage.device for stage in placement_a.stages]
    order += [stage.device for stage in placement_b.stages if stage.device not in order]
    deltas = []
    for device in order:
        a, b = eval_a.load_of(device), eval_b.load_of(device)
        deltas.append(
            DeviceDelta(
                device=device,
                load_a=a.load if a else 0.0,
                load_b=b.load if b else 0.0,
                memory_a=a.memory if a else 0.0,
                memory_b=b.memory if b else 0.0,
                nodes_a=len(a.nodes) if a else 0,
                nodes_b=len(b.nodes) if b else 0,
            )
        )
    return PlanDiff(
        moved=moved,
        devices=tuple(deltas),
        time_a=eval_a.max_load,
        time_b=eval_b.max_load,
        stages_a=len(placement_a.stages),
        stages_b=len(placement_b.stages),
    )
