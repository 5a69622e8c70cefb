"""Exact multidimensional planner: DP over ideals x sum of data-parallel degrees x devices used.

Stages are built from the last to the first. For a threshold tau, the *decision* DP computes

    h_j[s, c] = fewest devices of the last kind for a plan of the nodes outside ideal j whose stages
                all take at most tau per sample, with sum of d equal to s and c devices used of each
                other kind (c is a vector; empty with one kind),

by ``h_j[s + d, c + dt e_K] = min h_i[s, c] (+ d t if K is the last kind)`` over ideals i above j, tensor
degrees t, kinds K and data-parallel degrees d with ``T(I_i \\ I_j, t, K, d, y) <= tau`` where
``y = ceil((s + d) / d)``. T, the fastest option choice under the memory cap, comes from exact Pareto
fronts (:mod:`.options`) and is non-decreasing in y, so the test is ``s + d <= d * ymax(tau)``.
The lattice is over groups: nodes, with free nodes merged into a neighbour (:func:`plan_groups`).

The optimum is one of the finitely many values T takes: a binary search over them, each probe one
decision DP, finds the smallest tau that is feasible. That tau is the optimal time per sample and the
plan is read back from the tables of the last feasible probe -- a proof of optimality in the model
(every smaller candidate was shown infeasible).

Bound: with several kinds and ``count_step`` q > 1, stages on kinds other than the last may only use
multiples of q devices (the state counts them in steps of q); the result is then optimal within that
space and says so. With q = 1 (or one kind) nothing is bounded.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, cast

import networkx as nx
import numpy as np

from ..errors import InvalidDevicesError, TooManyIdealsError
from ..exact.ideals import Groups, IdealLattice, enumerate_ideals
from ..model import Status
from . import kernel, limits
from . import options as fronts
from .model import MultiProblem, Plan, PlanStage


@dataclass(frozen=True)
class MultiResult:
    """Outcome of :func:`solve_multidim`.

    Attributes
    ----------
    status : str
        ``"optimal"`` (proven, within ``bound`` when it is not empty) or ``"infeasible"``.
    plan : Plan or None
    time_per_sample : float
        The optimum (inf when infeasible), as the solver computes it (the evaluator agrees).
    bound : str
        Empty, or the restriction the optimum holds within (device-count steps).
    ideals, probes, candidates : int
        Lattice size, decision DPs run, distinct stage times searched.
    seconds : float
    """

    status: str
    plan: Plan | None
    time_per_sample: float
    bound: str
    ideals: int
    probes: int
    candidates: int
    seconds: float


#: Default cap on the lattice size (after the free-node merge). The planner's work and memory follow
#: the number of stages (pairs of nested ideals), which :data:`DEFAULT_MAX_STAGES` caps.
DEFAULT_MAX_IDEALS = 20_000

#: Default cap on the number of stages (pairs j < i of nested ideals), and on stages x tensor degrees:
#: each gets option fronts and table rows (28,729 on resnet.json take a few CPU seconds). The other
#: tables are capped by :mod:`.limits` before they are allocated.
DEFAULT_MAX_STAGES = 100_000


def count_stages(lattice, limit: int) -> int:
    """Number of pairs (j, i) of ideals with I_j a proper subset of I_i, counted up to just past ``limit``.

    Vectorised over the ideals as 64-bit words of their node masks (one pass per lower ideal).
    """
    width = max(1, (max((m.bit_length() for m in lattice.masks), default=0) + 63) // 64)
    words = np.array(
        [[(m >> (64 * w)) & 0xFFFFFFFFFFFFFFFF for w in range(width)] for m in lattice.masks], dtype=np.uint64
    ).reshape(-1, width)
    total = 0
    for j in range(lattice.count):
        total += int(np.all((words & words[j]) == words[j], axis=1).sum()) - 1
        if total > limit:
            break
    return total


def divisors(n: int) -> list[int]:
    """Divisors of n in increasing order."""
    small = [d for d in range(1, int(n**0.5) + 1) if n % d == 0]
    return sorted(set(small + [n // d for d in small]))


@dataclass(frozen=True)
class NodeLattice(IdealLattice):
    """The ideals of the planner, as bitmasks over **node ids** (bit v set = node v in the ideal).

    ``up_group[e]`` is a group index; ``members[g]`` lists the nodes of group g (a node, or a node
    with the free nodes merged into it, see :func:`plan_groups`).
    """

    members: tuple = ()


def _free_edge(problem: MultiProblem, source: int, target: int, cost: float) -> bool:
    """Whether an edge adds no bytes wherever its ends are: zero cost and zero sync bytes in every option."""
    if cost != 0:
        return False
    if any(o.sync_to(target) for _, opts in problem.nodes[source].options for o in opts):
        return False
    return not any(o.sync_from(source) for _, opts in problem.nodes[target].options for o in opts)


def free_nodes(problem: MultiProblem) -> set[int]:
    """Nodes that cost nothing wherever they are placed.

    A node is *free* when every option at every degree has zero time, parameters and memory, it has
    options at every tensor degree of the problem, and every edge touching it is free (zero cost, zero
    sync bytes). Moving a free node to another stage changes no stage's time, memory or bytes.
    """
    degrees = {t for node in problem.nodes for t in node.degrees}
    out = set()
    for node in problem.nodes:
        if set(node.degrees) != degrees:
            continue
        if any(o.time or o.parameters or o.memory_a or o.memory_b for _, opts in node.options for o in opts):
            continue
        out.add(node.id)
    for e in problem.edges:
        if not _free_edge(problem, e.source, e.target, e.cost):
            out.discard(e.source)
            out.discard(e.target)
    return out


def plan_groups(problem: MultiProblem) -> Groups:
    """Groups of the planner's lattice: single nodes, with each free node merged into a neighbour.

    A free node v (:func:`free_nodes`) is merged into a successor group that every other successor
    group of v is reachable from, else into a predecessor group that reaches every other predecessor
    group, else (no neighbour) into group 0. Exact: in any plan, moving v into that group's stage keeps
    every prefix an ideal (the group lies between all of v's predecessors and successors) and changes
    no cost; a stage left empty is dropped, which lowers the sums of d (so every y) and the devices.
    Merging never creates a cycle (v already precedes, or follows, the group it joins). Groups are
    numbered in a topological order (the numbering :mod:`placement.exact.ideals` expects).
    """
    n = len(problem.nodes)
    order = nx.DiGraph()
    order.add_nodes_from(range(n))
    order.add_edges_from((e.source, e.target) for e in problem.edges)
    members: dict[int, list[int]] = {v: [v] for v in range(n)}
    # the merge walks descendants per free node: past MAX_MERGE_WORK it is skipped (still exact)
    cheap = n * max(1, len(problem.edges)) <= limits.MAX_MERGE_WORK
    pending = sorted(free_nodes(problem)) if n > 1 and cheap else []
    changed = True
    while changed:  # a merge can make a neighbour's successors comparable: repeat until nothing moves
        changed = False
        for v in list(pending):
            succs, preds = list(order.successors(v)), list(order.predecessors(v))
            into = None
            for s in succs:
                below = nx.descendants(order, s)
                if all(x == s or x in below for x in succs):
                    into = s
                    break
            if into is None:
                for p in preds:
                    above = nx.ancestors(order, p)
                    if all(x == p or x in above for x in preds):
                        into = p
                        break
            if into is None and not succs and not preds:
                into = next((g for g in sorted(members) if g != v), None)  # None: v is all that is left
            if into is None:
                continue
            for p in preds:
                if p != into:
                    order.add_edge(p, into)
            for s in succs:
                if s != into:
                    order.add_edge(into, s)
            order.remove_node(v)
            members[into].extend(members.pop(v))
            pending.remove(v)
            changed = True
    rank = {g: k for k, g in enumerate(nx.lexicographical_topological_sort(order, key=lambda g: min(members[g])))}
    groups = [tuple(sorted(members[g])) for g in sorted(rank, key=rank.__getitem__)]
    group_of = {v: rank[g] for g, nodes in members.items() for v in nodes}
    edges = tuple(sorted((rank[a], rank[b]) for a, b in order.edges))
    return Groups(tuple(groups), group_of, edges)


def _lattice(problem: MultiProblem, max_ideals: int) -> NodeLattice:
    groups = plan_groups(problem)
    lattice = enumerate_ideals(groups, max_ideals)
    bits = [sum(1 << v for v in nodes) for nodes in groups.members]
    masks = []
    for mask in lattice.masks:
        out = 0
        while mask:
            low = mask & -mask
            out |= bits[low.bit_length() - 1]
            mask ^= low
        masks.append(out)
    return NodeLattice(
        masks, lattice.sizes, lattice.up_start, lattice.up_group, lattice.up_target, tuple(groups.members)
    )


def _uniform(problem: MultiProblem) -> bool:
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
    for v in members:
        opts = problem.nodes[v].options_for(t)
        preds = [(e.source, e.cost) for e in problem.edges if e.target == v and e.source not in inside]
        succs = [(e.target, e.cost) for e in problem.edges if e.source == v and e.target not in inside]
        c, m = [], []
        for o in opts:
            e = sum(2 * (w + o.sync_from(u)) for u, w in preds) + sum(2 * (w + o.sync_to(u)) for u, w in succs)
            c.append((e / d + 4 * (d - 1) * o.parameters / d / N) / kind.bandwidth + o.time / (kind.speed * d))
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
    """

    bound: float
    s_max: int
    devices: int
    speed: float
    degrees: tuple  # usable d (divisors of N up to s_max), increasing

    def horizon(self, compute: float, t: int) -> int:
        """Largest y a stage with at least ``compute`` can have at degree t (0: no usable d)."""
        slack = self.bound * (1 + 1e-9)  # rounding never prunes a stage that meets the bound
        for d in self.degrees:
            if d * t > self.devices:
                return 0
            if compute / (self.speed * d) <= slack:
                return -(-self.s_max // d)
        return 0


def upper_bound(problem: MultiProblem, s_max: int) -> float:
    """Time per sample of the best one-stage plan (every node, one d and t, y = 1); inf when none fits.

    Each is a plan (s = d, so y = 1), hence an upper bound on the optimum. One device kind.
    """
    kind = problem.kinds[0]
    nodes = tuple(range(len(problem.nodes)))
    best = np.inf
    degrees_t = sorted(set.intersection(*(set(node.degrees) for node in problem.nodes)))
    for t in degrees_t:
        for d in limits.usable_degrees(problem.microbatches, s_max):
            if d * t > kind.count:
                break
            found = stage_choice(problem, nodes, t, d, 1, kind)
            if found is not None:
                best = min(best, found[0])
    return float(best)


def _extend_pab(points: np.ndarray, options: np.ndarray, cap: float, horizon: int, safe: float = -1.0) -> np.ndarray:
    """Uniform-case front step over columns (P, A, B): all sums, drop what cannot fit, drop dominated rows.

    Only y in 1..``horizon`` is ever asked, and memory A y + B is linear in y, so row q dominates row p
    when P_q <= P_p and q's memory is no larger at y = 1 and at y = horizon.

    ``safe``: a row with memory at most ``safe`` at y = horizon fits at every y <= horizon with any
    completion of the stage (the caller subtracts the most memory the nodes not yet added could take,
    at the smallest cap). The first such row by P then dominates every row with a larger or equal P in
    every stage that extends this one, so those rows are dropped.
    """
    comb = (points[:, None, :] + options[None, :, :]).reshape(-1, 3)
    comb = comb[comb[:, 1] + comb[:, 2] <= cap]
    if len(comb) <= 1:
        return comb
    comb = comb[np.lexsort((comb[:, 2], comb[:, 1], comb[:, 0]))]
    high = comb[:, 1] * horizon + comb[:, 2]
    sure = np.flatnonzero(high <= safe)
    if len(sure):
        # invariant: rows are sorted by P, so the rows before the first sure row have a smaller or equal P
        comb, high = comb[: sure[0] + 1], high[: sure[0] + 1]
        if len(comb) == 1:
            return comb
    low = comb[:, 1] + comb[:, 2]
    le = (comb[:, None, 0] <= comb[None, :, 0]) & (low[:, None] <= low[None, :]) & (high[:, None] <= high[None, :])
    # a row is dominated by an earlier (lexicographically smaller or equal) row
    return comb[~np.triu(le, 1).any(axis=0)]


#: Largest horizon for which :func:`stage_fronts` keeps one (time, memory) front per y (cheap sorts)
#: instead of one front over (P, A, B) (quadratic dominance test, but independent of the horizon).
PER_Y_HORIZON = 64


def _extend_per_y(front: tuple, options: np.ndarray, ys: np.ndarray, cap: float, safe: np.ndarray) -> tuple:
    """Uniform-case front step with one front per y: rows (P, A, B), dominance on (P, A y + B) at that y.

    ``front`` is (P, A, B), each of shape (len(ys), width), padded with P = inf. For a fixed y the
    memory of a stage is the number A y + B, so a row is useless at y when another row has no larger P
    and no larger memory at y: each front is a 2-D Pareto front (sort, running minimum). Row r is kept
    at y only if nothing dominates it at y, so for every y the front holds a row of least P among the
    choices that fit at y, whatever nodes are added later (a dominator stays one when the same options
    are added to both). ``safe[y]``: a row whose memory at y is at most this fits with any completion,
    so the rows after the first such row (larger or equal P) are dropped.
    """
    P, A, B = front
    H = len(ys)
    P = (P[:, :, None] + options[None, None, :, 0]).reshape(H, -1)
    A = (A[:, :, None] + options[None, None, :, 1]).reshape(H, -1)
    B = (B[:, :, None] + options[None, None, :, 2]).reshape(H, -1)
    M = A * ys[:, None] + B
    P = np.where(M <= cap, P, np.inf)  # padding (inf) and rows that cannot fit sort last
    # a stable sort by P (runs of sorted rows, one per option); rows of equal P keep any order, so a
    # dominated one may survive (harmless), but every row dropped below has a dominator before it
    width = P.shape[1]
    flat = np.argsort(P, axis=1, kind="stable") + (np.arange(H) * width)[:, None]
    P, A, B, M = P.ravel()[flat], A.ravel()[flat], B.ravel()[flat], M.ravel()[flat]
    prev = np.concatenate((np.full((H, 1), np.inf), np.minimum.accumulate(M, axis=1)[:, :-1]), axis=1)
    keep = np.isfinite(P) & (M < prev)  # invariant: kept rows have increasing P and decreasing memory
    sure = keep & (M <= safe[:, None])
    first = np.where(sure.any(axis=1), np.argmax(sure, axis=1), width)
    keep &= np.arange(width)[None, :] <= first[:, None]
    counts = keep.sum(axis=1)
    out_w = int(counts.max()) if len(counts) else 0
    rows, cols = np.nonzero(keep)
    at = rows * out_w + (np.cumsum(keep, axis=1) - 1)[rows, cols]  # kept rows first, still by P
    P2, A2, B2 = np.full(H * out_w, np.inf), np.zeros(H * out_w), np.zeros(H * out_w)
    P2[at], A2[at], B2[at] = P[rows, cols], A[rows, cols], B[rows, cols]
    return P2.reshape(H, out_w), A2.reshape(H, out_w), B2.reshape(H, out_w)


def _memory_horizon(slope: float, constant: float, cap: float, horizon: int) -> int:
    """Largest y (<= horizon) at which a stage of least memory ``slope * y + constant`` may fit ``cap``.

    Rounded up (one more y than the float quotient says, never fewer): a larger horizon only costs work.
    0 when even y = 1 cannot fit.
    """
    room = cap * (1 + 1e-9) - constant
    if room < slope:
        return 0
    if slope <= 0:
        return horizon
    return int(min(horizon, room // slope + 1))


#: Use the compiled per-y front steps of :mod:`.kernel` (False: the numpy reference versions above).
COMPILED = True


def _step_per_y(front: tuple, options: np.ndarray, ys: np.ndarray, cap: float, safe: np.ndarray) -> tuple:
    """One node added to a per-y front (P, A, B, rows used per y): compiled, or the numpy reference."""
    P, A, B, count = front
    if COMPILED:
        return kernel.extend_per_y(P, A, B, count, options, ys, float(cap), safe)
    P2, A2, B2 = _extend_per_y((P, A, B), options, ys, cap, safe)
    return P2, A2, B2, np.isfinite(P2).sum(axis=1)


def _rows_per_y(front: tuple, ys: np.ndarray, caps: np.ndarray) -> np.ndarray:
    """Distinct least-P rows fitting each (y, cap), sorted by P (see :func:`_best_rows`)."""
    if not COMPILED:
        return _best_rows(front[:3], ys, list(caps))
    out = kernel.best_rows(*front, ys, caps)  # type: ignore[call-arg]
    if len(caps) == 1:
        return out  # one block: by P already, copies dropped
    out = out[np.lexsort((out[:, 2], out[:, 1], out[:, 0]))]
    fresh = np.concatenate(([True], np.any(out[1:] != out[:-1], axis=1)))
    return out[fresh]


def _best_rows(front: tuple, ys: np.ndarray, caps: list) -> np.ndarray:
    """For every y and every cap, the least-P row of the per-y front that fits; rows (P, A, B) by P.

    Every returned row is a real choice, so the least P of a returned row fitting at (y, cap) is the
    least P of any choice fitting there: the stage-time tables need nothing else.
    """
    P, A, B = front
    M = A * ys[:, None] + B
    picks = []
    for c in caps:
        fits = np.isfinite(P) & (M <= c)
        has = fits.any(axis=1)
        col = np.argmax(fits, axis=1)  # rows are by increasing P: the first fitting row is the best
        rows = np.flatnonzero(has)
        picks.append(np.stack((P[rows, col[rows]], A[rows, col[rows]], B[rows, col[rows]]), axis=1))
    out = np.concatenate(picks)
    out = out[np.lexsort((out[:, 2], out[:, 1], out[:, 0]))]
    # the same row is the best at many y: keep one copy (the tables' width follows the distinct rows)
    fresh = np.concatenate(([True], np.any(out[1:] != out[:-1], axis=1)))
    return out[fresh]


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
    every row with a larger or equal P useless (see :func:`_extend_pab`), so the fronts only keep, for
    every y <= horizon and every extension, an optimal row -- not the whole Pareto front.

    With ``horizon <= PER_Y_HORIZON`` the uniform fronts are kept per y (:func:`_extend_per_y`) and a
    stage's returned rows are, for each y and each cap in ``caps`` (the memory of every kind; ``cap``
    is always included), the least-P row that fits (:func:`_best_rows`): exact for those caps only.

    ``prune`` (:class:`Prune`, one kind): a stage whose compute alone exceeds the upper bound on every
    usable d is skipped, and a stage's fronts only go up to its own horizon (see :meth:`Prune.horizon`).
    """
    n = len(problem.nodes)
    degrees_t = sorted({t for node in problem.nodes for t in node.degrees})
    avail = {t: np.array([bool(node.options_for(t)) for node in problem.nodes]) for t in degrees_t}
    uniform = _uniform(problem)
    src = np.array([e.source for e in problem.edges], dtype=np.int64)
    dst = np.array([e.target for e in problem.edges], dtype=np.int64)
    fw, bw, wv, rows_of = {}, {}, {}, {}
    for t in degrees_t:
        f, b = [], []
        for e in problem.edges:
            ot = problem.nodes[e.target].options_for(t)
            os_ = problem.nodes[e.source].options_for(t)
            f.append(2 * (e.cost + (ot[0].sync_from(e.source) if ot else 0.0)))
            b.append(2 * (e.cost + (os_[0].sync_to(e.target) if os_ else 0.0)))
        fw[t], bw[t] = np.array(f), np.array(b)
        wv[t] = np.array([node.options_for(t)[0].parameters if node.options_for(t) else 0.0 for node in problem.nodes])
        rows_of[t] = [
            np.array([[o.time, o.memory_a, o.memory_b] for o in node.options_for(t)]).reshape(-1, 3)
            for node in problem.nodes
        ]
    member_bits = np.array([[(m >> v) & 1 for v in range(n)] for m in lattice.masks], dtype=bool).reshape(-1, n)
    margin = (cap if safe_cap is None else safe_cap) * (1 - 1e-9)  # rounding never makes a row look safe
    # heaviest memory of each node at y = horizon, and of each ideal (nodes not in the ideal may join)
    heavy = {
        t: np.array(
            [
                max((o.memory_a * horizon + o.memory_b for o in rows), default=0.0)
                for rows in (node.options_for(t) for node in problem.nodes)
            ]
        )
        for t in degrees_t
    }
    heavy_in = {t: member_bits @ heavy[t] for t in degrees_t}
    # each stage has its own horizon (memory, and the bound's d_min): per-y fronts at any horizon
    # (PER_Y_HORIZON = 0 forces the (P, A, B) fronts, as the tests do)
    per_y = PER_Y_HORIZON > 0
    cap_list = sorted(set(caps) | {cap})  # the memory of every kind (the tables ask for no other cap)
    ys = np.arange(1, horizon + 1, dtype=np.float64)
    # per y: heaviest memory of each node (n x H) and of each ideal (L x H)
    heavy_y = {
        t: np.array(
            [
                [max((o.memory_a * y + o.memory_b for o in node.options_for(t)), default=0.0) for y in ys]
                for node in problem.nodes
            ]
        ).reshape(n, horizon)
        for t in degrees_t
    }
    heavy_in_y = {t: member_bits.astype(np.float64) @ heavy_y[t] for t in degrees_t}
    heavy_total_y = {t: heavy_y[t].sum(axis=0) for t in degrees_t}
    caps_arr = np.array(cap_list, dtype=np.float64)
    up_start, up_group, up_target = lattice.up_start, lattice.up_group, lattice.up_target
    out: list[tuple[int, int, int, np.ndarray, float | None, float | None]] = []
    # least compute of each ideal at each t (fastest option of every node): P of a stage is at least
    # the difference, so its horizon under ``prune`` only shrinks as the stage grows
    fast_in = {
        t: member_bits.astype(np.float64)
        @ np.array([min((o.time for o in node.options_for(t)), default=0.0) for node in problem.nodes])
        for t in degrees_t
    }
    # least memory slope and constant of each ideal at each t (each node's smallest a and smallest b,
    # maybe from different options): a stage cannot fit past y = (cap - B) / A, which shrinks as it grows
    light_a = {
        t: member_bits.astype(np.float64)
        @ np.array([min((o.memory_a for o in node.options_for(t)), default=0.0) for node in problem.nodes])
        for t in degrees_t
    }
    light_b = {
        t: member_bits.astype(np.float64)
        @ np.array([min((o.memory_b for o in node.options_for(t)), default=0.0) for node in problem.nodes])
        for t in degrees_t
    }
    for j in range(lattice.count):
        # walk the supersets of j upwards; parent[i] = (i0, g) with i = i0 + g
        order = [j]
        seen = {j}
        parent = {}
        pos = 0
        while pos < len(order):
            i0 = order[pos]
            pos += 1
            for e in range(up_start[i0], up_start[i0 + 1]):
                i = int(up_target[e])
                if i not in seen:
                    seen.add(i)
                    parent[i] = (i0, int(up_group[e]))
                    order.append(i)
        inside = member_bits[order[1:]] & ~member_bits[j]  # stage membership, one row per upper ideal
        if uniform:
            cross_in = inside[:, dst] & ~inside[:, src]
            cross_out = inside[:, src] & ~inside[:, dst]
            e_bytes = {t: cross_in @ fw[t] + cross_out @ bw[t] for t in degrees_t}
            w_bytes = {t: inside @ wv[t] for t in degrees_t}
            front_of: dict[int, dict[int, Any]]  # per t: ideal -> front ((P, A, B) per y, or rows)
            if per_y:
                empty = (np.zeros((horizon, 1)),) * 3 + (np.ones(horizon, dtype=np.int64),)
                front_of = {t: {j: empty} for t in degrees_t}
            else:
                front_of = {t: {j: np.zeros((1, 3))} for t in degrees_t}
        for row, i in enumerate(order[1:]):
            i0, g = parent[i]
            for t in degrees_t:
                if uniform:
                    pts: Any = front_of[t].get(i0)
                    nodes_g = lattice.members[g]
                    if pts is None or not all(avail[t][v] for v in nodes_g):
                        continue
                    if per_y:
                        top = _memory_horizon(
                            float(light_a[t][i] - light_a[t][j]), float(light_b[t][i] - light_b[t][j]), cap, horizon
                        )
                        if prune is not None:
                            top = min(top, prune.horizon(float(fast_in[t][i] - fast_in[t][j]), t))
                        if top == 0:
                            continue  # too slow on every d, or too big at y = 1: so is every larger stage
                        pts = tuple(x[:top] for x in pts)
                        rest_y = heavy_total_y[t][:top] - heavy_in_y[t][i0][:top]  # heaviest to come, per y
                        for v in nodes_g:
                            rest_y = rest_y - heavy_y[t][v][:top]
                            pts = _step_per_y(pts, rows_of[t][v], ys[:top], cap, margin - rest_y)
                            if pts[0].shape[1] == 0:
                                break
                        if pts[0].shape[1] == 0:
                            continue  # nothing fits at any y: no larger stage from j fits either
                        front_of[t][i] = pts
                        rows = _rows_per_y(pts, ys[: len(pts[0])], caps_arr)
                    else:
                        if prune is not None and prune.horizon(float(fast_in[t][i] - fast_in[t][j]), t) == 0:
                            continue
                        rest = float(heavy[t].sum() - heavy_in[t][i0])  # heaviest memory still to come
                        for v in nodes_g:
                            rest -= heavy[t][v]
                            pts = _extend_pab(pts, rows_of[t][v], cap, horizon, margin - rest)
                            if len(pts) == 0:
                                break
                        if len(pts) == 0:
                            continue  # nothing fits at y = 1: no larger stage from j fits either
                        front_of[t][i] = rows = pts
                    # rows sorted by P (lexsort / unique), the P order the tables need
                    out.append((j, i, t, rows, float(e_bytes[t][row]), float(w_bytes[t][row])))
                else:
                    if (inside[row] & ~avail[t]).any():
                        continue
                    pts, _ = general_front(problem, frozenset(np.flatnonzero(inside[row]).tolist()), t, cap)
                    if len(pts):
                        out.append((j, i, t, pts, None, None))
    return out


class _Tables:
    """Stage-time tables, one row per (lower ideal j, upper ideal i, t, kind, d), as step functions of y."""

    def __init__(
        self, problem: MultiProblem, lattice, s_max: int, step: int, stages: list | None = None, bound: float = np.inf
    ):
        N = problem.microbatches
        kinds = problem.kinds
        cap = max(k.memory for k in kinds)
        if stages is None:
            memories = tuple(k.memory for k in kinds)
            stages = stage_fronts(problem, lattice, cap, s_max, min(memories), memories)
        degrees_t = sorted({t for node in problem.nodes for t in node.degrees})
        divs = limits.usable_degrees(N, s_max)
        last = len(kinds) - 1
        ds = {
            (t, k): np.array(
                [d for d in divs if d * t <= kinds[k].count and (k == last or (d * t) % step == 0)], dtype=np.int64
            )
            for t in degrees_t
            for k in range(len(kinds))
        }
        layout = {key: (dk, -(-s_max // dk)) for key, dk in ds.items()}
        uniform = [st for st in stages if st[4] is not None]
        general = [st for st in stages if st[4] is None]
        blocks_v, blocks_y, metas, bases, scales = [], [], [], [], []
        n_blocks = 0
        if uniform:
            # All uniform stages at once. Front f of stage q fits for y <= yfit[q, f]; by increasing P
            # (fronts are sorted by P) a point matters when it reaches further than every cheaper point,
            # so pmin(y) is a step function (invariant: step values and reaches increase).
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
            for k, kind in enumerate(kinds):
                with np.errstate(divide="ignore", invalid="ignore"):
                    room = np.where(
                        A_ > 0,
                        np.floor((kind.memory - B_) / np.where(A_ > 0, A_, 1.0)),
                        np.where(B_ <= kind.memory, s_max, -1),
                    )
                yfit = np.clip(room, -1, s_max).astype(np.int64)
                # exact fit test at the boundary (the floor of a float quotient may be off by one)
                yfit -= (A_ * yfit + B_ > kind.memory) & (yfit > 0)
                yfit += (A_ * (yfit + 1) + B_ <= kind.memory) & (yfit < s_max) & (yfit >= 0)
                reach = np.maximum.accumulate(yfit, axis=1)
                keep = yfit > np.concatenate((np.zeros((count, 1), dtype=np.int64), reach[:, :-1]), axis=1)
                live = np.flatnonzero(keep.any(axis=1))
                if len(live) == 0:
                    continue
                keep = keep[live]
                order = np.argsort(~keep, axis=1, kind="stable")  # kept steps first, in P order
                pv = np.take_along_axis(np.where(keep, P_[live], np.inf), order, axis=1)
                py = np.take_along_axis(np.where(keep, yfit[live], 0), order, axis=1)
                block_of = n_blocks + np.arange(len(live))
                blocks_v.append(pv)
                blocks_y.append(py)
                n_blocks += len(live)
                for t in degrees_t:
                    dk, ymax = layout[(t, k)]
                    sel = np.flatnonzero(T_[live] == t)
                    if len(dk) == 0 or len(sel) == 0:
                        continue
                    q = live[sel]
                    rows = np.empty((len(sel), len(dk), 7), dtype=np.int64)
                    rows[:, :, 0], rows[:, :, 1], rows[:, :, 2], rows[:, :, 3] = J_[q, None], I_[q, None], t, k
                    rows[:, :, 4], rows[:, :, 5], rows[:, :, 6] = dk[None, :], ymax[None, :], block_of[sel, None]
                    metas.append(rows.reshape(-1, 7))
                    d = dk.astype(np.float64)[None, :]
                    bases.append(((E_[q, None] / d + 4 * (d - 1) * W_[q, None] / d / N) / kind.bandwidth).ravel())
                    scales.append(np.broadcast_to(1.0 / (kind.speed * d), (len(sel), len(dk))).ravel())
        for j, i, t, by_p, _, _ in general:
            for k, kind in enumerate(kinds):
                dk, ymax = layout[(t, k)]
                if len(dk) == 0:
                    continue
                tables = fronts.best_time_table(by_p, dk, ymax, kind.memory, kind.bandwidth, kind.speed, N)
                for d, ym, tab in zip(dk, ymax, tables):
                    if not np.isfinite(tab[0]):
                        continue
                    finite = tab[np.isfinite(tab)]
                    ends = np.flatnonzero(np.diff(finite) != 0)
                    ends = np.concatenate((ends, [len(finite) - 1]))
                    blocks_v.append(finite[ends][None, :])
                    blocks_y.append((ends + 1)[None, :])
                    metas.append(np.array([[j, i, t, k, int(d), int(ym), n_blocks]]))
                    n_blocks += 1
                    bases.append(np.zeros(1))
                    scales.append(np.ones(1))
        m = np.concatenate(metas).astype(np.int64) if metas else np.zeros((0, 7), dtype=np.int64)
        base = np.concatenate(bases) if bases else np.zeros(0)
        scale = np.concatenate(scales) if scales else np.zeros(0)
        by_j = np.argsort(m[:, 0], kind="stable")  # rows grouped by lower ideal j
        m, self.base, self.scale = m[by_j], base[by_j], scale[by_j]
        self.j, self.i, self.t, self.k, self.d, self.ymax, self.block = (
            np.ascontiguousarray(m[:, c]) for c in range(7)
        )
        width = max((b.shape[1] for b in blocks_v), default=1)
        # block steps, padded: value PV[b, q] (increasing, inf padding) holds for y up to PY[b, q]
        self.PV = np.full((n_blocks, width), np.inf)
        self.PY = np.zeros((n_blocks, width), dtype=np.int64)
        at = 0
        for v, y in zip(blocks_v, blocks_y):
            self.PV[at : at + len(v), : v.shape[1]] = v
            self.PY[at : at + len(y), : y.shape[1]] = y
            at += len(v)
        self.steps = (self.PV < np.inf).sum(axis=1)  # steps of each block (a prefix of its columns)
        if bound < np.inf and len(self.j):
            # rows whose fastest value exceeds the upper bound never serve an optimal plan: drop them
            slack = bound * (1 + 1e-9)
            kept = np.flatnonzero(self.base + self.scale * self.PV[self.block, 0] <= slack)
            self.base, self.scale = self.base[kept], self.scale[kept]
            self.j, self.i, self.t, self.k, self.d, self.ymax, self.block = (
                x[kept] for x in (self.j, self.i, self.t, self.k, self.d, self.ymax, self.block)
            )
        # candidate stage times: one per (row, step starting at or below the row's ymax), column by
        # column so that nothing of size rows x widest block is allocated
        found = []
        live = np.arange(len(self.j))
        for q in range(width):
            live = live[self.steps[self.block[live]] > q]
            if len(live) == 0:
                break
            start = self.PY[self.block[live], q - 1] + 1 if q else np.ones(len(live), dtype=np.int64)
            live = live[start <= self.ymax[live]]
            vals = self.base[live] + self.scale[live] * self.PV[self.block[live], q]
            found.append(vals[vals <= bound * (1 + 1e-9)] if bound < np.inf else vals)
        self.candidates = np.concatenate(found) if found else np.zeros(0)
        # rows of each lower ideal j: one contiguous range (rows are built j by j)
        starts = np.searchsorted(self.j, np.arange(lattice.count), side="left")
        ends = np.searchsorted(self.j, np.arange(lattice.count), side="right")
        self.row_range = list(zip(starts.tolist(), ends.tolist()))

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


def _decide(tables: _Tables, lattice, problem: MultiProblem, s_max: int, step: int, tau: float):
    """Decision DP at ``tau``: (feasible, h tables per ideal, ycount per row)."""
    kinds = problem.kinds
    last = len(kinds) - 1
    cdims = tuple(kinds[k].count // step + 1 for k in range(last))
    ycount = tables.ycount(tau)
    active = np.flatnonzero(ycount > 0)
    cap_last = kinds[last].count
    h: list[np.ndarray | None] = [None] * lattice.count
    full = lattice.full
    h_full = np.full((s_max + 1,) + cdims, np.inf)
    h_full[(0,) + (0,) * len(cdims)] = 0.0
    h[full] = h_full
    rows_by_j: dict[int, list[int]] = {}
    for r in active.tolist():
        rows_by_j.setdefault(int(tables.j[r]), []).append(r)
    I, T, K, D = tables.i, tables.t, tables.k, tables.d
    for j in range(full - 1, -1, -1):
        hj = np.full((s_max + 1,) + cdims, np.inf)
        for r in rows_by_j.get(j, ()):
            hi = h[I[r]]
            if hi is None:
                continue
            d, t, k = int(D[r]), int(T[r]), int(K[r])
            top = min(s_max, d * int(ycount[r]))
            if top < d:
                continue
            source = hi[: top - d + 1]
            if k == last:
                target = hj[d : top + 1]
                np.minimum(target, source + d * t, out=target)
            else:
                shift = d * t // step
                size = cdims[k]
                if shift >= size:
                    continue
                cut = [slice(None)] * (1 + len(cdims))
                put = [slice(d, top + 1)] + [slice(None)] * len(cdims)
                cut[1 + k] = slice(0, size - shift)
                put[1 + k] = slice(shift, size)
                target = hj[tuple(put)]
                np.minimum(target, source[tuple(cut)], out=target)
        hj[hj > cap_last] = np.inf
        if np.isfinite(hj).any():
            h[j] = hj
    feasible = h[0] is not None
    return feasible, h, ycount


def _decide_front(tables: _Tables, lattice, problem: MultiProblem, s_max: int, tau: float):
    """Decision DP at ``tau`` for one device kind, on Pareto fronts.

    With one kind, ``h_j[s]`` only matters through its Pareto points (s, devices): a suffix with a smaller
    sum of d and no more devices is never worse for the earlier stages (their y only falls). Each front
    is kept sorted by s with devices strictly decreasing; each point carries (row, source point) to read
    the plan back. Returns (feasible, fronts, ycount).
    """
    cap = problem.kinds[0].count
    ycount = tables.ycount(tau)
    big = np.int64(1) << 40  # padding: never <= top, never a device count
    L = lattice.count
    width = s_max + 1  # a front has distinct sums s in 0..s_max
    FS = np.full((L, width), big, dtype=np.int64)
    FV = np.full((L, width), big, dtype=np.int64)
    BR = np.full((L, width), -1, dtype=np.int64)
    BX = np.full((L, width), -1, dtype=np.int64)
    length = np.zeros(L, dtype=np.int64)
    full = lattice.full
    FS[full, 0] = FV[full, 0] = 0
    length[full] = 1
    used = 1  # widest front so far
    D, DT, I = tables.d, tables.d * tables.t, tables.i
    for j in range(full - 1, -1, -1):
        lo, hi = tables.row_range[j]
        if hi == lo:
            continue
        rows = lo + np.flatnonzero((ycount[lo:hi] > 0) & (length[I[lo:hi]] > 0))
        if len(rows) == 0:
            continue
        src = I[rows]
        d = D[rows]
        top = np.minimum(s_max, d * ycount[rows])
        cs = FS[src, :used] + d[:, None]
        cv = FV[src, :used] + DT[rows][:, None]
        ok = (cs <= top[:, None]) & (cv <= cap)
        if not ok.any():
            continue
        r_idx, x_idx = np.nonzero(ok)
        cs, cv = cs[r_idx, x_idx], cv[r_idx, x_idx]
        order = np.lexsort((cv, cs))
        cs, cv = cs[order], cv[order]
        prev = np.concatenate(([big], np.minimum.accumulate(cv)[:-1]))
        keep = np.flatnonzero(cv < prev)  # invariant: s increasing, devices strictly decreasing
        m = len(keep)
        FS[j, :m], FV[j, :m] = cs[keep], cv[keep]
        BR[j, :m], BX[j, :m] = rows[r_idx[order[keep]]], x_idx[order[keep]]
        length[j] = m
        used = max(used, m)
    if length[0] == 0:
        return False, None, ycount
    return True, (FS, FV, BR, BX, length), ycount


def _read_front_plan(problem, lattice, tables, fronts_) -> Plan:
    kind = problem.kinds[0]
    FS, FV, BR, BX, length = fronts_
    stages = []
    j, x = 0, int(np.argmin(FV[0, : length[0]]))
    while j != lattice.full:
        s = int(FS[j, x])
        r = int(BR[j, x])
        i, d, t = int(tables.i[r]), int(tables.d[r]), int(tables.t[r])
        nodes = tuple(v for v in range(len(problem.nodes)) if (lattice.masks[i] & ~lattice.masks[j]) >> v & 1)
        y = -(-s // d)
        # the DP chose this stage at (d, y), so some choice fits: stage_choice is not None
        _, choice = cast("tuple[float, tuple]", stage_choice(problem, nodes, t, d, y, kind))
        names = tuple(problem.nodes[v].options_for(t)[o].name for v, o in zip(nodes, choice))
        stages.append(PlanStage(nodes, d, t, names, kind.name))
        j, x = i, int(BX[j, x])
    return Plan(tuple(stages))


def solve_multidim(
    problem: MultiProblem,
    count_step: int = 1,
    max_ideals: int = DEFAULT_MAX_IDEALS,
    max_stages: int = DEFAULT_MAX_STAGES,
    front_cache: dict | None = None,
    front_horizon: int | None = None,
) -> MultiResult:
    """Optimal plan (minimum time per sample) of ``problem`` in Piper's model.

    Parameters
    ----------
    problem : MultiProblem
    count_step : int
        With several device kinds: stages on kinds other than the last use multiples of this many
        devices (the bound is reported in ``MultiResult.bound``). 1 = unbounded.
    max_ideals : int
        Cap on the lattice size (:class:`~placement.errors.TooManyIdealsError` beyond).
    max_stages : int
        Cap on the number of stages, pairs of nested ideals (the same one-line error beyond): the
        planner's time and memory follow it.
    front_cache : dict, optional
        Reuse of the option fronts between solves of the same nodes and edges (e.g. a device-count
        sweep): pass the same dict; it is keyed on the largest memory cap and the horizon.
    front_horizon : int, optional
        Build the fronts for y up to this (at least the solve's own largest y, min(N, devices)); a sweep
        passes its largest value so that one set of fronts serves every point.
    """
    start = time.perf_counter()
    if isinstance(count_step, bool) or not isinstance(count_step, int) or count_step < 1:
        raise InvalidDevicesError(f"count_step must be a positive integer (got {count_step!r})")
    s_max = limits.check_sum_degrees(problem)  # every table spans 0..s_max: capped before anything else
    try:
        lattice = _lattice(problem, max_ideals)
    except TooManyIdealsError as exc:
        raise TooManyIdealsError(
            f"multidim planner: {exc} (it builds a table per pair of nested ideals; max_ideals={max_ideals})"
        ) from None
    stages_count = count_stages(lattice, max_stages)
    if stages_count > max_stages:
        raise limits.TooMuchWorkError(
            f"multidim planner: {lattice.count:,} ideals give more than {max_stages:,} stages (pairs of nested "
            f"ideals), each needing option fronts and table rows (max_stages={max_stages:,}); merge nodes "
            f"into layers (fewer parallel branches give fewer ideals) or raise max_stages"
        )
    horizon = max(s_max, min(front_horizon or 0, limits.MAX_SUM_DEGREES))
    limits.check_work(limits.estimate_work(problem, lattice.count, stages_count, count_step, horizon), max_stages)
    bound = ""
    if len(problem.kinds) > 1 and count_step > 1:
        bound = (
            f"optimal among plans whose stages on kinds "
            f"{', '.join(k.name for k in problem.kinds[:-1])} use multiples of {count_step} devices"
        )
    if s_max == 0 or not problem.nodes:
        status = Status.OPTIMAL if not problem.nodes else Status.INFEASIBLE
        return MultiResult(
            status,
            Plan(()) if not problem.nodes else None,
            0.0 if not problem.nodes else np.inf,
            bound,
            lattice.count,
            0,
            0,
            time.perf_counter() - start,
        )
    cap = max(k.memory for k in problem.kinds)
    memories = tuple(sorted({k.memory for k in problem.kinds}))
    upper = np.inf  # an upper bound on the optimum (a one-stage plan), one kind only
    prune = None
    if len(problem.kinds) == 1:
        upper = upper_bound(problem, s_max)
        if upper < np.inf and front_cache is None:
            kind = problem.kinds[0]
            usable = tuple(limits.usable_degrees(problem.microbatches, s_max))
            prune = Prune(upper, s_max, kind.count, kind.speed, usable)
    if front_cache is not None:
        if (memories, horizon) not in front_cache:
            front_cache[(memories, horizon)] = stage_fronts(problem, lattice, cap, horizon, memories[0], memories)
        stages = front_cache[(memories, horizon)]
    else:
        stages = stage_fronts(problem, lattice, cap, horizon, memories[0], memories, prune)
    tables = _Tables(problem, lattice, s_max, count_step, stages, upper)
    single = len(problem.kinds) == 1

    def decide(tau: float):
        if single:
            return _decide_front(tables, lattice, problem, s_max, tau)
        return _decide(tables, lattice, problem, s_max, count_step, tau)

    values = tables.candidates
    candidates = len(values)
    probes = 0
    best = None
    if len(values):
        # Binary search over the candidate stage times: every candidate <= lo is infeasible, best[0] feasible.
        lo, hi = -np.inf, np.inf
        while True:
            values = values[(values > lo) & (values < hi)]
            if len(values) == 0:
                break
            tau = float(np.partition(values, len(values) // 2)[len(values) // 2])
            feasible, h, yc = decide(tau)
            probes += 1
            if feasible:
                best, hi = (tau, h, yc), tau
            else:
                lo = tau
    if best is None:
        return MultiResult(
            Status.INFEASIBLE, None, float("inf"), bound, lattice.count, probes, candidates, time.perf_counter() - start
        )
    tau, h, yc = best
    if single:
        plan = _read_front_plan(problem, lattice, tables, h)
    else:
        plan = _read_plan(problem, lattice, tables, h, yc, s_max, count_step)
    return MultiResult(Status.OPTIMAL, plan, tau, bound, lattice.count, probes, candidates, time.perf_counter() - start)


def _read_plan(problem, lattice, tables, h, ycount, s_max, step) -> Plan:
    kinds = problem.kinds
    last = len(kinds) - 1
    h0 = h[0]
    flat = int(np.argmin(h0))
    state = np.unravel_index(flat, h0.shape)
    s, c = int(state[0]), tuple(int(x) for x in state[1:])
    j = 0
    stages = []
    rows_by_j: dict[int, list[int]] = {}
    for r in np.flatnonzero(ycount > 0).tolist():
        rows_by_j.setdefault(int(tables.j[r]), []).append(r)
    while j != lattice.full:
        value = h[j][(s,) + c]
        for r in rows_by_j.get(j, ()):
            i, d, t, k = int(tables.i[r]), int(tables.d[r]), int(tables.t[r]), int(tables.k[r])
            if h[i] is None or not d <= s <= min(s_max, d * int(ycount[r])):
                continue
            if k == last:
                prev_c, add = c, d * t
            else:
                shift = d * t // step
                if c[k] < shift:
                    continue
                prev_c, add = tuple(x - shift if q == k else x for q, x in enumerate(c)), 0
            if h[i][(s - d,) + prev_c] + add == value:
                break
        else:  # pragma: no cover - the tables guarantee a witness
            raise RuntimeError("plan read-back found no witness")
        members = lattice.masks[i] & ~lattice.masks[j]
        nodes = tuple(v for v in range(len(problem.nodes)) if members >> v & 1)
        y = -(-s // d)
        kind = kinds[k]
        # the DP chose this stage at (d, y), so some choice fits: stage_choice is not None
        _, choice = cast("tuple[float, tuple]", stage_choice(problem, nodes, t, d, y, kind))
        names = tuple(problem.nodes[v].options_for(t)[o].name for v, o in zip(sorted(nodes), choice))
        stages.append(PlanStage(tuple(sorted(nodes)), d, t, names, kind.name))
        j, s, c = i, s - d, prev_c
    return Plan(tuple(stages))
