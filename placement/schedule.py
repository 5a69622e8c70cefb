"""Pipeline schedules: when every device runs which microbatch, for inference and training.

A placement's stages are taken in pipeline order (the order of ``placement.stages``, as the
DP returns them). :func:`simulate` runs ``M`` microbatches (samples) through them under one
of three schedules and returns every event with its start and end time.

Work of one device per microbatch (the rule that ties schedules to the max-load)
--------------------------------------------------------------------------------
The device's per-sample *load* in :mod:`placement.evaluate` is its compute plus its
communication (every node ``u`` whose output crosses the device's boundary, in either
direction, counted once). Here that load is cut into two *units* per microbatch:

* the **forward unit**: incoming forward transfers, then the compute of its forward
  (``is_backward == False``) nodes, then outgoing forward transfers;
* the **backward unit** (training only): incoming backward transfers, then (with
  recomputation) the forward compute again, then the compute of its backward nodes, then
  outgoing backward transfers.

A counted node ``u`` on the device belongs to the phase of ``u`` (its output is produced
then); a counted node ``u`` *outside* the device belongs to the forward unit if some forward
node of the device consumes it, else to the backward unit. So forward + backward unit =
compute + communication = the load of :func:`placement.evaluate.evaluate`, exactly. CPU
cores pay no communication (as in the evaluator), unless ``Devices.cpu_bandwidth`` is set:
then they pay it like accelerators, scaled by ``Devices.cpu_transfer_scale``. With ``Devices.overlap`` the load is
``max(compute, communication)``: every part of both units is then scaled by
``load / (compute + communication)``, so the per-sample busy time is again the load.
Transfers are drawn as ``"transfer"`` events inside the units (the device is busy sending or
receiving, as the load model charges it); a unit starts when the units it depends on (in
the same microbatch) have ended, so a transfer is paid by the sender and then by the
receiver, as in :func:`placement.evaluate.latency`.

Dependencies come from the graph: an edge ``u -> v`` between devices ``a != b`` makes the
unit of ``v``'s phase on ``b`` wait for the unit of ``u``'s phase on ``a`` (same microbatch).
On one device units run one at a time in the schedule's order:

* ``"inference"`` - streaming, forward only: ``F0, F1, ..., F(M-1)`` (backward nodes are
  ignored). Steady-state period = max over devices of the forward unit = the max-load for an
  inference graph.
* ``"gpipe"`` - all forwards, then all backwards (``F0..F(M-1), B0..B(M-1)``), flush at the end.
  Period (time per sample as ``M`` grows) = max forward unit + max backward unit.
* ``"1f1b"`` - PipeDream-Flush / Megatron's non-interleaved 1F1B: the device at position
  ``k`` of ``K`` runs ``w = min(K - k - 1, M)`` warm-up forwards, then alternates one forward
  and one backward, then drains ``w`` backwards. At most ``min(K - k, M)`` microbatches are in
  flight on it. Period = max over devices of forward + backward unit = the max-load (plus the
  recomputation, where enabled).

``bubble_fraction`` = idle device-time / (devices x makespan) over the devices of the
placement; ``idle`` lists ``makespan - busy`` per device.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from .errors import InvalidSplitError, PlacementError
from .model import CPU_KIND, DeviceSlot, Placement, Problem

SCHEDULES = ("inference", "gpipe", "1f1b")
EVENT_KINDS = ("forward", "backward", "transfer", "recompute")
#: Largest number of microbatches :func:`simulate` accepts.
MAX_MICROBATCHES = 4096


@dataclass(frozen=True)
class Event:
    """One interval of work on one device.

    Attributes
    ----------
    device : DeviceSlot
        The device that is busy.
    kind : str
        ``"forward"``, ``"backward"``, ``"transfer"`` or ``"recompute"``.
    microbatch : int
        The microbatch (sample) index, from 0.
    start, end : float
        Times in the graph's time unit.
    phase : str
        ``"forward"`` or ``"backward"``: the unit the event belongs to.
    direction : str
        For transfers: ``"in"`` (receiving) or ``"out"`` (sending); else ``""``.
    """

    device: DeviceSlot
    kind: str
    microbatch: int
    start: float
    end: float
    phase: str = "forward"
    direction: str = ""

    @property
    def duration(self) -> float:
        return self.end - self.start


@dataclass(frozen=True)
class StageWork:
    """Per-microbatch work of one device (see the module docstring for the rule).

    All times already include the overlap scaling; ``forward + backward == load``
    (+ ``recompute`` where the device recomputes).
    """

    device: DeviceSlot
    position: int
    forward_in: float
    forward_compute: float
    forward_out: float
    backward_in: float
    backward_compute: float
    backward_out: float
    recompute: float = 0.0

    @property
    def forward(self) -> float:
        return self.forward_in + self.forward_compute + self.forward_out

    @property
    def backward(self) -> float:
        return self.backward_in + self.recompute + self.backward_compute + self.backward_out

    @property
    def load(self) -> float:
        """Forward + backward without recomputation (equals the evaluator's load)."""
        return self.forward + self.backward - self.recompute


@dataclass(frozen=True)
class Schedule:
    """The result of :func:`simulate`: every event, and summary numbers.

    Attributes
    ----------
    kind : str
        The schedule (``"inference"``, ``"gpipe"``, ``"1f1b"``).
    microbatches : int
        Number of microbatches simulated.
    placement : Placement
        The placement simulated (stages in pipeline order).
    work : tuple of StageWork
        Per-device work per microbatch, in pipeline order.
    events : tuple of Event
        Every event, device by device in pipeline order, by start time.
    makespan : float
        End of the last event (fill + steady state + drain).
    period : float
        Steady-state time per sample of the schedule (see the module docstring).
    bubble_fraction : float
        Idle device-time / (devices x makespan).
    idle : tuple of (DeviceSlot, float)
        Idle time of each device within the makespan.
    recompute : tuple of DeviceSlot
        Devices that recompute their forward pass in the backward pass.
    """

    kind: str
    microbatches: int
    placement: Placement
    work: tuple[StageWork, ...]
    events: tuple[Event, ...]
    makespan: float
    period: float
    bubble_fraction: float
    idle: tuple[tuple[DeviceSlot, float], ...]
    recompute: tuple[DeviceSlot, ...] = ()

    @property
    def devices(self) -> tuple[DeviceSlot, ...]:
        return tuple(w.device for w in self.work)

    @property
    def time_per_sample(self) -> float:
        """Makespan / microbatches: the time per sample including fill and drain."""
        return self.makespan / self.microbatches

    @property
    def fill_drain(self) -> float:
        """Makespan minus ``microbatches x period``: the time lost to filling and draining."""
        return self.makespan - self.microbatches * self.period

    def busy(self, device: DeviceSlot) -> float:
        return self.makespan - dict(self.idle)[device]

    def events_of(self, device: DeviceSlot, kind: str | None = None) -> tuple[Event, ...]:
        return tuple(e for e in self.events if e.device == device and (kind is None or e.kind == kind))

    def work_of(self, device: DeviceSlot) -> StageWork:
        for entry in self.work:
            if entry.device == device:
                return entry
        raise PlacementError(f"{device}: not in the schedule")


# ----- work per device -----

def stage_work(problem: Problem, placement: Placement, recompute: Iterable[DeviceSlot] = ()) -> tuple[StageWork, ...]:
    """Per-microbatch forward/backward work of every device, in pipeline order."""
    graph, devices = problem.graph, problem.devices
    kinds = {kind.name: kind for kind in devices.accelerators}
    recompute = set(recompute)
    out = []
    for position, stage in enumerate(placement.stages):
        nodes = set(stage.nodes)
        unknown = nodes - set(graph.node_by_id)
        if unknown:
            raise InvalidSplitError(f"{stage.device}: node {min(unknown)} is not in the graph")
        is_cpu = stage.device.kind == CPU_KIND
        if is_cpu:
            latency = {n: graph.node_by_id[n].cpu_latency for n in nodes}
            scale = devices.cpu_transfer_scale  # 0 unless devices.cpu_bandwidth is set
        else:
            kind = kinds.get(stage.device.kind)
            if kind is None:
                raise InvalidSplitError(f"{stage.device}: no such device kind")
            latency = {n: graph.node_by_id[n].latency_on(kind) for n in nodes}
            scale = devices.transfer_scale(kind)
        backward = {n for n in nodes if graph.node_by_id[n].is_backward}
        fc = sum(latency[n] for n in nodes - backward)
        bc = sum(latency[n] for n in backward)
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
        out.append(StageWork(
            stage.device, position, f_in * factor, fc * factor, f_out * factor,
            b_in * factor, bc * factor, b_out * factor, fc if stage.device in recompute else 0.0,
        ))
    return tuple(out)


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
    """The order in which the device at ``position`` (of ``stages``) runs its units."""
    m = microbatches
    if schedule == "inference":
        return [("F", i) for i in range(m)]
    if schedule == "gpipe":
        return [("F", i) for i in range(m)] + [("B", i) for i in range(m)]
    warmup = min(stages - position - 1, m)
    order = [("F", i) for i in range(warmup)]
    for i in range(m - warmup):
        order += [("F", warmup + i), ("B", i)]
    order += [("B", i) for i in range(m - warmup, m)]
    return order


def simulate(problem: Problem, placement: Placement, microbatches: int, schedule: str = "inference",
             recompute: Iterable[DeviceSlot] | bool = ()) -> Schedule:
    """Run ``microbatches`` samples through ``placement`` under ``schedule``.

    Parameters
    ----------
    problem : Problem
        Graph and devices (latencies, transfer costs, bandwidth, overlap).
    placement : Placement
        Stages in pipeline order (e.g. ``solve_dp(problem).placement``).
    microbatches : int
        Number of microbatches (>= 1).
    schedule : str
        ``"inference"``, ``"gpipe"`` or ``"1f1b"`` (see the module docstring).
    recompute : iterable of DeviceSlot, or bool
        Devices that recompute their forward pass during the backward pass (``True``: all).

    Returns
    -------
    Schedule

    Raises
    ------
    PlacementError
        For an unknown schedule, a bad microbatch count, a placement that does not fit the
        graph, or stages whose dependencies deadlock under the schedule (e.g. a
        non-contiguous split).
    """
    if schedule not in SCHEDULES:
        raise PlacementError(f"unknown schedule {schedule!r}; choose one of: {', '.join(SCHEDULES)}")
    if isinstance(microbatches, bool) or not isinstance(microbatches, int) or not 1 <= microbatches <= MAX_MICROBATCHES:
        raise PlacementError(f"microbatches must be an integer from 1 to {MAX_MICROBATCHES} (got {microbatches!r})")
    training = schedule != "inference"
    if recompute is True:
        recompute = tuple(stage.device for stage in placement.stages)
    elif recompute is False:
        recompute = ()
    recompute = tuple(d for d in (stage.device for stage in placement.stages) if d in set(recompute)) if training else ()
    work = stage_work(problem, placement, recompute)
    n_stages = len(work)
    if n_stages == 0:
        raise PlacementError("the placement has no stages")
    deps = _unit_dependencies(problem, placement, training)
    orders = [unit_order(schedule, k, n_stages, microbatches) for k in range(n_stages)]
    # Ops (k, index in order); waiting[k, phase, m] -> list of ops waiting for that unit.
    waiters: dict[tuple[int, str, int], list[tuple[int, str, int]]] = {}
    needs: dict[tuple[int, str, int], int] = {}
    for k in range(n_stages):
        for phase, m in orders[k]:
            needs[(k, phase, m)] = 0
    for a, pa, b, pb in deps:
        for m in range(microbatches):
            waiters.setdefault((a, pa, m), []).append((b, pb, m))
            needs[(b, pb, m)] += 1
    ready_at: dict[tuple[int, str, int], float] = {}
    device_free = [0.0] * n_stages
    cursor = [0] * n_stages
    end_of: dict[tuple[int, str, int], float] = {}
    start_of: dict[tuple[int, str, int], float] = {}
    # Event-driven sweep: a device runs its next unit once all its inputs have ended.
    progress = True
    remaining = sum(len(o) for o in orders)
    while remaining and progress:
        progress = False
        for k in range(n_stages):
            while cursor[k] < len(orders[k]):
                phase, m = orders[k][cursor[k]]
                key = (k, phase, m)
                if needs[key]:
                    break
                w = work[k]
                start = max(device_free[k], ready_at.get(key, 0.0))
                end = start + (w.forward if phase == "F" else w.backward)
                start_of[key], end_of[key] = start, end
                device_free[k] = end
                cursor[k] += 1
                remaining -= 1
                progress = True
                for waiter in waiters.get(key, ()):
                    needs[waiter] -= 1
                    ready_at[waiter] = max(ready_at.get(waiter, 0.0), end)
    if remaining:
        stuck = [str(work[k].device) for k in range(n_stages) if cursor[k] < len(orders[k])]
        raise PlacementError(
            f"the {schedule} schedule deadlocks on this placement (devices {', '.join(stuck)} wait for each other): "
            "the stages are not in pipeline order"
        )
    events: list[Event] = []
    busy = []
    for k, w in enumerate(work):
        total = 0.0
        for phase, m in orders[k]:
            t = start_of[(k, phase, m)]
            if phase == "F":
                parts = [("transfer", w.forward_in, "in"), ("forward", w.forward_compute, ""),
                         ("transfer", w.forward_out, "out")]
                name = "forward"
            else:
                parts = [("transfer", w.backward_in, "in"), ("recompute", w.recompute, ""),
                         ("backward", w.backward_compute, ""), ("transfer", w.backward_out, "out")]
                name = "backward"
            unit_events = []
            for kind, duration, direction in parts:
                if duration <= 0 and kind in ("transfer", "recompute"):
                    continue
                unit_events.append(Event(w.device, kind, m, t, t + duration, name, direction))
                t += duration
            # The unit's last event ends exactly when the simulation says the unit ends (no float drift).
            last = unit_events[-1]
            unit_events[-1] = Event(last.device, last.kind, m, min(last.start, end_of[(k, phase, m)]),
                                    end_of[(k, phase, m)], name, last.direction)
            events.extend(unit_events)
            total += end_of[(k, phase, m)] - start_of[(k, phase, m)]
        busy.append(total)
    makespan = max(end_of.values(), default=0.0)
    if schedule == "inference":
        period = max(w.forward for w in work)
    elif schedule == "gpipe":
        period = max(w.forward for w in work) + max(w.backward for w in work)
    else:
        period = max(w.forward + w.backward for w in work)
    idle = tuple((w.device, makespan - busy[k]) for k, w in enumerate(work))
    bubble = sum(i for _, i in idle) / (n_stages * makespan) if makespan > 0 else 0.0
    return Schedule(
        kind=schedule, microbatches=microbatches, placement=placement, work=work, events=tuple(events),
        makespan=makespan, period=period, bubble_fraction=bubble, idle=idle, recompute=recompute,
    )
