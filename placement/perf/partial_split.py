"""Free pipeline splits with partial recomputation: the exact best per-rank counts for one k.

Megatron-Core launches any count per rank (``--pipeline-model-parallel-layout``) with block recomputation of the
first ``k`` layers of every chunk (``--recompute-granularity full --recompute-method block --recompute-num-layers
k``); a rank of ``n_i`` layers then recomputes ``min(n_i, k v)`` of them. :func:`best_partial_split` returns, for
one shape and one ``k``, the counts ``n_0 .. n_{p-1}`` (positive multiples of ``v`` summing to ``L``) that minimise
:func:`placement.perf.predict.iteration_time` among those whose every rank fits in GPU memory, ties (times within
:data:`~placement.perf.free_split.TIE_RTOL`) broken by the least memory of the most loaded GPU. It reuses the
free-split problem of :mod:`placement.perf.free_split` (``_Problem``: steps, parameters, tails and bytes per rank
kind and count, memory caps), whose template here carries ``k``.

**The objective.** With ``S_i(c)`` rank i's step at count index ``c`` (``(c + 1) v`` layers)::

    T(n) = A max_i S_i(n_i) + B sum_i S_i(n_i) + H(h, n_h) + overhead,
    A = m (1 + jitter sqrt(2 ln p)),   B = (p - 1) / (v p) (/ 3 for zero bubble)

(``h``: the heaviest-parameter rank, ``H``: its data-parallel, optimizer and offload seconds). Unlike the modes
of :mod:`~placement.perf.free_split`, the sum depends on the split: ``S_i(c) = e_i + g(c)``, where ``e_i`` is the
embedding (rank 0), the output layer (rank p-1) or 0, and ``g(c) = a + (c + 1) v s + min((c + 1) v, k v) r``
(``s``: one layer's step, ``r``: its recomputed forward) is the same for every rank and **concave** (its
increments fall from ``v (s + r)`` to ``v s`` once a rank holds ``k v`` layers). Both are properties of
:func:`~placement.perf.predict._stage_time`, tested in ``tests/test_partial_split.py``.

**Least sum in boxes.** For boxes ``0 <= c_i <= U_i`` and a total ``N``, ``sum_i S_i(c_i)`` is least when the
ranks are filled greedily, largest box first (:func:`_fill`). Proof: ``sum_i e_i`` is fixed and ``sum_i g(c_i)``
is Schur-concave (g concave), so it is least at a vector that majorises every other feasible one; the greedy
vector does: the sum of any feasible vector's j largest entries is at most ``min(N, U_(1) + .. + U_(j))`` (they
sit in j boxes), and the greedy vector's j largest entries sum to exactly that (Karamata's inequality).

**Algorithm.** As in :mod:`~placement.perf.free_split`, enumerate the heaviest rank's kind and count index
``c_h`` (pairs from a heap, in increasing order of a lower bound), pin it at the first rank of its kind able to
hold it, and bound the other ranks by the parameter rule and their memory caps (``_bounds``). For a pair and a
step limit ``M >= S_h(c_h)``, rank i may take ``c_i <= U_i(M) = min(bound_i, max{c : S_i(c) <= M})``, and
``G(M)`` is the least sum of the other ranks' steps in those boxes (greedy, above). Then::

    min_n T(n) = min over pairs and M of  V(pair, M) = A M + B (S_h(c_h) + G(M)) + H(h, c_h) + overhead.

(<=) The greedy split of a finite ``V`` fits (caps), has ``h`` as its heaviest rank (parameter rule), a largest
step at most ``M`` and exactly that sum: its time is at most ``V``. (>=) An optimal split ``n*``, with heaviest
rank ``h*`` (the first of the order 0, p-1, 1, 2, ... on ties), is within the bounds of its pair and of its own
largest step ``M*`` (a step value), so ``G(M*)`` is at most its other ranks' sum and ``V <= T(n*)``. For a
middle pair the first able middle rank (caps never fall along the middle ranks) stands for all: a split whose
heaviest rank is a later middle rank ``h'`` swaps its counts with that first one's into a split within the first
one's bounds, with the same steps (same kind) and the same ``H``. Only the step values matter as ``M`` (``G``
changes only there); for a pair they are scanned upwards from the least feasible one (``_least_step``, by
bisection as in free_split) while ``A M + B (S_h + G(inf)) + H + overhead``, a lower bound of the rest (``G``
never grows with ``M``), is within the best time; pairs stop at the first heap key
``A max(S_h(c_h), M_0) + B G_0 + overhead`` above it (``M_0``: the least largest step, ``G_0``: the least sum, both
over every fitting split), with ``H >= 0`` added before a pair is solved (and before ``M_0`` is computed, the
whole problem is dismissed when ``A S_mid(ceil(L / (p v)) chunks) + B G_0 + overhead`` is above the incumbent:
some rank holds that many chunks, and an end's step is a middle rank's plus its own part). Comparisons keep a relative margin
of :data:`TIE_RTOL` (the formula and the model sum the same terms in other orders).

**Memory among ties.** The least time ``T*`` found, the least memory of the splits within :data:`TIE_RTOL` of it
is the least byte value ``Q`` (of some rank at some count) such that the time under capacity ``Q`` is still
within the tolerance of ``T*``: feasibility is monotone in ``Q`` (a larger cap admits more splits), so ``Q`` is
found by bisection over the byte values, and the split found under it is returned; its memory is ``Q``. (First
a few steps down: the cap just below the last tied split's memory, where no tied split fits it is the answer.)
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Iterator

from .collectives import Links
from .free_split import TIE_RTOL, _least_step, _need, _pinned_options, _Problem, _raw
from .hardware import Cluster
from .layout import Layout, Recompute, RecomputeMethod
from .memory import _stage_activations, static_parts
from .params import PerfParams
from .predict import _layer_cost, _LayerCost
from .splits import _ends_seconds
from .transformer import TransformerSpec

#: Steps down the memory of the tied splits before the bisection over the byte values (which sizes every rank at
#: every count: most searches find no leaner tie, or one, and stop in a step or two).
_DESCENT = 2


def partial_template(shape: Layout, k: int) -> Layout:
    """``shape`` with block recomputation of ``k`` layers per chunk and no split of its own."""
    return shape.with_changes(
        recompute=Recompute.FULL, recompute_method=RecomputeMethod.BLOCK, recompute_layers=k,
        first_stage_layers=None, last_stage_layers=None, pipeline_layers=None,
    )  # fmt: skip


def partial_counts(template: Layout, counts: tuple[int, ...]) -> Layout:
    """The template with per-rank counts; ``k`` is lowered to the largest chunk where every chunk is shorter (a
    chunk of fewer than k layers recomputes all of them either way: the same numbers, and Megatron's rule
    ``k <= layers per chunk`` holds)."""
    k = template.recompute_layers
    assert k is not None  # (a partial template always names k)
    return _raw(
        template, pipeline_layers=tuple(counts), recompute_layers=min(k, max(counts) // template.virtual_stages)
    )


def _fill(pb: _Problem, bounds: list[int], need: int, limit: float) -> tuple[float, list[int]] | None:
    """The least sum of the steps of the ranks other than the pinned one (entry -2 of ``bounds``) taking ``need``
    count units with steps at most ``limit``, and their count indices: the greedy of the module docstring. None:
    they cannot."""
    boxes = []
    for r, b in enumerate(bounds):
        if b == -2:
            continue
        u = min(b, pb.upper(r, limit))
        if u < 0:
            return None
        boxes.append((-u, r))
    boxes.sort()  # largest box first (ties by rank: any order gives the same sum)
    counts = list(bounds)
    rest, total = need, 0.0
    for u, r in boxes:
        c = min(-u, rest)
        rest -= c
        counts[r] = c
        total += pb.kind_of(r).step(c)
    return None if rest > 0 else (total, counts)


def _next_step(pb: _Problem, limit: float) -> float | None:
    """The least step value of any rank kind above ``limit`` (None: none)."""
    out = None
    for kind in (pb.first, pb.last, pb.middle):
        k = kind.upper(limit, pb.size) + 1
        if k < pb.size and (out is None or kind.step(k) < out):
            out = kind.step(k)
    return out


def _weight(pb: _Problem) -> float:
    """B: the bubble's seconds per second of the sum of the ranks' steps."""
    return (pb.p - 1) / pb.v / pb.p * (1.0 / 3.0 if pb.template.schedule.zero_bubble else 1.0)


def _pairs(pb: _Problem, m0: float, const: float) -> Iterator[tuple[float, int, int]]:
    """(bound, kind's rank, count index) of the pinned pairs in increasing order of ``A max(S_h(c), M_0) + const``
    (one stream per kind, non-decreasing as c grows, merged by a heap)."""
    p = pb.p
    kinds = [(0, pb.caps[0]), (p - 1, pb.caps[p - 1])] + ([(1, max(pb.caps[1:-1]))] if p > 2 else [])
    heap = [(pb.scale * max(pb.kind_of(h).step(0), m0) + const, h, 0, top) for h, top in kinds if top >= 0]
    heapq.heapify(heap)
    while heap:
        key, h, k, top = heapq.heappop(heap)
        if k < top:
            heapq.heappush(heap, (pb.scale * max(pb.kind_of(h).step(k + 1), m0) + const, h, k + 1, top))
        yield key, h, k


def _least_time(pb: _Problem, incumbent: float) -> tuple[float, list[int]] | None:
    """The least formula time (seconds) of a fitting split and its count indices, or None when no split fits or
    none is within :data:`TIE_RTOL` of ``incumbent``."""
    units, p = pb.units, pb.p
    if min(pb.caps) < 0 or units < p or sum(pb.caps) < units - p:
        return None
    least = _fill(pb, list(pb.caps), units - p, math.inf)
    if least is None:
        return None
    a, b, over = pb.scale, _weight(pb), pb.params.iteration_overhead_s
    limit = incumbent * (1 + TIE_RTOL)  # (inf stays inf)
    # some rank holds at least ceil(L / (p v)) chunks, and an end's step is a middle rank's plus its own part: a
    # bound on the largest step before the bisection for M_0
    if a * pb.middle.step(-(-units // p) - 1) + b * least[0] + over > limit:
        return None
    m0 = _least_step(pb, list(pb.caps), units - p, -math.inf)
    if m0 is None:
        return None
    best: tuple[float, list[int]] | None = None
    for key, h, k in _pairs(pb, m0, b * least[0] + over):
        if key > limit:
            break  # every pair left has a bound at least this
        kind = pb.kind_of(h)
        tail = kind.tail(k)
        option = next(_pinned_options(pb, h, k), None)
        if key + tail > limit or option is None:
            continue
        _, bounds = option
        need, own = _need(pb, k), kind.step(k)
        loose = _fill(pb, bounds, need, math.inf)
        if loose is None:
            continue
        # the least feasible limit by bisection while no time bounds the scan, else step by step from M_0 (the
        # limits below the least feasible one fail the fill; the time bound ends the scan within a few values)
        step = _least_step(pb, bounds, need, own) if math.isinf(limit) else max(own, m0)
        while step is not None and a * step + b * (own + loose[0]) + tail + over <= limit:
            got = _fill(pb, bounds, need, step)
            if got is None:
                step = _next_step(pb, step)
                continue
            seconds = a * step + b * (own + got[0]) + tail + over
            if seconds <= limit and (best is None or seconds < best[0]):
                counts = [k if c == -2 else c for c in got[1]]
                best = (seconds, counts)
                limit = min(limit, seconds * (1 + TIE_RTOL))
            step = _next_step(pb, step)
    return best


class _PartialProblem(_Problem):
    """The free-split problem of a partial template, its ranks' static bytes (weights, gradients, optimizer state:
    the same for every k) from a cache the ks of one shape share; each total is summed in ``rank_bytes``' order
    from the same parts, so it is bit-equal."""

    def __init__(
        self, model: TransformerSpec, cluster: Cluster, template: Layout, params: PerfParams, capacity: float,
        cost: _LayerCost | None, shared: _Problem | None, statics: dict[tuple[int, int], float],
    ) -> None:  # fmt: skip
        self._statics = statics
        super().__init__(model, cluster, template, params, capacity, cost, shared)

    def bytes_of(self, rank: int, k: int) -> float:
        key = (rank, k)
        if key not in self._bytes:
            n = (k + 1) * self.v
            if (rank, n) not in self._statics:
                weights, gradients, optimizer = static_parts(self.model, self.template, rank, n)
                self._statics[(rank, n)] = weights + gradients + optimizer
            acts, out = _stage_activations(self.model, self.template, rank, self.per_layer, n)
            self._bytes[key] = self._statics[(rank, n)] + acts + out + self.params.reserve_bytes
        return self._bytes[key]


class PartialSplits:
    """:func:`best_partial_split` of one template (a shape with block recomputation of k layers per chunk) under
    successive capacities, sharing the model's numbers per rank kind and count (they do not depend on the
    capacity)."""

    def __init__(
        self, model: TransformerSpec, cluster: Cluster, template: Layout, params: PerfParams,
        cost: _LayerCost | None = None, leanest: bool = True, statics: dict[tuple[int, int], float] | None = None,
    ) -> None:  # fmt: skip
        self.model, self.cluster, self.template, self.params, self.cost = model, cluster, template, params, cost
        self.leanest = leanest  # False: any split of least time (the Pareto walk finds the leaner ties itself)
        self.statics = {} if statics is None else statics  # (rank, layers) -> static bytes: shareable across ks
        self._shared: _Problem | None = None

    def problem(self, capacity: float) -> _Problem:
        """The free-split problem of the template with GPU memory ``capacity`` (bytes)."""
        pb = _PartialProblem(self.model, self.cluster, self.template, self.params, capacity, self.cost, self._shared,
                             self.statics)  # fmt: skip
        self._shared = pb
        return pb

    def fits(self, capacity: float) -> bool:
        """Some split fits in ``capacity`` bytes (every rank at least v layers, each within its cap)."""
        pb = self.problem(capacity)
        return min(pb.caps) >= 0 and pb.units >= pb.p and sum(pb.caps) >= pb.units - pb.p

    def best(self, capacity: float, incumbent: float = math.inf) -> list[Layout]:
        """:func:`best_partial_split` of the template with GPU memory ``capacity`` (bytes)."""
        template = self.template
        if template.pipeline < 3 or self.model.layers % template.virtual_stages:
            return []
        pb = self.problem(capacity)
        found = _least_time(pb, incumbent)
        if found is None:
            return []
        seconds, counts = found
        if not self.leanest:
            return [partial_counts(template, tuple((c + 1) * pb.v for c in counts))]
        # the least memory among the splits within TIE_RTOL of the least time: a few steps down (each finds a tied
        # split strictly leaner than the last), then a bisection over the byte values below the last
        most = max(pb.bytes_of(r, c) for r, c in enumerate(counts))
        for _ in range(_DESCENT):
            got = _least_time(self.problem(math.nextafter(most, -math.inf)), seconds)
            if got is None:
                return [partial_counts(template, tuple((c + 1) * pb.v for c in counts))]
            counts = got[1]
            most = max(pb.bytes_of(r, c) for r, c in enumerate(counts))
        values = sorted({q for r in range(pb.p) for c in range(pb.caps[r] + 1) if (q := pb.bytes_of(r, c)) <= most})
        lo, hi = 0, len(values) - 1  # values[hi] == most admits the split found
        while lo < hi:
            mid = (lo + hi) // 2
            got = _least_time(self.problem(values[mid]), seconds)
            if got is not None:
                hi, counts = mid, got[1]
            else:
                lo = mid + 1
        return [partial_counts(template, tuple((c + 1) * pb.v for c in counts))]


def best_partial_split(
    model: TransformerSpec, cluster: Cluster, template: Layout, params: PerfParams, capacity: float,
    incumbent: float = math.inf, cost: _LayerCost | None = None,
) -> list[Layout]:  # fmt: skip
    """The layout of the best free split of ``template`` (a shape with block recomputation of k layers per chunk,
    p >= 3), or an empty list when no split fits or none is within :data:`TIE_RTOL` of ``incumbent`` seconds.

    Among the splits within :data:`TIE_RTOL` of the least formula time (the module docstring) it is one of least
    memory of the most loaded GPU. ``cost``: the shape's per-layer cost when the caller has it.
    """
    return PartialSplits(model, cluster, template, params, cost).best(capacity, incumbent)


def partial_bound(
    model: TransformerSpec, cluster: Cluster, shape: Layout, params: PerfParams, k: int,
    ends: tuple[float, ...] | None = None, cost: _LayerCost | None = None,
) -> float:  # fmt: skip
    """A lower bound of the predicted time of every free split of ``shape`` (p >= 3) with block recomputation of
    ``k`` layers per chunk, memory aside.

    Rank i's step is ``e_i + n_i s + min(n_i, k v) r + sends`` (``s``: one layer's step, ``r``: its recomputed
    forward, ``e_i``: the embedding, the output layer or 0; :func:`~placement.perf.splits._ends_seconds`), so the
    time is at least ``A (max_i (e_i + n_i s + min(n_i, k v) r) + sends) + B sum_i S_i + overhead``. The largest
    step is the least step value ``M`` at which the ranks, each taking as many whole chunks as fit under it, reach
    ``L / v`` chunks together: found from the real relaxation's least M (the ranks take real numbers of chunks;
    their sum is piecewise linear in M, slope ``1 / (v (s + r))`` per rank up to k chunks and ``1 / (v s)``
    after, so it is solved on its few pieces) by stepping through the step values above it. ``sum_i min(n_i, k v)`` is at least ``(p - 1) v + min(L -
    (p - 1) v, k v)`` (a concave sum over counts of at least v: least with every rank but one at v). The
    data-parallel, optimizer and offload seconds (``>= 0``) are left out, so the bound is also below the least
    time without them, which never falls as k grows (every step grows with k): a running maximum over k = 1, 2,
    .. is a bound too. A relative margin of 1e-9 covers rounding.
    """
    p, v, units = shape.pipeline, shape.virtual_stages, model.layers // shape.virtual_stages
    s, emb, head, sends = _ends_seconds(model, cluster, shape, params) if ends is None else ends
    if cost is None:
        cost = _layer_cost(model, cluster, shape, params, Links.of(cluster, params))
    r = cost.fwd + cost.tp_fwd + cost.cp_fwd + cost.ep_fwd
    kinds = ((emb, 1), (head, 1), (0.0, p - 2))  # (offset, ranks)
    early, late = v * (s + r), v * s  # one chunk's step up to k chunks, after them
    least = max(emb, head, 0.0) + early  # (every rank holds at least one chunk)
    if early > 0 and late > 0:
        least = _integer_least(_real_least(kinds, units, k, early, late, least) * (1 - 1e-9), kinds, units, k, v, s, r)
    recomputed = (p - 1) * v + min(model.layers - (p - 1) * v, k * v)
    weight = (p - 1) / v / p * (1.0 / 3.0 if shape.schedule.zero_bubble else 1.0)
    scale = shape.microbatches * (1 + params.stage_jitter * math.sqrt(2 * math.log(p)))
    total = model.layers * s + emb + head + recomputed * r + p * sends
    return (scale * (least + sends) + weight * total + params.iteration_overhead_s) * (1 - 1e-9)


def _real_least(kinds: tuple[tuple[float, int], ...], units: int, k: int, early: float, late: float,
                least: float) -> float:  # fmt: skip
    """The least limit M >= ``least`` at which ranks of the given (step offset, count) kinds, each taking the real
    number of chunks whose step ``e + min(u, k) early + max(u - k, 0) late`` fits under M, take ``units`` chunks
    together (:func:`partial_bound`): their sum is piecewise linear in M, solved on its pieces."""

    def chunks(limit: float) -> float:
        return sum(n * ((limit - e) / early if limit - e <= k * early else k + (limit - e - k * early) / late)
                   for e, n in kinds)  # fmt: skip

    at, have = least, chunks(least)
    for x in [*sorted(x for x in {e + k * early for e, _ in kinds} if x > least), math.inf]:
        if have >= units:
            break
        slope = sum(n / (early if at < e + k * early else late) for e, n in kinds)
        reach = at + (units - have) / slope
        if reach <= x:
            return reach
        at, have = x, chunks(x)
    return at


def _integer_least(start: float, kinds: tuple[tuple[float, int], ...], units: int, k: int, v: int, s: float,
                   r: float) -> float:  # fmt: skip
    """The least step value ``M >= start`` at which the ranks, each taking as many whole chunks as fit under M,
    take ``units`` together: every step value from ``start`` up, in increasing order, until one does (``start``,
    the real relaxation's, is at most the answer; a few values in practice)."""

    def step(e: float, u: int) -> float:  # a rank of u chunks (u v layers)
        return e + u * v * s + min(u, k) * v * r

    def most(e: float, limit: float) -> int:  # the largest u in 0..units with step(e, u) <= limit (u >= 1)
        lo, hi = 1, units + 1
        while lo < hi:
            mid = (lo + hi) // 2
            if step(e, mid) <= limit:
                lo = mid + 1
            else:
                hi = mid
        return lo - 1

    limit = start
    while True:
        got = [most(e, limit) for e, _ in kinds]
        if min(got) >= 1 and sum(u * n for u, (_, n) in zip(got, kinds, strict=True)) >= units:
            return limit
        # the next step value above the limit: each kind's next count
        limit = min(step(e, u + 1) for u, (e, _) in zip(got, kinds, strict=True) if u < units)
