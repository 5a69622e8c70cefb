"""The one schedule registry: every pipeline schedule's name, labels and torch class.

Every page, the CLI and the package read schedule names and labels from :data:`SCHEDULE_SPECS`
(or the tuples derived from it below); no other module spells a schedule's label.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from ..errors import PlacementError
from ..model import ScheduleKind


@dataclass(frozen=True)
class ScheduleSpec:
    """One pipeline schedule.

    Attributes
    ----------
    kind : ScheduleKind
        The schedule (``kind.value`` is its name in files, URLs and on the command line).
    label : str
        Short name for tables and headlines (``"1F1B"``).
    title : str
        Longer name for menus (``"1F1B (PipeDream-Flush)"``).
    torch_class : str or None
        The ``torch.distributed.pipelining`` schedule class that runs it (None: streaming inference, no torch class).
    one_stage_per_device : bool
        True if every device runs one stage (the memory-aware planners plan for these schedules only).
    training : bool
        True if the schedule runs backward passes.
    """

    kind: ScheduleKind
    label: str
    title: str
    torch_class: str | None
    one_stage_per_device: bool
    training: bool = True

    def __post_init__(self) -> None:
        if not self.label or not self.title:
            raise PlacementError(f"schedule {self.kind.value!r}: label and title must be non-empty")

    @property
    def name(self) -> str:
        """The schedule's name (``kind.value``)."""
        return self.kind.value


#: Every schedule :func:`placement.pipeline.schedule.simulate` runs, by name, in menu order.
SCHEDULE_SPECS: Mapping[str, ScheduleSpec] = MappingProxyType(
    {
        spec.name: spec
        for spec in (
            ScheduleSpec(
                ScheduleKind.INFERENCE,
                "streaming inference",
                "streaming inference (forward only)",
                None,
                True,
                training=False,
            ),
            ScheduleSpec(
                ScheduleKind.GPIPE, "GPipe", "GPipe (all forwards, then all backwards)", "ScheduleGPipe", True
            ),
            ScheduleSpec(ScheduleKind.ONE_F_ONE_B, "1F1B", "1F1B (PipeDream-Flush)", "Schedule1F1B", True),
            ScheduleSpec(
                ScheduleKind.INTERLEAVED,
                "interleaved 1F1B",
                "interleaved 1F1B (virtual stages)",
                "ScheduleInterleaved1F1B",
                False,
            ),
            ScheduleSpec(
                ScheduleKind.ZBH1,
                "zero bubble ZB-H1",
                "zero bubble ZB-H1 (split backward)",
                "ScheduleInterleavedZeroBubble",
                False,
            ),
        )
    }
)
#: Schedules with one stage per device (the memory-aware planners plan for these).
SCHEDULES: tuple[str, ...] = tuple(name for name, spec in SCHEDULE_SPECS.items() if spec.one_stage_per_device)
#: Every schedule :func:`placement.pipeline.schedule.simulate` runs.
ALL_SCHEDULES: tuple[str, ...] = tuple(SCHEDULE_SPECS)
#: Short names of the schedules, for tables and menus (a view of :data:`SCHEDULE_SPECS`).
SCHEDULE_LABELS: Mapping[str, str] = MappingProxyType({name: spec.label for name, spec in SCHEDULE_SPECS.items()})
#: Menu titles of the schedules (a view of :data:`SCHEDULE_SPECS`).
SCHEDULE_TITLES: Mapping[str, str] = MappingProxyType({name: spec.title for name, spec in SCHEDULE_SPECS.items()})
#: torch.distributed.pipelining schedule classes of the schedules that have one.
TORCH_SCHEDULES: Mapping[str, str] = MappingProxyType(
    {name: spec.torch_class for name, spec in SCHEDULE_SPECS.items() if spec.torch_class is not None}
)


def schedule_spec(name: str | ScheduleKind) -> ScheduleSpec:
    """The registry entry of schedule ``name``.

    Raises
    ------
    PlacementError
        If ``name`` is no schedule (the message lists the schedules).
    """
    spec = SCHEDULE_SPECS.get(str(name))
    if spec is None:
        raise PlacementError(f"unknown schedule {name!r}; choose one of: {', '.join(ALL_SCHEDULES)}")
    return spec


def schedule_label(name: str | ScheduleKind) -> str:
    """Short label of schedule ``name`` (``"1F1B"``); raises :class:`PlacementError` if it is none."""
    return schedule_spec(name).label


def schedule_title(name: str | ScheduleKind) -> str:
    """Menu title of schedule ``name`` (``"1F1B (PipeDream-Flush)"``); raises :class:`PlacementError` if it is none."""
    return schedule_spec(name).title
