"""The option choice of one stage: exact fronts, the fastest choice at (d, y), and an upper bound.

* :func:`uniform_options` -- whether every node's options share their sync and parameter bytes (Piper's
  workloads), which lets the fronts ignore the stage's boundary (:mod:`.stages`);
* :func:`general_front` -- the exact five-column front of one stage (any options, :mod:`.options`);
* :func:`stage_choice` -- the fastest option choice of a stage at fixed (d, y), read back into plans;
* :class:`Prune` and :func:`upper_bound` -- the one-stage plan that bounds the optimum from above and
  the degrees and horizons it leaves (one device kind).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from . import limits
from . import options as fronts
from .model import MultiProblem


def uniform_options(problem: MultiProblem) -> bool:
    """Whether every node's options at each t share sync bytes and parameter bytes."""
    for node in problem.nodes:
        for _, opts in node.options:
            first = opts[0]
            if any(
                o.sync_fw != first.sync_fw or o.sync_bw != first.sync_bw or o.parameters != first.parameters
                for o in opts[1:]
            ):
                return False
    return True


def general_front(problem: MultiProblem, members: frozenset, t: int, cap: float):
    """Exact front of stage ``members`` at degree t with each option's own boundary bytes (any options)."""
    preds: dict[int, list[tuple[int, float]]] = {v: [] for v in members}
    succs: dict[int, list[tuple[int, float]]] = {v: [] for v in members}
    for e in problem.edges:
        if e.target in members and e.source not in members:
            preds[e.target].append((e.source, e.cost))
        if e.source in members and e.target not in members:
            succs[e.source].append((e.target, e.cost))
    points, choices = fronts.empty_front()
    for v in sorted(members):
        rows = []
        for o in problem.nodes[v].options_for(t):
            e = sum(2 * (c + o.sync_from(u)) for u, c in preds[v]) + sum(2 * (c + o.sync_to(u)) for u, c in succs[v])
            rows.append([o.time, e, o.parameters, o.memory_a, o.memory_b])
        points, choices = fronts.extend_front(points, choices, np.array(rows), cap)
        if len(points) == 0:
            break
    return points, choices


def stage_choice(problem: MultiProblem, nodes, t: int, d: int, y: int, kind) -> tuple[float, tuple] | None:
    """Fastest option choice of stage ``nodes`` on d x t devices of ``kind`` with y microbatches in flight.

    At fixed (d, y) the stage time is a sum over the nodes of a per-option number (its compute, its
    boundary bytes over d and its resync bytes, over the bandwidth) and the memory a sum of
    ``a y + b``: the choice is a 2-D knapsack, solved exactly by a Pareto front over (time, memory),
    node by node. A row that fits even with the heaviest options of the nodes still to come makes every
    slower row useless (they are dropped). Returns (time, option indices in ``sorted(nodes)`` order) or
    None when nothing fits.
    """
    members = sorted(nodes)
    inside = set(members)
    N = problem.microbatches
    costs, mems = [], []
    # the edges crossing the stage's boundary, per node, in edge order (one pass over the edges)
    preds_of: dict[int, list[tuple[int, float]]] = {v: [] for v in members}
    succs_of: dict[int, list[tuple[int, float]]] = {v: [] for v in members}
    for e in problem.edges:
        if e.target in inside and e.source not in inside:
            preds_of[e.target].append((e.source, e.cost))
        if e.source in inside and e.target not in inside:
            succs_of[e.source].append((e.target, e.cost))
    for v in members:
        opts = problem.nodes[v].options_for(t)
        preds, succs = preds_of[v], succs_of[v]
        c, m = [], []
        for o in opts:
            e = sum(2 * (w + o.sync_from(u)) for u, w in preds) + sum(2 * (w + o.sync_to(u)) for u, w in succs)
            c.append((e / d + 4 * (d - 1) * o.parameters / d / N) / kind.bytes_per_ms + o.time / (kind.speed * d))
            m.append(o.memory_a * y + o.memory_b)
        costs.append(np.array(c))
        mems.append(np.array(m))
    heavy = np.array([m.max() for m in mems])
    rest = np.concatenate((np.cumsum(heavy[::-1])[::-1][1:], [0.0]))  # heaviest memory after node k
    margin = kind.memory * (1 - 1e-9)
    cost, mem = np.zeros(1), np.zeros(1)
    back: list[tuple[np.ndarray, np.ndarray]] = []  # per node: (source row, option) of each row
    for k in range(len(members)):
        m_opts = len(costs[k])
        c = (cost[:, None] + costs[k][None, :]).ravel()
        mm = (mem[:, None] + mems[k][None, :]).ravel()
        src = np.repeat(np.arange(len(cost)), m_opts)
        opt = np.tile(np.arange(m_opts), len(cost))
        ok = mm <= kind.memory
        c, mm, src, opt = c[ok], mm[ok], src[ok], opt[ok]
        if len(c) == 0:
            return None
        order = np.lexsort((mm, c))
        c, mm, src, opt = c[order], mm[order], src[order], opt[order]
        # invariant: kept rows have increasing time and strictly decreasing memory
        keep = mm < np.concatenate(([np.inf], np.minimum.accumulate(mm)[:-1]))
        c, mm, src, opt = c[keep], mm[keep], src[keep], opt[keep]
        sure = np.flatnonzero(mm + rest[k] <= margin)
        if len(sure):
            c, mm, src, opt = c[: sure[0] + 1], mm[: sure[0] + 1], src[: sure[0] + 1], opt[: sure[0] + 1]
        back.append((src, opt))
        cost, mem = c, mm
    row = int(np.argmin(cost))
    best = float(cost[row])
    picks = []
    for src, opt in reversed(back):
        picks.append(int(opt[row]))
        row = int(src[row])
    return best, tuple(reversed(picks))


@dataclass(frozen=True)
class Prune:
    """An upper bound ``bound`` on the optimal time per sample (one device kind), used to skip work.

    Every stage of an optimal plan takes at most ``bound``, and a stage with compute P on d replicas takes
    at least ``P / (speed d)``; so a stage only needs the degrees d with ``P / (speed d) <= bound``
    (divisors of N, d <= s_max, d t <= devices), and then y = ceil(s / d) <= ceil(s_max / d_min).

    Devices: a stage at degree t with compute P_t uses d t >= t P_t / (speed bound) devices, so the
    nodes of a stage set S need at least W(S) / (speed bound) devices, where W sums each node's least
    ``t * (fastest option time at t)`` over its degrees. ``work`` holds W of every ideal (None: no device
    cut). The other stages of a plan with stage (j, i) hold the rest of the nodes and need at least
    W(rest) / (speed bound) devices of the same kind: :meth:`room` (the devices left for the stage) and
    :meth:`may_grow` (a test that only fails more as the stage grows, so growth from j may stop).
    """

    bound: float
    s_max: int
    devices: int
    speed: float
    degrees: tuple  # usable d (divisors of N up to s_max), increasing
    work: np.ndarray | None = field(default=None, compare=False)  # W of every ideal (see above)

    def horizon(self, compute: float, t: int) -> int:
        """Largest y a stage with at least ``compute`` can have at degree t (0: no usable d)."""
        slack = self.bound * (1 + 1e-9)  # rounding never prunes a stage that meets the bound
        for d in self.degrees:
            if d * t > self.devices:
                return 0
            if compute / (self.speed * d) <= slack:
                return -(-self.s_max // d)
        return 0

    def may_grow(self, compute: float, t: int, j: int, i: int) -> bool:
        """False when stage (j, i) at degree t, with least compute ``compute``, and every larger stage from j
        at t cannot be in a plan meeting the bound: t P_t / (speed bound) + W(rest) / (speed bound) > devices.

        Invariant: ``t * compute - W(stage)`` never falls as the stage grows (each node adds
        ``t * fastest(t) - w >= 0``), and the left side is ``W(all) + t * compute - W(stage)``.
        """
        if self.work is None:
            return True
        work = self.work
        need = t * compute + float(work[-1] - work[i] + work[j])
        budget = self.devices * self.speed * self.bound
        return need <= budget * (1 + 1e-9)  # the slack covers the sums' rounding

    def room(self, j: np.ndarray, i: np.ndarray) -> np.ndarray:
        """Per stage (j, i): the most devices it may use, the kind's count less the fewest the rest need.

        The rest need at least ceil(W(rest) / (speed bound)) devices (integers); the bound's slack and the
        1e-6 make rounding lower the count, never raise it.
        """
        if self.work is None:
            return np.full(len(j), self.devices, dtype=np.int64)
        work = self.work
        rest = (work[-1] - work[i] + work[j]) / (self.speed * self.bound * (1 + 1e-9))
        need = np.maximum(np.ceil(rest - 1e-6), 0).astype(np.int64)
        return self.devices - need


def ideal_work(problem: MultiProblem, masks: list) -> np.ndarray:
    """W of every ideal (bitmasks over node ids): the sum over its nodes of ``min over t of t * fastest(t)``
    (see :class:`Prune`); the last ideal is the full one."""
    per_node = np.array(
        [
            min((t * min(o.time for o in opts) for t, opts in node.options if opts), default=0.0)
            for node in problem.nodes
        ],
        dtype=np.float64,
    )
    n = len(per_node)
    out = np.zeros(len(masks))
    for start in range(0, n, 60):  # 60 nodes per int64 word
        width = min(60, n - start)
        word = np.array([(m >> start) & ((1 << width) - 1) for m in masks], dtype=np.int64)
        bits = (word[:, None] >> np.arange(width)) & 1
        out += bits @ per_node[start : start + width]
    return out


def upper_bound(problem: MultiProblem, s_max: int) -> float:
    """Time per sample of the best one-stage plan (every node, one d and t, y = 1); inf when none fits.

    Each is a plan (s = d, so y = 1), hence an upper bound on the optimum. One device kind.
    """
    kind = problem.kinds[0]
    nodes = tuple(range(len(problem.nodes)))
    degrees_t = sorted(set.intersection(*(set(node.degrees) for node in problem.nodes)))
    usable = np.array(limits.usable_degrees(problem.microbatches, s_max), dtype=np.float64)
    # (a lower bound on the one-stage time, t, d), for every (t, d) with d t <= devices
    pairs: list[tuple[float, int, int]] = []
    for t in degrees_t:
        floors = _one_stage_floor(problem, t, usable, kind)
        pairs.extend((float(floors[k]), t, int(d)) for k, d in enumerate(usable) if d * t <= kind.count)
    best = np.inf
    # by increasing floor: once a floor exceeds the best time found, no later pair can beat it (the floor
    # is a sum of per-node minima; the slack covers the different summation order of stage_choice)
    for low, t, d in sorted(pairs):
        if low * (1 - 1e-9) > best:
            break
        found = stage_choice(problem, nodes, t, d, 1, kind)
        if found is not None:
            best = min(best, found[0])
    return float(best)


def _one_stage_floor(problem: MultiProblem, t: int, usable: np.ndarray, kind) -> np.ndarray:
    """Per d of ``usable``: the sum over all nodes of their fastest option's time in a one-stage plan on d x t
    devices (no boundary edges: :func:`stage_choice`'s costs with every node inside), ignoring memory."""
    N = problem.microbatches
    low = np.zeros(len(usable))
    for node in problem.nodes:
        opts = node.options_for(t)
        params = np.array([o.parameters for o in opts])[:, None]
        times = np.array([o.time for o in opts])[:, None]
        cost = (4 * (usable - 1) * params / usable / N) / kind.bytes_per_ms + times / (kind.speed * usable)
        low += cost.min(axis=0)
    return low
