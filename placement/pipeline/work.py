"""Work per device and microbatch of a pipeline schedule: the forward and backward units (and ZB-H1's split).

The rule (forward + backward unit = the evaluator's load, exactly) is stated in :mod:`placement.pipeline.schedule`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

from ..errors import InvalidSplitError, PlacementError
from ..model import CPU_KIND, DeviceSlot, Placement, Problem
from .events import StageWork

#: Default share of the backward compute that computes weight gradients (1:1 split).
DEFAULT_WEIGHT_FRACTION = 0.5


#: Field (node or graph top level) giving the weight-gradient share of backward latency.
WEIGHT_FRACTION_FIELD = "weightGradFraction"


def weight_fractions(graph, weight_fraction: float | None = None) -> dict[int, float]:
    """Weight-gradient share of every backward node's latency (module docstring: the split ratio).

    Raises
    ------
    PlacementError
        For a ``weightGradFraction`` (or ``weight_fraction``) that is not a number in [0, 1].
    """

    def check(value, where: str) -> float:
        if (
            isinstance(value, bool)
            or not isinstance(value, (int, float))
            or not math.isfinite(value)
            or not 0 <= value <= 1
        ):
            raise PlacementError(
                f"{where}: field '{WEIGHT_FRACTION_FIELD}' must be a number from 0 to 1 (got {value!r})"
            )
        return float(value)

    if weight_fraction is not None:
        value = check(weight_fraction, "weight_fraction")
        return {n.id: value for n in graph.nodes if n.is_backward}
    default = DEFAULT_WEIGHT_FRACTION
    if WEIGHT_FRACTION_FIELD in graph.extra:
        default = check(graph.extra[WEIGHT_FRACTION_FIELD], "graph")
    return {
        n.id: (check(n.extra[WEIGHT_FRACTION_FIELD], f"node {n.id}") if WEIGHT_FRACTION_FIELD in n.extra else default)
        for n in graph.nodes
        if n.is_backward
    }


def stage_work(
    problem: Problem,
    placement: Placement,
    recompute: Iterable[DeviceSlot] = (),
    run_on: Sequence[DeviceSlot] | None = None,
    weight_fraction: float | None = None,
) -> tuple[StageWork, ...]:
    """Per-microbatch forward/backward work of every stage, in pipeline order.

    Parameters
    ----------
    problem, placement : Problem, Placement
        The plan.
    recompute : iterable of DeviceSlot
        Devices (of ``run_on``) that recompute their forward pass in the backward pass.
    run_on : sequence of DeviceSlot, optional
        The device each stage runs on (default: the stage's own device; interleaved
        schedules put several stages on one device).
    weight_fraction : float, optional
        Overrides the graph's weight-gradient split ratio (see :func:`weight_fractions`).
    """
    graph, devices = problem.graph, problem.devices
    kinds = {kind.name: kind for kind in devices.accelerators}
    recompute = set(recompute)
    fractions = weight_fractions(graph, weight_fraction)
    out = []
    for position, stage in enumerate(placement.stages):
        device = stage.device if run_on is None else run_on[position]
        nodes = set(stage.nodes)
        unknown = nodes - set(graph.node_by_id)
        if unknown:
            raise InvalidSplitError(f"{stage.device}: node {min(unknown)} is not in the graph")
        is_cpu = device.kind == CPU_KIND
        if is_cpu:
            latency = {n: graph.node_by_id[n].cpu_latency for n in nodes}
            scale = devices.cpu_transfer_scale  # 0 unless devices.cpu_bandwidth is set
        else:
            kind = kinds.get(device.kind)
            if kind is None:
                raise InvalidSplitError(f"{device}: no such device kind")
            latency = {n: graph.node_by_id[n].latency_on(kind) for n in nodes}
            scale = devices.transfer_scale(kind)
        backward = {n for n in nodes if graph.node_by_id[n].is_backward}
        fc = sum(latency[n] for n in nodes - backward)
        bc = sum(latency[n] for n in backward)
        wc = sum(latency[n] * fractions[n] for n in backward)
        f_in = f_out = b_in = b_out = 0.0
        pays = not is_cpu or scale > 0  # CPU cores pay transfers only with devices.cpu_bandwidth
        if pays:
            counted: set[int] = set()
            for edge in graph.edges:
                if (edge.source in nodes) != (edge.target in nodes):
                    counted.add(edge.source)
            for u in counted:
                cost = graph.output_cost[u] * scale
                if u in nodes:
                    if u in backward:
                        b_out += cost
                    else:
                        f_out += cost
                else:
                    consumers = [v for v in graph.successors[u] if v in nodes]
                    if any(v not in backward for v in consumers):
                        f_in += cost
                    else:
                        b_in += cost
        factor = 1.0
        if devices.overlap and pays:
            compute, comm = fc + bc, f_in + f_out + b_in + b_out
            total = compute + comm
            factor = max(compute, comm) / total if total > 0 else 0.0
        out.append(
            StageWork(
                device,
                position,
                f_in * factor,
                fc * factor,
                f_out * factor,
                b_in * factor,
                bc * factor,
                b_out * factor,
                fc if device in recompute else 0.0,
                wc * factor,
            )
        )
    return tuple(out)
