"""The value grids of the Tradeoffs sweeps and when a process pool pays (kept out of the app's pages).

* :func:`count_values`, :func:`bandwidth_values`: the accelerator-count and bandwidth grids;
* :func:`memory_steps`: the exact step function "optimal time per sample against memory per
  device of one kind", found by walking down its breakpoints (one solve per plan change), so
  that the sweep shows every memory value at which the optimal plan changes instead of a
  fixed geometric grid that may miss them;
* :func:`use_pool`: whether a local process pool is worth starting for a batch of solves;
* :func:`stop_executor` (from :mod:`placement.explore.executors`): stop a pool now (the Tradeoffs page's Stop
  button), ending its workers.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import cast

from ..evaluate import device_loads
from ..model import Problem, Result
from .executors import stop_executor as stop_executor  # re-exported (the page's Stop)
from .sweep import SweepPoint, make_point, vary

#: Estimated seconds of solving below which a local process pool is not worth starting.
POOL_THRESHOLD_S = 2.0
#: Bandwidth factors swept: the current factor times 2^(k/2), k = -6..6 (1/8x to 8x).
BANDWIDTH_STEPS = tuple(range(-6, 7))


def count_values(max_count: int) -> tuple[int, ...]:
    """Accelerator counts 1..``max_count`` (at least one value)."""
    return tuple(range(1, max(1, int(max_count)) + 1))


def bandwidth_values(bandwidth: float) -> tuple[float, ...]:
    """Bandwidth factors from ``bandwidth``/8 to 8 x ``bandwidth`` in steps of sqrt(2), sorted."""
    return tuple(sorted({bandwidth * 2 ** (k / 2) for k in BANDWIDTH_STEPS}))


def use_pool(seconds_per_solve: float, solves: int, threshold: float = POOL_THRESHOLD_S) -> bool:
    """True when ``solves`` solves of about ``seconds_per_solve`` each take at least ``threshold`` seconds."""
    return seconds_per_solve * solves >= threshold


def plan_memory(problem: Problem, result, kind: str) -> float:
    """Largest memory (bytes, as the evaluator counts it) the plan of ``result`` puts on one ``kind`` device.

    0 when the plan puts nothing on that kind; ``nan`` when ``result`` has no plan.
    """
    if not result.ok:
        return math.nan
    return max(
        (
            entry.memory
            for entry in device_loads(problem, result.placement)
            if entry.device.kind == kind and entry.nodes
        ),
        default=0.0,
    )


def memory_grid(
    problem: Problem,
    kind: str | None = None,
    method: str = "dp",
    points: int = 8,
    rounds: int = 1,
    probes_per_round: int = 4,
    margin: float = 0.25,
    executor=None,
    progress: Callable[[int, int], None] | None = None,
    heartbeat_s: float | None = None,
) -> tuple[SweepPoint, ...]:
    """Time per sample against memory per device of ``kind``, on a grid placed around where the plan changes.

    The optimum ``f(M)`` is a non-increasing step function of the memory ``M`` per device. A
    solve at ``M`` gives a plan ``P`` whose largest ``kind`` device holds ``m(P) <= M`` bytes, and
    ``f`` is constant on ``[m(P), M]`` (``P`` fits there, and less memory never helps), so each
    solve also gives the exact point ``(m(P), f(M))`` for free. The grid:

    1. one solve with unlimited memory: above ``hi = m(P)`` nothing changes;
    2. ``points`` values evenly from ``hi / 4`` to ``hi``, one at ``(1 + margin) hi`` and the
       current memory (when finite and below ``4 hi``), solved through :func:`placement.explore.sweep.sweep`
       (``executor`` as there), each with its free point ``(m(P), f)``;
    3. ``rounds`` of refinement: the midpoint of every gap between neighbours with different
       times (or a no-plan point next to a plan), at most ``probes_per_round`` per round, widest first.

    Parameters
    ----------
    problem : Problem
        The base problem.
    kind : str, optional
        Accelerator kind whose memory varies (default: the first kind).
    method : str
        Solver method (the exact DP by default).
    points, rounds, probes_per_round : int
        Grid size and refinement (see above).
    margin : float
        How far above the highest breakpoint one point shows the flat part.
    executor : Executor, "process" or None
        As in :func:`placement.explore.sweep.sweep`.
    progress : callable, optional
        ``progress(done, total)`` after each solve (``total`` grows when a round adds probes).
    heartbeat_s : float, optional
        As in :func:`placement.explore.sweep.sweep` (every solve, the first included, runs on ``executor``).

    Returns
    -------
    tuple of SweepPoint
        Sorted by memory (``parameter == "memory"``, ``value`` in bytes, finite), re-indexed
        from 0; points without a plan have ``ok == False``. Empty when nothing fits even with
        unlimited memory, or that optimum puts nothing on ``kind`` (memory cannot change it).

    Raises
    ------
    PlacementError
        For an unknown kind.
    """
    from .sweep import kind_label, sweep

    name = kind_label(problem.devices, kind)
    done_before = 0
    planned = 1 + points + 2 + rounds * probes_per_round

    def report(done: int, total: int) -> None:
        if progress is not None:
            progress(done_before + done, max(planned, done_before + total))

    unlimited = vary(problem, "memory", math.inf, name)
    first = sweep(
        problem,
        "memory",
        [math.inf],
        method=method,
        executor=executor,
        progress=lambda done, total: report(0, 0),
        kind=name,
        heartbeat_s=heartbeat_s,
    )
    top = first[0].result
    done_before = 1
    report(0, 0)
    hi = plan_memory(unlimited, top, name)
    if not top.ok or not hi > 0:
        return ()
    found: dict[float, tuple[Problem, Result]] = {}

    def add(batch: tuple[SweepPoint, ...]) -> None:
        for point in batch:
            found.setdefault(float(point.value), (point.problem, point.result))
            if point.ok:
                needed = plan_memory(point.problem, point.result, name)
                if needed > 0 and needed not in found:
                    found[needed] = (vary(problem, "memory", needed, name), point.result)

    wanted = {hi / 4 + (hi - hi / 4) * k / max(points - 1, 1) for k in range(points)}
    wanted.add(hi * (1 + margin))
    current = problem.devices.kind(name).memory
    if math.isfinite(current) and 0 < current <= 4 * hi:
        wanted.add(current)
    values = sorted(wanted)
    add(
        sweep(
            problem,
            "memory",
            values,
            method=method,
            executor=executor,
            progress=report,
            kind=name,
            heartbeat_s=heartbeat_s,
        )
    )
    done_before += len(values)
    for _ in range(rounds):
        ordered = sorted(found.items())
        gaps = []
        for (a, (_, ra)), (b, (_, rb)) in zip(ordered, ordered[1:]):
            differ = (ra.ok != rb.ok) or (
                ra.ok
                and rb.ok
                and not math.isclose(cast(float, ra.objective), cast(float, rb.objective), rel_tol=1e-12)
            )  # ok: solved, an objective
            if differ and b - a > 1e-6 * b:
                gaps.append((b - a, (a + b) / 2))
        probes = sorted(mid for _, mid in sorted(gaps, reverse=True)[:probes_per_round])
        if not probes:
            break
        add(
            sweep(
                problem,
                "memory",
                probes,
                method=method,
                executor=executor,
                progress=report,
                kind=name,
                heartbeat_s=heartbeat_s,
            )
        )
        done_before += len(probes)
    if progress is not None:
        progress(done_before, done_before)
    return tuple(
        make_point(i, "memory", m, varied, result) for i, (m, (varied, result)) in enumerate(sorted(found.items()))
    )
