"""Every stage of the lattice (pairs of nested ideals) at every tensor degree, with its option front.

:func:`stage_fronts` walks, for each lower ideal j, the ideals above it and grows each stage's front
one group at a time from the stage one group smaller (:mod:`.front_steps`), with the cuts that keep
it exact: the memory horizon of the stage, the bound of :class:`~placement.multidim.choice.Prune`, and
rows that fit with any completion.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import front_steps as steps
from .choice import Prune, general_front, uniform_options
from .model import MultiProblem


def stage_fronts(
    problem: MultiProblem,
    lattice,
    cap: float,
    horizon: int,
    safe_cap: float | None = None,
    caps: tuple = (),
    prune: Prune | None = None,
) -> list:
    """Every stage (j, i) of the lattice at every degree t with its exact option front.

    Returns a list of ``(j, i, t, front, e, w)``: in the uniform case ``front`` has columns (P, A, B)
    sorted by P and ``e``, ``w`` are the stage's boundary and parameter bytes; otherwise ``front`` has the
    five columns of :mod:`.options` and ``e = w = None``. Depends on the problem's nodes and edges, on
    ``cap`` and on ``horizon`` (the largest y asked), so it is reusable across device counts.

    ``safe_cap`` (default ``cap``; the smallest memory of any kind): in the uniform case a row that fits
    under it at y = ``horizon`` even with the heaviest options of every node not yet in the stage makes
    every row with a larger or equal P useless (see :func:`~.front_steps.extend_pab`), so the fronts only
    keep, for every y <= horizon and every extension, an optimal row -- not the whole Pareto front.

    With :data:`~.front_steps.PER_Y_HORIZON` > 0 (the default) the uniform fronts are first built over
    (P, A, B) (:func:`~.front_steps.extend_pab`, cheapest while fronts stay narrow); if one grows past
    :data:`~.front_steps.PAB_MAX_ROWS` rows they are rebuilt per y (:func:`~.front_steps.step_per_y`) and a
    stage's returned rows are, for each y and each cap in ``caps`` (the memory of every kind; ``cap`` is
    always included), the least-P row that fits (:func:`~.front_steps.best_rows`): exact for those caps
    only. Either way each stage's least time at every y and cap is the same (both are exact).

    ``prune`` (:class:`Prune`, one kind): a stage whose compute alone exceeds the upper bound on every
    usable d is skipped, and a stage's fronts only go up to its own horizon (see :meth:`Prune.horizon`);
    a stage that with the rest of the nodes needs more devices than the kind has is skipped
    (:meth:`Prune.may_grow`), and with it every larger stage from the same j.
    """
    args = (problem, lattice, cap, horizon, safe_cap, caps, prune)
    per_y = steps.PER_Y_HORIZON > 0
    if per_y and steps.PAB_MAX_ROWS > 0 and uniform_options(problem):
        try:
            return _all_fronts(_Context(*args, per_y=False, max_rows=steps.PAB_MAX_ROWS))
        except _TooWide:
            pass  # a wide front: per-y fronts (each y keeps only its own Pareto rows)
    return _all_fronts(_Context(*args, per_y=per_y))


class _TooWide(Exception):
    """A (P, A, B) front grew past ``_Context.max_rows`` rows (:func:`stage_fronts` switches to per-y fronts)."""


def _all_fronts(ctx: _Context) -> list:
    """The body of :func:`stage_fronts` for one choice of front representation (``ctx.per_y``)."""
    problem, lattice, cap = ctx.problem, ctx.lattice, ctx.cap
    out: list[tuple[int, int, int, np.ndarray, float | None, float | None]] = []
    for j in range(lattice.count):
        order, parent = _supersets(lattice, j)
        inside = ctx.member_bits[order[1:]] & ~ctx.member_bits[j]  # stage membership, one row per upper ideal
        if ctx.uniform:
            e_bytes, w_bytes = ctx.boundary(inside)
            front_of = ctx.empty_fronts(j)  # per t: ideal -> front ((P, A, B) per y, or rows)
        for row, i in enumerate(order[1:]):
            i0, g = parent[i]
            for t in ctx.degrees_t:
                if ctx.uniform:
                    rows = _grow(ctx, front_of[t], t, j, i, i0, g)
                    if rows is not None:  # rows sorted by P (lexsort / unique), the P order the tables need
                        out.append((j, i, t, rows, float(e_bytes[t][row]), float(w_bytes[t][row])))
                else:
                    if (inside[row] & ~ctx.avail[t]).any():
                        continue
                    pts, _ = general_front(problem, frozenset(np.flatnonzero(inside[row]).tolist()), t, cap)
                    if len(pts):
                        out.append((j, i, t, pts, None, None))
    return out


def _supersets(lattice, j: int) -> tuple[list[int], dict[int, tuple[int, int]]]:
    """The ideals above j (j first, breadth first) and, for each, ``parent[i] = (i0, g)`` with i = i0 + g."""
    order = [j]
    seen = {j}
    parent = {}
    pos = 0
    up_start, up_group, up_target = lattice.up_start, lattice.up_group, lattice.up_target
    while pos < len(order):
        i0 = order[pos]
        pos += 1
        for e in range(up_start[i0], up_start[i0 + 1]):
            i = int(up_target[e])
            if i not in seen:
                seen.add(i)
                parent[i] = (i0, int(up_group[e]))
                order.append(i)
    return order, parent


class _Context:
    """What :func:`stage_fronts` computes once per problem: per degree t, the options and edge bytes of
    each node, and per ideal the sums (heaviest memory, least compute, least memory) its cuts use."""

    def __init__(
        self, problem: MultiProblem, lattice, cap, horizon, safe_cap, caps, prune, per_y: bool, max_rows: int = 0
    ) -> None:
        self.problem, self.lattice, self.cap, self.horizon, self.prune = problem, lattice, cap, horizon, prune
        self.max_rows = max_rows  # (P, A, B) fronts: raise _TooWide past this many rows (0: no limit)
        self.degrees_t = sorted({t for node in problem.nodes for t in node.degrees})
        self.avail = {t: np.array([bool(node.options_for(t)) for node in problem.nodes]) for t in self.degrees_t}
        self.uniform = uniform_options(problem)
        self.member_bits = np.array(
            [[(m >> v) & 1 for v in range(len(problem.nodes))] for m in lattice.masks], dtype=bool
        ).reshape(-1, len(problem.nodes))
        self.margin = (cap if safe_cap is None else safe_cap) * (1 - 1e-9)  # rounding never makes a row look safe
        # each stage has its own horizon (memory, and the bound's d_min): per-y fronts at any horizon
        # (PER_Y_HORIZON = 0 forces the (P, A, B) fronts, as the tests do)
        self.per_y = per_y
        self.compiled = steps.use_compiled(lattice.count, horizon)  # numba kernel, or the numpy steps
        # the memory of every kind (the tables ask for no other cap)
        self.caps_arr = np.array(sorted(set(caps) | {cap}), dtype=np.float64)
        self.ys = np.arange(1, horizon + 1, dtype=np.float64)
        self._edges()
        self._sums()

    def _edges(self) -> None:
        """Per t: forward and backward bytes of each edge, parameter bytes and option rows of each node."""
        problem = self.problem
        self.src = np.array([e.source for e in problem.edges], dtype=np.int64)
        self.dst = np.array([e.target for e in problem.edges], dtype=np.int64)
        self.fw, self.bw, self.wv, self.rows_of = {}, {}, {}, {}
        for t in self.degrees_t:
            f, b = [], []
            for e in problem.edges:
                ot = problem.nodes[e.target].options_for(t)
                os_ = problem.nodes[e.source].options_for(t)
                f.append(2 * (e.cost + (ot[0].sync_from(e.source) if ot else 0.0)))
                b.append(2 * (e.cost + (os_[0].sync_to(e.target) if os_ else 0.0)))
            self.fw[t], self.bw[t] = np.array(f), np.array(b)
            self.wv[t] = np.array(
                [node.options_for(t)[0].parameters if node.options_for(t) else 0.0 for node in problem.nodes]
            )
            self.rows_of[t] = [
                np.array([[o.time, o.memory_a, o.memory_b] for o in node.options_for(t)]).reshape(-1, 3)
                for node in problem.nodes
            ]

    def _per_ideal(self, value) -> dict:
        """Per t: the sum over each ideal's nodes of ``value(options of the node at t)``."""
        bits = self.member_bits.astype(np.float64)
        nodes = self.problem.nodes
        return {t: bits @ np.array([value(node.options_for(t)) for node in nodes]) for t in self.degrees_t}

    def _sums(self) -> None:
        """Heaviest memory of each node and ideal (at y = horizon, and per y), least compute and memory."""
        nodes, horizon, ys = self.problem.nodes, self.horizon, self.ys
        # heaviest memory of each node at y = horizon, and of each ideal (nodes not in the ideal may join)
        self.heavy = {
            t: np.array(
                [
                    max((o.memory_a * horizon + o.memory_b for o in rows), default=0.0)
                    for rows in (node.options_for(t) for node in nodes)
                ]
            )
            for t in self.degrees_t
        }
        self.heavy_in = {t: self.member_bits @ self.heavy[t] for t in self.degrees_t}
        # per y: heaviest memory of each node (n x H) and of each ideal (L x H)
        self.heavy_y = {t: np.array([_heaviest(node.options_for(t), ys) for node in nodes]) for t in self.degrees_t}
        self.heavy_y = {t: h.reshape(len(nodes), horizon) for t, h in self.heavy_y.items()}
        self.heavy_in_y = {t: self.member_bits.astype(np.float64) @ self.heavy_y[t] for t in self.degrees_t}
        self.heavy_total_y = {t: self.heavy_y[t].sum(axis=0) for t in self.degrees_t}
        # least compute of each ideal at each t (fastest option of every node): P of a stage is at least
        # the difference, so its horizon under ``prune`` only shrinks as the stage grows
        self.fast_in = self._per_ideal(lambda opts: min((o.time for o in opts), default=0.0))
        # least memory slope and constant of each ideal at each t (each node's smallest a and smallest b,
        # maybe from different options): a stage cannot fit past y = (cap - B) / A, which shrinks as it grows
        self.light_a = self._per_ideal(lambda opts: min((o.memory_a for o in opts), default=0.0))
        self.light_b = self._per_ideal(lambda opts: min((o.memory_b for o in opts), default=0.0))

    def boundary(self, inside: np.ndarray) -> tuple[dict, dict]:
        """Per t: boundary bytes and parameter bytes of each stage (a row of ``inside``), uniform case."""
        cross_in = inside[:, self.dst] & ~inside[:, self.src]
        cross_out = inside[:, self.src] & ~inside[:, self.dst]
        e_bytes = {t: cross_in @ self.fw[t] + cross_out @ self.bw[t] for t in self.degrees_t}
        w_bytes = {t: inside @ self.wv[t] for t in self.degrees_t}
        return e_bytes, w_bytes

    def empty_fronts(self, j: int) -> dict[int, dict[int, Any]]:
        """Per t: {j: the front of the empty stage}, the start of every stage above j."""
        if self.per_y:
            empty = (np.zeros((self.horizon, 1)),) * 3 + (np.ones(self.horizon, dtype=np.int64),)
            return {t: {j: empty} for t in self.degrees_t}
        return {t: {j: np.zeros((1, 3))} for t in self.degrees_t}


def _heaviest(options, ys: np.ndarray) -> np.ndarray:
    """The most memory ``a y + b`` of any of ``options`` at each y of ``ys`` (zeros when there is none)."""
    if not options:
        return np.zeros(len(ys))
    a = np.array([o.memory_a for o in options])
    b = np.array([o.memory_b for o in options])
    return (a[:, None] * ys[None, :] + b[:, None]).max(axis=0)


def _grow(ctx: _Context, front_of: dict, t: int, j: int, i: int, i0: int, g: int) -> np.ndarray | None:
    """The rows of stage (j, i) at degree t, grown from stage (j, i0) by the nodes of group g (uniform case).

    Records the front in ``front_of[i]``; None when the stage is skipped (a node has no option at t,
    nothing fits, or the bound rules it out: then so does every larger stage from j).
    """
    pts: Any = front_of.get(i0)
    nodes_g = ctx.lattice.members[g]
    if pts is None or not all(ctx.avail[t][v] for v in nodes_g):
        return None
    prune, cap, horizon, margin = ctx.prune, ctx.cap, ctx.horizon, ctx.margin
    compute = float(ctx.fast_in[t][i] - ctx.fast_in[t][j])  # least compute of the stage at t
    if prune is not None and not prune.may_grow(compute, t, j, i):
        return None  # the rest of the nodes leave too few devices: so for every larger stage from j
    if not ctx.per_y:
        if prune is not None and prune.horizon(compute, t) == 0:
            return None
        rest = float(ctx.heavy[t].sum() - ctx.heavy_in[t][i0])  # heaviest memory still to come
        for v in nodes_g:
            rest -= ctx.heavy[t][v]
            pts = steps.extend_pab(pts, ctx.rows_of[t][v], cap, horizon, margin - rest)
            if len(pts) == 0:
                return None  # nothing fits at y = 1: no larger stage from j fits either
            if ctx.max_rows and len(pts) > ctx.max_rows:
                raise _TooWide
        front_of[i] = pts
        return pts
    top = steps.memory_horizon(
        float(ctx.light_a[t][i] - ctx.light_a[t][j]), float(ctx.light_b[t][i] - ctx.light_b[t][j]), cap, horizon
    )
    if prune is not None:
        top = min(top, prune.horizon(compute, t))
    if top == 0:
        return None  # too slow on every d, or too big at y = 1: so is every larger stage
    pts = tuple(x[:top] for x in pts)
    rest_y = ctx.heavy_total_y[t][:top] - ctx.heavy_in_y[t][i0][:top]  # heaviest to come, per y
    ys = ctx.ys
    for v in nodes_g:
        rest_y = rest_y - ctx.heavy_y[t][v][:top]
        pts = steps.step_per_y(pts, ctx.rows_of[t][v], ys[:top], cap, margin - rest_y, ctx.compiled)
        if pts[0].shape[1] == 0:
            return None  # nothing fits at any y: no larger stage from j fits either
    front_of[i] = pts
    return steps.rows_per_y(pts, ys[: len(pts[0])], ctx.caps_arr, ctx.compiled)
