"""The pipeline schedule of one iteration as blocks on a time line: :func:`schedule_blocks`.

Each pipeline rank runs its operations in the schedule's order (GPipe: all forwards, then all backwards;
1F1B: ``p - i - 1`` warm-up forwards, then one forward one backward, then the cool-down backwards;
interleaved 1F1B: Megatron's order over ``v`` chunks, micro-batches in groups of ``p``; zero-bubble V:
torchtitan's order, below). An operation starts when its rank is free and its input has arrived (the previous
rank's forward of the same micro-batch and chunk, the next rank's backward). With equal ranks the 1F1B makespan
is ``(m + p - 1)(f + b)`` and the interleaved one ``(m + (p - 1)/v)(f + b)`` (tests).

**Zero-bubble V** (Qi et al. 2024, section 6; torchtitan's ``ZBVZeroBubble``): rank i holds the V's stages i and
``2p - 1 - i``; each backward is split into the input-gradient pass ``B`` (on the critical path) and the
weight-gradient pass ``W`` (free to fill bubbles). The per-rank order is
``torch.distributed.pipelining.ScheduleZBVZeroBubble._calculate_single_rank_operations`` (torch 2.13),
restated here (a test compares the two when torch is importable). A chunk's forward takes ``f / 2``, its B and
W ``b / 4`` each (the backward's two GEMM halves). With ``b = 2f`` (forward = input gradient = weight gradient,
the case the schedule is built for) the makespan is ``m (f + b) + (p - 1)/2 (f + b)/3``, the model's
(:func:`placement.perf.predict.iteration_time`'s ZB-V bubble, tests); otherwise the fixed order is longer than
the model's bubble (the model assumes that balance).

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
    """One operation of one rank: ``kind`` F (forward), B (backward; input gradient only in zero-bubble V) or W
    (weight gradient, zero-bubble V) of a micro-batch's chunk (zero-bubble V: the V's stage, 0 .. 2p - 1)."""

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
        ``gpipe``, ``1f1b``, ``interleaved`` or ``zbv`` (two chunks per rank; ``virtual_stages`` ignored).
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
        For ZB-H1 (not drawn), or interleaving with m not a multiple of p.
    """
    schedule = Schedule(schedule)
    if schedule is Schedule.ZBV:
        return _zbv_blocks(stage_seconds, microbatches)
    if schedule.zero_bubble:
        raise PlacementError(f"timeline: the {schedule} schedule is not drawn (zero-bubble V is)")
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


def zbv_orders(p: int, m: int) -> list[list[tuple[str, int, int]]]:
    """Per rank, the zero-bubble V's (kind F/B/W, V stage, micro-batch) operations in execution order.

    torchtitan's (``ScheduleZBVZeroBubble._calculate_single_rank_operations``): warm-up forwards of the first
    chunk, then of both, then forward-B-W of the second chunk, the steady F-B-W of both chunks, and a cool-down
    of Bs and the deferred Ws; counted over ``max(2p - 1, m)`` micro-batches and the extra ones dropped.
    """
    orders = []
    for rank in range(p):
        n = max(2 * p - 1, m)
        c0, c1 = rank, 2 * p - 1 - rank
        ops: list[tuple[str, int, int]] = []
        f0 = f1 = b0 = b1 = 0
        for _ in range(2 * (p - rank) - 1):
            ops.append(("F", c0, f0))
            f0 += 1
        for _ in range(rank):
            ops += [("F", c1, f1), ("F", c0, f0)]
            f1, f0 = f1 + 1, f0 + 1
        for _ in range(p - rank):
            ops += [("F", c1, f1), ("B", c1, b1), ("W", c1, b1)]
            f1, b1 = f1 + 1, b1 + 1
        while f1 < f0 or f0 < n:
            if f0 < n:
                ops.append(("F", c0, f0))
                f0 += 1
            ops += [("B", c0, b0), ("W", c0, b0), ("F", c1, f1), ("B", c1, b1), ("W", c1, b1)]
            b0, f1, b1 = b0 + 1, f1 + 1, b1 + 1
        w0, w1 = b0, b1
        for _ in range(rank):
            ops += [("B", c0, b0), ("B", c1, b1)]
            b0, b1 = b0 + 1, b1 + 1
        for _ in range(p - rank):
            ops += [("B", c0, b0), ("W", c0, w0)]
            b0, w0 = b0 + 1, w0 + 1
        ops += [("W", c1, j) for j in range(w1, b1)] + [("W", c0, j) for j in range(w0, b0)]
        orders.append([op for op in ops if op[2] < m])
    return orders


def _zbv_blocks(stage_seconds: list[tuple[float, float]], m: int) -> list[Block]:
    p = len(stage_seconds)
    last = 2 * p - 1
    orders = zbv_orders(p, m)
    done: dict[tuple[str, int, int], float] = {}  # (kind, V stage, micro-batch) -> end
    free = [0.0] * p
    pos = [0] * p
    blocks: list[Block] = []
    progress = True
    while progress:  # every pass runs each rank's next operations whose inputs are ready
        progress = False
        for i in range(p):
            f, b = stage_seconds[i]
            while pos[i] < len(orders[i]):
                kind, s, j = orders[i][pos[i]]
                if kind == "F":
                    dep = ("F", s - 1, j) if s > 0 else None
                elif kind == "B":  # the loss is at the V's last stage (rank 0's second chunk)
                    dep = ("B", s + 1, j) if s < last else ("F", s, j)
                else:
                    dep = ("B", s, j)
                if dep is not None and dep not in done:
                    break
                start = max(free[i], done[dep] if dep is not None else 0.0)
                free[i] = start + (f / 2 if kind == "F" else b / 4)
                done[(kind, s, j)] = free[i]
                blocks.append(Block(i, kind, j, s, start, free[i]))
                pos[i] += 1
                progress = True
    if any(pos[i] < len(orders[i]) for i in range(p)):  # (the order is deadlock-free; tests)
        raise PlacementError("timeline: the zero-bubble V order deadlocked")
    return blocks
