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
"""

from __future__ import annotations

import math

from ..errors import TooManyIdealsError

__all__ = ["MAX_TABLE_BYTES", "CELL_BYTES", "device_states", "check_table_size", "check_problem_table"]

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
