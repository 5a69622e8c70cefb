"""The package's vocabulary: string enums for every status and kind (compare against members, not strings).

Members compare, hash, format and JSON-encode as their plain string values (``Status.OPTIMAL == "optimal"``), so
files and URLs keep their strings; code compares against the members (``tests/test_vocabulary.py`` checks).
Re-exported by :mod:`placement.model` and :mod:`placement`.
"""

from __future__ import annotations

from enum import Enum

from .errors import PlacementError


class _StrEnum(str, Enum):
    """A string enum: members compare, hash, format and JSON-encode as their plain string value."""

    def __str__(self) -> str:
        return str(self.value)

    def __format__(self, format_spec: str) -> str:
        return str.__format__(self, format_spec)


class Status(_StrEnum):
    """Outcome of a solve (``Status.OPTIMAL == "optimal"``)."""

    OPTIMAL = "optimal"  #: proven optimal
    FEASIBLE = "feasible"  #: a valid plan, optimality not proven (see bound and gap)
    INFEASIBLE = "infeasible"  #: proven: no valid plan exists (see reason)
    NO_SOLUTION = "no solution"  #: none found within the limits
    ERROR = "error"  #: the method failed (see reason)


class Objective(_StrEnum):
    """What a method minimises."""

    THROUGHPUT = "throughput"  #: the max-load (time per sample)
    LATENCY = "latency"  #: single-sample latency


class TieBreak(_StrEnum):
    """What became of the exact DP's tie-break pass (a result's ``stat("tie_break")``)."""

    MADE = "made"  #: among the optimal splits, the least sum of stage durations, then fewest devices
    SKIPPED = "skipped"  #: too large for its work limit: the first optimal split found
    OFF = "off"  #: not asked for


class ScheduleKind(_StrEnum):
    """Pipeline schedules (see :mod:`placement.pipeline.schedule`; labels in :mod:`placement.pipeline.registry`)."""

    INFERENCE = "inference"
    GPIPE = "gpipe"
    ONE_F_ONE_B = "1f1b"
    INTERLEAVED = "interleaved"
    ZBH1 = "zbh1"


class TrainingSchedule(_StrEnum):
    """Pipeline schedules of a training iteration in the performance model (:mod:`placement.perf`: ``Schedule``).

    The same schedules as :class:`ScheduleKind` under the same names (``TrainingSchedule.GPIPE == ScheduleKind.GPIPE
    == "gpipe"``), without streaming inference and with ZB-V, which the performance model and the launch configs
    (torchtitan's ``ZBVZeroBubble``) know but the exact pipeline simulator does not.
    """

    GPIPE = "gpipe"
    ONE_F_ONE_B = "1f1b"
    INTERLEAVED = "interleaved"  #: 1F1B with ``virtual_stages`` chunks per GPU
    ZB_H1 = "zbh1"  #: zero-bubble H1 (Qi et al. 2024): the weight-gradient pass fills the bubble
    ZBV = "zbv"  #: zero-bubble V (Qi et al. 2024; torchtitan's ZBVZeroBubble): two chunks per rank in a V
    ZBH1 = "zbh1"  #: an alias of ZB_H1 (ScheduleKind's spelling)

    @property
    def zero_bubble(self) -> bool:
        """Whether the weight-gradient passes fill the bubble (ZB-H1, ZB-V)."""
        return self in (TrainingSchedule.ZB_H1, TrainingSchedule.ZBV)


class EventKind(_StrEnum):
    """Kinds of the events of a pipeline schedule (and the phases of its units: forward, backward, weight)."""

    FORWARD = "forward"
    BACKWARD = "backward"  #: full backward, or the input-gradient part under ZB-H1
    WEIGHT = "weight"  #: the weight-gradient part of the backward (ZB-H1)
    TRANSFER = "transfer"
    RECOMPUTE = "recompute"


class Recompute(_StrEnum):
    """Recomputation of activations in the backward pass (the one spelling; True/False are aliases)."""

    NONE = "none"  #: stash every activation
    ALWAYS = "always"  #: every stage recomputes its forward pass, stashing only its input
    PER_STAGE = "per-stage"  #: each stage chooses (the exact memory-aware DP only)

    @classmethod
    def of(cls, value: object) -> Recompute:
        """``value`` as a member: a member or its string, or ``True`` (always) / ``False`` (none).

        >>> Recompute.of(False), Recompute.of("per-stage")
        (<Recompute.NONE: 'none'>, <Recompute.PER_STAGE: 'per-stage'>)
        """
        if value is True:
            return cls.ALWAYS
        if value is False:
            return cls.NONE
        try:
            return cls(value)
        except ValueError:
            choices = ", ".join(repr(m.value) for m in cls)
            raise PlacementError(f"recompute must be one of {choices} (or true/false), got {value!r}") from None


STATUSES = tuple(s.value for s in Status)
