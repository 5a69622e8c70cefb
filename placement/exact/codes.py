"""Named constants of the lattice kernel: parent codes, objectives, stage modes and search steps.

The kernel stores, per cell of its table, the ideal after the cell's first stage
(``parent_ideal``) and a *parent code* (``parent_type``): :func:`parent_code` of the stage's
device type and mode, or ``INHERIT + d`` when the cell holds the value of the state with one
device of type ``d`` fewer (``closure`` only). :func:`decode_parent` inverts the first kind.
"""

from __future__ import annotations

#: parent_type values >= INHERIT mean "same value as the state with one device of type (value - INHERIT) fewer".
INHERIT = 64

#: The kernel's ``objective`` argument: 0 minimises the max-load, 1 is the tie-break pass (sum of durations, then stages).
OBJECTIVE_MAX_LOAD = 0
OBJECTIVE_TIE_BREAK = 1

#: Stage modes (the ``mode`` of a parent code): a plain stage, or one that recomputes its forward pass.
MODE_PLAIN = 0
MODE_RECOMPUTE = 1

#: What one step of the cover-edge search yields (:func:`placement.exact.candidates.next_superset`):
#: the search of the row is over, nothing to evaluate this step (a pop, a superset seen before, or
#: ``count_only``), or a stage ``J \\ I`` to evaluate.
STEP_DONE = 0
STEP_SKIP = 1
STEP_STAGE = 2


def parent_code(device_type: int, mode: int, n_types: int) -> int:
    """The ``parent_type`` code of a stage on ``device_type`` in ``mode`` (what the kernel stores)."""
    return device_type + n_types * mode


def decode_parent(code: int, n_types: int) -> tuple[int, int]:
    """(device type, mode) of a ``parent_type`` code below :data:`INHERIT` (inverse of :func:`parent_code`)."""
    return code % n_types, code // n_types
