"""The exact dynamic program over ideals for the optimal contiguous split (throughput).

The DP runs the shared lattice kernel (:mod:`placement.exact.kernel`, whose docstring has the
table's axes and the exact arithmetic) with "at most these devices" semantics: ``best[I, s]``
is the smallest max-load of a split of the groups outside ideal ``I`` into consecutive stages
using at most the device counts of state ``s`` (a mixed-radix number whose digit ``d``
counts devices of accelerator kind ``d``, or CPU cores for the last digit). The answer is
``best[empty, all devices]``. A stage's memory is the sum of its nodes' sizes.

A search branch stops once the stage is too slow on every device type even without
communication, or breaks memory/support everywhere: both only grow with the stage. "Too
slow" is measured against an upper bound from the same DP restricted to one topological
order (a chain of ideals, a feasible split), so no optimal split is cut. Loads are exact
(correctly rounded sums of the per-node terms, as :func:`placement.evaluate.evaluate`
computes them), so the reported objective always equals the evaluator's max-load of the
returned split; :func:`solve_dp` checks this before returning.

Most cells of the table cannot be on an optimal split: the groups outside ideal ``I`` must fit
on the devices of ``s`` and the groups inside on the devices ``s`` leaves over, each within
the upper bound. A fractional work bound (plus the largest group) and a capacity bound on both sides decide
this per cell (:func:`placement.exact.kernel.cell_floors`); only the cells that pass are relaxed,
a cell stops improving once it reaches its own lower bound or the whole problem's, and a
search from ``I`` stops at stages whose compute already reaches the values of ``I``'s open
cells. The max-load pass is a series of kernel runs whose cells are final once they reach a clamp
just below the best value found so far (:func:`_max_load_pass`): near the optimum that is a
feasibility test, where a row stops at its first stage that fits, and one run usually proves
the chain's value optimal or finds the better split. The tie-break pass relaxes only the cells
whose max-load (exact from the first pass)
is at most the optimum. When few rows can hold a value, each row is compared with those rows
directly instead of walking every superset in between (the kernel's pair mode). The tie-break pass
has a work limit (``tie_break_max_pairs``): its pairs are estimated first from a sample of its rows,
and past the limit the max-load pass's optimal split is returned and the result says so.

Before the search, groups that can be merged with a neighbour without raising any load are
merged (:func:`placement.exact.ideals.reduce_groups`); their memory is first ignored (a
relaxation), then the split is checked with the real sizes, and re-solved without the
relaxation when memory binds (:func:`placement.exact.kernel.relax_then_verify`). The status is
"optimal" only when that check proves it.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from ..evaluate import evaluate
from ..model import Placement, Problem, Result, Status, TieBreak, make_result
from . import kernel, limits, probe
from .floors import root_bound
from .ideals import DEFAULT_MAX_IDEALS, Groups, IdealLattice, contract, enumerate_ideals, reduce_groups
from .kernel import (
    INHERIT,
    KernelInputs,
    build_inputs,
    cell_floors,
    chain_lattice,
    graph_arrays,
    lattice_tuple,
    relax_then_verify,
    run,
    traceback_split,
)
from .limits import MAX_TABLE_BYTES, TIE_BREAK_MAX_PAIRS, check_problem_table, tie_break_note

__all__ = [
    "solve_dp",
    "solve_dp_table",
    "SolvedTable",
    "count_pairs",
    "solve_chain",
    "graph_arrays",
    "INHERIT",
    "MAX_TABLE_BYTES",
    "TIE_BREAK_MAX_PAIRS",
    "tie_break_note",
]

#: Rows of the tie-break pass searched for its estimate (evenly spaced over its rows).
TIE_BREAK_SAMPLE_ROWS = 96

#: Rows searched first for the estimate; the full sample is searched only when this one's estimate is within
#: :data:`TIE_BREAK_CLEAR_MARGIN` times the limit (on Inception-v3 the 96 rows cost 0.09 s of a 0.5 s solve).
TIE_BREAK_FIRST_SAMPLE_ROWS = 16

#: A first estimate this many times above (or below) the limit decides alone.
TIE_BREAK_CLEAR_MARGIN = 4.0


def _solve_lattice(
    problem: Problem,
    groups: Groups,
    lattice: IdealLattice,
    ignore_size: frozenset,
    tie_break: bool = True,
    progress=None,
    bound: float | None = None,
    tie_break_max_pairs: float = math.inf,
    notes: dict | None = None,
):
    """One exact DP over ``lattice``; returns (value, placement or None, pairs, table).

    ``table`` is a :class:`SolvedTable` of the max-load pass (None when infeasible). ``bound``
    (if above the chain's value) replaces the chain's value as the search's cut. The tie-break
    pass is made when its estimated pairs are at most ``tie_break_max_pairs``; ``notes`` (if
    given) receives ``tie_break`` ("made" or "skipped") and ``tie_break_pairs`` (the estimate).
    """
    inputs = build_inputs(problem, groups, ignore_size)
    overlap = problem.devices.overlap
    last = inputs.n_states - 1
    passes = 2 if tie_break else 1
    # Progress in ideals searched: the chain's run (groups + 1 ideals, as long as a pass on a long chain: it
    # was 14 s without a report on a 5,000-node chain), then the passes over the lattice (``n`` ideals each).
    n, chain_n = max(lattice.count - 1, 1), groups.count
    whole = chain_n + passes * n

    def report(first, size):
        if progress is None:
            return None
        return lambda done, total, *_: progress(chain_n + int((first + size * done / max(total, 1)) * n), whole)

    chain_report = (
        None if progress is None else lambda done, total, *_: progress(done * chain_n // max(total, 1), whole)
    )
    chain = run(inputs, chain_lattice(groups.count), overlap, math.inf, progress=chain_report)
    # Exact loads: the chain's value is achieved, so a stage whose compute exceeds it is never needed.
    achieved = float(chain[0][0, last])
    arrays = lattice_tuple(lattice)

    def beaten() -> bool:  # the chain's value is known not optimal: the pass skips its bet (placement.exact.probe)
        return lattice.count >= probe.PROBE_MIN_IDEALS and probe.chain_beaten(
            inputs, groups.count, groups.order_edges, overlap, achieved, workers=kernel.default_workers(lattice.count)
        )

    value, upper_bound, _, (best, parent_ideal, parent_type, pairs) = _max_load_pass(
        inputs, arrays, overlap, achieved, bound, lambda k: report(1 - 0.5 ** (k - 1), 0.5**k), beaten
    )
    if not math.isfinite(value):
        return math.inf, None, int(pairs), None
    table = SolvedTable(problem, groups, lattice, inputs, upper_bound, best, parent_ideal, parent_type)
    if tie_break:
        # Among the splits with max-load <= the optimum: least sum of stage durations, then fewest devices.
        # The cells this pass can use are exactly the needed ones whose max-load is <= the optimum
        # (the first pass's values are exact above its clamp, which is below the optimum: see cell_floors).
        floors = cell_floors(inputs, arrays, value, feasible=best <= value)
        targets = kernel.target_pairs(inputs, arrays, floors) or kernel.no_targets()
        estimate = _tie_break_pairs(inputs, arrays, overlap, value, floors, targets, tie_break_max_pairs)
        made = estimate <= tie_break_max_pairs
        if notes is not None:
            notes.update(tie_break=TieBreak.MADE if made else TieBreak.SKIPPED, tie_break_pairs=estimate)
            if not made:
                notes["tie_break_limit"] = tie_break_max_pairs
        if made:
            _, parent_ideal, parent_type, more = run(
                inputs, arrays, overlap, value, tie_break=True, floor=floors, targets=targets, progress=report(1, 1)
            )
            pairs += more
        elif progress is not None:
            report(1, 1)(1, 1)  # the pass is not made: the search is over
    placement, _ = traceback_split(
        problem, groups, lattice.groups_of, parent_ideal, parent_type, last, lattice.full, inputs
    )
    return value, placement, int(pairs), table


def _tie_break_pairs(inputs: KernelInputs, arrays: tuple, overlap: bool, value: float, floors, targets, cap) -> int:
    """The pairs the tie-break pass would search, estimated before it starts (0: not estimated, made).

    The pass searches the rows with an open cell (floor below ``inf``). Nothing is estimated when
    they cannot reach ``cap`` pairs together (``rows x ideals``), when there are few of them,
    or in pair mode (few target rows: cheap, and the pairs it evaluates depend on the values).
    Else :data:`TIE_BREAK_SAMPLE_ROWS` of them, evenly spaced, are searched alone in a scratch
    table - a row's walk visits the same supersets whatever their values (the cut is the
    stage's compute against the optimum, its memory and its support) - and their pairs are
    scaled to all rows. :data:`TIE_BREAK_FIRST_SAMPLE_ROWS` rows are searched first; their
    estimate decides alone when it is more than :data:`TIE_BREAK_CLEAR_MARGIN` times from ``cap``.
    Deterministic: the same problem always gets the same decision.
    """
    n_ideals = int(arrays[3])
    rows = np.flatnonzero((floors[: n_ideals - 1] < np.inf).any(axis=1))  # open: floor below inf
    if len(rows) * n_ideals <= cap or len(rows) <= TIE_BREAK_SAMPLE_ROWS or len(targets[0]) > 0:
        return 0
    estimate = 0
    for size in (TIE_BREAK_FIRST_SAMPLE_ROWS, TIE_BREAK_SAMPLE_ROWS):
        pick = np.unique(np.linspace(0, len(rows) - 1, size).round().astype(np.int64))
        sample = rows[pick][::-1].copy()  # supersets first, as the DP visits them
        *_, pairs = run(inputs, arrays, overlap, value, tie_break=True, floor=floors, targets=targets, rows=sample)
        estimate = int(round(pairs * len(rows) / len(sample)))
        if not cap / TIE_BREAK_CLEAR_MARGIN <= estimate <= cap * TIE_BREAK_CLEAR_MARGIN:
            break  # clear either way: the larger sample would decide the same
    return estimate


def _max_load_pass(
    inputs: KernelInputs, arrays: tuple, overlap: bool, achieved: float, bound, report, beaten=lambda: False
):
    """The optimal max-load and its table, by kernel runs whose cells are final at or below a clamp ``T``.

    A run with cut ``U`` (an achieved value, or ``bound`` when that is larger: the table then
    covers every device count whose optimum is within it) and clamp ``T < U`` leaves in the
    empty ideal's cell the exact optimum when the optimum is above ``T`` (the clamp is then below
    every cell value on an optimal split, see :func:`cell_floors`), and otherwise some achieved
    value ``<= T``. Cells that reach ``T`` stop improving, so a run whose ``T`` lies just below
    the optimum is a feasibility test: rows stop at their first stage that fits, and the cells
    that cannot fit within ``U`` on either side of their ideal are never relaxed (work and
    capacity bounds of :func:`cell_floors`). When the kernel would search in pair mode anyway
    (few target rows: a plain run is cheap and a run's cost is mostly per row), one plain run
    (``T = -inf``) is made. Otherwise the first run tries ``T`` just below the achieved
    value (often the optimum: one run proves it), unless ``beaten()`` says that some split is
    better (:mod:`placement.exact.probe`): then the first run is of the next kind. Each run that
    finds a better split lowers ``U`` to it and ``T`` an eighth of the way to the problem's lower
    bound (:func:`root_bound`), then twice as far each time, so the fourth such run at the latest
    has ``T`` at the lower bound: the plain DP, exact. ``report(k)`` is the progress callback of
    run ``k`` (1, 2, ...). Which run comes first changes the work, never the result.

    Returns (value, cut, runs, (best, parent_ideal, parent_type, pairs)): the last run's cut,
    the number of runs, the last run's tables (its cells are exact above its clamp) and the
    pairs of every run.
    """
    last = inputs.n_states - 1
    upper = achieved
    cut = max(upper, bound) if bound is not None else upper
    lowest = -math.inf  # root_bound, read once the first run has found a better split
    # Pair mode (few rows can end a stage) makes the plain run cheap, and each run has a cost per
    # row: then one plain run. Otherwise the search walks every superset in reach, and a run
    # that stops each row at its first fitting stage is far cheaper.
    plain_floors = cell_floors(inputs, arrays, cut)
    targets = kernel.target_pairs(inputs, arrays, plain_floors)  # through the module: what the kernel gets
    clamp = -math.inf if targets is not None else math.nextafter(achieved, -math.inf)
    floors: np.ndarray | None = plain_floors if targets is not None else None
    step = 0.0
    # The bet on the achieved value would lose (placement.exact.probe): the first run is of the next kind.
    if targets is None and math.isfinite(achieved) and beaten():
        lowest = root_bound(inputs)
        step = (achieved - lowest) / 8.0
        clamp = achieved - step if achieved - step > lowest else -math.inf
    pairs = 0
    k = 0
    while True:
        k += 1
        cut = max(upper, bound) if bound is not None else upper
        if floors is None and k == 1:  # the same cut: ``lower`` only raises every finite floor to ``clamp``
            floors = np.maximum(plain_floors, clamp)
        elif floors is None:
            floors = cell_floors(inputs, arrays, cut, lower=clamp)
        best, parent_ideal, parent_type, more = run(
            inputs, arrays, overlap, cut, floor=floors, targets=targets, progress=report(k)
        )
        floors = targets = None
        pairs += more
        value = float(best[0, last])
        if not value <= clamp:  # above the clamp (or inf): exact
            return value, cut, k, (best, parent_ideal, parent_type, pairs)
        # A better split: the next clamp goes an eighth of the way down to the lower bound, then
        # twice as far each time (a clamp at or below the lower bound is the plain DP: the last run).
        if not step:
            lowest = root_bound(inputs)
        step = 2.0 * step if step else (value - lowest) / 8.0
        upper = value
        clamp = value - step if value - step > lowest else -math.inf


@dataclass(frozen=True, eq=False)
class SolvedTable:
    """The max-load table of one DP run, to answer smaller device counts without solving again.

    ``best[I, s]`` holds a max-load with *at most* the counts of state ``s`` (see
    :mod:`placement.exact.kernel`). Only the empty ideal's row is read: ``best[0, q]`` is the
    exact optimum whenever it is ``<= upper_bound`` (the search cut only stages slower than
    that, and cells no split within the bound passes through; other rows may hold larger,
    still achievable values), otherwise :meth:`query` answers None.
    """

    problem: Problem
    groups: Groups
    lattice: IdealLattice
    inputs: KernelInputs
    upper_bound: float
    best: np.ndarray
    parent_ideal: np.ndarray
    parent_type: np.ndarray

    def query(self, accelerators: Sequence[int], cpus: int) -> tuple[float, Placement] | None:
        """(max-load, split) with at most ``accelerators[d]`` devices of kind ``d`` and ``cpus`` cores.

        None when the counts exceed the solved ones or the table cannot certify the value
        (it is above the bound the search was cut at): solve again then. The split is the
        first optimal one found (no tie-break pass).
        """
        counts = list(accelerators) + [cpus]
        solved = [kind.count for kind in self.problem.devices.accelerators] + [self.problem.devices.cpus]
        if len(counts) != len(solved) or any(c < 0 or c > m for c, m in zip(counts, solved)):
            return None
        state = int(sum(c * int(stride) for c, stride in zip(counts, self.inputs.strides)))
        value = float(self.best[0, state])
        if not (math.isfinite(value) and value <= self.upper_bound):
            return None  # no split fits these counts, or the search's cut may hide a better one
        placement, _ = traceback_split(
            self.problem,
            self.groups,
            self.lattice.groups_of,
            self.parent_ideal,
            self.parent_type,
            state,
            self.lattice.full,
            self.inputs,
        )
        if not _fits_memory(self.problem, placement):
            return None  # memory of merged nodes binds: only a full solve can tell
        return value, placement


def solve_chain(problem: Problem, groups: Groups) -> tuple[float, Placement | None]:
    """The optimal split of ``groups`` cut only between consecutive groups of their numbering.

    Returns (max-load, placement) or (``inf``, None) when no such split fits.
    """
    inputs = build_inputs(problem, groups)
    last = inputs.n_states - 1
    best, parent_ideal, parent_type, _ = run(inputs, chain_lattice(groups.count), problem.devices.overlap, math.inf)
    value = float(best[0, last])
    if not math.isfinite(value):
        return math.inf, None
    placement, _ = traceback_split(
        problem, groups, lambda i: range(i), parent_ideal, parent_type, last, groups.count, inputs
    )
    return value, placement


def _fits_memory(problem: Problem, placement: Placement) -> bool:
    caps = {kind.name: kind.memory for kind in problem.devices.accelerators}
    for stage in placement.stages:
        if stage.device.is_cpu:
            continue
        if math.fsum(problem.graph.node_by_id[n].size for n in stage.nodes) > caps[stage.device.kind]:
            return False
    return True


def _infeasible_reason(problem: Problem) -> str:
    graph, devices = problem.graph, problem.devices
    if devices.cpus == 0:
        for node in graph.nodes:
            if not any(node.runs_on(kind) for kind in devices.accelerators if kind.count > 0):
                return f"node {node.label} cannot run on any accelerator and there are no CPU cores"
    total = sum(node.size for node in graph.nodes)
    capacity = sum(kind.count * kind.memory for kind in devices.accelerators)
    if devices.cpus == 0 and total > capacity:
        return f"the nodes need {total:,.0f} bytes but the accelerators hold {capacity:,.0f} bytes in all"
    return (
        "no contiguous split fits: every way of cutting the graph into at most "
        f"{devices.accelerator_count} accelerator stages and {devices.cpus} CPU stages breaks the memory or "
        "support rules"
    )


def solve_dp(
    problem: Problem,
    max_ideals: int = DEFAULT_MAX_IDEALS,
    tie_break: bool = True,
    progress: Callable[[int, int], None] | None = None,
    tie_break_max_pairs: float | None = None,
) -> Result:
    """The optimal contiguous split of ``problem`` (minimum max-load) by dynamic programming.

    Parameters
    ----------
    problem : Problem
        Graph and devices (any number of accelerator kinds, CPU cores, overlap option).
    max_ideals : int
        Give up (raise :class:`TooManyIdealsError`) past this many ideals.
    tie_break : bool
        Among the optimal splits, return one that minimises the sum of its stages' durations
        (an accelerator stage: compute + its transfers in and out, as one call of
        :func:`placement.evaluate.latency`; a CPU stage: its compute) - an upper bound on the
        single-sample latency, equal to it when every stage feeds the next - and then the
        number of devices. A second DP pass with the max-load fixed at the optimum (exact);
        False skips it (any optimal split, about half the time).
    progress : callable, optional
        ``progress(done, total)`` in ideals (the first run over one chain of ideals and both passes
        counted), called about every 1 % of each run; the kernel runs without the GIL in between.
    tie_break_max_pairs : float, optional
        Make the tie-break pass only when it would search at most this many ideal pairs,
        estimated from a sample of its rows before it starts (``inf``: always; default
        :data:`placement.exact.limits.TIE_BREAK_MAX_PAIRS`, 20 M, about 4 s of CPU). Past it the
        split is the max-load pass's (optimal all the same) and ``stats`` say so:
        ``tie_break`` is "made", "skipped" or "off", ``tie_break_pairs`` the estimate (0:
        not needed), see :func:`tie_break_note`.

    Returns
    -------
    Result
        ``status`` "optimal" with the split in pipeline order, "infeasible" with a reason, or
        (rarely, when memory binds and the unreduced lattice is too large) "feasible" with a
        bound and gap.
    """
    started = time.perf_counter()
    full_groups = contract(problem.graph)
    groups, moved = reduce_groups(problem.graph, full_groups)
    lattice = enumerate_ideals(groups, max_ideals)
    check_problem_table(problem, lattice.count)
    relaxed = frozenset(n for n in moved if problem.graph.node_by_id[n].size > 0)

    notes: dict = {"tie_break": TieBreak.MADE if tie_break else TieBreak.OFF, "tie_break_pairs": 0}
    if tie_break_max_pairs is None:
        tie_break_max_pairs = limits.TIE_BREAK_MAX_PAIRS  # read now: a test may lower it

    def solve(groups, lattice, ignore):
        return _solve_lattice(
            problem, groups, lattice, ignore, tie_break, progress, tie_break_max_pairs=tie_break_max_pairs, notes=notes
        )

    outcome = relax_then_verify(
        solve,
        lambda p: _fits_memory(problem, p),
        groups,
        full_groups,
        lattice,
        relaxed,
        max_ideals,
        lambda ideals: check_problem_table(problem, ideals),
    )
    stats = {
        "groups": outcome.groups,
        "ideals": outcome.ideals,
        "merged_nodes": len(moved),
        "pairs": outcome.pairs,
        **notes,  # the last lattice solved: its split is the result's
    }

    def done(status, objective, placement, **extra):
        return make_result(
            "dp", status, started=started, objective=objective, placement=placement, stats=stats, **extra
        )

    if outcome.placement is not None:
        # The kernel's loads are the evaluator's, bit for bit: anything else is a bug, never a result.
        checked = evaluate(problem, outcome.placement).max_load
        if checked != outcome.value:
            raise RuntimeError(
                f"internal error: the DP's max-load {outcome.value!r} differs from the evaluator's "
                f"{checked!r} for its own split"
            )
    if outcome.status == Status.INFEASIBLE:
        return done(Status.INFEASIBLE, None, None, reason=_infeasible_reason(problem))
    if outcome.status == Status.NO_SOLUTION:
        return done(Status.NO_SOLUTION, None, None, bound=outcome.bound, reason=outcome.note)
    if outcome.status == Status.FEASIBLE:
        gap = (outcome.value - outcome.bound) / outcome.value if outcome.value else 0.0
        return done(Status.FEASIBLE, outcome.value, outcome.placement, bound=outcome.bound, gap=gap)
    return done(Status.OPTIMAL, outcome.value, outcome.placement, bound=outcome.value, gap=0.0)


def solve_dp_table(
    problem: Problem,
    max_ideals: int = DEFAULT_MAX_IDEALS,
    bound: float | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> SolvedTable | None:
    """Solve ``problem`` once and keep the table, for queries with fewer devices (a slider moved down).

    The table is that of the reduced lattice with the merged nodes' memory ignored (the first
    rung of :func:`solve_dp`), searched with the chain bound of ``problem`` itself, or with
    ``bound`` when that is larger. Returns None when no split fits. Use
    :meth:`SolvedTable.query`: it answers only what the table proves (value within the bound,
    split fits the real memory), else None (solve again).

    The chain bound is that of all of ``problem``'s devices, so a count lowered far enough to
    raise the optimum above it is not answered; ``bound=math.inf`` cuts nothing and answers
    every smaller count (except where the merged nodes' memory binds), at the price of the
    search's pruning (about twice the time of one pass on the sample operator graphs).
    ``progress(done, total)`` reports ideals searched, as in :func:`solve_dp`.
    """
    groups, moved = reduce_groups(problem.graph, contract(problem.graph))
    lattice = enumerate_ideals(groups, max_ideals)
    check_problem_table(problem, lattice.count)
    relaxed = frozenset(n for n in moved if problem.graph.node_by_id[n].size > 0)
    *_, table = _solve_lattice(problem, groups, lattice, relaxed, tie_break=False, progress=progress, bound=bound)
    return table


def count_pairs(problem: Problem, reduce: bool = True, max_ideals: int = DEFAULT_MAX_IDEALS) -> tuple[int, int]:
    """(ideals, ideal pairs I <= J) of the lattice the DP searches, counted as the paper's code does."""
    groups = contract(problem.graph)
    if reduce:
        groups, _ = reduce_groups(problem.graph, groups)
    lattice = enumerate_ideals(groups, max_ideals)
    inputs = build_inputs(problem, groups)
    *_, pairs = run(inputs, lattice_tuple(lattice), False, math.inf, count_only=True)
    # The kernel counts pairs I < J; add the pairs I = J.
    return lattice.count, int(pairs) + lattice.count
