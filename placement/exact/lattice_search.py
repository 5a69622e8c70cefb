"""The search of the one lattice DP kernel: :func:`lattice_dp` fills rows of the table (its driver is :mod:`placement.exact.kernel`).

Contract
--------
The kernel splits a graph into consecutive stages along a chain of ideals and assigns each
stage to one device of some *device type* (an accelerator kind, or CPU cores), minimising
the largest stage load. Callers describe everything as arrays; the kernel knows nothing of
problems, schedules or kinds.

Modules, one topic each (read in this order): this docstring (the contract);
:mod:`~placement.exact.exactsum` (exact sums, and the derivation of the running sums' error
bound: every ``2.0 * stage_errors``, ``EPS * abs(r)`` below is a step of it);
:mod:`~placement.exact.codes` (parent codes, objectives, modes); :mod:`~placement.exact.cells`
(a row's open cells); :mod:`~placement.exact.stage` (a stage's node state);
:mod:`~placement.exact.pairs` (pair mode's targets); :mod:`~placement.exact.reach` (the cut by
the rows already final); :mod:`~placement.exact.row_search` (the
search of one row: the cover-edge search and pair mode, two sources of candidate stages, and
the closing of a row); :mod:`~placement.exact.stage_eval` (the one evaluate-and-relax step they
feed: intervals, loads, relaxation, exact rebuild); :mod:`~placement.exact.borrow` (why the
helpers cost nothing). :func:`lattice_dp` takes its arguments in those named tuples and calls
:func:`~placement.exact.row_search._search_row` per row.

**Why the helpers are free.** The kernel does about 200 ns of work per ideal pair on
Inception-v3 (6.6 M pairs for inference, 22 M for training). numba counts references (an atomic
add through a non-inlined call) for every array that enters a call or is bound to a new name,
inlined helpers (``inline="always"``) included, and prunes them only in simple control flow:
earlier splits with per-pair helpers taking arrays or named tuples measured 1.1x-1.6x slower
(branches ``ksplit``, ``ksplit3``, ``ksplit3-inline``). Here every array reaches the helpers
*borrowed* (:func:`~placement.exact.borrow.borrow_all`: a numpy array type that owns no
reference, so numba emits no count for it) and every helper is inlined, so the compiled kernel
is the code written out, with 11 reference-count increments left in it instead of main's 84.
``scripts/bench_kernel_calls.py`` (one thread): a loop calling an inlined helper with early
exits on four arrays, 20.1 ns per call; the same with borrowed arrays, 2.3 ns, as the loop
written out (2.3 ns); two nested helpers 36 ns, borrowed 4.9 ns. Side by side with main
(``scripts/bench_dp.py --ref``, median CPU seconds of 4 runs each, same pairs and results): 0.74x-0.91x
of main's time on the Inception-v3 and operator-level samples; the layer-level samples
(milliseconds) equal within noise or faster. Two rules keep it so: the work arrays are allocated in :func:`lattice_dp` itself (an
inlined :func:`_work_arrays`; allocated in a called function, LLVM no longer knows they do not
alias the inputs, and the kernel measured 1.4x slower on Inception-v3 inference), and they stay
held by ``owned`` until it returns (:func:`_held`). numba's on-disk cache only notices edits to a
function's own file: after editing another kernel module, delete
``placement/exact/__pycache__/*.nb*``.

**Readable reference**: :func:`placement.explore.teaching.trace_dp` runs the same recurrence in
plain Python (every pair of ideals, no pruning or merging, prefix orientation); on small graphs
the kernel's row of the empty ideal equals its row of the full ideal for every device count
(``tests/test_kernel.py``). Read it first.

**Lattice** (``up_start, up_group, up_target, n_ideals``): ideals numbered so that a
superset has a larger index than its subsets (ideal 0 empty, ``n_ideals - 1`` full), with
their cover relation in CSR form (:class:`placement.exact.ideals.IdealLattice`, or
:func:`chain_lattice` for one topological order).

**Table** (axes): ``best[I, s]`` is the smallest max-load of a split of the groups *outside*
ideal ``I`` into consecutive stages that uses the device counts of state ``s`` - exactly
(``closure=False``) or at most (``closure=True``). States are numbered by the caller;
``next_state[d, s]`` / ``prev_state[d, s]`` give the state with one device of type ``d``
more / fewer (``-1``: none). ``best[full, 0] = 0``. Ideals are visited from the largest to
the smallest; for each ``I`` a depth-first search over its supersets ``J`` (through cover
edges) builds the stage ``J \\ I`` group by group and relaxes ``best[I, next(s)]`` from
``best[J, s]``. Because the DP runs from the end of the pipeline to its start, the target
state ``next(s)`` counts the stages from this one to the end, which is what a stage's
position-dependent memory needs (``flight``). With ``closure`` the row ``best[I]`` is closed
under "one more device never hurts" once final, and only states that beat every state with
one device fewer are extended (the others are dominated).

**Exact arithmetic.** Every stage quantity is an exact sum of per-node terms, kept as a
non-overlapping floating-point expansion (Shewchuk's ``msum``, as :func:`math.fsum` does) and
rounded correctly when used; the expansions are saved per search depth and restored on
pop, so nothing is ever subtracted back. A stage's load on a device type is

* ``fsum(compute terms + communication terms)``, or with ``overlap``
  ``max(fsum(compute terms), fsum(communication terms))``;
* with recomputation (mode 1) the stage's forward compute is added: ``load + fsum(forward
  compute terms)`` (one more rounding);

which is exactly how :func:`placement.evaluate.device_loads` defines it (``math.fsum`` of the
per-node terms, the communication term of a node being ``cost * scale`` rounded once). The
max-load of a split is therefore computed without error, and the optimum is exact for any
finite inputs. A sum that overflows is ``inf``.

**Per-node quantities.** ``node_val[q, x]`` are additive terms (compute per type, forward
compute, weights, parameters, activation bytes); ``cross_val[c, x]`` is node ``x``'s
communication term in scale class ``c``, counted when an edge of ``x`` crosses the stage
boundary (``x`` inside with a successor outside, or outside with a successor inside);
``in_val[x]`` is counted when ``x`` is a forward node outside the stage feeding a forward
node inside (the stage input, for recomputation).

**Device types** ``t`` (``T`` of them): ``type_compute[t]`` (index into ``node_val``),
``type_fwd[t]`` (forward compute, ``-1`` none), ``type_cross[t]`` (scale class, ``-1``: no
communication), ``type_cap[t]`` memory cap, ``group_blocked[t, g]`` nodes of group ``g``
that cannot run on ``t``.

**Memory** of a stage on a type at target state ``s`` with ``n = flight[s]``:
``W + opt_mult * P + n * A`` (mode 0) or ``W + opt_mult * P + n * I + A`` (mode 1, recompute),
``W, P, A, I`` being correctly rounded exact sums (``mem_w, mem_p, mem_a``: indices into
``node_val``, ``-1`` for none) and the rest float arithmetic in that order.

**Modes** ``mode_lo..mode_hi``: 0 = plain stage, 1 = the stage recomputes its forward pass.

**Objectives.** ``objective=0``: the max-load above. ``objective=1`` (the tie-break pass, run
with ``upper_bound`` = the optimal max-load): among splits whose every stage load is
``<= upper_bound``, minimise the sum of the stages' *durations* - ``fsum(compute terms +
transfer terms)`` on an accelerator (``type_dur_cross``; its whole-stage call in
:func:`placement.evaluate.latency`), the compute alone on CPU cores - added from the last
stage to the first in floating point, then the number of stages (devices). That sum bounds
the single-sample latency from above (up to the rounding of the additions), with equality
when every stage feeds the next.

**Pruning**: a search branch stops once, on every type, the stage is blocked, its compute
alone exceeds ``upper_bound``, or its memory at the smallest in-flight count exceeds the
cap - all monotone in ``J`` - so no split whose loads are all ``<= upper_bound`` is cut.

**Reach** (``reach``, ``ideal_work``, ``work_slack`` and the cover tree ``tree_below``,
``tree_added``; a 1 x 1 x 1 x 1 ``reach`` turns it off): the cover-edge search skips a superset ``J`` and all of its supersets when no superset of
``J`` holding a split of the rest within ``upper_bound`` can be reached by a stage within it,
counting the stage's compute, the input it already receives from ``I`` and the output it must
send (:mod:`placement.exact.reach`, which also proves that nothing within the bound is cut).
Each row fills its entries of ``reach`` when it is closed.

**Open cells** (the search's real cut). A cell ``(I, s)`` is *open* while its value is above
its ``floor`` (:func:`cell_floors`; without floors every cell is open): a cell at or below
its floor is final, and a cell whose floor is ``inf`` is never relaxed. A row with no open
cell is not searched at all, and its search stops as soon as its last open cell closes.
Per type ``t`` the search keeps ``limit[t]``, the largest value among the open cells a stage
on ``t`` can improve; a value through a stage is ``>= its compute`` (``max(base, load)``, or
``base + duration`` with ``base >= 0``), compute only grows with ``J`` and limits only
fall, so a branch whose compute is ``>= limit[t]`` (objective 1: ``>``, a tie may still win
on the device count) can improve nothing on ``t`` and is cut for ``t``. Only the open cells
are relaxed, and a pair ``(I, J)`` whose ``J`` has no extendable state under an open cell it
could beat costs only the branch tests (no loads).

**Pair mode** (``targets`` from :func:`target_pairs`). A row whose cells all have floor ``inf``
stays ``inf``, so no stage can end there; when few rows can (the *targets*), the search from
``I`` compares ``I`` with each target ``K > I`` directly instead of walking every superset in
between: ``K`` must contain ``I`` and could improve an open cell, the stage's additive sums
are the differences of the two ideals' float sums (intervals with their error bounds), its
boundary terms come from the boundary edges of ``I`` and ``K``, and the same tests, exact
rebuild and relaxation follow. On the Inception-like sample graph 12% of the rows are targets
in the max-load pass and 3% in the tie-break pass; the pairs searched fall from 22.9 M to 0.2 M.

Floors make values inexact only where that cannot matter: with floors from
:func:`cell_floors`, ``best[empty, q]`` is exact for every state ``q`` whose optimum is
``<= upper_bound`` (every cell on an optimal split of ``q`` is needed, and the clamp ``L`` is
``<=`` every such optimum); other cells may hold a larger (still achievable) value.

Returns ``(best, parent_ideal, parent_type, pairs)``: per cell the ideal ``J`` after the
stage and ``type + T * mode`` of its device (:func:`~placement.exact.codes.parent_code`), or ``INHERIT + d`` (same value as the state
with one device of type ``d`` fewer, ``closure`` only); ``pairs`` counts the pairs ``I < J``
searched (in pair mode: the pairs whose stage was evaluated).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .borrow import borrow_all
from .codes import INHERIT
from .exactsum import MAXP
from .pairs import Targets
from .row_search import Settings, Work, _close_row, _search_row


@njit(cache=True, nogil=True)
def lattice_dp(graph, devs, table, settings, targets, rows):
    """Fill the rows ``rows`` of the DP table, in that order; returns the pairs searched.

    The contract is the module docstring; the arguments are its arrays and scalars in four groups
    (:mod:`placement.exact.row_search`), built by :func:`placement.exact.kernel.run`:

    * ``graph`` (:class:`~placement.exact.row_search.Graph`): the lattice's cover edges in CSR form,
      the groups, the per-node quantities and, for reach, ``ideal_work``, ``work_slack`` and the cover
      tree (1-element arrays when reach is off);
    * ``devs`` (:class:`~placement.exact.row_search.DeviceTypes`): per device type its ``node_val`` rows,
      scale classes and memory cap, and the states' transitions and in-flight counts;
    * ``table`` (:class:`~placement.exact.row_search.Table`): the table of :func:`new_table`
      (``best[I, s]``, ``parent_ideal``, ``parent_type``, ``useful``, ``used``; axes: ideal x state), the
      cells' ``floor`` (or 1 x 1: every cell open), this call's ``counters`` and ``reach`` (1 x 1 x 1 x 1:
      off);
    * ``settings`` (:class:`~placement.exact.row_search.Settings`): the scalars (``has_floor``,
      ``min_flight`` and ``has_reach`` derived from the arrays by :func:`settings_for`);

    plus ``targets`` (the data of :func:`target_pairs` as a plain tuple, or ``no_targets()``: the search
    walks the cover edges) and ``rows``.

    Invariants: every row ``J > i`` that row ``i`` can reach by cover edges (its supersets) is final
    before ``i`` is searched (earlier in ``rows``, or filled before the call); row ``i``'s search reads
    only those rows, ``floor`` and its own row, and writes only row ``i`` of the table, so rows that are
    not supersets of one another (e.g. ideals of equal size) may be filled by concurrent calls, each
    with its own ``counters`` (:func:`~placement.exact.kernel.run`). ``counters[0]`` is increased by the
    number of pairs whose exact sums had to be rebuilt.
    """
    # The arrays are borrowed (no reference counts, placement/exact/borrow.py): the arguments are
    # held by the caller, the work arrays by `owned` until the end of this function.
    graph = borrow_all(graph)
    devs = borrow_all(devs)
    table = borrow_all(table)
    owned = _work_arrays(
        table.best.shape[0],
        graph.group_start.shape[0] - 1,
        graph.node_val.shape[0] + graph.cross_val.shape[0] + 1,
        settings.n_states,
        devs.type_compute.shape[0],
        graph.preds.shape[0],
        graph.out_degree.shape[0],
        graph.cross_val.shape[0],
    )
    work = borrow_all(owned)
    pair_targets = borrow_all(Targets(*targets))  # (a plain tuple from some callers)
    toggles = 0
    pairs = 0
    for i in rows:
        toggles, pairs = _search_row(i, graph, devs, table, pair_targets, settings, work, toggles, pairs)
        _close_row(i, graph, devs, table, settings)
    return pairs + _held(owned)


def settings_for(
    n_states, mem, opt_mult, overlap, upper_bound, closure, modes, count_only, objective, floor, flight, reach
) -> Settings:  # fmt: skip
    """The kernel's scalars (:class:`~placement.exact.row_search.Settings`), typed as it compiles them.

    ``mem`` = (mem_w, mem_p, mem_a) (indices into ``node_val``, -1: none), ``modes`` = (mode_lo,
    mode_hi); ``has_floor``, ``min_flight`` (over the states >= 1: state 0 is never a stage's target)
    and ``has_reach`` are derived from ``floor``, ``flight`` and ``reach``.
    """
    min_flight = int(flight[1:].min()) if n_states > 1 else 1 << 30
    return Settings(
        int(n_states),
        int(mem[0]),
        int(mem[1]),
        int(mem[2]),
        float(opt_mult),
        bool(overlap),
        float(upper_bound),
        bool(closure),
        int(modes[0]),
        int(modes[1]),
        bool(count_only),
        int(objective),
        bool(floor.shape[0] > 1),
        min(min_flight, 1 << 30),
        bool(reach.shape[0] > 1),
    )


@njit(cache=True, nogil=True)
def _held(owned):
    """0; its call at the end of :func:`lattice_dp` holds the work arrays that were borrowed until then."""
    return 0 * owned.mark.shape[0]


@njit(cache=True, nogil=True, inline="always")
def _work_arrays(n_ideals, n_groups, n_q, n_states, n_types, n_preds, n_nodes, n_cross):
    """The search's work arrays (:class:`~placement.exact.row_search.Work`) for ``n_q`` quantities per stage."""
    max_depth = n_ideals + 1
    if n_groups + 2 < max_depth:
        max_depth = n_groups + 2
    n_aff = n_nodes + n_preds + 1
    return Work(
        np.zeros((max_depth, n_q, MAXP)),
        np.zeros((max_depth, n_q), dtype=np.int64),
        np.zeros((max_depth, n_q)),
        np.zeros((max_depth, n_q)),
        np.zeros(n_q),
        np.zeros(n_q),
        np.full((2, n_types), np.inf),
        np.full((2, n_types), np.inf),
        np.zeros(n_types),
        np.zeros(n_types),
        np.full(n_nodes, -1, dtype=np.int64),
        np.zeros((max_depth, n_types), dtype=np.int64),
        np.empty(3 * MAXP),
        np.full(n_ideals, -1, dtype=np.int64),
        np.zeros(n_nodes, dtype=np.bool_),
        np.zeros(n_nodes, dtype=np.int64),
        np.zeros(n_nodes, dtype=np.int64),
        np.full(n_nodes, -1, dtype=np.int64),
        np.empty(n_aff, dtype=np.int64),
        np.empty(n_aff, dtype=np.bool_),
        np.empty(n_aff, dtype=np.bool_),
        np.empty(max_depth, dtype=np.int64),
        np.empty(max_depth, dtype=np.int64),
        np.empty(max_depth, dtype=np.int64),
        np.zeros(n_types, dtype=np.bool_),
        np.empty(n_states, dtype=np.int64),
        np.zeros(n_states, dtype=np.bool_),
        np.empty(n_types, dtype=np.float64),
        np.zeros((max_depth, n_cross)),
        np.full(n_nodes, -1, dtype=np.int64),
        np.zeros(n_nodes, dtype=np.int64),
        np.zeros((max_depth, n_cross)),
        np.zeros(n_cross),
        np.empty(n_aff, dtype=np.bool_),
        np.full(1, -1, dtype=np.int64),
    )


@njit(cache=True, nogil=True)
def new_table(n_ideals, n_states, prev_state, closure, objective):
    """The DP table with only the full ideal's row filled: (best, parent_ideal, parent_type, useful, used).

    ``used`` (stages per cell, the tie-break pass's last key) is 1 x 1 unless ``objective == 1``.
    """
    best = np.full((n_ideals, n_states), np.inf)
    parent_ideal = np.full((n_ideals, n_states), -1, dtype=np.int32)
    parent_type = np.full((n_ideals, n_states), -1, dtype=np.int8)
    useful = np.zeros((n_ideals, n_states), dtype=np.bool_)  # states of J worth extending
    used = np.zeros((n_ideals, n_states) if objective == 1 else (1, 1), dtype=np.int16)
    full = n_ideals - 1
    best[full, 0] = 0.0
    if closure:
        # The empty suffix: 0 with any devices to spare.
        for s in range(1, n_states):
            best[full, s] = 0.0
            for d in range(prev_state.shape[0]):
                if prev_state[d, s] >= 0:
                    parent_type[full, s] = INHERIT + d
                    break
    useful[full, 0] = True
    return best, parent_ideal, parent_type, useful, used
