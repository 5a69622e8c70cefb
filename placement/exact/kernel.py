"""The driver of the one lattice DP kernel shared by the exact planners (:mod:`placement.exact.dp`, :mod:`placement.exact.memory_aware`).

The search itself, :func:`placement.exact.lattice_search.lattice_dp`, fills rows of the table;
its module docstring is the kernel's contract (lattice, table axes, exact arithmetic, open
cells, pair mode). This module builds its inputs from a problem (:func:`build_inputs`, the
device types' arrays, :func:`state_arrays`), runs it over a lattice on one or more threads
(:func:`run`, level by level: :func:`ideal_levels`), reads a split back (:func:`traceback_split`)
and checks the memory the reduced lattice ignored (:func:`relax_then_verify`). The search's
names (``lattice_dp``, ``new_table``, parent codes, objectives, modes) are re-exported here, so
callers and tests take the kernel's API from this module.

**Readable reference**: :func:`placement.explore.teaching.trace_dp` runs the same recurrence in
plain Python (every pair of ideals, no pruning or merging, prefix orientation); on small graphs
the kernel's row of the empty ideal equals its row of the full ideal for every device count
(``tests/test_kernel.py``). Read it first.
"""

from __future__ import annotations

import itertools
import math
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from numba import njit

from ..model import Status
from .exactsum import exact_sum as exact_sum  # re-exported (tests, callers)
from .floors import cell_floors as cell_floors  # re-exported: callers take the kernel's API from here
from .floors import cover_tree as cover_tree
from .lattice_search import INHERIT as INHERIT
from .lattice_search import MODE_PLAIN as MODE_PLAIN
from .lattice_search import MODE_RECOMPUTE as MODE_RECOMPUTE
from .lattice_search import OBJECTIVE_MAX_LOAD as OBJECTIVE_MAX_LOAD
from .lattice_search import OBJECTIVE_TIE_BREAK as OBJECTIVE_TIE_BREAK
from .lattice_search import decode_parent as decode_parent
from .lattice_search import lattice_dp as lattice_dp
from .lattice_search import new_table as new_table
from .lattice_search import parent_code as parent_code
from .limits import check_table_size
from .pairs import no_targets, target_pairs

if TYPE_CHECKING:
    from ..model import Placement


def chain_lattice(n_groups: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """The chain of prefixes 0..g of the groups' topological numbering, as a lattice (a feasible-split bound)."""
    up_start = np.arange(n_groups + 2, dtype=np.int64)
    up_start[-1] = n_groups
    up_group = np.arange(n_groups, dtype=np.int32)
    up_target = np.arange(1, n_groups + 1, dtype=np.int32)
    return up_start, up_group, up_target, n_groups + 1


def state_arrays(counts) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Mixed-radix device-count states for ``counts`` devices per type.

    Returns (strides, next_state, prev_state, digit_sum): state ``s`` has digit
    ``(s // strides[d]) % (counts[d] + 1)`` devices of type ``d``; ``digit_sum[s]`` is its
    number of devices.
    """
    strides = np.cumprod([1] + [c + 1 for c in counts]).astype(np.int64)
    n_states = int(strides[-1])
    next_state = np.full((len(counts), n_states), -1, dtype=np.int64)
    prev_state = np.full((len(counts), n_states), -1, dtype=np.int64)
    digit_sum = np.zeros(n_states, dtype=np.int64)
    for s in range(n_states):
        for d, count in enumerate(counts):
            digit = (s // int(strides[d])) % (count + 1)
            digit_sum[s] += digit
            if digit < count:
                next_state[d, s] = s + strides[d]
            if digit > 0:
                prev_state[d, s] = s - strides[d]
    return strides, next_state, prev_state, digit_sum


# ----------------------------------------------------------------------------- inputs, runs and traceback


@dataclass(frozen=True)
class KernelInputs:
    """The arrays :func:`lattice_dp` reads for one (problem, groups) pair (see the module docstring)."""

    group_start: np.ndarray
    group_nodes: np.ndarray
    pred_start: np.ndarray
    preds: np.ndarray
    out_degree: np.ndarray
    node_fwd: np.ndarray
    node_val: np.ndarray
    cross_val: np.ndarray
    in_val: np.ndarray
    group_blocked: np.ndarray
    type_compute: np.ndarray
    type_fwd: np.ndarray
    type_cross: np.ndarray
    type_cap: np.ndarray
    type_dur_cross: np.ndarray
    mem_w: int
    mem_p: int
    mem_a: int
    strides: np.ndarray
    next_state: np.ndarray
    prev_state: np.ndarray
    digit_sum: np.ndarray

    @property
    def n_states(self) -> int:
        return int(self.strides[-1])

    @property
    def n_types(self) -> int:
        return int(self.type_compute.shape[0])


def graph_arrays(graph, groups) -> tuple[np.ndarray, ...]:
    """The graph in CSR form for the kernel, nodes numbered by their position in ``graph.nodes``.

    Returns (group_start, group_nodes, pred_start, preds, node_cost, out_degree): the nodes of
    group g are ``group_nodes[group_start[g]:group_start[g+1]]``, the predecessors of node k are
    ``preds[pred_start[k]:pred_start[k+1]]``.
    """
    position = {node.id: k for k, node in enumerate(graph.nodes)}
    group_nodes = np.asarray([position[n] for members in groups.members for n in members], dtype=np.int64)
    group_start = np.zeros(groups.count + 1, dtype=np.int64)
    group_start[1:] = np.cumsum([len(m) for m in groups.members])
    pred_lists = [[position[p] for p in graph.predecessors[node.id]] for node in graph.nodes]
    pred_start = np.zeros(len(graph.nodes) + 1, dtype=np.int64)
    pred_start[1:] = np.cumsum([len(p) for p in pred_lists])
    preds = np.asarray([p for plist in pred_lists for p in plist], dtype=np.int64)
    node_cost = np.asarray([graph.output_cost[node.id] for node in graph.nodes], dtype=np.float64)
    out_degree = np.asarray([len(graph.successors[node.id]) for node in graph.nodes], dtype=np.int64)
    return group_start, group_nodes, pred_start, preds, node_cost, out_degree


def build_inputs(
    problem,
    groups,
    ignore: frozenset = frozenset(),
    out_bytes: dict | None = None,
    forward_compute: bool = False,
    kept_bytes: dict | None = None,
) -> KernelInputs:
    """Kernel inputs for ``problem`` contracted into ``groups``.

    Device types are the accelerator kinds in order, then CPU cores (cap ``inf``; communication
    only when ``devices.cpu_bandwidth`` is set). ``ignore``: nodes whose memory (size and
    activation bytes) is left out (a relaxation). ``out_bytes``: activation bytes per node id
    (memory-aware planning; ``None``: weights only); ``kept_bytes``: the activation bytes a
    node keeps for the backward when they differ from its output (default: ``out_bytes``;
    stage inputs always use ``out_bytes``). ``forward_compute``: add the forward
    compute rows that recomputation needs.
    """
    graph, devices = problem.graph, problem.devices
    nodes = graph.nodes
    group_start, group_nodes, pred_start, preds, node_cost, out_degree = graph_arrays(graph, groups)
    kinds = devices.accelerators
    n_kinds = len(kinds)
    rows: list[list[float]] = []
    blocked = np.zeros((n_kinds + 1, groups.count), dtype=np.int64)
    group_of = groups.group_of
    for t, kind in enumerate(kinds):
        rows.append([node.latency_on(kind) if node.runs_on(kind) else 0.0 for node in nodes])
        for node in nodes:
            if not node.runs_on(kind):
                blocked[t, group_of[node.id]] += 1
    rows.append([node.cpu_latency for node in nodes])
    type_compute = list(range(n_kinds + 1))
    type_fwd = [-1] * (n_kinds + 1)
    if forward_compute:
        for t in range(n_kinds + 1):
            type_fwd[t] = len(rows)
            rows.append([0.0 if node.is_backward else value for node, value in zip(nodes, rows[t])])
    mem_w = len(rows)
    rows.append([0.0 if node.id in ignore else node.size for node in nodes])
    mem_p = mem_a = -1
    in_val = np.zeros(len(nodes))
    if out_bytes is not None:
        mem_p = len(rows)
        rows.append([0.0 if node.id in ignore or node.is_backward else node.size for node in nodes])
        mem_a = len(rows)
        ob = [0.0 if node.id in ignore else out_bytes[node.id] for node in nodes]
        kept = out_bytes if kept_bytes is None else kept_bytes
        kb = [0.0 if node.id in ignore else kept[node.id] for node in nodes]
        rows.append([0.0 if node.is_backward else b for node, b in zip(nodes, kb)])
        in_val = np.asarray(ob, dtype=np.float64)
    scales = [devices.transfer_scale(kind) for kind in kinds] + [devices.cpu_transfer_scale]
    classes: list[float] = []
    type_cross = []
    for t, scale in enumerate(scales):
        if scale == 0.0:
            type_cross.append(-1)
            continue
        if scale not in classes:
            classes.append(scale)
        type_cross.append(classes.index(scale))
    # A node's communication term: its cost times the scale, rounded once (as the evaluator does).
    cross_val = np.asarray([[cost * scale for cost in node_cost] for scale in classes], dtype=np.float64)
    cross_val = cross_val.reshape(len(classes), len(nodes))
    strides, next_state, prev_state, digit_sum = state_arrays([kind.count for kind in kinds] + [devices.cpus])
    return KernelInputs(
        group_start,
        group_nodes,
        pred_start,
        preds,
        out_degree,
        np.asarray([not node.is_backward for node in nodes], dtype=np.bool_),
        np.asarray(rows, dtype=np.float64).reshape(len(rows), len(nodes)),
        cross_val,
        in_val,
        blocked,
        np.asarray(type_compute, dtype=np.int64),
        np.asarray(type_fwd, dtype=np.int64),
        np.asarray(type_cross, dtype=np.int64),
        np.asarray([kind.memory for kind in kinds] + [math.inf], dtype=np.float64),
        # Latency durations: accelerators pay their transfers, CPU nodes do not (placement.evaluate.latency).
        np.asarray(type_cross[:n_kinds] + [-1], dtype=np.int64),
        mem_w,
        mem_p,
        mem_a,
        strides,
        next_state,
        prev_state,
        digit_sum,
    )


@njit(cache=True, nogil=True)
def ideal_levels(up_start, up_target, n_ideals):
    """The rows below the full ideal grouped into levels that may be filled concurrently.

    The level of an ideal is the length of the longest cover chain from it up to the full
    ideal (for a lattice of ideals: the number of groups outside it). A row reads only its
    supersets, which lie on strictly lower levels, so the rows of one level are independent
    of one another once every lower level is final. Returns (order, level_start): the rows of
    level ``k`` (k >= 1) are ``order[level_start[k - 1]:level_start[k]]``, by decreasing index.
    """
    height = np.zeros(n_ideals, dtype=np.int64)
    top = 0
    for i in range(n_ideals - 2, -1, -1):  # supersets have larger indices: their heights are known
        h = 0
        for e in range(up_start[i], up_start[i + 1]):
            if height[up_target[e]] > h:
                h = height[up_target[e]]
        height[i] = h + 1
        if h + 1 > top:
            top = h + 1
    level_start = np.zeros(top + 1, dtype=np.int64)
    for i in range(n_ideals - 1):
        level_start[height[i]] += 1
    for k in range(1, top + 1):
        level_start[k] += level_start[k - 1]
    fill = np.zeros(top + 1, dtype=np.int64)
    fill[1:] = level_start[:top]
    order = np.empty(max(n_ideals - 1, 0), dtype=np.int64)
    for i in range(n_ideals - 2, -1, -1):
        order[fill[height[i]]] = i
        fill[height[i]] += 1
    return order, level_start[1:]


#: Below this many ideals the DP runs on one thread (threads do not pay; measured in scripts/bench_dp.py).
THREAD_MIN_IDEALS = 2000

#: A level with fewer rows than this runs on one thread.
THREAD_MIN_ROWS = 8

#: Pieces per thread a level's rows are cut into (a row's cost varies a lot; a kernel call costs ~30 us).
THREAD_PIECES = 4


def default_workers(n_ideals: int) -> int:
    """Threads for a DP over ``n_ideals`` ideals: the CPUs this process may run on, 1 for small lattices."""
    if n_ideals < THREAD_MIN_IDEALS:
        return 1
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cpus = os.cpu_count() or 1
    return max(1, cpus)


def run(
    inputs: KernelInputs,
    lattice: tuple,
    overlap: bool,
    upper_bound: float,
    *,
    closure: bool = True,
    flight: np.ndarray | None = None,
    opt_mult: float = 0.0,
    modes: tuple[int, int] = (0, 0),
    count_only: bool = False,
    tie_break: bool = False,
    floor: np.ndarray | None = None,
    progress=None,
    chunk: int = 0,
    workers: int | None = None,
    targets: tuple | None = None,
    rows: np.ndarray | None = None,
):
    """:func:`lattice_dp` on ``inputs`` over ``lattice`` = (up_start, up_group, up_target, n_ideals).

    ``tie_break``: objective 1 (module docstring) with ``upper_bound`` the optimal max-load.
    ``floor``: per cell, the value at or below which it is final (:func:`cell_floors`; None:
    every cell stays open).
    ``progress(done, total, rebuilt)``: called after every ``chunk`` ideals (default: 1 % of
    them); the kernel runs without the GIL in between.
    ``workers``: threads (default :func:`default_workers`). With more than one, the rows of
    each level (:func:`ideal_levels`) are shared out among the threads, each calling the
    kernel without the GIL on its own rows; a row's result depends only on its supersets, so
    the table is the same bit for bit as with one thread.
    ``targets``: pair mode's data when the caller has it already (``target_pairs(inputs,
    lattice, floor)``, or None when pair mode does not pay); default: computed here.
    ``rows``: search only these rows, in this order, on one thread, in a fresh table (their
    supersets are not filled first, so the values are not the DP's): the pairs searched from a
    sample of rows, to estimate a run before making it.
    Returns (best, parent_ideal, parent_type, pairs).
    """
    up_start, up_group, up_target, n_ideals = lattice
    a = inputs
    if flight is None:
        flight = np.zeros(a.n_states, dtype=np.int64)
    objective = OBJECTIVE_TIE_BREAK if tie_break else OBJECTIVE_MAX_LOAD
    check_table_size(int(n_ideals), a.n_states)  # one-line refusal, not a numpy MemoryError
    best, parent_ideal, parent_type, useful, used = new_table(
        int(n_ideals), a.n_states, a.prev_state, bool(closure), objective
    )
    n = int(n_ideals)
    step = n if progress is None else (chunk or max(1, n // 100))
    flight = np.asarray(flight, dtype=np.int64)
    floor_arr = np.full((1, 1), -np.inf) if floor is None else floor
    if targets is None:  # not given: computed here (the caller may pass target_pairs(inputs, lattice, floor))
        targets = no_targets()
        if floor is not None and not count_only and modes[1] == 0:
            targets = target_pairs(a, lattice, floor) or targets
    n_workers = default_workers(n) if workers is None else max(1, int(workers))

    def fill(rows, counters):
        return lattice_dp(
            up_start,
            up_group,
            up_target,
            n,
            a.group_start,
            a.group_nodes,
            a.pred_start,
            a.preds,
            a.out_degree,
            a.node_fwd,
            a.node_val,
            a.cross_val,
            a.in_val,
            a.group_blocked,
            a.type_compute,
            a.type_fwd,
            a.type_cross,
            a.type_cap,
            a.mem_w,
            a.mem_p,
            a.mem_a,
            float(opt_mult),
            a.next_state,
            a.prev_state,
            flight,
            a.n_states,
            bool(overlap),
            float(upper_bound),
            bool(closure),
            int(modes[0]),
            int(modes[1]),
            bool(count_only),
            objective,
            a.type_dur_cross,
            best,
            parent_ideal,
            parent_type,
            useful,
            used,
            floor_arr,
            targets,
            rows,
            counters,
        )

    if rows is not None:
        pairs = fill(np.asarray(rows, dtype=np.int64), np.zeros(1, dtype=np.int64))
        return best, parent_ideal, parent_type, pairs
    if n_workers == 1 or n < 3:
        pairs = 0
        counters = np.zeros(1, dtype=np.int64)
        hi = n - 2
        while hi >= 0:
            lo = max(0, hi - step + 1)
            pairs += fill(np.arange(hi, lo - 1, -1, dtype=np.int64), counters)
            hi = lo - 1
            if progress is not None:
                progress(n - 1 - lo, n - 1, int(counters[0]))
        return best, parent_ideal, parent_type, pairs
    pairs = _fill_levels(fill, ideal_levels(up_start, up_target, n), n, n_workers, step, progress)
    return best, parent_ideal, parent_type, pairs


def _fill_levels(fill, levels, n: int, n_workers: int, step: int, progress) -> int:
    """Run ``fill(rows, counters)`` level by level, each level's rows shared out among ``n_workers`` threads.

    A level's rows are cut into pieces that the threads take in turn (a row's cost varies a
    lot); the next level starts once every piece is done. Returns the pairs searched.
    """
    order, level_start = levels
    counters = [np.zeros(1, dtype=np.int64) for _ in range(n_workers)]
    pairs = [0] * n_workers
    done = 0
    reported = 0
    with ThreadPoolExecutor(max_workers=n_workers - 1) as pool:
        begin = 0
        for end in level_start.tolist():
            rows = order[begin:end]
            begin = end
            if len(rows) < THREAD_MIN_ROWS:
                pairs[0] += fill(rows, counters[0])
            else:
                size = max(1, -(-len(rows) // (THREAD_PIECES * n_workers)))
                pieces = [rows[k : k + size] for k in range(0, len(rows), size)]
                taken = itertools.count()  # next() is atomic under the GIL

                def drain(w, pieces=pieces, taken=taken):
                    while (k := next(taken)) < len(pieces):
                        pairs[w] += fill(pieces[k], counters[w])

                futures = [pool.submit(drain, w) for w in range(1, n_workers)]
                drain(0)
                for future in futures:
                    future.result()
            done += len(rows)
            if progress is not None and (done - reported >= step or done == n - 1):
                reported = done
                progress(done, n - 1, int(sum(int(c[0]) for c in counters)))
    return sum(pairs)


def lattice_tuple(lattice) -> tuple:
    """(up_start, up_group, up_target, count) of an :class:`~placement.exact.ideals.IdealLattice`."""
    return lattice.up_start, lattice.up_group, lattice.up_target, lattice.count


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
