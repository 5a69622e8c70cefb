"""Reading the optimal plan back from the decision DP's tables of the last feasible probe.

Each step finds the table row that produced the current state (the witness), turns it into a
:class:`~placement.multidim.model.PlanStage` with the fastest option choice at its (d, y)
(:func:`~placement.multidim.choice.stage_choice`), and moves to the ideal above.
"""

from __future__ import annotations

from typing import cast

import numpy as np

from .choice import stage_choice
from .model import MultiProblem, Plan, PlanStage
from .tables import StageTables


def read_front_plan(problem: MultiProblem, lattice, tables: StageTables, fronts_) -> Plan:
    """The plan of :func:`~placement.multidim.recurrence.decide_front`'s fronts (one kind): from the
    point of fewest devices at ideal 0, follow each point's (row, source point)."""
    kind = problem.kinds[0]
    FS, FV, BR, BX, length = fronts_
    stages = []
    j, x = 0, int(np.argmin(FV[0, : length[0]]))
    while j != lattice.full:
        s = int(FS[j, x])
        r = int(BR[j, x])
        i, d, t = int(tables.i[r]), int(tables.d[r]), int(tables.t[r])
        nodes = tuple(v for v in range(len(problem.nodes)) if (lattice.masks[i] & ~lattice.masks[j]) >> v & 1)
        y = -(-s // d)
        # the DP chose this stage at (d, y), so some choice fits: stage_choice is not None
        _, choice = cast("tuple[float, tuple]", stage_choice(problem, nodes, t, d, y, kind))
        names = tuple(problem.nodes[v].options_for(t)[o].name for v, o in zip(nodes, choice))
        stages.append(PlanStage(nodes, d, t, names, kind.name))
        j, x = i, int(BX[j, x])
    return Plan(tuple(stages))


def read_plan(problem: MultiProblem, lattice, tables: StageTables, h, ycount, s_max: int, step: int) -> Plan:
    """The plan of :func:`~placement.multidim.recurrence.decide`'s tables (several kinds): from the
    least state of ideal 0, find at each ideal a row whose source state gives the same value."""
    kinds = problem.kinds
    last = len(kinds) - 1
    h0 = h[0]
    flat = int(np.argmin(h0))
    state = np.unravel_index(flat, h0.shape)
    s, c = int(state[0]), tuple(int(x) for x in state[1:])
    j = 0
    stages = []
    rows_by_j: dict[int, list[int]] = {}
    for r in np.flatnonzero(ycount > 0).tolist():
        rows_by_j.setdefault(int(tables.j[r]), []).append(r)
    while j != lattice.full:
        value = h[j][(s,) + c]
        for r in rows_by_j.get(j, ()):
            i, d, t, k = int(tables.i[r]), int(tables.d[r]), int(tables.t[r]), int(tables.k[r])
            if h[i] is None or not d <= s <= min(s_max, d * int(ycount[r])):
                continue
            if k == last:
                prev_c, add = c, d * t
            else:
                shift = d * t // step
                if c[k] < shift:
                    continue
                prev_c, add = tuple(x - shift if q == k else x for q, x in enumerate(c)), 0
            if h[i][(s - d,) + prev_c] + add == value:
                break
        else:  # pragma: no cover - the tables guarantee a witness
            raise RuntimeError("plan read-back found no witness")
        members = lattice.masks[i] & ~lattice.masks[j]
        nodes = tuple(v for v in range(len(problem.nodes)) if members >> v & 1)
        y = -(-s // d)
        kind = kinds[k]
        # the DP chose this stage at (d, y), so some choice fits: stage_choice is not None
        _, choice = cast("tuple[float, tuple]", stage_choice(problem, nodes, t, d, y, kind))
        names = tuple(problem.nodes[v].options_for(t)[o].name for v, o in zip(sorted(nodes), choice))
        stages.append(PlanStage(tuple(sorted(nodes)), d, t, names, kind.name))
        j, s, c = i, s - d, prev_c
    return Plan(tuple(stages))
