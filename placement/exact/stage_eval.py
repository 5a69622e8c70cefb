"""The evaluate-and-relax step of the lattice kernel: one candidate stage ``J \\ I``, from either search.

:func:`_evaluate_and_relax` is called by :func:`placement.exact.row_search._search_row` for each
pair ``(I, J)`` with the stage at search depth ``nd`` (running sums ``ap[nd]``, error bounds
``er[nd]``, blocked counts ``blocked[nd]``). Every quantity is known as an interval
``[lo, hi]`` around its running sum that holds its exact value (correctly rounded; the
``2.0 * er`` and ``EPS * abs(r)`` steps are derived in :mod:`placement.exact.exactsum`); where an
interval cannot decide a test or a value must be stored, the stage's exact sums are rebuilt
from its nodes (:func:`_rebuild_exact`) and the intervals collapse to points. Every test is
monotone in the quantities. The arrays come borrowed in the named tuples of
:mod:`placement.exact.row_search` and every helper is inlined (see there).
"""

from __future__ import annotations

from numba import njit

from .cells import _can_improve, _stale
from .exactsum import EPS, _grow, _round, _round_sum
from .pairs import _holds
from .stage import _crossing, _feeding, _move_group


@njit(cache=True, nogil=True, inline="always")
def _evaluate_and_relax(i, j, nd, kk, row_pos, pairs, n_open, graph, devs, table, tg, st, work):
    """Evaluate the stage ``J \\ I`` and relax row ``i``'s open cells through it: ``(changed, alive)``.

    ``changed``: a cell was lowered so that the open cells or limits may have changed; ``alive``:
    the stage fits on some type (else no superset of ``J`` can make a stage either). ``kk``,
    ``row_pos``: pair mode's positions of ``K = J`` and ``I`` (``kk = -1``: the cover-edge search,
    whose stack holds the stage's groups). ``pairs`` stamps the exact rebuild's nodes.
    """
    # J is relevant when a state of J worth extending lies under an open cell it could improve
    # (value = max(base, load) or base + duration, both >= base); otherwise only whether its
    # supersets are alive matters. (With many open cells nearly every J is relevant: the test
    # would only cost time.)
    relevant = n_open * devs.type_compute.shape[0] > 8 or _can_improve(
        i, j, n_open, work.open_cells, devs.prev_state, table.useful, table.best, st.objective
    )
    changed = False
    exact = False
    moved = 0  # pair mode: stage groups moved into the node state (for an exact rebuild)
    node_links = (graph.group_start, graph.group_nodes, graph.pred_start, graph.preds, graph.node_fwd)
    node_state = (work.in_stage, work.stage_succ, work.fwd_succ_in)
    for attempt in range(2):
        _quantities(nd, exact, graph.node_val.shape[0], work)
        alive, uncertain, st_lo, st_hi, a_lo, a_hi, i_lo, i_hi = _intervals(nd, exact, relevant, graph, devs, st, work)
        if not alive or not relevant:
            break
        uncertain, relaxed = _relax(i, j, exact, uncertain, st_lo, st_hi, a_lo, a_hi, i_lo, i_hi, devs, table, st, work)
        changed = changed or relaxed
        if exact or not uncertain:
            break
        if kk >= 0:  # list the stage's groups as stack_group[1..nd] and move them into the node state
            for g in range(graph.group_start.shape[0] - 1):
                if _holds(tg.bits, kk, g) and not _holds(tg.bits, row_pos, g):
                    moved += 1
                    work.stack_group[moved] = g
                    _move_group(g, True, node_links, node_state)
        _rebuild_exact(nd, pairs, graph, work)
        table.counters[0] += 1
        exact = True
    for level in range(1, moved + 1):
        _move_group(work.stack_group[level], False, node_links, node_state)
    return changed, alive


@njit(cache=True, nogil=True, inline="always")
def _quantities(nd, exact, n_val, work):
    """The stage's quantities as intervals ``[lo_q, hi_q]``: from the running sums, or points from the exact sums."""
    lo_q, hi_q, ap, er = work.lo_q, work.hi_q, work.ap, work.er
    for q in range(lo_q.shape[0]):
        if exact:
            lo_q[q] = _round(work.exp[nd, q], work.exp_len[nd, q])
            hi_q[q] = lo_q[q]
        else:
            lo_q[q] = ap[nd, q] - 2.0 * er[nd, q]
            hi_q[q] = ap[nd, q] + 2.0 * er[nd, q]
            if q < n_val and lo_q[q] < 0.0:
                lo_q[q] = 0.0  # additive terms are >= 0


@njit(cache=True, nogil=True, inline="always")
def _intervals(nd, exact, relevant, graph, devs, st, work):
    """The stage's memory, per type its loads per mode and duration (intervals); which types it fits.

    Returns ``(alive, uncertain, st_lo, st_hi, a_lo, a_hi, i_lo, i_hi)``: whether it fits on some
    type (``alive_t[t]`` per type), whether an interval left a test undecided, and the intervals
    of weights plus optimizer state, activations and stage input. Loads and durations (in
    ``load_lo``/``load_hi``, ``dur_lo``/``dur_hi``) only when ``relevant``.
    """
    lo_q, hi_q, alive_t = work.lo_q, work.hi_q, work.alive_t
    mem_w, mem_p, mem_a, mode_lo, mode_hi = st.mem_w, st.mem_p, st.mem_a, st.mode_lo, st.mode_hi
    upper_bound, objective, limit, type_cap = st.upper_bound, st.objective, work.limit, devs.type_cap
    n_val = graph.node_val.shape[0]
    q_in = n_val + graph.cross_val.shape[0]
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
    st_lo = w_lo + st.opt_mult * p_lo
    st_hi = w_hi + st.opt_mult * p_hi
    alive = False
    for t in range(devs.type_compute.shape[0]):
        alive_t[t] = False
        if devs.next_state[t, 0] < 0 or work.blocked[nd, t] > 0:
            continue
        qc = devs.type_compute[t]
        if lo_q[qc] > upper_bound:
            continue
        # Per-row incumbents: any value through this stage is >= its compute, and compute
        # only grows with J (objective 1 may still win a tie on the device count).
        if lo_q[qc] > limit[t] or (objective == 0 and lo_q[qc] >= limit[t]):
            continue
        if hi_q[qc] > upper_bound:
            uncertain = True
        low_lo = st_lo + (st.min_flight * a_lo if mode_lo == 0 else a_lo)
        low_hi = st_hi + (st.min_flight * a_hi if mode_lo == 0 else a_hi)
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
        if _loads(t, nd, exact, n_val, devs, st, work):
            uncertain = True
    return alive, uncertain, st_lo, st_hi, a_lo, a_hi, i_lo_v, i_hi_v


@njit(cache=True, nogil=True, inline="always")
def _loads(t, nd, exact, n_val, devs, st, work):
    """The stage's loads on type ``t`` per mode and its tie-break duration, as intervals.

    Returns whether a load's interval leaves its test against ``upper_bound`` undecided.
    """
    lo_q, hi_q, ap, er, exp, exp_len = work.lo_q, work.hi_q, work.ap, work.er, work.exp, work.exp_len
    load_lo, load_hi, dur_lo, dur_hi = work.load_lo, work.load_hi, work.dur_lo, work.dur_hi
    mode_lo, mode_hi, upper_bound = st.mode_lo, st.mode_hi, st.upper_bound
    qc = devs.type_compute[t]
    undecided = False
    cc = devs.type_cross[t]
    x_lo = lo_q[n_val + cc] if cc >= 0 else 0.0
    x_hi = hi_q[n_val + cc] if cc >= 0 else 0.0
    if x_lo < 0.0:
        x_lo = 0.0
    if st.overlap:
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
            work.tmp,
        )
        l_hi = l_lo
    else:
        r = ap[nd, qc] + (ap[nd, n_val + cc] if cc >= 0 else 0.0)
        e = er[nd, qc] + (er[nd, n_val + cc] if cc >= 0 else 0.0) + EPS * abs(r)
        l_lo = r - 2.0 * e
        l_hi = r + 2.0 * e
    for mode in range(mode_lo, mode_hi + 1):
        qf = devs.type_fwd[t]
        if mode == 1 and qf >= 0:
            load_lo[mode, t] = l_lo + lo_q[qf]
            load_hi[mode, t] = l_hi + hi_q[qf]
        else:
            load_lo[mode, t] = l_lo
            load_hi[mode, t] = l_hi
        if load_lo[mode, t] <= upper_bound < load_hi[mode, t]:
            undecided = True
    if st.objective == 1:
        cd = devs.type_dur_cross[t]
        if exact:
            dur_lo[t] = _round_sum(
                exp[nd, qc],
                exp_len[nd, qc],
                exp[nd, n_val + cd],
                exp_len[nd, n_val + cd] if cd >= 0 else 0,
                exp[nd, qc],
                0,
                work.tmp,
            )
            dur_hi[t] = dur_lo[t]
        else:
            r = ap[nd, qc] + (ap[nd, n_val + cd] if cd >= 0 else 0.0)
            e = er[nd, qc] + (er[nd, n_val + cd] if cd >= 0 else 0.0) + EPS * abs(r)
            dur_lo[t] = r - 2.0 * e
            dur_hi[t] = r + 2.0 * e
    return undecided


@njit(cache=True, nogil=True, inline="always")
def _relax(i, j, exact, uncertain, st_lo, st_hi, a_lo, a_hi, i_lo_v, i_hi_v, devs, table, st, work):
    """Relax the open cells ``best[I, nxt]`` from ``best[J, nxt - one device of type t]``: ``(uncertain, changed)``.

    On the intervals: only where they decide (only ``base`` itself can be stored then), stopping
    at the first update that is undecided or would store a load known only as an interval.
    Exact (intervals are points): every update.
    """
    best, parent_ideal, parent_type, used, floor = (
        table.best,
        table.parent_ideal,
        table.parent_type,
        table.used,
        table.floor,
    )
    load_lo, load_hi, dur_lo, type_cap, next_state = (
        work.load_lo,
        work.load_hi,
        work.dur_lo,
        devs.type_cap,
        devs.next_state,
    )
    upper_bound, objective, mode_lo, mode_hi = st.upper_bound, st.objective, st.mode_lo, st.mode_hi
    n_types = devs.type_compute.shape[0]
    changed = False
    for back in range(0 if uncertain else st.n_states):
        if uncertain:
            break
        if not table.useful[j, back]:
            continue
        base = best[j, back]
        for t in range(n_types):
            nxt = next_state[t, back]
            if not work.alive_t[t] or nxt < 0 or not work.is_open[nxt]:
                continue
            n_fl = devs.flight[nxt]
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
                        if _stale(i, nxt, cell, value, floor, st.has_floor, devs.prev_state, work.limit):
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
                        if _stale(i, nxt, cell, base, floor, st.has_floor, devs.prev_state, work.limit):
                            changed = True
                        best[i, nxt] = base
                        parent_ideal[i, nxt] = j
                        parent_type[i, nxt] = t + n_types * mode
                elif base + dur_lo[t] <= cell:
                    uncertain = True
    return uncertain, changed


@njit(cache=True, nogil=True, inline="always")
def _rebuild_exact(nd, pairs, graph, work):
    """Rebuild ``exp[nd]``: the exact sums of the stage made of the groups ``stack_group[1..nd]`` (in the node state)."""
    exp, exp_len, mark2 = work.exp, work.exp_len, work.mark2
    node_val, cross_val, in_val, pred_start, preds = (
        graph.node_val,
        graph.cross_val,
        graph.in_val,
        graph.pred_start,
        graph.preds,
    )
    n_val = node_val.shape[0]
    n_cross = cross_val.shape[0]
    q_in = n_val + n_cross
    for q in range(exp_len.shape[1]):
        exp_len[nd, q] = 0
    for level in range(1, nd + 1):
        gl = work.stack_group[level]
        for k in range(graph.group_start[gl], graph.group_start[gl + 1]):
            x = graph.group_nodes[k]
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
                if _crossing(work.in_stage, work.stage_succ, graph.out_degree, u):
                    for cl in range(n_cross):
                        v = cross_val[cl, u]
                        if v != 0.0:
                            q = n_val + cl
                            exp_len[nd, q] = _grow(exp[nd, q], exp_len[nd, q], v)
                if _feeding(work.in_stage, work.fwd_succ_in, graph.node_fwd, u) and in_val[u] != 0.0:
                    exp_len[nd, q_in] = _grow(exp[nd, q_in], exp_len[nd, q_in], in_val[u])
