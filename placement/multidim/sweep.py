"""Optimal time per sample against the device count (the curve of the Parallel plan page)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ..model import Status
from .dp import solve_multidim
from .model import MultiProblem

#: Device counts of the default curve.
DEFAULT_COUNTS = (8, 16, 32, 64, 128, 256, 512, 1024)


def device_curve(
    problem: MultiProblem, counts: Sequence[int] = DEFAULT_COUNTS, progress: Callable[[int, int], None] | None = None
) -> list[tuple[int, float | None]]:
    """(count, optimal time per sample in ms, or None when infeasible) for each total device count (one kind)."""
    out = []
    cache: dict = {}  # the option fronts do not depend on the device count
    for done, count in enumerate(counts):
        result = solve_multidim(
            problem.with_devices(int(count)), front_cache=cache, front_horizon=min(problem.microbatches, max(counts))
        )
        out.append((int(count), result.time_per_sample if result.status == Status.OPTIMAL else None))
        if progress is not None:
            progress(done + 1, len(counts))
    return out
