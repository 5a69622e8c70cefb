"""Stage-time tables: one row per (lower ideal j, upper ideal i, tensor degree t, kind k, data-parallel
degree d), the stage's least time per sample as a step function of y (microbatches in flight).

A row's time at y is ``base + scale * PV[block, q]`` for the q-th step of its block (the least compute
of the options that fit at y, non-decreasing in y). :attr:`StageTables.candidates` lists every value a
row takes (the binary search of :func:`placement.multidim.dp.solve_multidim` runs over them) and
:meth:`StageTables.ycount` gives, for a threshold tau, the largest y at which each row meets it.
"""

from __future__ import annotations

import numpy as np

from . import limits
from . import options as fronts
from .choice import Prune
from .model import MultiProblem
from .stages import stage_fronts


class StageTables:
    """Stage-time tables, one row per (lower ideal j, upper ideal i, t, kind, d), as step functions of y.

    Attributes
    ----------
    j, i, t, k, d, ymax, block : numpy.ndarray
        Per row (grouped by j): the stage, its degrees and kind, the largest y it may see
        (ceil(s_max / d)) and its block of steps.
    base, scale : numpy.ndarray
        Per row: the time at a step of value v is ``base + scale * v``.
    PV, PY, steps : numpy.ndarray
        Per block: step values (increasing, inf padding), the last y of each step, and the step count.
    candidates : numpy.ndarray
        Every time a row takes (at most ``bound`` when a bound is given).
    row_range : list of (int, int)
        The rows of each lower ideal j (a contiguous range).
    """

    j: np.ndarray
    i: np.ndarray
    t: np.ndarray
    k: np.ndarray
    d: np.ndarray
    ymax: np.ndarray
    block: np.ndarray
    base: np.ndarray
    scale: np.ndarray
    PV: np.ndarray
    PY: np.ndarray
    steps: np.ndarray

    def __init__(
        self,
        problem: MultiProblem,
        lattice,
        s_max: int,
        step: int,
        stages: list | None = None,
        bound: float = np.inf,
        prune: Prune | None = None,
    ):
        kinds = problem.kinds
        if stages is None:
            cap = max(k.memory for k in kinds)
            memories = tuple(k.memory for k in kinds)
            stages = stage_fronts(problem, lattice, cap, s_max, min(memories), memories)
        degrees_t = sorted({t for node in problem.nodes for t in node.degrees})
        layout = _layout(problem, s_max, step, degrees_t)
        blocks = _Blocks()
        uniform = [st for st in stages if st[4] is not None]
        if uniform:
            blocks.add_uniform(uniform, problem, layout, degrees_t, s_max)
        blocks.add_general([st for st in stages if st[4] is None], problem, layout)
        self._assemble(blocks, bound, prune)
        self.candidates = self._candidates(bound)
        # rows of each lower ideal j: one contiguous range (rows are built j by j)
        starts = np.searchsorted(self.j, np.arange(lattice.count), side="left")
        ends = np.searchsorted(self.j, np.arange(lattice.count), side="right")
        self.row_range = list(zip(starts.tolist(), ends.tolist()))

    def _assemble(self, blocks: _Blocks, bound: float, prune: Prune | None = None) -> None:
        """The rows (grouped by j; past ``bound`` dropped, and with ``prune`` those using more devices than
        the rest of the nodes leave, :meth:`Prune.room`) and the padded block arrays PV, PY."""
        width = max((b.shape[1] for b in blocks.values), default=1)
        # block steps, padded: value PV[b, q] (increasing, inf padding) holds for y up to PY[b, q]
        self.PV = np.full((blocks.count, width), np.inf)
        self.PY = np.zeros((blocks.count, width), dtype=np.int64)
        at = 0
        for v, y in zip(blocks.values, blocks.reach):
            self.PV[at : at + len(v), : v.shape[1]] = v
            self.PY[at : at + len(y), : y.shape[1]] = y
            at += len(v)
        self.steps = (self.PV < np.inf).sum(axis=1)  # steps of each block (a prefix of its columns)
        # one column at a time (each piece a broadcast view until here): the transient is about two
        # columns, not the rows x 7 matrix and its copies
        order = np.argsort(blocks.column(0), kind="stable")  # rows grouped by lower ideal j
        base = _joined(blocks.bases, np.float64)[order]
        scale = _joined(blocks.scales, np.float64)[order]
        block = blocks.column(6)[order]
        if bound < np.inf and len(order):
            # rows whose fastest value exceeds the upper bound never serve an optimal plan: drop them
            kept = np.flatnonzero(base + scale * self.PV[block, 0] <= bound * (1 + 1e-9))
            order, base, scale, block = order[kept], base[kept], scale[kept], block[kept]
        self.j, self.i, self.t, self.k, self.d, self.ymax = (blocks.column(c)[order] for c in range(6))
        if prune is not None and prune.work is not None and len(order):
            # a row whose d t leaves the other stages too few devices is in no plan meeting the bound
            kept = np.flatnonzero(self.d * self.t <= prune.room(self.j, self.i))
            base, scale, block = base[kept], scale[kept], block[kept]
            self.j, self.i, self.t, self.k, self.d, self.ymax = (
                c[kept] for c in (self.j, self.i, self.t, self.k, self.d, self.ymax)
            )
        self.base, self.scale, self.block = base, scale, block
        blocks.columns = [[] for _ in range(7)]
        blocks.bases, blocks.scales = [], []

    def _candidates(self, bound: float) -> np.ndarray:
        """Candidate stage times: one per (row, step starting at or below the row's ymax), column by column
        so that nothing of size rows x widest block is allocated."""
        found = []
        live = np.arange(len(self.j))
        for q in range(self.PV.shape[1]):
            live = live[self.steps[self.block[live]] > q]
            if len(live) == 0:
                break
            start = self.PY[self.block[live], q - 1] + 1 if q else np.ones(len(live), dtype=np.int64)
            live = live[start <= self.ymax[live]]
            vals = self.base[live] + self.scale[live] * self.PV[self.block[live], q]
            found.append(vals[vals <= bound * (1 + 1e-9)] if bound < np.inf else vals)
        return np.concatenate(found) if found else np.zeros(0)

    def ycount(self, tau: float) -> np.ndarray:
        """Per row: the largest y with T <= tau (0 when none); rows are non-decreasing in y."""
        count = np.zeros(len(self.j), dtype=np.int64)
        # T(row, y) = base + scale * PV[block, q] for y in the q-th step; values increase with q
        # (same arithmetic as the candidates, so a candidate tau counts its own step)
        live = np.arange(len(self.j))
        q = 0
        while len(live):
            live = live[self.steps[self.block[live]] > q]
            if len(live) == 0:
                break
            live = live[self.base[live] + self.scale[live] * self.PV[self.block[live], q] <= tau]
            count[live] += 1
            q += 1
        reach = self.PY[self.block, np.maximum(count - 1, 0)]
        return np.where(count > 0, np.minimum(reach, self.ymax), 0)


def _layout(problem: MultiProblem, s_max: int, step: int, degrees_t: list) -> dict:
    """Per (t, kind index): the usable d (divisors of N up to s_max, d t within the kind's count, multiples
    of ``step`` devices on every kind but the last) and each d's largest y, ceil(s_max / d)."""
    kinds = problem.kinds
    divs = limits.usable_degrees(problem.microbatches, s_max)
    last = len(kinds) - 1
    ds = {
        (t, k): np.array(
            [d for d in divs if d * t <= kinds[k].count and (k == last or (d * t) % step == 0)], dtype=np.int64
        )
        for t in degrees_t
        for k in range(len(kinds))
    }
    return {key: (dk, -(-s_max // dk)) for key, dk in ds.items()}


class _Blocks:
    """Blocks of steps and the table rows pointing at them, collected before :meth:`StageTables._assemble`."""

    def __init__(self) -> None:
        self.values: list[np.ndarray] = []  # step values of each block (one array of blocks per add)
        self.reach: list[np.ndarray] = []  # last y of each step
        # per column (j, i, t, k, d, ymax, block): the rows of each add, as (maybe broadcast) int64 arrays
        self.columns: list[list[np.ndarray]] = [[] for _ in range(7)]
        self.bases: list[np.ndarray] = []
        self.scales: list[np.ndarray] = []
        self.count = 0

    def add_rows(self, shape: tuple, *values) -> None:
        """Rows (j, i, t, k, d, ymax, block), each value broadcast to ``shape`` (kept as a view)."""
        for column, value in zip(self.columns, values):
            column.append(np.broadcast_to(np.asarray(value, dtype=np.int64), shape))

    def column(self, c: int) -> np.ndarray:
        """Column c of every row, in the order of the adds (rows of one add in C order)."""
        return _joined(self.columns[c], np.int64)

    def add_uniform(self, uniform: list, problem: MultiProblem, layout: dict, degrees_t: list, s_max: int) -> None:
        """All uniform stages at once.

        Front f of stage q fits for y <= yfit[q, f]; by increasing P (fronts are sorted by P) a point
        matters when it reaches further than every cheaper point, so pmin(y) is a step function
        (invariant: step values and reaches increase).
        """
        N = problem.microbatches
        width = max(len(st[3]) for st in uniform)
        count = len(uniform)
        P_ = np.full((count, width), np.inf)
        A_ = np.zeros((count, width))
        B_ = np.full((count, width), np.inf)
        q: int | np.ndarray  # a stage index here, an array of them per kind below
        for q, st in enumerate(uniform):
            f = st[3]
            P_[q, : len(f)], A_[q, : len(f)], B_[q, : len(f)] = f[:, 0], f[:, 1], f[:, 2]
        J_ = np.array([st[0] for st in uniform], dtype=np.int64)
        I_ = np.array([st[1] for st in uniform], dtype=np.int64)
        T_ = np.array([st[2] for st in uniform], dtype=np.int64)
        E_ = np.array([st[4] for st in uniform])
        W_ = np.array([st[5] for st in uniform])
        for k, kind in enumerate(problem.kinds):
            live, pv, py = _steps_by_chunk(P_, A_, B_, kind.memory, s_max)
            if len(live) == 0:
                continue
            block_of = self.count + np.arange(len(live))
            self.values.append(pv)
            self.reach.append(py)
            self.count += len(live)
            for t in degrees_t:
                dk, ymax = layout[(t, k)]
                sel = np.flatnonzero(T_[live] == t)
                if len(dk) == 0 or len(sel) == 0:
                    continue
                q = live[sel]
                shape = (len(sel), len(dk))
                self.add_rows(shape, J_[q, None], I_[q, None], t, k, dk[None, :], ymax[None, :], block_of[sel, None])
                d = dk.astype(np.float64)[None, :]
                self.bases.append(((E_[q, None] / d + 4 * (d - 1) * W_[q, None] / d / N) / kind.bytes_per_ms).ravel())
                self.scales.append(np.broadcast_to(1.0 / (kind.speed * d), shape))

    def add_general(self, general: list, problem: MultiProblem, layout: dict) -> None:
        """Stages with five-column fronts: one block per (stage, kind, d), from the exact time tables."""
        for j, i, t, by_p, _, _ in general:
            for k, kind in enumerate(problem.kinds):
                dk, ymax = layout[(t, k)]
                if len(dk) == 0:
                    continue
                tables = fronts.best_time_table(
                    by_p, dk, ymax, kind.memory, kind.bytes_per_ms, kind.speed, problem.microbatches
                )
                for d, ym, tab in zip(dk, ymax, tables):
                    if not np.isfinite(tab[0]):
                        continue
                    finite = tab[np.isfinite(tab)]
                    ends = np.flatnonzero(np.diff(finite) != 0)
                    ends = np.concatenate((ends, [len(finite) - 1]))
                    self.values.append(finite[ends][None, :])
                    self.reach.append((ends + 1)[None, :])
                    self.add_rows((1,), j, i, t, k, int(d), int(ym), self.count)
                    self.count += 1
                    self.bases.append(np.zeros(1))
                    self.scales.append(np.ones(1))


def _joined(pieces: list, dtype) -> np.ndarray:
    """The pieces (arrays of any shape, C order) as one flat array; empty when there are none."""
    if not pieces:
        return np.zeros(0, dtype=dtype)
    return np.concatenate([np.ravel(p) for p in pieces]).astype(dtype, copy=False)


#: Stages per chunk of :func:`_steps_by_chunk`: its temporaries (about ten arrays of chunk x front width)
#: stay small while the result is the same as in one piece.
STEP_CHUNK = 2048


def _steps_by_chunk(P_, A_, B_, memory: float, s_max: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`_steps` over chunks of :data:`STEP_CHUNK` stages (rows are independent), concatenated."""
    if len(P_) <= STEP_CHUNK:
        return _steps(P_, A_, B_, memory, s_max)
    lives, pvs, pys = [], [], []
    for start in range(0, len(P_), STEP_CHUNK):
        part = slice(start, start + STEP_CHUNK)
        live, pv, py = _steps(P_[part], A_[part], B_[part], memory, s_max)
        if len(live):
            lives.append(live + start)
            pvs.append(pv)
            pys.append(py)
    if not lives:
        return np.zeros(0, dtype=np.int64), np.zeros((0, 0)), np.zeros((0, 0), dtype=np.int64)
    return np.concatenate(lives), np.concatenate(pvs), np.concatenate(pys)


def _steps(P_, A_, B_, memory: float, s_max: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For one memory cap: the stages with a step (``live``), their step values and last y, padded."""
    count = P_.shape[0]
    with np.errstate(divide="ignore", invalid="ignore"):
        room = np.where(
            A_ > 0,
            np.floor((memory - B_) / np.where(A_ > 0, A_, 1.0)),
            np.where(B_ <= memory, s_max, -1),
        )
    yfit = np.clip(room, -1, s_max).astype(np.int64)
    # exact fit test at the boundary (the floor of a float quotient may be off by one)
    yfit -= (A_ * yfit + B_ > memory) & (yfit > 0)
    yfit += (A_ * (yfit + 1) + B_ <= memory) & (yfit < s_max) & (yfit >= 0)
    reach = np.maximum.accumulate(yfit, axis=1)
    keep = yfit > np.concatenate((np.zeros((count, 1), dtype=np.int64), reach[:, :-1]), axis=1)
    live = np.flatnonzero(keep.any(axis=1))
    if len(live) == 0:
        return live, np.zeros((0, 0)), np.zeros((0, 0), dtype=np.int64)
    keep = keep[live]
    order = np.argsort(~keep, axis=1, kind="stable")  # kept steps first, in P order
    pv = np.take_along_axis(np.where(keep, P_[live], np.inf), order, axis=1)
    py = np.take_along_axis(np.where(keep, yfit[live], 0), order, axis=1)
    return live, pv, py
