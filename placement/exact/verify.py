"""Reading a split back from the lattice kernel's table, and the relax-then-verify ladder.

:func:`traceback_split` follows the parent codes (:mod:`placement.exact.codes`) from the empty
ideal to the full one; :func:`relax_then_verify` checks the memory a reduced lattice ignored
and falls back to the unreduced lattice when it binds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..model import Status
from .codes import INHERIT, decode_parent

if TYPE_CHECKING:
    from ..model import Placement
    from .inputs import KernelInputs


def traceback_split(problem, groups, groups_of, parent_ideal, parent_type, state: int, full: int, inputs: KernelInputs):
    """Follow parent pointers from (empty ideal, ``state``) to the full ideal.

    ``groups_of(index)`` is the set of groups of ideal ``index``. Returns (placement, modes):
    the stages in pipeline order and each stage's mode (1 = it recomputes its forward pass).
    """
    from ..model import CPU_KIND, DeviceSlot, Placement, Stage

    n_types = inputs.n_types
    n_kinds = n_types - 1
    used = [0] * n_types
    stages, modes = [], []
    ideal = 0
    while ideal != full:
        code = int(parent_type[ideal, state])
        if code >= INHERIT:  # same value with one device of this type fewer
            state -= int(inputs.strides[code - INHERIT])
            continue
        device_type, mode = decode_parent(code, n_types)
        after = int(parent_ideal[ideal, state])
        stage_groups = set(groups_of(after)) - set(groups_of(ideal))
        kind = CPU_KIND if device_type == n_kinds else problem.devices.accelerators[device_type].name
        nodes = tuple(n for g in sorted(stage_groups) for n in groups.members[g])
        stages.append(Stage(DeviceSlot(kind, used[device_type]), nodes))
        modes.append(mode)
        used[device_type] += 1
        state -= int(inputs.strides[device_type])
        ideal = after
    return Placement(tuple(stages)), tuple(modes)


@dataclass(frozen=True)
class VerifiedSplit:
    """What :func:`relax_then_verify` found: a split checked against the memory the reduced lattice ignored.

    ``status``: optimal, infeasible, feasible (``value`` is an upper bound, ``bound`` a lower
    bound) or no solution; ``note``: why the status is not optimal (or ""). (A solver's outcome
    is :class:`placement.ip.common.Outcome`, a different thing.)
    """

    status: Status
    value: float
    placement: Placement | None
    bound: float
    pairs: int
    groups: int
    ideals: int
    note: str = ""
    extra: object = None


def relax_then_verify(
    solve, fits, groups, full_groups, lattice, relaxed: frozenset, max_ideals: int, check_size=None
) -> VerifiedSplit:
    """The ladder every exact planner runs after merging free groups.

    ``solve(groups, lattice, ignore)`` returns (value, placement or None, pairs, extra): one
    exact DP with the memory of the nodes ``ignore`` left out. First the reduced lattice with
    the merged nodes' memory ignored (a lower bound); if its split ``fits`` it is optimal.
    Else again with the real memory (an upper bound): equal values prove it optimal. Else
    the unreduced lattice (``full_groups``), exact, unless it is too large (then "feasible"
    with the bound and gap, or "no solution"). ``check_size(ideals)`` may raise
    :class:`~placement.errors.TooManyIdealsError` for a table that is too large.
    """
    from ..errors import TooManyIdealsError
    from .ideals import enumerate_ideals

    value, placement, pairs, extra = solve(groups, lattice, relaxed)
    if placement is None:
        return VerifiedSplit(Status.INFEASIBLE, math.inf, None, math.inf, pairs, groups.count, lattice.count)
    if not relaxed or fits(placement):
        return VerifiedSplit(Status.OPTIMAL, value, placement, value, pairs, groups.count, lattice.count, extra=extra)
    upper, upper_placement, more, upper_extra = solve(groups, lattice, frozenset())
    pairs += more
    if upper_placement is not None and upper <= value:
        return VerifiedSplit(
            Status.OPTIMAL, upper, upper_placement, value, pairs, groups.count, lattice.count, extra=upper_extra
        )
    try:
        full_lattice = enumerate_ideals(full_groups, max_ideals)
        if check_size is not None:
            check_size(full_lattice.count)
    except TooManyIdealsError:
        if upper_placement is None:
            return VerifiedSplit(
                Status.NO_SOLUTION,
                math.inf,
                None,
                value,
                pairs,
                groups.count,
                lattice.count,
                note="memory binds on merged nodes and the unreduced lattice is too large",
            )
        return VerifiedSplit(
            Status.FEASIBLE,
            upper,
            upper_placement,
            value,
            pairs,
            groups.count,
            lattice.count,
            note="memory binds on merged nodes and the unreduced lattice is too large",
            extra=upper_extra,
        )
    exact, exact_placement, more, exact_extra = solve(full_groups, full_lattice, frozenset())
    pairs += more
    if exact_placement is None:
        return VerifiedSplit(Status.INFEASIBLE, math.inf, None, math.inf, pairs, full_groups.count, full_lattice.count)
    return VerifiedSplit(
        Status.OPTIMAL, exact, exact_placement, exact, pairs, full_groups.count, full_lattice.count, extra=exact_extra
    )
