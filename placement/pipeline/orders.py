"""The order in which each device runs its units under each schedule (torch's action lists).

One stage per device (``inference``, ``gpipe``, ``1f1b``): :func:`unit_order`; virtual stages (``interleaved``,
``zbh1``): torch.distributed.pipelining's rank arithmetic. See :mod:`placement.pipeline.schedule` for the rules.
"""

from __future__ import annotations

from ..errors import PlacementError
from ..model import Placement, Problem, ScheduleKind
from .events import Action
from .registry import SCHEDULES, schedule_spec


def _unit_dependencies(problem: Problem, placement: Placement, training: bool) -> set[tuple[int, str, int, str]]:
    """(stage a, phase, stage b, phase) pairs: b's unit waits for a's unit of the same microbatch."""
    graph = problem.graph
    position = {n: k for k, stage in enumerate(placement.stages) for n in stage.nodes}
    deps = set()
    for edge in graph.edges:
        a, b = position.get(edge.source), position.get(edge.target)
        if a is None or b is None or a == b:
            continue
        pa = "B" if graph.node_by_id[edge.source].is_backward else "F"
        pb = "B" if graph.node_by_id[edge.target].is_backward else "F"
        if not training and (pa == "B" or pb == "B"):
            continue
        deps.add((a, pa, b, pb))
    return deps


def unit_order(schedule: str, position: int, stages: int, microbatches: int) -> list[tuple[str, int]]:
    """The order in which the device at ``position`` (of ``stages``) runs its units (one stage per device)."""
    m = microbatches
    if schedule == ScheduleKind.INFERENCE:
        return [("F", i) for i in range(m)]
    if schedule == ScheduleKind.GPIPE:
        return [("F", i) for i in range(m)] + [("B", i) for i in range(m)]
    warmup = min(stages - position - 1, m)
    order = [("F", i) for i in range(warmup)]
    for i in range(m - warmup):
        order += [("F", warmup + i), ("B", i)]
    order += [("B", i) for i in range(m - warmup, m)]
    return order


def _torch_rank_ops(
    rank: int, ranks: int, virtual: int, microbatches: int, zero_bubble: bool, gradients_flow_forward: bool = False
) -> list[Action]:
    """torch.distributed.pipelining's interleaved 1F1B / interleaved zero-bubble order for one rank.

    The same arithmetic as torch's ``ScheduleInterleaved1F1B`` / ``ScheduleInterleavedZeroBubble``
    with ``_get_1f1b_rank_ops`` (the lock-step padding with ``None`` dropped): see the module docstring.
    With ``gradients_flow_forward`` rank ``r`` defers ``ranks - 1 - r`` weight passes instead of ``r``.
    """
    deferred = ranks - 1 - rank if gradients_flow_forward else rank
    # With one stage per device the rounds play no part (ZB-H1 proper): any M is fine.
    rounds = max(1, microbatches // ranks) if virtual > 1 else 1
    per_round = microbatches // rounds
    if microbatches % rounds:
        raise PlacementError(
            f"the {'zbh1' if zero_bubble else 'interleaved'} schedule needs the number of "
            f"microbatches to be a multiple of {rounds} (got {microbatches})"
        )
    total = virtual * microbatches
    factor = 1 if zero_bubble else 2
    warmup = min((virtual - 1) * per_round + factor * (ranks - 1 - rank), total)
    fwd_bwd = total - warmup
    cooldown = total - fwd_bwd

    def forward_stage(step: int) -> int:
        return ((step // per_round) % virtual) * ranks + rank

    def backward_stage(step: int) -> int:
        return (virtual - 1 - ((step - warmup) // per_round) % virtual) * ranks + rank

    counters: dict[tuple[str, int], int] = {}

    def take(op: str, stage: int) -> Action:
        index = counters.get((op, stage), 0)
        counters[(op, stage)] = index + 1
        return Action(stage, op, index)

    backward_op = "I" if zero_bubble else "B"
    ops: list[Action] = []
    backward_steps: list[int] = []
    weights_done = 0
    for step in range(warmup + fwd_bwd + cooldown):
        if step < warmup:
            ops.append(take("F", forward_stage(step)))
            continue
        if step < warmup + fwd_bwd:
            ops.append(take("F", forward_stage(step)))
        ops.append(take(backward_op, backward_stage(step)))
        backward_steps.append(step)
        # Rank r defers its first r weight passes (ZB-H1: they fill the drain bubble).
        if zero_bubble and step - warmup >= deferred:
            ops.append(take("W", backward_stage(backward_steps[weights_done])))
            weights_done += 1
    while zero_bubble and weights_done < len(backward_steps):
        ops.append(take("W", backward_stage(backward_steps[weights_done])))
        weights_done += 1
    return ops


def device_actions(
    schedule: str, rank: int, ranks: int, microbatches: int, virtual: int = 1, gradients_flow_forward: bool = False
) -> list[Action]:
    """The order in which device ``rank`` (of ``ranks``) runs its units under ``schedule``.

    With ``virtual`` stages per device, device ``rank`` runs stages ``rank, rank + ranks, ...``
    (``"interleaved"`` and ``"zbh1"`` only; the others need ``virtual == 1``).
    ``gradients_flow_forward`` (ZB-H1): see :func:`gradients_flow_forward`.
    """
    schedule_spec(schedule)  # a PlacementError naming the schedules if it is none
    if schedule in SCHEDULES:
        if virtual != 1:
            raise PlacementError(f"the {schedule} schedule runs one stage per device (got {virtual} virtual stages)")
        return [Action(rank, op, m) for op, m in unit_order(schedule, rank, ranks, microbatches)]
    return _torch_rank_ops(rank, ranks, virtual, microbatches, schedule == ScheduleKind.ZBH1, gradients_flow_forward)


def gradients_flow_forward(problem: Problem, placement: Placement) -> bool:
    """True if the graph's backward edges between stages mostly run from earlier to later stages.

    Real pipelines pass gradients from the last stage back to the first, and ZB-H1 lets device
    ``d`` defer ``d`` weight passes to fill the drain bubble at its end. Some graphs (the
    paper's training workloads) orient the gradient edges like the forward ones (gradient of
    layer k -> gradient of layer k + 1); their backward pass then drains towards the last
    stage, and ZB-H1 mirrors the deferral: device ``d`` of ``D`` defers ``D - 1 - d``.
    """
    forward = backward = 0
    for a, pa, b, pb in _unit_dependencies(problem, placement, True):
        if pa == pb == "B":
            if a < b:
                forward += 1
            else:
                backward += 1
    return forward > backward


def _check_virtual(schedule: str, virtual, n_stages: int) -> int:
    if isinstance(virtual, bool) or not isinstance(virtual, int) or virtual < 1:
        raise PlacementError(f"virtual stages per device must be a positive integer (got {virtual!r})")
    if schedule in SCHEDULES and virtual != 1:
        raise PlacementError(f"the {schedule} schedule runs one stage per device (got {virtual} virtual stages)")
    if n_stages % virtual:
        raise PlacementError(
            f"{n_stages} stages cannot be interleaved with {virtual} virtual stages per device: "
            f"the number of stages must be a multiple of {virtual}"
        )
    return virtual
