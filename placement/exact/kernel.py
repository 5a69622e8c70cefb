"""The driver of the one lattice DP kernel shared by the exact planners (:mod:`placement.exact.dp`, :mod:`placement.exact.memory_aware`).

The search itself, :func:`placement.exact.lattice_search.lattice_dp`, fills rows of the table;
its module docstring is the kernel's contract (lattice, table axes, exact arithmetic, open
cells, pair mode) and lists the kernel's modules. This module runs it over a lattice on one or
more threads (:func:`run`, level by level: :func:`ideal_levels`). Its inputs are built from a
problem in :mod:`placement.exact.inputs` (:func:`build_inputs`, :func:`state_arrays`); a split
is read back and checked in :mod:`placement.exact.verify` (:func:`traceback_split`,
:func:`relax_then_verify`). Those names, and the search's (``lattice_dp``, ``new_table``,
parent codes, objectives, modes), are re-exported here, so callers and tests take the
kernel's API from this module.

**Readable reference**: :func:`placement.explore.teaching.trace_dp` runs the same recurrence in
plain Python (every pair of ideals, no pruning or merging, prefix orientation); on small graphs
the kernel's row of the empty ideal equals its row of the full ideal for every device count
(``tests/test_kernel.py``). Read it first.
"""

from __future__ import annotations

import functools
import itertools
import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from numba import njit
from numba._dispatcher import compute_fingerprint  # numba's own type fingerprint (its dispatch cache)

from .codes import INHERIT as INHERIT
from .codes import MODE_PLAIN as MODE_PLAIN
from .codes import MODE_RECOMPUTE as MODE_RECOMPUTE
from .codes import OBJECTIVE_MAX_LOAD as OBJECTIVE_MAX_LOAD
from .codes import OBJECTIVE_TIE_BREAK as OBJECTIVE_TIE_BREAK
from .codes import decode_parent as decode_parent
from .codes import parent_code as parent_code
from .exactsum import exact_sum as exact_sum  # re-exported (tests, callers)
from .floors import cell_floors as cell_floors  # re-exported: callers take the kernel's API from here
from .floors import cover_tree as cover_tree
from .inputs import KernelInputs as KernelInputs
from .inputs import build_inputs as build_inputs
from .inputs import chain_lattice as chain_lattice
from .inputs import graph_arrays as graph_arrays
from .inputs import state_arrays as state_arrays
from .lattice_search import lattice_dp as lattice_dp
from .lattice_search import new_table as new_table
from .lattice_search import settings_for
from .limits import check_table_size
from .pairs import no_targets, target_pairs
from .reach import reach_inputs
from .row_search import DeviceTypes, Graph, Table
from .verify import VerifiedSplit as VerifiedSplit
from .verify import relax_then_verify as relax_then_verify
from .verify import traceback_split as traceback_split


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

#: The largest ``reach`` table (bytes) a run allocates; above it the run searches without reach (:mod:`placement.exact.reach`).
REACH_MAX_BYTES = 256 * 2**20

#: Below this many ideals a run searches without reach: on the 1,428-ideal BERT-3 operator graphs it cut up to 21 %
#: of the pairs but saved no time, and took 17 % longer where it cut none (scripts/bench_dp.py, 2026-11-26).
REACH_MIN_IDEALS = 10_000

#: Reach on training graphs too. Off: on Inception-v3 training it cut the pairs 22.1 M -> 15.2 M but
#: took 6.1 CPU s against 4.1 (one thread; a table lookup per superset, out of cache at 15 MB).
REACH_TRAINING = False

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
    reach: bool = True,
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
    ``reach``: cut search branches by the rows already final (:mod:`placement.exact.reach`;
    not with ``rows``, ``count_only`` or pair mode, below :data:`REACH_MIN_IDEALS` ideals, on
    training graphs (:data:`REACH_TRAINING`), nor when its table would exceed :data:`REACH_MAX_BYTES`).
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
    nothing = np.zeros(1, np.int64)
    off = np.full((1, 1, 1, 1), np.inf), np.zeros((1, 1, 2)), np.zeros((1, 2)), nothing, nothing
    # Reach cuts branches of the cover-edge search; pair mode (few targets) has little left to cut,
    # and on training graphs (backward nodes) its checks cost more than they save (REACH_TRAINING).
    with_reach = (
        reach
        and rows is None
        and not count_only
        and len(targets[0]) == 0
        and REACH_MIN_IDEALS <= n
        and n * a.n_states * a.n_types * 16 <= REACH_MAX_BYTES
        and (REACH_TRAINING or bool(a.node_fwd.all()))
    )
    reach_arr, ideal_work, work_slack, tree_below, tree_added = (
        reach_inputs(a, lattice, best, float(upper_bound), objective) if with_reach else off
    )

    graph = Graph(
        up_start, up_group, up_target, a.group_start, a.group_nodes, a.pred_start, a.preds, a.out_degree, a.node_fwd,
        a.node_val, a.cross_val, a.in_val, a.group_blocked, ideal_work, work_slack, tree_below, tree_added,
    )  # fmt: skip
    devs = DeviceTypes(
        a.type_compute, a.type_fwd, a.type_cross, a.type_cap, a.type_dur_cross, a.next_state, a.prev_state, flight
    )
    settings = settings_for(
        a.n_states, (a.mem_w, a.mem_p, a.mem_a), opt_mult, overlap, upper_bound, closure, modes, count_only,
        objective, floor_arr, flight, reach_arr,
    )  # fmt: skip
    plain_targets = tuple(targets)  # a plain tuple: the named tuple's fields are unpacked by position
    # rows and counters: 1-d contiguous int64, the types the entry point is compiled for
    table = Table(best, parent_ideal, parent_type, useful, used, floor_arr, np.zeros(1, np.int64), reach_arr)
    search = compiled_entry(lattice_dp, graph, devs, table, settings, plain_targets, np.zeros(0, np.int64))

    def fill(rows, counters):
        rows = np.ascontiguousarray(rows, dtype=np.int64)
        table = Table(best, parent_ideal, parent_type, useful, used, floor_arr, counters, reach_arr)
        return search(graph, devs, table, settings, plain_targets, rows)

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


def compiled_entry(dispatcher, *args):
    """The compiled function ``dispatcher`` runs for arguments of the types of ``args`` (loaded or compiled once).

    Calling it skips numba's type dispatch, which types a named tuple of arrays in Python on every call: 12 us
    a call of :func:`lattice_dp` against 7 us for its entry point (bert_l-3 training, 2026-12-05), and the kernel is
    called once per level piece (1,015 calls on bert_l-3 training, 1,872 on Inception-v3 training). Every later
    call must pass arguments of exactly these types (the entry point does not check them). The entry is resolved
    once per argument types: the arguments' type fingerprints (numba's own, 2.5 us for a named tuple of 17
    arrays) find it again, where typing them in Python took about 0.5 ms a run, three runs a solve (a small
    graph's whole solve is a few milliseconds). A plain Python function (numba's JIT disabled, or a test's
    wrapper around the kernel) is returned as it is.
    """
    if not hasattr(dispatcher, "compile"):
        return dispatcher
    try:
        fingerprints = tuple(compute_fingerprint(arg) for arg in args)
    except (NotImplementedError, TypeError, ValueError):  # a type numba cannot fingerprint: typed in Python
        return _resolve(dispatcher, args)
    return _entry_point(dispatcher, fingerprints, _Carried(args))


class _Carried:
    """Arguments carried past :func:`_entry_point`'s cache key: every instance hashes and compares equal (the
    fingerprints are the key)."""

    __slots__ = ("args",)

    def __init__(self, args: tuple) -> None:
        self.args = args

    def __hash__(self) -> int:
        return 0

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Carried)


@functools.lru_cache(maxsize=64)
def _entry_point(dispatcher, fingerprints: tuple, carried: _Carried):
    """The entry point for arguments of these type ``fingerprints`` (``carried``: such arguments, let go once
    typed: the cache keeps its key, and the key must not keep a solve's arrays alive)."""
    entry = _resolve(dispatcher, carried.args)
    carried.args = ()
    return entry


def _resolve(dispatcher, args: tuple):
    return dispatcher.compile(tuple(dispatcher.typeof_pyval(arg) for arg in args))


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
