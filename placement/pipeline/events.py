"""The values of a pipeline schedule: events, per-device work, actions and the :class:`Schedule` itself.

:func:`placement.pipeline.schedule.simulate` builds them; the module docstring there states the rules.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..errors import PlacementError
from ..model import DeviceSlot, EventKind, Placement, ScheduleKind

EVENT_KINDS = tuple(k.value for k in EventKind)


@dataclass(frozen=True)
class Event:
    """One interval of work on one device.

    Attributes
    ----------
    device : DeviceSlot
        The device that is busy.
    kind : str
        ``"forward"``, ``"backward"`` (full or input-gradient backward compute), ``"weight"``
        (weight-gradient compute, ZB-H1), ``"transfer"`` or ``"recompute"``.
    microbatch : int
        The microbatch (sample) index, from 0.
    start, end : float
        Times in the graph's time unit.
    phase : str
        ``"forward"``, ``"backward"`` or ``"weight"``: the unit the event belongs to.
    direction : str
        For transfers: ``"in"`` (receiving) or ``"out"`` (sending); else ``""``.
    stage : int
        Pipeline position of the (virtual) stage the work belongs to.
    """

    device: DeviceSlot
    kind: str
    microbatch: int
    start: float
    end: float
    phase: str = "forward"
    direction: str = ""
    stage: int = 0

    @property
    def duration(self) -> float:
        return self.end - self.start


@dataclass(frozen=True)
class StageWork:
    """Per-microbatch work of one device (see the module docstring for the rule).

    All times already include the overlap scaling; ``forward + backward == load``
    (+ ``recompute`` where the device recomputes). ``weight_compute`` is the weight-gradient
    share of ``backward_compute`` (the ``W`` unit of ZB-H1).
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
    weight_compute: float = 0.0

    @property
    def input_backward(self) -> float:
        """The ``I`` unit of ZB-H1: the backward unit without the weight-gradient compute."""
        return self.backward - self.weight_compute

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


ACTION_OPS = ("F", "B", "I", "W")


@dataclass(frozen=True)
class Action:
    """One unit of work in a device's order: ``stage`` runs ``op`` on ``microbatch``.

    ``op`` is ``"F"`` (forward), ``"B"`` (full backward), ``"I"`` (input-gradient backward)
    or ``"W"`` (weight-gradient backward); ``str(action)`` is torch's notation, e.g. ``"1I0"``.
    """

    stage: int
    op: str
    microbatch: int

    def __post_init__(self) -> None:
        if self.op not in ACTION_OPS:
            raise PlacementError(f"action op must be one of {', '.join(ACTION_OPS)} (got {self.op!r})")

    def __str__(self) -> str:
        return f"{self.stage}{self.op}{self.microbatch}"

    @classmethod
    def parse(cls, text: str) -> Action:
        """The inverse of ``str``: ``"12W3"`` -> ``Action(12, "W", 3)``."""
        for i, char in enumerate(text):
            if char in ACTION_OPS:
                head, tail = text[:i], text[i + 1 :]
                if head.isdigit() and tail.isdigit():
                    return cls(int(head), char, int(tail))
                break
        raise PlacementError(f"action {text!r}: expected <stage><F|B|I|W><microbatch>, e.g. '0F1'")


@dataclass(frozen=True)
class Schedule:
    """The result of :func:`simulate`: every event, and summary numbers.

    Attributes
    ----------
    kind : str
        The schedule (one of :data:`ALL_SCHEDULES`).
    microbatches : int
        Number of microbatches simulated.
    placement : Placement
        The placement simulated (stages in pipeline order).
    work : tuple of StageWork
        Per-stage work per microbatch, in pipeline order (``work[i].device`` is the device
        stage ``i`` runs on).
    events : tuple of Event
        Every event, device by device, by start time.
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
    actions : tuple of tuple of Action
        Per device (in the order of :attr:`devices`), its units in the order it runs them.
    virtual : int
        Virtual stages per device (``len(work) == virtual x len(devices)``).
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
    actions: tuple[tuple[Action, ...], ...] = ()
    virtual: int = 1

    @property
    def devices(self) -> tuple[DeviceSlot, ...]:
        """The devices that run stages, in the order of their first stage."""
        return tuple(dict.fromkeys(w.device for w in self.work))

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
        """The work of ``device``'s first stage (its only one unless the schedule is interleaved)."""
        for entry in self.work:
            if entry.device == device:
                return entry
        raise PlacementError(f"{device}: not in the schedule")

    def stages_of(self, device: DeviceSlot) -> tuple[int, ...]:
        """Pipeline positions of the stages ``device`` runs."""
        return tuple(k for k, w in enumerate(self.work) if w.device == device)

    def device_work(self, device: DeviceSlot) -> tuple[float, float]:
        """(forward, backward) work per microbatch of ``device``, summed over its stages."""
        mine = [w for w in self.work if w.device == device]
        if not mine:
            raise PlacementError(f"{device}: not in the schedule")
        return sum(w.forward for w in mine), sum(w.backward for w in mine)

    @property
    def peak_in_flight(self) -> tuple[int, ...]:
        """Per device, the most (stage, microbatch) activation stashes alive at once (from the order)."""
        return tuple(_order_in_flight(order, self.kind) for order in self.actions)


def format_actions(schedule: Schedule) -> str:
    """The schedule's per-device action lists as a text table, like torch's pipeline order dump.

    One line per device: ``"accelerator 0 | 0F0 0F1 0B0 ..."``.
    """
    names = [str(d) for d in schedule.devices]
    width = max((len(n) for n in names), default=0)
    return "\n".join(
        f"{name:<{width}} | {' '.join(str(a) for a in order)}" for name, order in zip(names, schedule.actions)
    )


def _order_in_flight(order: Sequence[Action], kind: str) -> int:
    """Most (stage, microbatch) stashes alive along ``order``: alive from F to its last backward unit."""
    if kind == ScheduleKind.INFERENCE:
        return 1 if order else 0
    zero_bubble = any(a.op == "W" for a in order)
    alive = best = 0
    for action in order:
        if action.op == "F":
            alive += 1
            best = max(best, alive)
        elif action.op == ("W" if zero_bubble else "B"):
            alive -= 1
    return best
