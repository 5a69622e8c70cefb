"""Memory of every device over time under a pipeline schedule, and its peak.

The bytes a device holds at time ``t`` (from a :class:`~placement.pipeline.schedule.Schedule`):

* **weights** ``W`` - the ``size`` of every node on the device (as in
  :func:`placement.evaluate.evaluate`; in the shared training graphs the backward nodes'
  sizes are the gradient buffers), held all the time;
* **optimizer state** (training schedules only) - ``optimizer_multiplier`` x the sizes of
  the device's *forward* nodes (the parameters). The default (``None``) is Adam with mixed
  precision, :func:`default_optimizer_multiplier`: 16-bit weights (2 bytes per parameter) keep
  an fp32 master copy (4) and two fp32 moments (8), 12 bytes = 6 x the weight bytes, so with
  the fp16 gradient (the backward node's size, 2) a parameter costs 16 bytes; fp32 weights (the
  paper's files, no dtype given) keep the two moments only: 2 x. Use 1 for SGD with momentum,
  0 to leave it out;
* **activations** ``A`` per microbatch - what the device's forward nodes keep for the backward:
  a node's ``bytesWritten`` (built graphs: model builders and ONNX imports record every
  tensor an operator writes, e.g. attention scores, not only the layer's output; the Parallel
  plan uses the same), else its output bytes (:func:`activation_bytes`).
  A node's output bytes are the ``size`` of its outgoing edges where the file gives one
  (all edges leaving a node carry one tensor: the largest is used); otherwise an estimate:
  transfer ``cost`` x bytes per cost unit, the ratio being ``bytes_per_cost`` if given, else
  the median of ``size / cost`` over the graph's edges that have both, else 0 (unknown).
  In training a microbatch's activations are stashed from the start of its forward unit to
  the end of its backward unit; in inference they live during the forward unit only;
* with **recomputation** on a device only the stage input ``I`` (output bytes of the
  forward nodes outside the device that feed its forward nodes) is stashed from forward
  to backward; ``A`` is held again from the start of the backward unit (where the forward
  pass is re-run) to its end.

Interleaved schedules (several stages per device): the device holds the weights and optimizer
state of all its stages, and each (stage, microbatch) stash separately. ZB-H1: a microbatch's
activations stay until its weight-gradient unit ``W`` ends (``W`` reads the stashed layer
inputs), not the end of its input-gradient unit; with recomputation the re-run ``A`` is held
from the start of ``I`` to the end of ``W``. For these schedules :func:`peak_table` sweeps the
device's action order (memory changes only at unit boundaries and units on a device never
overlap, so the order alone fixes the peak) and :func:`memory_profile` sweeps the events.

Peak (the schedule's in-flight count ``n`` on the device: 1 for inference, ``M`` for GPipe,
``min(K - k, M)`` for 1F1B at position ``k`` of ``K`` stages; see :func:`in_flight`)::

    inference:               W + A
    training:                W + O + n * A
    training, recomputation: W + O + n * I + A

:func:`peak_bytes` gives this closed form (the memory-aware planner uses it);
:func:`memory_profile` sweeps the schedule's events and finds the same peak, when it is
reached and when a device first goes over its cap (its first OOM).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable
from dataclasses import dataclass

from ..errors import PlacementError
from ..model import CPU_KIND, DeviceSlot, EventKind, Graph, Placement, Problem, ScheduleKind
from .schedule import SCHEDULES, Schedule, device_actions, gradients_flow_forward

#: Optimizer state per byte of forward weights of plain fp32 Adam (two fp32 moments per fp32 weight). The
#: default of every memory-aware method and page is ``None``: :func:`default_optimizer_multiplier` of the graph
#: (mixed-precision Adam), which equals this for fp32 graphs (every paper file). One rule, so that the DP, the
#: IP, the CLI and the app agree.
DEFAULT_OPTIMIZER_MULTIPLIER = 2.0

#: Bytes per element of the weight dtypes a node's ``dtype`` field may name.
_DTYPE_BYTES = {"fp64": 8, "fp32": 4, "tf32": 4, "fp16": 2, "bf16": 2, "fp8": 1, "int8": 1, "int4": 0.5}


def weight_bytes_per_parameter(graph: Graph) -> float:
    """Bytes per parameter of the graph's weights: the ``dtype`` of its forward nodes (by weight bytes), else 4 (fp32)."""
    by_dtype: dict[float, float] = {}
    for node in graph.nodes:
        dtype = node.extra.get("dtype") if not node.is_backward else None
        if isinstance(dtype, str) and dtype.lower() in _DTYPE_BYTES and node.size > 0:
            width = float(_DTYPE_BYTES[dtype.lower()])
            by_dtype[width] = by_dtype.get(width, 0.0) + node.size
    if not by_dtype:
        return 4.0
    return max(by_dtype, key=lambda w: (by_dtype[w], w))


def default_optimizer_multiplier(graph: Graph) -> float:
    """Optimizer state per byte of forward weights of Adam with mixed precision (module docstring).

    Two fp32 moments (8 bytes per parameter), plus an fp32 master copy (4) when the weights are
    narrower than fp32, divided by the weight bytes per parameter: 6 for fp16/bf16, 2 for fp32.

    Examples
    --------
    >>> from placement.model import Graph, Node
    >>> default_optimizer_multiplier(Graph((Node(0, 1.0, 1.0, size=8.0, extra={"dtype": "fp16"}),), ()))
    6.0
    >>> default_optimizer_multiplier(Graph((Node(0, 1.0, 1.0, size=8.0),), ()))
    2.0
    """
    width = weight_bytes_per_parameter(graph)
    return (8.0 + (4.0 if width < 4 else 0.0)) / width


def resolve_optimizer_multiplier(graph: Graph, optimizer_multiplier: float | None) -> float:
    """``optimizer_multiplier``, or the graph's mixed-precision Adam default when it is None."""
    return default_optimizer_multiplier(graph) if optimizer_multiplier is None else float(optimizer_multiplier)


@dataclass(frozen=True)
class StageMemory:
    """The static memory numbers of one device (bytes).

    ``weights`` W, ``optimizer`` O, ``activation`` A (per microbatch), ``stage_input`` I
    (per microbatch), ``cap`` (``inf`` for CPU cores).
    """

    device: DeviceSlot
    weights: float
    optimizer: float
    activation: float
    stage_input: float
    cap: float


@dataclass(frozen=True)
class DeviceMemory:
    """Memory of one device over time: a step function ``bytes[i]`` from ``times[i]`` on.

    ``static`` sums the device's stages (``stages``, pipeline positions) for interleaved
    schedules; ``in_flight`` is the most (stage, microbatch) stashes alive at once.
    """

    device: DeviceSlot
    static: StageMemory
    in_flight: int
    times: tuple[float, ...]
    bytes: tuple[float, ...]
    peak: float
    peak_time: float
    first_oom: float | None
    stages: tuple[int, ...] = ()

    @property
    def cap(self) -> float:
        return self.static.cap

    @property
    def fits(self) -> bool:
        return self.first_oom is None


@dataclass(frozen=True)
class MemoryProfile:
    """Memory over time of every device of a schedule."""

    schedule: str
    microbatches: int
    optimizer_multiplier: float
    devices: tuple[DeviceMemory, ...]

    @property
    def fits(self) -> bool:
        return all(d.fits for d in self.devices)

    @property
    def first_oom(self) -> tuple[DeviceSlot, float] | None:
        """The device that first goes over its cap and when (None if none does)."""
        hits = [(d.first_oom, k, d.device) for k, d in enumerate(self.devices) if d.first_oom is not None]
        if not hits:
            return None
        time, _, device = min(hits)
        return device, time

    def of(self, device: DeviceSlot) -> DeviceMemory:
        for entry in self.devices:
            if entry.device == device:
                return entry
        raise PlacementError(f"{device}: not in the memory profile")


def check_schedule_options(schedule: str, microbatches: int, optimizer_multiplier: float | None) -> None:
    """:class:`PlacementError` naming the first bad one of a memory-aware planner's schedule options."""
    if schedule not in SCHEDULES:
        raise PlacementError(f"unknown schedule {schedule!r}; choose one of: {', '.join(SCHEDULES)}")
    if isinstance(microbatches, bool) or not isinstance(microbatches, int) or microbatches < 1:
        raise PlacementError(f"microbatches must be a positive integer (got {microbatches!r})")
    if optimizer_multiplier is not None and (
        isinstance(optimizer_multiplier, bool)
        or not isinstance(optimizer_multiplier, (int, float))
        or not math.isfinite(optimizer_multiplier)
        or optimizer_multiplier < 0
    ):
        raise PlacementError(f"optimizer multiplier must be a finite number >= 0 (got {optimizer_multiplier!r})")


def output_bytes(graph: Graph, bytes_per_cost: float | None = None) -> dict[int, float]:
    """Output bytes of every node (edge sizes, else the cost-based estimate of the module docstring)."""
    sized: dict[int, float] = {}
    ratios = []
    for edge in graph.edges:
        if edge.size is not None:
            sized[edge.source] = max(sized.get(edge.source, 0.0), edge.size)
            if edge.cost > 0 and edge.size > 0:
                ratios.append(edge.size / edge.cost)
    if bytes_per_cost is None:
        bytes_per_cost = statistics.median(ratios) if ratios else 0.0
    out = {}
    for node in graph.nodes:
        if node.id in sized:
            out[node.id] = sized[node.id]
        else:
            out[node.id] = graph.output_cost[node.id] * bytes_per_cost if graph.successors[node.id] else 0.0
    return out


def activation_bytes(graph: Graph, bytes_per_cost: float | None = None) -> dict[int, float]:
    """Bytes every node keeps for the backward pass: its ``bytesWritten`` where the graph records it, else its output.

    Roofline graphs (model builders, ONNX imports) record each operator's bytes written (every
    tensor it produces, which the backward reads); paper files give only the output edges'
    sizes (:func:`output_bytes`).
    """
    out = output_bytes(graph, bytes_per_cost)
    for node in graph.nodes:
        written = node.extra.get("bytesWritten")
        if (
            not node.is_backward
            and isinstance(written, (int, float))
            and not isinstance(written, bool)
            and math.isfinite(written)
            and written >= 0
        ):
            out[node.id] = max(float(written), out[node.id])
    return out


def stage_memory(
    problem: Problem,
    placement: Placement,
    optimizer_multiplier: float | None = 0.0,
    bytes_per_cost: float | None = None,
) -> tuple[StageMemory, ...]:
    """W, O, A, I and the cap of every device of ``placement`` (pipeline order).

    ``optimizer_multiplier`` None: the graph's default (:func:`default_optimizer_multiplier`).
    """
    optimizer_multiplier = resolve_optimizer_multiplier(problem.graph, optimizer_multiplier)
    if not math.isfinite(optimizer_multiplier) or optimizer_multiplier < 0:
        raise PlacementError(f"optimizer multiplier must be a finite number >= 0 (got {optimizer_multiplier!r})")
    graph = problem.graph
    caps = {kind.name: kind.memory for kind in problem.devices.accelerators}
    out_bytes = output_bytes(graph, bytes_per_cost)
    kept = activation_bytes(graph, bytes_per_cost)
    result = []
    for stage in placement.stages:
        nodes = set(stage.nodes)
        forward = [n for n in stage.nodes if not graph.node_by_id[n].is_backward]
        # Exact sums rounded once (math.fsum), as the exact planners compute them.
        weights = math.fsum(graph.node_by_id[n].size for n in stage.nodes)
        optimizer = optimizer_multiplier * math.fsum(graph.node_by_id[n].size for n in forward)
        activation = math.fsum(kept[n] for n in forward)
        inputs = {
            u for v in forward for u in graph.predecessors[v] if u not in nodes and not graph.node_by_id[u].is_backward
        }
        stage_input = math.fsum(out_bytes[u] for u in inputs)
        cap = math.inf if stage.device.kind == CPU_KIND else caps.get(stage.device.kind, 0.0)
        result.append(StageMemory(stage.device, weights, optimizer, activation, stage_input, cap))
    return tuple(result)


def in_flight(
    schedule: str, position: int, stages: int, microbatches: int, virtual: int = 1, flow_forward: bool = False
) -> int:
    """Most microbatches whose activations a device holds at once (see the module docstring).

    For ``"interleaved"`` and ``"zbh1"``, ``stages`` is the number of devices and ``position``
    the device; the count is over (stage, microbatch) stashes along the device's order
    (``flow_forward``: see :func:`placement.pipeline.schedule.gradients_flow_forward`).
    """
    if schedule == ScheduleKind.INFERENCE:
        return 1
    if schedule == ScheduleKind.GPIPE:
        return microbatches
    if schedule == ScheduleKind.ONE_F_ONE_B:
        return min(stages - position, microbatches)
    if schedule in (ScheduleKind.INTERLEAVED, ScheduleKind.ZBH1):
        return _sweep_order(
            device_actions(schedule, position, stages, microbatches, virtual, flow_forward), {}, 0.0, False
        )[1]
    raise PlacementError(f"unknown schedule {schedule!r}")


def _sweep_order(order, statics: dict, base: float, recompute: bool) -> tuple[float, int]:
    """(peak bytes, peak stash count) along a device's action order (module docstring).

    ``statics`` maps stage -> StageMemory (missing stages count 0 bytes). A stash is
    allocated at the start of F and freed at the end of the stage's last backward unit of
    that microbatch (W where the order has W units, else B); recomputation holds A from the
    start of B/I to that same end.
    """
    last_op = "W" if any(a.op == "W" for a in order) else "B"
    level = peak = base
    alive = most = 0
    for action in order:
        static = statics.get(action.stage)
        act = static.activation if static else 0.0
        stash = (static.stage_input if recompute else act) if static else 0.0
        if action.op == "F":
            level += stash
            alive += 1
            most = max(most, alive)
            peak = max(peak, level)
        elif action.op in ("B", "I"):
            if recompute:
                level += act
                peak = max(peak, level)
            if action.op == last_op:
                level -= stash + (act if recompute else 0.0)
                alive -= 1
        else:  # W
            level -= stash + (act if recompute else 0.0)
            alive -= 1
    return peak, most


def peak_bytes(static: StageMemory, schedule: str, in_flight_count: int, recompute: bool = False) -> float:
    """The closed-form peak of one device (module docstring)."""
    if schedule == ScheduleKind.INFERENCE:
        return static.weights + static.activation
    base = static.weights + static.optimizer
    if recompute:
        return base + in_flight_count * static.stage_input + static.activation
    return base + in_flight_count * static.activation


def memory_profile(
    problem: Problem, schedule: Schedule, optimizer_multiplier: float | None = 0.0, bytes_per_cost: float | None = None
) -> MemoryProfile:
    """Sweep ``schedule``'s events: bytes held by every device over time, peak, first OOM.

    Parameters
    ----------
    problem : Problem
        The problem the schedule was simulated on.
    schedule : Schedule
        From :func:`placement.pipeline.schedule.simulate` (its recompute set is honoured).
    optimizer_multiplier : float or None
        Optimizer state as a multiple of the forward weights (training schedules only; None: the
        graph's mixed-precision Adam default).
    bytes_per_cost : float, optional
        Bytes per transfer-cost unit for edges without a ``size`` (default: from the graph).
    """
    training = schedule.kind != ScheduleKind.INFERENCE
    optimizer_multiplier = resolve_optimizer_multiplier(problem.graph, optimizer_multiplier)
    statics = stage_memory(problem, schedule.placement, optimizer_multiplier if training else 0.0, bytes_per_cost)
    # Caps are those of the device each stage runs on (interleaved: the rank's device).
    caps = {kind.name: kind.memory for kind in problem.devices.accelerators}
    recompute = set(schedule.recompute)
    zero_bubble = schedule.kind == ScheduleKind.ZBH1
    ranks = schedule.devices
    devices = []
    for position, device in enumerate(ranks):
        mine = schedule.stages_of(device)
        cap = math.inf if device.kind == CPU_KIND else caps.get(device.kind, 0.0)
        static = StageMemory(
            device,
            sum(statics[k].weights for k in mine),
            sum(statics[k].optimizer for k in mine),
            sum(statics[k].activation for k in mine),
            sum(statics[k].stage_input for k in mine),
            cap,
        )
        # The device's units in its own order (they never overlap, so times never decrease along it).
        units: list[list] = []
        index: dict[tuple[int, str, int], int] = {}
        for event in schedule.events_of(device):
            key = (event.stage, event.phase, event.microbatch)
            if key not in index:
                index[key] = len(units)
                units.append([event.stage, event.phase, event.microbatch, event.start, event.end])
            else:
                unit = units[index[key]]
                unit[3], unit[4] = min(unit[3], event.start), max(unit[4], event.end)
        # Changes keyed by (time, order along the device): a unit's allocations at its start,
        # frees at its end; at equal times the earlier unit's frees come first.
        changes: list[tuple[float, int, float]] = []
        release = EventKind.WEIGHT if zero_bubble else EventKind.BACKWARD
        for i, (k, phase, m, start, end) in enumerate(units):
            act = statics[k].activation
            if phase == EventKind.FORWARD:
                if not training:
                    changes += [(start, 2 * i, act), (end, 2 * i + 1, -act)]
                    continue
                stash = statics[k].stage_input if device in recompute else act
                j = index.get((k, release, m), i)
                changes += [(start, 2 * i, stash), (units[j][4], 2 * j + 1, -stash)]
            elif phase == EventKind.BACKWARD and device in recompute:
                j = index.get((k, release, m), i)
                changes += [(start, 2 * i, act), (units[j][4], 2 * j + 1, -act)]
        changes = [c for c in changes if c[2] != 0]
        changes.sort(key=lambda c: (c[0], c[1]))
        base = static.weights + static.optimizer
        level = base
        peak, peak_time = base, 0.0
        first_oom = 0.0 if base > static.cap else None
        times, values = [0.0], [base]
        for time, _, delta in changes:
            level += delta
            if delta > 0 and level > peak * (1 + 1e-12):
                peak, peak_time = level, time
            if delta > 0 and first_oom is None and level > static.cap:
                first_oom = time
            if times[-1] == time:
                values[-1] = level
            else:
                times.append(time)
                values.append(level)
        if not times or times[-1] < schedule.makespan:
            times.append(schedule.makespan)
            values.append(values[-1])
        if schedule.kind in SCHEDULES:
            flight = in_flight(schedule.kind, position, len(ranks), schedule.microbatches)
        else:
            flight = schedule.peak_in_flight[position]
        devices.append(
            DeviceMemory(device, static, flight, tuple(times), tuple(values), peak, peak_time, first_oom, mine)
        )
    return MemoryProfile(
        schedule.kind, schedule.microbatches, optimizer_multiplier if training else 0.0, tuple(devices)
    )


def peak_table(
    problem: Problem,
    placement: Placement,
    schedule: str,
    microbatches: int,
    optimizer_multiplier: float | None = 0.0,
    recompute: Iterable[DeviceSlot] = (),
    bytes_per_cost: float | None = None,
    virtual: int | None = None,
) -> tuple[tuple[DeviceSlot, float, float], ...]:
    """(device, closed-form peak, cap) for every device of ``placement`` without simulating.

    For ``"interleaved"`` / ``"zbh1"`` (``virtual`` stages per device, as in
    :func:`placement.pipeline.schedule.simulate`) the peak comes from the device's action order.
    """
    training = schedule != ScheduleKind.INFERENCE
    optimizer_multiplier = resolve_optimizer_multiplier(problem.graph, optimizer_multiplier)
    statics = stage_memory(problem, placement, optimizer_multiplier if training else 0.0, bytes_per_cost)
    recompute = set(recompute)
    if schedule not in SCHEDULES:
        # Sweep each device's action order (module docstring); stage i runs on device i mod D.
        n_stages = len(statics)
        if virtual is None:
            virtual = 2 if schedule == ScheduleKind.INTERLEAVED and n_stages % 2 == 0 else 1
        if virtual < 1 or n_stages % virtual:
            raise PlacementError(f"{n_stages} stages cannot run with {virtual} virtual stages per device")
        ranks = n_stages // virtual
        caps = {kind.name: kind.memory for kind in problem.devices.accelerators}
        flow = schedule == ScheduleKind.ZBH1 and gradients_flow_forward(problem, placement)
        rows = []
        for r in range(ranks):
            device = statics[r].device
            mine = {k: statics[k] for k in range(r, n_stages, ranks)}
            base = sum(s.weights + s.optimizer for s in mine.values())
            peak, _ = _sweep_order(
                device_actions(schedule, r, ranks, microbatches, virtual, flow), mine, base, device in recompute
            )
            rows.append((device, peak, math.inf if device.kind == CPU_KIND else caps.get(device.kind, 0.0)))
        return tuple(rows)
    return tuple(
        (
            s.device,
            peak_bytes(
                s, schedule, in_flight(schedule, k, len(statics), microbatches), training and s.device in recompute
            ),
            s.cap,
        )
        for k, s in enumerate(statics)
    )


@dataclass(frozen=True)
class MemoryBreakdown:
    """What one device holds at its peak (bytes): the parts sum to ``peak``; ``free`` is what is left of ``cap``.

    ``weights``: forward nodes' sizes; ``gradients``: backward nodes' sizes (gradient buffers);
    ``optimizer``: optimizer state; ``activations``: the activations (and recomputation stashes)
    alive at the peak under the schedule; ``peak``: the peak exactly as :func:`peak_table` gives it.
    """

    device: DeviceSlot
    weights: float
    gradients: float
    optimizer: float
    activations: float
    cap: float
    peak: float

    @property
    def free(self) -> float:
        """Bytes of the device left free at the peak (``inf`` for CPU cores; negative when it does not fit)."""
        return self.cap - self.peak

    @property
    def fits(self) -> bool:
        return self.peak <= self.cap


def memory_breakdown(
    problem: Problem,
    placement: Placement,
    schedule: str | None,
    microbatches: int = 1,
    optimizer_multiplier: float | None = 0.0,
    recompute: Iterable[DeviceSlot] = (),
    bytes_per_cost: float | None = None,
    virtual: int | None = None,
) -> tuple[MemoryBreakdown, ...]:
    """Each device's peak of :func:`peak_table` split into weights, gradients, optimizer state and activations.

    ``schedule`` None: the paper's weights-only model (the node sizes, no activations).
    """
    graph = problem.graph
    caps = {kind.name: kind.memory for kind in problem.devices.accelerators}

    def sizes(stage, backward: bool) -> float:
        return math.fsum(graph.node_by_id[n].size for n in stage.nodes if graph.node_by_id[n].is_backward == backward)

    if schedule is None:
        return tuple(
            MemoryBreakdown(
                s.device,
                sizes(s, False),
                sizes(s, True),
                0.0,
                0.0,
                math.inf if s.device.kind == CPU_KIND else caps.get(s.device.kind, 0.0),
                math.fsum(graph.node_by_id[n].size for n in s.nodes),
            )
            for s in placement.stages
        )
    training = schedule != ScheduleKind.INFERENCE
    multiplier = resolve_optimizer_multiplier(graph, optimizer_multiplier) if training else 0.0
    statics = stage_memory(problem, placement, multiplier, bytes_per_cost)
    rows = peak_table(problem, placement, schedule, microbatches, multiplier, recompute, bytes_per_cost, virtual)
    out = []
    for r, (device, peak, cap) in enumerate(rows):
        mine = range(r, len(placement.stages), len(rows))
        weights = math.fsum(sizes(placement.stages[k], False) for k in mine)
        gradients = math.fsum(sizes(placement.stages[k], True) for k in mine)
        optimizer = math.fsum(statics[k].optimizer for k in mine)
        activations = max(0.0, peak - weights - gradients - optimizer)
        out.append(MemoryBreakdown(device, weights, gradients, optimizer, activations, cap, peak))
    return tuple(out)
