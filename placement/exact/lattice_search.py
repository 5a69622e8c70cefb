"""The search of the one lattice DP kernel: :func:`lattice_dp` fills rows of the table (its driver is :mod:`placement.exact.kernel`).

Contract
--------
The kernel splits a graph into consecutive stages along a chain of ideals and assigns each
stage to one device of some *device type* (an accelerator kind, or CPU cores), minimising
the largest stage load. Callers describe everything as arrays; the kernel knows nothing of
problems, schedules or kinds.

Modules, one topic each (read in this order): this docstring (the contract);
:mod:`~placement.exact.exactsum` (exact sums, and the derivation of the running sums' error
bound: every ``2.0 * er``, ``EPS * abs(r)`` below is a step of it);
:mod:`~placement.exact.codes` (parent codes, objectives, modes); :mod:`~placement.exact.cells`
(a row's open cells); :mod:`~placement.exact.stage` (a stage's node state);
:mod:`~placement.exact.pairs` (pair mode's targets). :func:`lattice_dp` keeps the per-pair
work (the next stage from the cover-edge search or pair mode, its intervals, loads,
relaxation and exact rebuild) and the closing of a row in one compiled function, with its
flat arguments and its short local names, exactly as measured at parity: numba takes a
reference count for every array passed to a call, inlined (``inline="always"``) or not, and
prunes them only in simple cases, so per-pair helpers made the kernel 1.2x-1.6x slower, a
named-tuple entry in front of this function 1.1x, the exact rebuild as its own function (a
fifth of the pairs in a tie-break pass) 1.1x, and even renaming its locals 1.04x on the
latency samples (numba orders some of its reference-count operations by variable name;
measured side by side with ``scripts/bench_dp.py``, the issue-23 report). Local names:
``ap``/``er`` running sums and their error bounds per depth, ``exp``/``exp_len`` exact
sums, ``lo_q``/``hi_q`` a stage's quantities as intervals, ``nd`` the stage's depth, ``kk``
pair mode's target, ``qc`` the node_val row of a type's compute, ``cc``/``cd`` its scale
classes, ``st_lo`` weights plus optimizer state, ``mark``/``mark2`` node stamps (push or pair;
exact rebuild), ``toggles`` the push/pair counter. numba's on-disk cache only notices edits to
a function's own file: after editing another kernel module, delete
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

from .cells import _can_improve, _open_cells, _stale
from .codes import INHERIT
from .exactsum import EPS, MAXP, _grow, _round, _round_sum
from .pairs import _holds
from .stage import _crossing, _feeding, _move_group


@njit(cache=True, nogil=True)
def lattice_dp(
    up_start,
    up_group,
    up_target,
    n_ideals,
    group_start,
    group_nodes,
    pred_start,
    preds,
    out_degree,
    node_fwd,
    node_val,
    cross_val,
    in_val,
    group_blocked,
    type_compute,
    type_fwd,
    type_cross,
    type_cap,
    mem_w,
    mem_p,
    mem_a,
    opt_mult,
    next_state,
    prev_state,
    flight,
    n_states,
    overlap,
    upper_bound,
    closure,
    mode_lo,
    mode_hi,
    count_only,
    objective,
    type_dur_cross,
    best,
    parent_ideal,
    parent_type,
    useful,
    used,
    floor,
    targets,
    rows,
    counters,
):
    """Fill the rows ``rows`` of the DP table (from :func:`new_table`), in that order; returns the pairs searched.

    The contract is the module docstring. Every row ``J > i`` that row ``i`` can reach by cover
    edges (its supersets) must be final before ``i`` is searched (earlier in ``rows``, or
    filled before the call); row ``i``'s search reads only those rows, ``floor`` and its own
    row, and writes only row ``i`` of the tables, so rows that are not supersets of one
    another (e.g. ideals of equal size) may be filled by concurrent calls, each with its own
    ``counters`` (:func:`run`). ``counters[0]``
    is increased by the number of pairs whose exact sums had to be rebuilt. ``floor``: the
    cells' floors (module docstring, "Open cells"), or a 1 x 1 array: every cell open.
    ``targets``: the data of :func:`target_pairs` (pair mode, module docstring), or
    ``no_targets()``: the search walks the cover edges.
    """
    has_floor = floor.shape[0] > 1
    tgt_ideal, tgt_pos, tgt_bits, tgt_sum, tgt_err, tgt_blocked, fr_start, fr_src, fr_dst, node_group = targets
    pair_mode = tgt_ideal.shape[0] > 0
    n_words = tgt_bits.shape[1]
    n_types = type_compute.shape[0]
    n_nodes = out_degree.shape[0]
    n_val = node_val.shape[0]
    n_cross = cross_val.shape[0]
    n_q = n_val + n_cross + 1  # expansions: additive values, crossing classes, stage input
    q_in = n_val + n_cross
    min_flight = 1 << 30
    for s in range(1, n_states):  # state 0 is never the target of a stage
        if flight[s] < min_flight:
            min_flight = flight[s]
    max_depth = n_ideals + 1
    if group_start.shape[0] - 1 + 2 < max_depth:
        max_depth = group_start.shape[0] - 1 + 2
    exp = np.zeros((max_depth, n_q, MAXP))  # exact sums of the current stage (rebuilt on demand)
    exp_len = np.zeros((max_depth, n_q), dtype=np.int64)
    ap = np.zeros((max_depth, n_q))  # running sums per search depth (restored on pop, never subtracted back)
    er = np.zeros((max_depth, n_q))  # their error bounds
    lo_q = np.zeros(n_q)
    hi_q = np.zeros(n_q)
    load_lo = np.full((2, n_types), np.inf)
    load_hi = np.full((2, n_types), np.inf)
    dur_lo = np.zeros(n_types)
    dur_hi = np.zeros(n_types)
    mark2 = np.full(n_nodes, -1, dtype=np.int64)
    blocked = np.zeros((max_depth, n_types), dtype=np.int64)
    tmp = np.empty(3 * MAXP)
    stamp = np.full(n_ideals, -1, dtype=np.int64)
    in_stage = np.zeros(n_nodes, dtype=np.bool_)
    stage_succ = np.zeros(n_nodes, dtype=np.int64)
    fwd_succ_in = np.zeros(n_nodes, dtype=np.int64)
    graph = (group_start, group_nodes, pred_start, preds, node_fwd)
    node_state = (in_stage, stage_succ, fwd_succ_in)  # the stage's membership and successor counts
    mark = np.full(n_nodes, -1, dtype=np.int64)
    affected = np.empty(n_nodes + preds.shape[0] + 1, dtype=np.int64)
    old_cross = np.empty(n_nodes + preds.shape[0] + 1, dtype=np.bool_)
    old_feed = np.empty(n_nodes + preds.shape[0] + 1, dtype=np.bool_)
    stack_ideal = np.empty(max_depth, dtype=np.int64)
    stack_pos = np.empty(max_depth, dtype=np.int64)
    stack_group = np.empty(max_depth, dtype=np.int64)
    alive_t = np.zeros(n_types, dtype=np.bool_)
    open_cells = np.empty(n_states, dtype=np.int64)  # the states of row i whose cell may still improve
    is_open = np.zeros(n_states, dtype=np.bool_)
    limit = np.empty(n_types, dtype=np.float64)  # per type: the largest incumbent among its open cells
    toggles = 0
    pairs = 0
    for i in rows:
        n_open = _open_cells(i, best, floor, has_floor, prev_state, open_cells, is_open, limit)
        depth = 0 if n_open > 0 or count_only else -1  # no open cell: nothing to search
        stack_ideal[0] = i
        stack_pos[0] = up_start[i]
        stack_group[0] = -1
        stamp[i] = i
        for q in range(n_q):
            ap[0, q] = 0.0
            er[0, q] = 0.0
        for t in range(n_types):
            blocked[0, t] = 0
        row_pos = tgt_pos[i] if pair_mode else -1  # pair mode: the row's place among the targets
        cand = row_pos + 1  # the next target to try (supersets have larger indices)
        while True:
            moved = 0  # pair mode: stage groups moved into the node state (for an exact rebuild)
            if pair_mode:
                if n_open == 0 or row_pos < 0:
                    break
                # ---- the next target K = j that is a superset of I, could improve an open cell,
                # and whose stage compute (an interval from the two ideals' sums) fits on some type
                kk = -1
                while cand < tgt_ideal.shape[0]:
                    c = cand
                    cand += 1
                    j = tgt_ideal[c]
                    if not _can_improve(i, j, n_open, open_cells, prev_state, useful, best, objective):
                        continue
                    fits = False
                    for t in range(n_types):
                        if next_state[t, 0] < 0 or tgt_blocked[c, t] > tgt_blocked[row_pos, t]:
                            continue
                        qc = type_compute[t]
                        d = tgt_sum[c, qc] - tgt_sum[row_pos, qc]
                        d_lo = d - 2.0 * (tgt_err[c, qc] + tgt_err[row_pos, qc] + EPS * abs(d))
                        if d_lo > upper_bound or d_lo > limit[t] or (objective == 0 and d_lo >= limit[t]):
                            continue
                        fits = True
                    if not fits:
                        continue
                    for w in range(n_words):
                        if tgt_bits[row_pos, w] & ~tgt_bits[c, w]:
                            fits = False
                            break
                    if fits:
                        kk = c
                        break
                if kk < 0:
                    break
                # ---- the stage K \ I: additive sums as differences, boundary terms from the boundary edges
                nd = 0
                for w in range(n_words):
                    stage_bits = tgt_bits[kk, w] & ~tgt_bits[row_pos, w]
                    while stage_bits:
                        stage_bits &= stage_bits - np.uint64(1)
                        nd += 1
                for q in range(n_val):
                    d = tgt_sum[kk, q] - tgt_sum[row_pos, q]
                    ap[nd, q] = d
                    er[nd, q] = tgt_err[kk, q] + tgt_err[row_pos, q] + EPS * abs(d)
                for q in range(n_val, n_q):
                    ap[nd, q] = 0.0
                    er[nd, q] = 0.0
                for t in range(n_types):
                    blocked[nd, t] = tgt_blocked[kk, t] - tgt_blocked[row_pos, t]
                # A node crosses when an edge joins it to the other side of the stage: such an edge
                # crosses the boundary of I or of K (the ideals' boundary edges, both directions).
                toggles += 1
                for side in range(2):
                    c = kk if side == 0 else row_pos
                    for m in range(fr_start[c], fr_start[c + 1]):
                        u = fr_src[m]
                        if mark[u] == toggles:
                            continue
                        g = node_group[u]
                        h = node_group[fr_dst[m]]
                        u_in = _holds(tgt_bits, kk, g) and not _holds(tgt_bits, row_pos, g)
                        v_in = _holds(tgt_bits, kk, h) and not _holds(tgt_bits, row_pos, h)
                        if u_in == v_in:
                            continue
                        mark[u] = toggles
                        for cl in range(n_cross):
                            v = cross_val[cl, u]
                            if v != 0.0:
                                q = n_val + cl
                                r = ap[nd, q] + v
                                ap[nd, q] = r
                                er[nd, q] += EPS * abs(r)
                pairs += 1
            else:
                if depth < 0:
                    break
                top = stack_ideal[depth]
                if stack_pos[depth] >= up_start[top + 1]:
                    # ---- pop: undo the node states of the group that made this level (expansions are per level)
                    g = stack_group[depth]
                    depth -= 1
                    if g < 0:
                        continue
                    _move_group(g, False, graph, node_state)
                    continue
                e = stack_pos[depth]
                stack_pos[depth] = e + 1
                j = up_target[e]
                if stamp[j] == i:
                    continue
                stamp[j] = i
                g = up_group[e]
                pairs += 1
                nd = depth + 1
                stack_ideal[nd] = j
                stack_group[nd] = g
                if count_only:
                    stack_pos[nd] = up_start[j]
                    depth = nd
                    _move_group(g, True, graph, node_state)
                    continue
                # ---- push group g: the level's running sums and error bounds, plus the group's nodes
                for q in range(n_q):
                    ap[nd, q] = ap[depth, q]
                    er[nd, q] = er[depth, q]
                for t in range(n_types):
                    blocked[nd, t] = blocked[depth, t] + group_blocked[t, g]
                toggles += 1
                n_aff = 0
                for k in range(group_start[g], group_start[g + 1]):
                    x = group_nodes[k]
                    for q in range(n_val):
                        v = node_val[q, x]
                        if v != 0.0:
                            r = ap[nd, q] + v
                            ap[nd, q] = r
                            er[nd, q] += EPS * abs(r)
                    # x and its predecessors may change their boundary terms: note their old state once.
                    for m in range(pred_start[x] - 1, pred_start[x + 1]):
                        u = x if m < pred_start[x] else preds[m]
                        if mark[u] != toggles:
                            mark[u] = toggles
                            affected[n_aff] = u
                            old_cross[n_aff] = _crossing(in_stage, stage_succ, out_degree, u)
                            old_feed[n_aff] = _feeding(in_stage, fwd_succ_in, node_fwd, u)
                            n_aff += 1
                _move_group(g, True, graph, node_state)
                for a in range(n_aff):
                    u = affected[a]
                    now_cross = _crossing(in_stage, stage_succ, out_degree, u)
                    if now_cross != old_cross[a]:
                        sign = 1.0 if now_cross else -1.0
                        for cl in range(n_cross):
                            v = cross_val[cl, u]
                            if v != 0.0:
                                q = n_val + cl
                                r = ap[nd, q] + sign * v
                                ap[nd, q] = r
                                er[nd, q] += EPS * abs(r)
                    now_feed = _feeding(in_stage, fwd_succ_in, node_fwd, u)
                    if now_feed != old_feed[a]:
                        v = in_val[u]
                        if v != 0.0:
                            r = ap[nd, q_in] + (v if now_feed else -v)
                            ap[nd, q_in] = r
                            er[nd, q_in] += EPS * abs(r)
                depth = nd

            # ---- the pair (I, J). Every quantity is known as an interval [lo, hi] around its running
            # sum that holds its exact value (correctly rounded); where an interval cannot decide a
            # test or a value must be stored, the stage's exact sums are rebuilt from its nodes and
            # the intervals collapse to points. Every test below is monotone in the quantities.
            # J is relevant when a state of J worth extending lies under an open cell it could improve
            # (value = max(base, load) or base + duration, both >= base); otherwise only whether its
            # supersets are alive matters.
            # (With many open cells nearly every J is relevant: the test would only cost time.)
            relevant = n_open * n_types > 8 or _can_improve(
                i, j, n_open, open_cells, prev_state, useful, best, objective
            )
            changed = False
            exact = False
            for attempt in range(2):
                for q in range(n_q):
                    if exact:
                        lo_q[q] = _round(exp[nd, q], exp_len[nd, q])
                        hi_q[q] = lo_q[q]
                    else:
                        lo_q[q] = ap[nd, q] - 2.0 * er[nd, q]
                        hi_q[q] = ap[nd, q] + 2.0 * er[nd, q]
                        if q < n_val and lo_q[q] < 0.0:
                            lo_q[q] = 0.0  # additive terms are >= 0
                uncertain = False
                w_lo = lo_q[mem_w] if mem_w >= 0 else 0.0
                w_hi = hi_q[mem_w] if mem_w >= 0 else 0.0
                p_lo = lo_q[mem_p] if mem_p >= 0 else 0.0
                p_hi = hi_q[mem_p] if mem_p >= 0 else 0.0
                a_lo = lo_q[mem_a] if mem_a >= 0 else 0.0
                a_hi = hi_q[mem_a] if mem_a >= 0 else 0.0
                i_lo_v = lo_q[q_in] if mode_hi >= 1 else 0.0
                i_hi_v = hi_q[q_in] if mode_hi >= 1 else 0.0
                if i_lo_v < 0.0:
                    i_lo_v = 0.0
                st_lo = w_lo + opt_mult * p_lo
                st_hi = w_hi + opt_mult * p_hi
                alive = False
                for t in range(n_types):
                    alive_t[t] = False
                    if next_state[t, 0] < 0 or blocked[nd, t] > 0:
                        continue
                    qc = type_compute[t]
                    if lo_q[qc] > upper_bound:
                        continue
                    # Per-row incumbents: any value through this stage is >= its compute, and compute
                    # only grows with J (objective 1 may still win a tie on the device count).
                    if lo_q[qc] > limit[t] or (objective == 0 and lo_q[qc] >= limit[t]):
                        continue
                    if hi_q[qc] > upper_bound:
                        uncertain = True
                    low_lo = st_lo + (min_flight * a_lo if mode_lo == 0 else a_lo)
                    low_hi = st_hi + (min_flight * a_hi if mode_lo == 0 else a_hi)
                    if mode_hi >= 1 and st_lo + a_lo < low_lo:
                        low_lo = st_lo + a_lo
                        low_hi = st_hi + a_hi
                    if low_lo > type_cap[t]:
                        continue
                    if low_hi > type_cap[t]:
                        uncertain = True
                    alive_t[t] = True
                    alive = True
                    if not relevant:
                        continue
                    # Loads per mode and the tie-break duration, as intervals.
                    cc = type_cross[t]
                    x_lo = lo_q[n_val + cc] if cc >= 0 else 0.0
                    x_hi = hi_q[n_val + cc] if cc >= 0 else 0.0
                    if x_lo < 0.0:
                        x_lo = 0.0
                    if overlap:
                        l_lo = lo_q[qc] if lo_q[qc] > x_lo else x_lo
                        l_hi = hi_q[qc] if hi_q[qc] > x_hi else x_hi
                    elif exact:
                        l_lo = _round_sum(
                            exp[nd, qc],
                            exp_len[nd, qc],
                            exp[nd, n_val + cc],
                            exp_len[nd, n_val + cc] if cc >= 0 else 0,
                            exp[nd, qc],
                            0,
                            tmp,
                        )
                        l_hi = l_lo
                    else:
                        r = ap[nd, qc] + (ap[nd, n_val + cc] if cc >= 0 else 0.0)
                        e = er[nd, qc] + (er[nd, n_val + cc] if cc >= 0 else 0.0) + EPS * abs(r)
                        l_lo = r - 2.0 * e
                        l_hi = r + 2.0 * e
                    for mode in range(mode_lo, mode_hi + 1):
                        qf = type_fwd[t]
                        if mode == 1 and qf >= 0:
                            load_lo[mode, t] = l_lo + lo_q[qf]
                            load_hi[mode, t] = l_hi + hi_q[qf]
                        else:
                            load_lo[mode, t] = l_lo
                            load_hi[mode, t] = l_hi
                        if load_lo[mode, t] <= upper_bound < load_hi[mode, t]:
                            uncertain = True
                    if objective == 1:
                        cd = type_dur_cross[t]
                        if exact:
                            dur_lo[t] = _round_sum(
                                exp[nd, qc],
                                exp_len[nd, qc],
                                exp[nd, n_val + cd],
                                exp_len[nd, n_val + cd] if cd >= 0 else 0,
                                exp[nd, qc],
                                0,
                                tmp,
                            )
                            dur_hi[t] = dur_lo[t]
                        else:
                            r = ap[nd, qc] + (ap[nd, n_val + cd] if cd >= 0 else 0.0)
                            e = er[nd, qc] + (er[nd, n_val + cd] if cd >= 0 else 0.0) + EPS * abs(r)
                            dur_lo[t] = r - 2.0 * e
                            dur_hi[t] = r + 2.0 * e
                if not alive or not relevant:
                    break
                # Relax the open cells best[I, nxt] from best[J, nxt - one device of type t]. On the
                # intervals: only where they decide (only base itself can be stored then), stopping
                # at the first update that is undecided or would store a load known only as an
                # interval. Exact (intervals are points): every update.
                for back in range(0 if uncertain else n_states):
                    if uncertain:
                        break
                    if not useful[j, back]:
                        continue
                    base = best[j, back]
                    for t in range(n_types):
                        nxt = next_state[t, back]
                        if not alive_t[t] or nxt < 0 or not is_open[nxt]:
                            continue
                        n_fl = flight[nxt]
                        for mode in range(mode_lo, mode_hi + 1):
                            if load_lo[mode, t] > upper_bound:
                                continue
                            if mode == 0:
                                m_lo = st_lo + n_fl * a_lo
                                m_hi = st_hi + n_fl * a_hi
                            else:
                                m_lo = st_lo + n_fl * i_lo_v + a_lo
                                m_hi = st_hi + n_fl * i_hi_v + a_hi
                            if m_lo > type_cap[t]:
                                continue
                            cell = best[i, nxt]
                            if exact:
                                load = load_lo[mode, t]
                                count = 0
                                if objective == 0:
                                    value = base if base > load else load
                                    better = value < cell
                                else:
                                    value = base + dur_lo[t]
                                    count = used[j, back] + 1
                                    better = value < cell or (value == cell and count < used[i, nxt])
                                if better:
                                    if _stale(i, nxt, cell, value, floor, has_floor, prev_state, limit):
                                        changed = True
                                    best[i, nxt] = value
                                    parent_ideal[i, nxt] = j
                                    parent_type[i, nxt] = t + n_types * mode
                                    if objective == 1:
                                        used[i, nxt] = count
                            elif m_hi > type_cap[t]:
                                uncertain = True
                            elif objective == 0:
                                # value = max(base, load): base if load_hi <= base, else undecided
                                # unless even the smallest value cannot beat the cell.
                                if load_hi[mode, t] > base:
                                    if load_lo[mode, t] < cell:
                                        uncertain = True
                                elif base < cell:
                                    if _stale(i, nxt, cell, base, floor, has_floor, prev_state, limit):
                                        changed = True
                                    best[i, nxt] = base
                                    parent_ideal[i, nxt] = j
                                    parent_type[i, nxt] = t + n_types * mode
                            elif base + dur_lo[t] <= cell:
                                uncertain = True
                if exact or not uncertain:
                    break
                if pair_mode:  # list the stage's groups as stack_group[1..nd] and move them into the node state
                    for g in range(group_start.shape[0] - 1):
                        if _holds(tgt_bits, kk, g) and not _holds(tgt_bits, row_pos, g):
                            moved += 1
                            stack_group[moved] = g
                            _move_group(g, True, graph, node_state)
                # Rebuild exp[nd]: the exact sums of the stage made of the groups stack_group[1..nd].
                for q in range(n_q):
                    exp_len[nd, q] = 0
                for level in range(1, nd + 1):
                    gl = stack_group[level]
                    for k in range(group_start[gl], group_start[gl + 1]):
                        x = group_nodes[k]
                        for q in range(n_val):
                            v = node_val[q, x]
                            if v != 0.0:
                                exp_len[nd, q] = _grow(exp[nd, q], exp_len[nd, q], v)
                        # Boundary nodes: stage nodes, and outside predecessors of stage nodes.
                        for m in range(pred_start[x] - 1, pred_start[x + 1]):
                            u = x if m < pred_start[x] else preds[m]
                            if mark2[u] == pairs:
                                continue
                            mark2[u] = pairs
                            if _crossing(in_stage, stage_succ, out_degree, u):
                                for cl in range(n_cross):
                                    v = cross_val[cl, u]
                                    if v != 0.0:
                                        q = n_val + cl
                                        exp_len[nd, q] = _grow(exp[nd, q], exp_len[nd, q], v)
                            if _feeding(in_stage, fwd_succ_in, node_fwd, u) and in_val[u] != 0.0:
                                exp_len[nd, q_in] = _grow(exp[nd, q_in], exp_len[nd, q_in], in_val[u])
                counters[0] += 1
                exact = True
            if pair_mode:
                for level in range(1, moved + 1):
                    _move_group(stack_group[level], False, graph, node_state)
                if changed:
                    n_open = _open_cells(i, best, floor, has_floor, prev_state, open_cells, is_open, limit)
                continue
            if not alive:
                stack_pos[nd] = up_start[j + 1]  # dead: no supersets, the pop undoes it
                continue
            stack_pos[nd] = up_start[j]
            if changed:
                n_open = _open_cells(i, best, floor, has_floor, prev_state, open_cells, is_open, limit)
                if n_open == 0:  # every cell of row i is final: unwind the search
                    for level in range(nd + 1):
                        stack_pos[level] = up_start[stack_ideal[level] + 1]
        # best[i] is final: close it (closure) and mark the states worth extending.
        for s in range(n_states):
            if closure:
                for d in range(prev_state.shape[0]):
                    back = prev_state[d, s]
                    if back < 0:
                        continue
                    if best[i, back] < best[i, s] or (
                        objective == 1 and best[i, back] == best[i, s] and used[i, back] < used[i, s]
                    ):
                        best[i, s] = best[i, back]
                        parent_ideal[i, s] = -1
                        parent_type[i, s] = INHERIT + d
                        if objective == 1:
                            used[i, s] = used[i, back]
            if best[i, s] <= upper_bound or (objective == 1 and best[i, s] < np.inf):
                dominated = False
                if closure:
                    for d in range(prev_state.shape[0]):
                        back = prev_state[d, s]
                        if (
                            back >= 0
                            and best[i, back] <= best[i, s]
                            and (objective == 0 or used[i, back] <= used[i, s])
                        ):
                            dominated = True
                useful[i, s] = not dominated
    return pairs


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
