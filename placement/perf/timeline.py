"""The pipeline schedule of one iteration as blocks on a time line: :func:`schedule_blocks`.

Each pipeline rank runs its operations in the schedule's order (GPipe: all forwards, then all backwards;
1F1B: ``p - i - 1`` warm-up forwards, then one forward one backward, then the cool-down backwards;
interleaved 1F1B: Megatron's order over ``v`` chunks, micro-batches in groups of ``p``). Zero-bubble
schedules are not drawn (their weight-gradient placement is not simulated here). An operation starts when its rank is free and its input has arrived
(the previous rank's forward of the same micro-batch and chunk, the next rank's backward). With equal ranks
the 1F1B makespan is ``(m + p - 1)(f + b)`` and the interleaved one ``(m + (p - 1)/v)(f + b)`` (tests).

The durations per rank come from :func:`placement.perf.predict.stage_seconds` (a micro-batch's forward and
backward with its exposed communication); the schedule picture does not include the data-parallel
reduction, the optimizer step or the synchronisation term of the iteration time.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import PlacementError
from .layout import Schedule


@dataclass(frozen=True)
class Block:
    """One operation of one rank: ``kind`` F (forward) or B (backward) of a micro-batch's chunk."""

    rank: int
    kind: str
    microbatch: int
    chunk: int
    start: float
    end: float


def _orders(schedule: Schedule, p: int, m: int, v: int) -> list[list[tuple[str, int, int]]]:
    """Per rank, the (kind, micro-batch, chunk) operations in execution order."""
    orders = []
    for i in range(p):
        if schedule is Schedule.GPIPE:
            ops = [("F", j, 0) for j in range(m)] + [("B", j, 0) for j in range(m)]
        elif schedule is Schedule.INTERLEAVED:
            total = m * v

            def fwd(k: int) -> tuple[str, int, int]:
                return ("F", (k // (p * v)) * p + k % p, (k // p) % v)

            def bwd(k: int) -> tuple[str, int, int]:
                return ("B", (k // (p * v)) * p + k % p, v - 1 - (k // p) % v)

            warm = min(total, (p - i - 1) * 2 + (v - 1) * p)
            ops = [fwd(k) for k in range(warm)]
            for k in range(total - warm):
                ops += [fwd(warm + k), bwd(k)]
            ops += [bwd(k) for k in range(total - warm, total)]
        else:
            warm = min(m, p - i - 1)
            ops = [("F", j, 0) for j in range(warm)]
            for j in range(m - warm):
                ops += [("F", warm + j, 0), ("B", j, 0)]
            ops += [("B", j, 0) for j in range(m - warm, m)]
        orders.append(ops)
    return orders


def schedule_blocks(
    schedule: Schedule | str, stage_seconds: list[tuple[float, float]], microbatches: int, virtual_stages: int = 1
) -> list[Block]:
    """Simulate one iteration's pipeline schedule.

    Parameters
    ----------
    schedule : Schedule or str
        ``gpipe``, ``1f1b`` or ``interleaved``.
    stage_seconds : list of (float, float)
        Per rank, seconds of one micro-batch's forward and backward through all its layers (each of ``v``
        chunks takes ``1/v`` of them).
    microbatches, virtual_stages : int
        m and v (interleaved: m a multiple of p, as Megatron requires).

    Returns
    -------
    list of Block
        Every operation with its start and end, seconds from the iteration's start.

    Raises
    ------
    PlacementError
        For a zero-bubble schedule, or interleaving with m not a multiple of p.
    """
    schedule = Schedule(schedule)
    if schedule.zero_bubble:
        raise PlacementError("timeline: zero-bubble schedules are not drawn")
    if virtual_stages > 1 and microbatches % len(stage_seconds):
        raise PlacementError("timeline: the interleaved schedule needs micro-batches a multiple of the pipeline size")
    p, m, v = len(stage_seconds), microbatches, virtual_stages
    orders = _orders(schedule, p, m, v)
    done: dict[tuple[str, int, int, int], float] = {}  # (kind, rank, micro-batch, chunk) -> end
    free = [0.0] * p
    pos = [0] * p
    blocks: list[Block] = []
    progress = True
    while progress:  # every pass runs each rank's next operations whose inputs are ready
        progress = False
        for i in range(p):
            while pos[i] < len(orders[i]):
                kind, j, c = orders[i][pos[i]]
                dep = _dependency(kind, i, j, c, p, v)
                if dep is not None and dep not in done:
                    break
                ready = done[dep] if dep is not None else 0.0
                f, b = stage_seconds[i]
                length = (f if kind == "F" else b) / v
                start = max(free[i], ready)
                free[i] = start + length
                done[(kind, i, j, c)] = free[i]
                blocks.append(Block(i, kind, j, c, start, free[i]))
                pos[i] += 1
                progress = True
    return blocks


def _dependency(kind: str, i: int, j: int, c: int, p: int, v: int) -> tuple[str, int, int, int] | None:
    if kind == "F":
        if i > 0:
            return ("F", i - 1, j, c)
        return ("F", p - 1, j, c - 1) if c > 0 else None
    if i < p - 1:
        return ("B", i + 1, j, c)
    return ("B", 0, j, c + 1) if c < v - 1 else ("F", p - 1, j, c)
