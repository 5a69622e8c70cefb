"""The evaluate-and-relax step of the lattice kernel: one candidate stage ``J \\ I``, from either search.

:func:`_evaluate_and_relax` is called by :func:`placement.exact.row_search._search_row` for each
pair ``(I, J)`` with the stage at search depth ``stage_depth`` (running sums ``stage_sums[stage_depth]``, error bounds
``stage_errors[stage_depth]``, blocked counts ``blocked[stage_depth]``). Every quantity is known as an interval
``[lo, hi]`` around its running sum that holds its exact value (correctly rounded; the
``2.0 * stage_errors`` and ``EPS * abs(r)`` steps are derived in :mod:`placement.exact.exactsum`); where an
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
def _evaluate_and_relax(
    i, j, stage_depth, target_pos, row_pos, pairs, n_open, graph, devs, table, pair_targets, settings, work
):
    """Evaluate the stage ``J \\ I`` and relax row ``i``'s open cells through it: ``(changed, alive)``.

    ``changed``: a cell was lowered so that the open cells or limits may have changed; ``alive``:
    the stage fits on some type (else no superset of ``J`` can make a stage either). ``target_pos``,
    ``row_pos``: pair mode's positions of ``K = J`` and ``I`` (``target_pos = -1``: the cover-edge search,
    whose stack holds the stage's groups). ``pairs`` stamps the exact rebuild's nodes.
    """
    # J is relevant when a state of J worth extending lies under an open cell it could improve
    # (value = max(base, load) or base + duration, both >= base); otherwise only whether its
    # supersets are alive matters. (With many open cells nearly every J is relevant: the test
    # would only cost time.)
    relevant = n_open * devs.type_compute.shape[0] > 8 or _can_improve(
        i, j, n_open, work.open_cells, devs.prev_state, table.useful, table.best, settings.objective
    )
    changed = False
    exact = False
    moved = 0  # pair mode: stage groups moved into the node state (for an exact rebuild)
    node_links = (graph.group_start, graph.group_nodes, graph.pred_start, graph.preds, graph.node_fwd)
    node_state = (work.in_stage, work.stage_succ, work.fwd_succ_in)
    for attempt in range(2):
        _quantities(stage_depth, exact, graph.node_val.shape[0], work)
        alive, uncertain, static_lo, static_hi, act_lo, act_hi, input_lo, input_hi = _intervals(
            stage_depth, exact, relevant, graph, devs, settings, work
        )
        if not alive or not relevant:
            break
        uncertain, relaxed = _relax(
            i,
            j,
            exact,
            uncertain,
            static_lo,
            static_hi,
            act_lo,
            act_hi,
            input_lo,
            input_hi,
            devs,
            table,
            settings,
            work,
        )
        changed = changed or relaxed
        if exact or not uncertain:
            break
        if target_pos >= 0:  # list the stage's groups as stack_group[1..stage_depth] and move them into the node state
            for g in range(graph.group_start.shape[0] - 1):
                if _holds(pair_targets.bits, target_pos, g) and not _holds(pair_targets.bits, row_pos, g):
                    moved += 1
                    work.stack_group[moved] = g
                    _move_group(g, True, node_links, node_state)
        _rebuild_exact(stage_depth, pairs, graph, work)
        table.counters[0] += 1
        exact = True
    for level in range(1, moved + 1):
        _move_group(work.stack_group[level], False, node_links, node_state)
    return changed, alive


@njit(cache=True, nogil=True, inline="always")
def _quantities(stage_depth, exact, n_val, work):
    """The stage's quantities as intervals ``[lo_q, hi_q]``: from the running sums, or points from the exact sums."""
    lo_q, hi_q, stage_sums, stage_errors = work.lo_q, work.hi_q, work.stage_sums, work.stage_errors
    for q in range(lo_q.shape[0]):
        if exact:
            lo_q[q] = _round(work.exact_terms[stage_depth, q], work.exact_len[stage_depth, q])
            hi_q[q] = lo_q[q]
        else:
            lo_q[q] = stage_sums[stage_depth, q] - 2.0 * stage_errors[stage_depth, q]
            hi_q[q] = stage_sums[stage_depth, q] + 2.0 * stage_errors[stage_depth, q]
            if q < n_val and lo_q[q] < 0.0:
                lo_q[q] = 0.0  # additive terms are >= 0


@njit(cache=True, nogil=True, inline="always")
def _intervals(stage_depth, exact, relevant, graph, devs, settings, work):
    """The stage's memory, per type its loads per mode and duration (intervals); which types it fits.

    Returns ``(alive, uncertain, static_lo, static_hi, act_lo, act_hi, input_lo, input_hi)``: whether it fits on some
    type (``alive_t[t]`` per type), whether an interval left a test undecided, and the intervals
    of weights plus optimizer state, activations and stage input. Loads and durations (in
    ``load_lo``/``load_hi``, ``dur_lo``/``dur_hi``) only when ``relevant``.
    """
    lo_q, hi_q, alive_t = work.lo_q, work.hi_q, work.alive_t
    mem_w, mem_p, mem_a, mode_lo, mode_hi = (
        settings.mem_w,
        settings.mem_p,
        settings.mem_a,
        settings.mode_lo,
        settings.mode_hi,
    )
    upper_bound, objective, limit, type_cap = settings.upper_bound, settings.objective, work.limit, devs.type_cap
    n_val = graph.node_val.shape[0]
    q_in = n_val + graph.cross_val.shape[0]
    uncertain = False
    weights_lo = lo_q[mem_w] if mem_w >= 0 else 0.0
    weights_hi = hi_q[mem_w] if mem_w >= 0 else 0.0
    param_lo = lo_q[mem_p] if mem_p >= 0 else 0.0
    param_hi = hi_q[mem_p] if mem_p >= 0 else 0.0
    act_lo = lo_q[mem_a] if mem_a >= 0 else 0.0
    act_hi = hi_q[mem_a] if mem_a >= 0 else 0.0
    input_lo = lo_q[q_in] if mode_hi >= 1 else 0.0
    input_hi = hi_q[q_in] if mode_hi >= 1 else 0.0
    if input_lo < 0.0:
        input_lo = 0.0
    static_lo = weights_lo + settings.opt_mult * param_lo
    static_hi = weights_hi + settings.opt_mult * param_hi
    alive = False
    for t in range(devs.type_compute.shape[0]):
        alive_t[t] = False
        if devs.next_state[t, 0] < 0 or work.blocked[stage_depth, t] > 0:
            continue
        compute_q = devs.type_compute[t]
        if lo_q[compute_q] > upper_bound:
            continue
        # Per-row incumbents: any value through this stage is >= its compute, and compute
        # only grows with J (objective 1 may still win a tie on the device count).
        if lo_q[compute_q] > limit[t] or (objective == 0 and lo_q[compute_q] >= limit[t]):
            continue
        if hi_q[compute_q] > upper_bound:
            uncertain = True
        low_lo = static_lo + (settings.min_flight * act_lo if mode_lo == 0 else act_lo)
        low_hi = static_hi + (settings.min_flight * act_hi if mode_lo == 0 else act_hi)
        if mode_hi >= 1 and static_lo + act_lo < low_lo:
            low_lo = static_lo + act_lo
            low_hi = static_hi + act_hi
        if low_lo > type_cap[t]:
            continue
        if low_hi > type_cap[t]:
            uncertain = True
        alive_t[t] = True
        alive = True
        if not relevant:
            continue
        if _loads(t, stage_depth, exact, n_val, devs, settings, work):
            uncertain = True
    return alive, uncertain, static_lo, static_hi, act_lo, act_hi, input_lo, input_hi


@njit(cache=True, nogil=True, inline="always")
def _loads(t, stage_depth, exact, n_val, devs, settings, work):
    """The stage's loads on type ``t`` per mode and its tie-break duration, as intervals.

    Returns whether a load's interval leaves its test against ``upper_bound`` undecided.
    """
    lo_q, hi_q, stage_sums, stage_errors, exact_terms, exact_len = (
        work.lo_q,
        work.hi_q,
        work.stage_sums,
        work.stage_errors,
        work.exact_terms,
        work.exact_len,
    )
    load_lo, load_hi, dur_lo, dur_hi = work.load_lo, work.load_hi, work.dur_lo, work.dur_hi
    mode_lo, mode_hi, upper_bound = settings.mode_lo, settings.mode_hi, settings.upper_bound
    compute_q = devs.type_compute[t]
    undecided = False
    cc = devs.type_cross[t]
    x_lo = lo_q[n_val + cc] if cc >= 0 else 0.0
    x_hi = hi_q[n_val + cc] if cc >= 0 else 0.0
    if x_lo < 0.0:
        x_lo = 0.0
    if settings.overlap:
        l_lo = lo_q[compute_q] if lo_q[compute_q] > x_lo else x_lo
        l_hi = hi_q[compute_q] if hi_q[compute_q] > x_hi else x_hi
    elif exact:
        l_lo = _round_sum(
            exact_terms[stage_depth, compute_q],
            exact_len[stage_depth, compute_q],
            exact_terms[stage_depth, n_val + cc],
            exact_len[stage_depth, n_val + cc] if cc >= 0 else 0,
            exact_terms[stage_depth, compute_q],
            0,
            work.tmp,
        )
        l_hi = l_lo
    else:
        r = stage_sums[stage_depth, compute_q] + (stage_sums[stage_depth, n_val + cc] if cc >= 0 else 0.0)
        e = (
            stage_errors[stage_depth, compute_q]
            + (stage_errors[stage_depth, n_val + cc] if cc >= 0 else 0.0)
            + EPS * abs(r)
        )
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
    if settings.objective == 1:
        cd = devs.type_dur_cross[t]
        if exact:
            dur_lo[t] = _round_sum(
                exact_terms[stage_depth, compute_q],
                exact_len[stage_depth, compute_q],
                exact_terms[stage_depth, n_val + cd],
                exact_len[stage_depth, n_val + cd] if cd >= 0 else 0,
                exact_terms[stage_depth, compute_q],
                0,
                work.tmp,
            )
            dur_hi[t] = dur_lo[t]
        else:
            r = stage_sums[stage_depth, compute_q] + (stage_sums[stage_depth, n_val + cd] if cd >= 0 else 0.0)
            e = (
                stage_errors[stage_depth, compute_q]
                + (stage_errors[stage_depth, n_val + cd] if cd >= 0 else 0.0)
                + EPS * abs(r)
            )
            dur_lo[t] = r - 2.0 * e
            dur_hi[t] = r + 2.0 * e
    return undecided


@njit(cache=True, nogil=True, inline="always")
def _relax(
    i, j, exact, uncertain, static_lo, static_hi, act_lo, act_hi, input_lo, input_hi, devs, table, settings, work
):
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
    upper_bound, objective, mode_lo, mode_hi = (
        settings.upper_bound,
        settings.objective,
        settings.mode_lo,
        settings.mode_hi,
    )
    n_types = devs.type_compute.shape[0]
    changed = False
    for back in range(0 if uncertain else settings.n_states):
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
                    m_lo = static_lo + n_fl * act_lo
                    m_hi = static_hi + n_fl * act_hi
                else:
                    m_lo = static_lo + n_fl * input_lo + act_lo
                    m_hi = static_hi + n_fl * input_hi + act_hi
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
                        if _stale(i, nxt, cell, value, floor, settings.has_floor, devs.prev_state, work.limit):
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
                        if _stale(i, nxt, cell, base, floor, settings.has_floor, devs.prev_state, work.limit):
                            changed = True
                        best[i, nxt] = base
                        parent_ideal[i, nxt] = j
                        parent_type[i, nxt] = t + n_types * mode
                elif base + dur_lo[t] <= cell:
                    uncertain = True
    return uncertain, changed


@njit(cache=True, nogil=True, inline="always")
def _rebuild_exact(stage_depth, pairs, graph, work):
    """Rebuild ``exact_terms[stage_depth]``: the exact sums of the stage made of the groups ``stack_group[1..stage_depth]`` (in the node state)."""
    exact_terms, exact_len, rebuild_mark = work.exact_terms, work.exact_len, work.rebuild_mark
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
    for q in range(exact_len.shape[1]):
        exact_len[stage_depth, q] = 0
    for level in range(1, stage_depth + 1):
        gl = work.stack_group[level]
        for k in range(graph.group_start[gl], graph.group_start[gl + 1]):
            x = graph.group_nodes[k]
            for q in range(n_val):
                v = node_val[q, x]
                if v != 0.0:
                    exact_len[stage_depth, q] = _grow(exact_terms[stage_depth, q], exact_len[stage_depth, q], v)
            # Boundary nodes: stage nodes, and outside predecessors of stage nodes.
            for m in range(pred_start[x] - 1, pred_start[x + 1]):
                u = x if m < pred_start[x] else preds[m]
                if rebuild_mark[u] == pairs:
                    continue
                rebuild_mark[u] = pairs
                if _crossing(work.in_stage, work.stage_succ, graph.out_degree, u):
                    for cl in range(n_cross):
                        v = cross_val[cl, u]
                        if v != 0.0:
                            q = n_val + cl
                            exact_len[stage_depth, q] = _grow(exact_terms[stage_depth, q], exact_len[stage_depth, q], v)
                if _feeding(work.in_stage, work.fwd_succ_in, graph.node_fwd, u) and in_val[u] != 0.0:
                    exact_len[stage_depth, q_in] = _grow(
                        exact_terms[stage_depth, q_in], exact_len[stage_depth, q_in], in_val[u]
                    )
