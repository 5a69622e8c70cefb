"""Pipeline schedules: when every device runs which microbatch, for inference and training.

A placement's stages are taken in pipeline order (the order of ``placement.stages``, as the
DP returns them). :func:`simulate` runs ``M`` microbatches (samples) through them under one
of the schedules of :mod:`placement.pipeline.registry` and returns every event with its start and end time.

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

* ``"interleaved"`` - Megatron-LM's / ``torch.distributed.pipelining``'s interleaved 1F1B
  (``ScheduleInterleaved1F1B``). The plan's ``S`` stages are *virtual* stages: with ``v``
  virtual stages per device (``virtual``, ``S = v x D``), stage ``i`` runs on the device of
  stage ``i mod D`` (Megatron's round-robin: device ``d`` holds stages ``d, d + D, d + 2D, ...``,
  so the devices of stages ``D .. S-1`` of the plan are not used; plan ``S = v x D`` stages
  with devices of one kind, or the latencies of the rank's device apply). The per-device order is
  torch's: ``microbatches_per_round = M // max(1, M // D)``, warm-up
  ``min((v - 1) x microbatches_per_round + 2 (D - 1 - d), v M)`` forwards, then one forward
  and one full backward, then the remaining backwards; forward chunks cycle
  ``0, 1, .., v-1`` every ``microbatches_per_round`` forwards, backward chunks ``v-1, .., 0``.
* ``"zbh1"`` - zero bubble ZB-H1 (Qi et al. 2024; torch's ``ScheduleInterleavedZeroBubble``,
  with ``v = 1`` by default): the backward unit is split into the **input-gradient** part
  ``I`` (incoming transfers, recomputation, the input-gradient share of the backward compute,
  outgoing transfers: everything the previous stage waits for) and the **weight-gradient**
  part ``W`` (the rest of the backward compute, which nobody waits for). Device ``d`` runs the
  1F1B warm-up ``(v - 1) x microbatches_per_round + D - 1 - d`` forwards; then ``F, I``
  pairs, each followed by the oldest pending ``W`` once ``d`` pairs have run (device ``d``
  defers ``d`` weight passes); then the remaining ``I`` (each followed by a ``W`` likewise);
  then the deferred ``W`` - they fill the drain bubble that 1F1B leaves. Where the graph's
  gradient edges run from earlier to later stages (:func:`gradients_flow_forward`; the paper's
  training workloads are drawn so), the drain is at the other end and device ``d`` defers
  ``D - 1 - d`` weight passes instead.

  The **split ratio**: a backward node's ``weightGradFraction`` field (extra JSON field in
  [0, 1]: the share of its latency that computes weight gradients) if given, else the graph's
  top-level ``weightGradFraction``, else 1/2 (the paper's ``T_B = T_W``, i.e. 1:1);
  :func:`simulate`'s ``weight_fraction`` overrides all of them.

Every schedule is data: :attr:`Schedule.actions` lists, per device, the :class:`Action` s it
runs in order, written like ``torch.distributed.pipelining``'s ``_Action`` (``"0F0"``: stage
0 forward of microbatch 0; ``"1B0"`` full backward; ``"1I0"`` input gradient; ``"1W0"``
weight gradient); :func:`format_actions` prints them as a table.

``bubble_fraction`` = idle device-time / (devices x makespan) over the devices that run
stages; ``idle`` lists ``makespan - busy`` per device. ``period`` is the steady-state time per
microbatch: the slowest device's per-microbatch work (forward + backward of all its stages)
for 1F1B, interleaved and ZB-H1.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from ..errors import PlacementError
from ..model import DeviceSlot, EventKind, Placement, Problem, ScheduleKind
from .events import ACTION_OPS, EVENT_KINDS, Action, Event, Schedule, StageWork, format_actions
from .orders import _check_virtual, _unit_dependencies, device_actions, gradients_flow_forward, unit_order
from .registry import ALL_SCHEDULES, SCHEDULE_LABELS, SCHEDULES, schedule_spec
from .work import DEFAULT_WEIGHT_FRACTION, WEIGHT_FRACTION_FIELD, stage_work, weight_fractions

__all__ = [
    "ACTION_OPS",
    "ALL_SCHEDULES",
    "DEFAULT_WEIGHT_FRACTION",
    "EVENT_KINDS",
    "MAX_MICROBATCHES",
    "SCHEDULES",
    "SCHEDULE_LABELS",
    "WEIGHT_FRACTION_FIELD",
    "Action",
    "Event",
    "Schedule",
    "StageWork",
    "compare_schedules",
    "device_actions",
    "format_actions",
    "gradients_flow_forward",
    "simulate",
    "stage_work",
    "unit_order",
    "weight_fractions",
]


#: Largest number of microbatches :func:`simulate` accepts.
MAX_MICROBATCHES = 4096


#: A unit of a schedule: (stage, op, microbatch), op one of :data:`ACTION_OPS`.
_Unit = tuple[int, str, int]


def _unit_graph(
    orders: Sequence[Sequence[Action]],
    deps: Iterable[tuple[int, str, int, str]],
    microbatches: int,
    n_stages: int,
    training: bool,
    zero_bubble: bool,
) -> tuple[dict[_Unit, list[_Unit]], dict[_Unit, int]]:
    """(units waiting for each unit, count of units each unit waits for) of the units in ``orders``.

    A graph dependency on phase "B" means the unit that produces the stage's outgoing gradients (B, or I under
    ZB-H1); in training a stage's backward waits for its forward, and under ZB-H1 its W for its I.
    """
    backward_op = "I" if zero_bubble else "B"
    waiters: dict[_Unit, list[_Unit]] = {}
    needs: dict[_Unit, int] = {(a.stage, a.op, a.microbatch): 0 for order in orders for a in order}

    def depend(before: _Unit, after: _Unit) -> None:
        if before in needs and after in needs:
            waiters.setdefault(before, []).append(after)
            needs[after] += 1

    for a, pa, b, pb in deps:
        ops_a = "F" if pa == "F" else backward_op
        ops_b = "F" if pb == "F" else backward_op
        for m in range(microbatches):
            depend((a, ops_a, m), (b, ops_b, m))
    if training:
        for k in range(n_stages):
            for m in range(microbatches):
                depend((k, "F", m), (k, backward_op, m))
                if zero_bubble:
                    depend((k, "I", m), (k, "W", m))
    return waiters, needs


def _duration(w: StageWork, op: str) -> float:
    """Length of the unit ``op`` of a stage whose work per microbatch is ``w``."""
    return {"F": w.forward, "B": w.backward, "I": w.input_backward}.get(op, w.weight_compute)


def _run_units(
    orders: Sequence[Sequence[Action]],
    work: Sequence[StageWork],
    waiters: Mapping[_Unit, list[_Unit]],
    needs: dict[_Unit, int],
) -> tuple[dict[_Unit, float], dict[_Unit, float], list[int]]:
    """Event-driven sweep: a device runs its next unit once all its inputs have ended.

    Returns the start and end of every unit run and the ranks left waiting (a deadlock; empty when all ran).
    ``needs`` is consumed.
    """
    ready_at: dict[_Unit, float] = {}
    device_free = [0.0] * len(orders)
    cursor = [0] * len(orders)
    start_of: dict[_Unit, float] = {}
    end_of: dict[_Unit, float] = {}
    progress = True
    while progress:
        progress = False
        for r, order in enumerate(orders):
            while cursor[r] < len(order):
                action = order[cursor[r]]
                key = (action.stage, action.op, action.microbatch)
                if needs[key]:
                    break
                start = max(device_free[r], ready_at.get(key, 0.0))
                end = start + _duration(work[action.stage], action.op)
                start_of[key], end_of[key] = start, end
                device_free[r] = end
                cursor[r] += 1
                progress = True
                for waiter in waiters.get(key, ()):
                    needs[waiter] -= 1
                    ready_at[waiter] = max(ready_at.get(waiter, 0.0), end)
    return start_of, end_of, [r for r, order in enumerate(orders) if cursor[r] < len(order)]


def _unit_events(w: StageWork, action: Action, start: float, end: float) -> list[Event]:
    """The events of one unit run from ``start`` to ``end``: its transfers, recomputation and compute, in order."""
    k, m = action.stage, action.microbatch
    if action.op == "F":
        parts = [
            (EventKind.TRANSFER, w.forward_in, "in"),
            (EventKind.FORWARD, w.forward_compute, ""),
            (EventKind.TRANSFER, w.forward_out, "out"),
        ]
        name = EventKind.FORWARD
    elif action.op == "W":
        parts = [(EventKind.WEIGHT, w.weight_compute, "")]
        name = EventKind.WEIGHT
    else:
        compute = w.backward_compute - (w.weight_compute if action.op == "I" else 0.0)
        parts = [
            (EventKind.TRANSFER, w.backward_in, "in"),
            (EventKind.RECOMPUTE, w.recompute, ""),
            (EventKind.BACKWARD, compute, ""),
            (EventKind.TRANSFER, w.backward_out, "out"),
        ]
        name = EventKind.BACKWARD
    events = []
    t = start
    for kind, length, direction in parts:
        if length <= 0 and kind in (EventKind.TRANSFER, EventKind.RECOMPUTE):
            continue
        events.append(Event(w.device, kind.value, m, t, t + length, name.value, direction, k))
        t += length
    # The unit's last event ends exactly when the simulation says the unit ends (no float drift).
    last = events[-1]
    events[-1] = Event(last.device, last.kind, m, min(last.start, end), end, name.value, last.direction, k)
    return events


def _period(schedule: str, work: Sequence[StageWork], rank_of: Sequence[int], n_ranks: int) -> float:
    """Steady-state time per microbatch of the schedule (module docstring)."""
    if schedule == ScheduleKind.INFERENCE:
        return max(w.forward for w in work)
    if schedule == ScheduleKind.GPIPE:
        return max(w.forward for w in work) + max(w.backward for w in work)
    per_rank = [0.0] * n_ranks
    for k, w in enumerate(work):
        per_rank[rank_of[k]] += w.forward + w.backward
    return max(per_rank)


def simulate(
    problem: Problem,
    placement: Placement,
    microbatches: int,
    schedule: str = "inference",
    recompute: Iterable[DeviceSlot] | bool = (),
    virtual: int | None = None,
    weight_fraction: float | None = None,
) -> Schedule:
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
        One of :data:`ALL_SCHEDULES` (see the module docstring).
    recompute : iterable of DeviceSlot, or bool
        Devices that recompute their forward pass during the backward pass (``True``: all).
    virtual : int, optional
        Virtual stages per device (interleaved: default 2, ZB-H1: default 1; others: 1). The
        number of stages must be a multiple of it; stage ``i`` runs on the device of stage
        ``i mod (stages / virtual)``.
    weight_fraction : float, optional
        Weight-gradient share of the backward compute for ZB-H1 (default: from the graph, else 1/2).

    Returns
    -------
    Schedule

    Raises
    ------
    PlacementError
        For an unknown schedule, a bad microbatch count or virtual stage count, a placement
        that does not fit the graph, or stages whose dependencies deadlock under the schedule
        (e.g. a non-contiguous split).
    """
    schedule_spec(schedule)  # a PlacementError naming the schedules if it is none
    if isinstance(microbatches, bool) or not isinstance(microbatches, int) or not 1 <= microbatches <= MAX_MICROBATCHES:
        raise PlacementError(f"microbatches must be an integer from 1 to {MAX_MICROBATCHES} (got {microbatches!r})")
    n_stages = len(placement.stages)
    if n_stages == 0:
        raise PlacementError("the placement has no stages")
    if virtual is None:
        virtual = 2 if schedule == ScheduleKind.INTERLEAVED and n_stages % 2 == 0 else 1
    virtual = _check_virtual(schedule, virtual, n_stages)
    n_ranks = n_stages // virtual
    rank_of = [k % n_ranks for k in range(n_stages)]
    run_on = [placement.stages[rank_of[k]].device for k in range(n_stages)]
    ranks = run_on[:n_ranks]
    training = schedule != ScheduleKind.INFERENCE
    zero_bubble = schedule == ScheduleKind.ZBH1
    if recompute is True:
        recompute = tuple(ranks)
    elif recompute is False:
        recompute = ()
    chosen = set(recompute)
    recompute = tuple(d for d in ranks if d in chosen) if training else ()
    work = stage_work(problem, placement, recompute, run_on, weight_fraction)
    deps = _unit_dependencies(problem, placement, training)
    flow = zero_bubble and gradients_flow_forward(problem, placement)
    orders = [device_actions(schedule, r, n_ranks, microbatches, virtual, flow) for r in range(n_ranks)]
    waiters, needs = _unit_graph(orders, deps, microbatches, n_stages, training, zero_bubble)
    start_of, end_of, stuck = _run_units(orders, work, waiters, needs)
    if stuck:
        raise PlacementError(
            f"the {schedule} schedule deadlocks on this placement (devices "
            f"{', '.join(str(ranks[r]) for r in stuck)} wait for each other): the stages' dependencies do not follow "
            "the schedule's order (stages out of pipeline order, or backward edges that do not run from the last "
            "stage back to the first)"
        )
    events: list[Event] = []
    busy = []
    for order in orders:
        for action in order:
            key = (action.stage, action.op, action.microbatch)
            events.extend(_unit_events(work[action.stage], action, start_of[key], end_of[key]))
        busy.append(sum(end_of[(a.stage, a.op, a.microbatch)] - start_of[(a.stage, a.op, a.microbatch)] for a in order))
    makespan = max(end_of.values(), default=0.0)
    idle = tuple((ranks[r], makespan - busy[r]) for r in range(n_ranks))
    bubble = sum(i for _, i in idle) / (n_ranks * makespan) if makespan > 0 else 0.0
    return Schedule(
        kind=schedule,
        microbatches=microbatches,
        placement=placement,
        work=work,
        events=tuple(events),
        makespan=makespan,
        period=_period(schedule, work, rank_of, n_ranks),
        bubble_fraction=bubble,
        idle=idle,
        recompute=recompute,
        actions=tuple(tuple(order) for order in orders),
        virtual=virtual,
    )


def compare_schedules(
    problem: Problem,
    placement: Placement,
    microbatches: int,
    schedules: Iterable[str] | None = None,
    recompute: Iterable[DeviceSlot] | bool = (),
    virtual: int = 2,
    weight_fraction: float | None = None,
) -> tuple[tuple[str, Schedule | None, str], ...]:
    """Simulate ``placement`` under several schedules (default: all that apply to the graph).

    Returns ``(schedule name, Schedule, "")`` per schedule, or ``(name, None, reason)`` where
    the schedule cannot run this plan (e.g. a stage count that is not a multiple of
    ``virtual``, the virtual stages per device of interleaved 1F1B).
    """
    if schedules is None:
        schedules = ALL_SCHEDULES if problem.graph.is_training else (ScheduleKind.INFERENCE.value,)
    out: list[tuple[str, Schedule | None, str]] = []
    for kind in schedules:
        try:
            out.append(
                (
                    kind,
                    simulate(
                        problem,
                        placement,
                        microbatches,
                        kind,
                        recompute,
                        virtual if kind == ScheduleKind.INTERLEAVED else None,
                        weight_fraction,
                    ),
                    "",
                )
            )
        except PlacementError as exc:
            out.append((kind, None, str(exc)))
    return tuple(out)
