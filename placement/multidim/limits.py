"""The multidimensional planner's work, estimated before anything large is allocated.

Every size the planner allocates follows from a few numbers known before its tables are built: the
ideals L, the stages (pairs of nested ideals) S, the tensor degrees, the edges, the usable
data-parallel degrees (divisors of N up to s_max = min(N, devices)) and the device kinds. The
estimate (:func:`estimate_work`) computes each table's size from them and :func:`check_work` refuses,
in one line, any that exceeds its cap (:class:`TooMuchWorkError`), so that a hostile or merely too
large input is refused in well under a second instead of running for minutes or dying in numpy.

Caps (module constants, each with the table it bounds):

* :data:`MAX_SUM_DEGREES`: s_max, the range of the sum of data-parallel degrees (every table's width);
* ``max_stages`` (:data:`placement.multidim.dp.DEFAULT_MAX_STAGES`): stages x tensor degrees, one option
  front each;
* :data:`MAX_BOUNDARY_WORK`: stages x edges (the boundary bytes of every stage);
* :data:`MAX_TABLE_ROWS`: stages x degrees x kinds x usable d (the stage-time table rows);
* :data:`MAX_STATE_CELLS`: the decision DP's states per probe: ideals x (s_max + 1) (one kind, Pareto
  fronts, four integer arrays) or ideals x (s_max + 1) x the device counts of every kind but the last
  (several kinds, dense float tables);
* :data:`MAX_FRONT_CELLS`: ideals x the largest y of the per-y option fronts (and nodes x that y).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..condense import longest_path_levels
from ..errors import TooManyIdealsError
from .model import MultiProblem

#: Largest s_max = min(N, devices), the sum of data-parallel degrees every table spans.
MAX_SUM_DEGREES = 1 << 16

#: Largest stages x edges: the boundary bytes of every stage are summed over the edges.
MAX_BOUNDARY_WORK = 200_000_000

#: Largest number of stage-time table rows (stage, t, kind, d): about 80 bytes each.
MAX_TABLE_ROWS = 4_000_000

#: Largest decision-DP state count per probe (8-byte cells; four arrays of them with one kind).
MAX_STATE_CELLS = 25_000_000

#: Largest ideals x horizon of the per-y option fronts (each front row is y-indexed).
MAX_FRONT_CELLS = 50_000_000

#: Largest nodes x edges for the free-node merge (it walks descendants per free node); past it the
#: merge is skipped (the planner stays exact, it only keeps more groups).
MAX_MERGE_WORK = 20_000_000


class TooMuchWorkError(TooManyIdealsError):
    """The planner's estimated tables exceed a cap (one line: which table, its size, the cap)."""


@dataclass(frozen=True)
class WorkEstimate:
    """Sizes of the planner's tables, computed before they are built.

    Attributes
    ----------
    ideals, stages, degrees, edges, nodes : int
        Lattice size, pairs of nested ideals, tensor degrees, edges and nodes of the problem.
    s_max : int
        min(N, devices): the range of the sum of data-parallel degrees.
    usable_d : int
        Data-parallel degrees a stage may take (divisors of N up to s_max).
    fronts, boundary_work, table_rows, state_cells, front_cells : int
        Option fronts (stages x degrees), stages x edges, table rows, decision-DP cells per probe, and
        ideals x horizon of the per-y fronts.
    """

    ideals: int
    stages: int
    degrees: int
    edges: int
    nodes: int
    s_max: int
    usable_d: int
    fronts: int
    boundary_work: int
    table_rows: int
    state_cells: int
    front_cells: int


def usable_degrees(microbatches: int, s_max: int) -> list[int]:
    """Data-parallel degrees d with d | N and d <= s_max, increasing (O(s_max); s_max is capped first)."""
    return [d for d in range(1, s_max + 1) if microbatches % d == 0]


def check_sum_degrees(problem: MultiProblem) -> int:
    """s_max = min(N, devices), refused past :data:`MAX_SUM_DEGREES` before anything is sized on it."""
    s_max = min(problem.microbatches, problem.total_devices)
    if s_max > MAX_SUM_DEGREES:
        raise TooMuchWorkError(
            f"multidim planner: min(microbatches, devices) = {s_max:,} is the range of every table "
            f"(sum of data-parallel degrees); the cap is {MAX_SUM_DEGREES:,}: use fewer microbatches or devices"
        )
    return s_max


def estimate_work(problem: MultiProblem, ideals: int, stages: int, count_step: int, horizon: int) -> WorkEstimate:
    """Sizes of every table of :func:`~placement.multidim.dp.solve_multidim` (nothing is allocated)."""
    s_max = min(problem.microbatches, problem.total_devices)
    degrees = len({t for node in problem.nodes for t in node.degrees})
    usable = len(usable_degrees(problem.microbatches, s_max))
    kinds = problem.kinds
    if len(kinds) == 1:
        state = ideals * (s_max + 1)
    else:
        state = ideals * (s_max + 1) * math.prod(k.count // count_step + 1 for k in kinds[:-1])
    return WorkEstimate(
        ideals=ideals,
        stages=stages,
        degrees=degrees,
        edges=len(problem.edges),
        nodes=len(problem.nodes),
        s_max=s_max,
        usable_d=usable,
        fronts=stages * degrees,
        boundary_work=stages * max(1, len(problem.edges)),
        table_rows=stages * degrees * len(kinds) * usable,
        state_cells=state,
        front_cells=max(ideals, len(problem.nodes)) * horizon,
    )


def check_work(work: WorkEstimate, max_stages: int) -> None:
    """Refuse (one line, :class:`TooMuchWorkError`) the first table whose estimated size exceeds its cap."""
    rules = (
        (work.fronts, max_stages, "option fronts (stages x tensor degrees)", "max_stages"),
        (work.boundary_work, MAX_BOUNDARY_WORK, "stage-boundary sums (stages x edges)", "MAX_BOUNDARY_WORK"),
        (work.table_rows, MAX_TABLE_ROWS, "stage-time rows (stages x t x kinds x usable d)", "MAX_TABLE_ROWS"),
        (work.state_cells, MAX_STATE_CELLS, "decision-DP states per probe", "MAX_STATE_CELLS"),
        (work.front_cells, MAX_FRONT_CELLS, "per-y front cells (ideals x largest y)", "MAX_FRONT_CELLS"),
    )
    for size, cap, what, name in rules:
        if size > cap:
            raise TooMuchWorkError(
                f"multidim planner: {work.ideals:,} ideals and {work.stages:,} stages (pairs of nested ideals) "
                f"need {size:,} {what}, over the cap of {cap:,} ({name}); merge nodes into layers (fewer "
                f"parallel branches give fewer ideals), or use fewer devices or microbatches"
            )


#: What to do instead, named by :func:`check_order_shape`'s refusals.
_WAY_OUT = (
    "merge nodes into layers (fewer nodes and parallel branches give fewer ideals), or use --method ip for a "
    "time-limited contiguous split"
)


def check_order_shape(
    count: int, edges: list[tuple[int, int]], costly: list[bool], max_ideals: int, max_stages: int
) -> tuple[int, int] | None:
    """Refuse, before any model is built, an order whose lattice is certainly past the caps.

    The order is given raw (nodes ``0..count-1``, ``edges`` as index pairs, repeats allowed), as read
    from a file: nothing is validated or allocated beyond a few lists (O(nodes + edges)). ``costly[v]``
    says that node v can never be free (:func:`~placement.multidim.dp.free_nodes`: non-zero time or
    memory, or an edge with bytes), so it stays a group of its own through the free-node merge.

    Lower bounds (Q = the costly nodes with the order they inherit; its lattice embeds in the
    planner's by downward closure, injectively and keeping strict inclusions):

    * stages >= k (k + 1) / 2 for k costly nodes (any maximal chain of ideals has k + 1 of them);
    * ideals >= 1 + sum over longest-path levels of (2^c - 1), c the costly nodes of a level (a level
      is an antichain: all lower levels plus any subset of it is an ideal);
    * stage-boundary sums >= stages x distinct edges (the model keeps one edge per pair).

    Returns
    -------
    (ideals, stages) lower bounds, or None when the edges form a cycle (nothing is estimated: the
    full reader refuses the file or merges the cycle).

    Raises
    ------
    TooMuchWorkError
        One line, when a lower bound exceeds ``max_ideals``, ``max_stages`` or :data:`MAX_BOUNDARY_WORK`.
    """
    k = sum(1 for flag in costly if flag)
    if k * (k + 1) // 2 > max_stages and all(u < v for u, v in edges):
        # Fast path (a dense DAG numbered in order): the index order is topological, so no cycle, and the
        # chain bound alone is past the cap; the levels and the distinct edges are not needed to refuse.
        raise TooMuchWorkError(
            f"multidim planner: the graph's order ({count:,} nodes, {k:,} that cost time or memory, "
            f"{len(edges):,} edges) needs at least {k * (k + 1) // 2:,} stages (pairs of nested ideals), over the "
            f"cap of {max_stages:,} (max_stages); {_WAY_OUT}"
        )
    pairs = {(u, v) for u, v in edges if u != v}
    level = longest_path_levels(count, pairs)
    if level is None:
        return None
    per_level: dict[int, int] = {}
    for v in range(count):
        if costly[v]:
            per_level[level[v]] = per_level.get(level[v], 0) + 1
    k = sum(per_level.values())
    cap = max_ideals + max_stages + 2  # exponents past this only need to show "over the cap"
    ideals = 1 + sum((1 << min(c, cap.bit_length() + 1)) - 1 for c in per_level.values())
    stages = max(k * (k + 1) // 2, ideals - 1)
    rules = (
        (ideals, max_ideals, "ideals", "max_ideals"),
        (stages, max_stages, "stages (pairs of nested ideals)", "max_stages"),
        (stages * len(pairs), MAX_BOUNDARY_WORK, "stage-boundary sums (stages x edges)", "MAX_BOUNDARY_WORK"),
    )
    for size, limit, what, name in rules:
        if size > limit:
            widest = max(per_level.values(), default=0)
            raise TooMuchWorkError(
                f"multidim planner: the graph's order ({count:,} nodes, {k:,} that cost time or memory, "
                f"{len(pairs):,} edges, an antichain of {widest:,}) needs at least {size:,} {what}, over the cap "
                f"of {limit:,} ({name}); {_WAY_OUT}"
            )
    return ideals, stages
