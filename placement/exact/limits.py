"""The table-size limit every DP entry point checks before allocating its table.

A DP table has one row per ideal and one column per device-count state (the product of
``count + 1`` over the accelerator kinds and the CPU cores); each cell costs
:data:`CELL_BYTES`. :func:`check_table_size` refuses a table over :data:`MAX_TABLE_BYTES`
with one line (:class:`~placement.errors.TooManyIdealsError`) instead of letting numpy raise
a ``MemoryError`` deep inside the kernel. It is called by :func:`placement.exact.dp.solve_dp`,
:func:`placement.exact.dp.solve_dp_table` (the live app's table),
:func:`placement.exact.memory_aware.solve_memory_aware`, on the unreduced lattice by
:func:`placement.exact.kernel.relax_then_verify`, and by :func:`placement.exact.kernel.run`
itself before it allocates (so no caller can skip it).

The DP's tie-break pass has a work limit too (:data:`TIE_BREAK_MAX_PAIRS`, read with the
result's line :func:`tie_break_note`).
"""

from __future__ import annotations

import math

from ..enums import TieBreak
from ..errors import TooManyIdealsError

__all__ = [
    "MAX_TABLE_BYTES",
    "CELL_BYTES",
    "TIE_BREAK_MAX_PAIRS",
    "tie_break_note",
    "device_states",
    "check_table_size",
    "check_problem_table",
]

#: Largest DP table allowed (bytes).
MAX_TABLE_BYTES = 2 * 1024**3

#: Bytes per cell: best (8) + parent ideal (4) + parent type (1) + useful (1) + floor (8).
CELL_BYTES = 22


def device_states(devices) -> int:
    """Device-count states of ``devices`` (a :class:`~placement.model.Devices`): prod(count + 1), CPUs included."""
    return math.prod(kind.count + 1 for kind in devices.accelerators) * (devices.cpus + 1)


def check_table_size(ideals: int, states: int) -> None:
    """Raise :class:`~placement.errors.TooManyIdealsError` if an ``ideals`` x ``states`` table is over the limit."""
    needed = int(ideals) * int(states) * CELL_BYTES
    if needed > MAX_TABLE_BYTES:
        raise TooManyIdealsError(
            f"the DP table would need {needed / 1024**3:.1f} GiB ({ideals:,} ideals x {states:,} device-count "
            f"states), over the {MAX_TABLE_BYTES / 1024**3:.0f} GiB limit: use fewer devices or kinds, or coarsen the graph"
        )


def check_problem_table(problem, ideals: int) -> None:
    """:func:`check_table_size` for ``problem``'s devices (a :class:`~placement.model.Problem`)."""
    check_table_size(ideals, device_states(problem.devices))


#: The DP's tie-break pass is made when it would search at most this many ideal pairs (estimated
#: from a sample of its rows before it starts, :func:`placement.exact.dp.solve_dp`); past it the
#: result is the max-load pass's optimal split and says so. About 4 s of CPU at the kernel's
#: 5 M pairs per second (Inception-v3's layer graphs would need about 250 M).
TIE_BREAK_MAX_PAIRS = 20_000_000


def tie_break_note(result) -> str | None:
    """One line for a DP :class:`~placement.model.Result` whose tie-break pass was skipped for its size, else None."""
    stats = dict(result.stats)
    if stats.get("tie_break") != TieBreak.SKIPPED:
        return None
    pairs = float(stats.get("tie_break_pairs", 0))
    limit = float(stats.get("tie_break_limit", TIE_BREAK_MAX_PAIRS))
    return (
        f"tie-break skipped: it would search about {pairs / 1e6:,.1f} M ideal pairs (limit {limit / 1e6:,.1f} M), "
        "so this optimal split is the first found, not the one with the least sum of stage durations"
    )
