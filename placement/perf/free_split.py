"""Free pipeline splits (Megatron-Core's ``--pipeline-model-parallel-layout``): the exact best per-rank counts.

For one shape (t, p, d, cp, v, micro-batch, SP, ZeRO, schedule) and one recomputation mode whose recomputed
work per layer does not depend on the split (none, selective, full of every layer), :func:`best_free_split`
returns the layer counts ``n_0 .. n_{p-1}`` (each a positive multiple of ``v``, summing to ``L``) that minimise
the predicted iteration time of :func:`placement.perf.predict.iteration_time` among those whose every rank fits
in GPU memory, ties (times within :data:`TIE_RTOL`) broken by the least memory of the most loaded GPU.

**The objective, term by term** (``S_i(n)``: rank i's step of one micro-batch with n layers, non-decreasing in
n; rank 0 adds the embedding, rank p-1 the output layer; ``P_i(n)``: its parameters, increasing in n)::

    T(n) = m (1 + jitter sqrt(2 ln p)) max_i S_i(n_i)          # the critical rank, with its sync term
         + (p - 1) / v (/ 3 for zero bubble) * sum_i S_i(n_i) / p   # the bubble: fixed by L in these modes
         + H(h, n_h) + constants                                # dp + optimizer of the heaviest rank h

where ``h`` is the rank with the most parameters (the first of the order 0, p-1, 1, 2, ... on ties, the
model's rule) and ``H`` its exposed data-parallel and optimizer seconds, which depend on ``h``'s kind (first,
last, middle) and count only. The bubble's sum is ``L`` layers' steps plus the two ends: the same for every
split (with recomputation of part of the layers it would not be, which is why partial recomputation keeps
the first/last splits).

**Algorithm.** Enumerate the heaviest rank: its kind and count ``n_h`` (at most ``3 L / v`` pairs). With the
heaviest rank pinned, its parameter value ``V = P_h(n_h)`` bounds every other rank's count (``P_i(n_i) < V``
for ranks before it in the order, ``<= V`` after; a middle pinned rank stands for the first middle rank at
``V``, and every middle rank at ``V`` gives the same ``H``, so "all middles ``<= n_h``, one equal" is the
condition); memory gives each rank a cap (its bytes grow with its count). What is left is a bottleneck
problem: the least ``M >= S_h(n_h)`` such that the other ranks can take ``L - n_h`` layers with
``S_i(n_i) <= M``, within their bounds. For a given ``M`` rank i can take any count in ``[v, U_i(M)]`` with
``U_i(M) = min(max{n : S_i(n) <= M}, parameter bound, memory cap)``, so ``M`` is feasible iff
``(p - 1) v <= L - n_h <= sum_i U_i(M)`` (integer boxes reach every sum between their ends, in steps of v);
feasibility is monotone in ``M``, so the least ``M`` is found by bisection over the finitely many values
``S_i(n)``. The pinned pair's time is then ``A max(M, S_h(n_h)) + H(h, n_h) + constant``: the minimum over the
pairs is the minimum of ``T`` over every split, because every split has one heaviest rank (one pair) and, for
it, a maximum step at least that pair's least ``M`` (proof: the split itself witnesses its own maximum as
feasible). Among the pairs within :data:`TIE_RTOL` of the least time the memory is minimised the same way: the
least ``Q`` such that the other ranks take ``L - n_h`` layers with bytes ``<= Q`` (and steps ``<= M``), by
bisection over the ranks' byte values. The winners are priced again by the model itself (``iteration_time``,
``memory_breakdown``), which decides between pairs whose formula values tie.

Pairs are taken in increasing order of the lower bound ``A max(S_h(n_h), M_0) + constant`` (``M_0``: the least
``M`` of any fitting split, without parameter bounds; ``H >= 0`` is added before a pair is solved), one stream
per kind merged by a heap (the bound never falls as ``n_h`` grows), and the scan stops at the first bound above
the best time found. Times are compared with a relative tolerance of :data:`TIE_RTOL` throughout (the formula
and the model sum the same terms in different orders).
"""

from __future__ import annotations

import bisect
import heapq
import itertools
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from .collectives import Links
from .hardware import Cluster
from .layout import Layout, Recompute, RecomputeMethod
from .memory import layer_activation_bytes, rank_bytes, stage_parameters
from .params import PerfParams
from .predict import _layer_cost, _LayerCost, _stage_time, _StageTime, _tail_seconds, iteration_time
from .transformer import TransformerSpec

#: Relative difference of two predicted times below which they count as equal (then memory decides).
TIE_RTOL = 1e-12

#: Recomputation modes whose recomputed work is the same for every split (the free split is searched in these).
FREE_MODES = ("none", "selective", "full")


def free_template(shape: Layout, mode: Recompute) -> Layout:
    """``shape`` with recomputation ``mode`` (full: every layer of every chunk) and no split of its own."""
    if mode is Recompute.FULL:
        return shape.with_changes(
            recompute=Recompute.FULL, recompute_method=RecomputeMethod.BLOCK, recompute_layers=None,
            first_stage_layers=None, last_stage_layers=None, pipeline_layers=None,
        )  # fmt: skip
    return shape.with_changes(recompute=mode, first_stage_layers=None, last_stage_layers=None, pipeline_layers=None)


def with_counts(template: Layout, counts: tuple[int, ...]) -> Layout:
    """The template with per-rank counts (stored as first/last counts or even where those express it); full
    recomputation of every layer names the largest chunk (``--recompute-num-layers``)."""
    out = _raw(template, pipeline_layers=tuple(counts))
    if template.recompute is Recompute.FULL:
        out = _raw(out, recompute_layers=max(counts) // template.virtual_stages)
    return out


def _raw(layout: Layout, **changes: object) -> Layout:
    """``layout.with_changes`` through the validating constructor, but without the template's own split."""
    fields = {k: getattr(layout, k) for k in layout.__dataclass_fields__}
    fields.update(changes)
    if fields.get("pipeline_layers") is not None:
        fields["first_stage_layers"] = fields["last_stage_layers"] = None
    return Layout(**fields)


class _Kind:
    """One kind of rank (first, last or middle): step seconds, parameters and tail seconds per count index k
    (``(k + 1) v`` layers), each computed by the model on first use."""

    def __init__(self, pb: _Problem, rank: int) -> None:
        self.pb, self.rank = pb, rank
        self._steps: dict[int, _StageTime] = {}
        self._params: dict[int, tuple[float, float]] = {}
        self._tails: dict[int, float] = {}
        self._uppers: dict[tuple[float, int], int] = {}

    def stage(self, k: int) -> _StageTime:
        if k not in self._steps:
            pb = self.pb
            n = (k + 1) * pb.v
            first, last = self.rank == 0, self.rank == pb.p - 1
            self._steps[k] = _stage_time(pb.model, pb.cluster, pb.template, pb.params, pb.links, pb.cost, first,
                                         last, n)  # fmt: skip
        return self._steps[k]

    def step(self, k: int) -> float:
        return self.stage(k).total

    def pars(self, k: int) -> tuple[float, float]:
        if k not in self._params:
            self._params[k] = stage_parameters(self.pb.model, self.pb.template, self.rank, (k + 1) * self.pb.v)
        return self._params[k]

    def param(self, k: int) -> float:
        return sum(self.pars(k))

    def tail(self, k: int) -> float:
        if k not in self._tails:
            pb = self.pb
            dp, opt, off = _tail_seconds(pb.model, pb.cluster, pb.template, pb.params, pb.links, self.stage(k),
                                         self.rank, self.pars(k), (k + 1) * pb.v)  # fmt: skip
            self._tails[k] = dp + opt + off
        return self._tails[k]

    def upper(self, limit: float, size: int) -> int:
        """The largest k < size whose step is at most ``limit`` (-1: none); steps never fall as k grows."""
        key = (limit, size)
        if key not in self._uppers:  # (the bisections of a shape ask for the same few limits again and again)
            self._uppers[key] = _last_true(lambda k: self.step(k) <= limit, size)
        return self._uppers[key]


class _Problem:
    """The arrays of one shape and mode (see the module docstring), built lazily."""

    links: Links
    cost: _LayerCost
    per_layer: tuple[float, float]
    first: _Kind
    last: _Kind
    middle: _Kind
    _bytes: dict[tuple[int, int], float]

    def __init__(
        self, model: TransformerSpec, cluster: Cluster, template: Layout, params: PerfParams, capacity: float,
        cost: _LayerCost | None = None, shared: _Problem | None = None,
    ) -> None:  # fmt: skip
        self.model, self.cluster, self.template, self.params = model, cluster, template, params
        p, v = template.pipeline, template.virtual_stages
        self.p, self.v, self.units = p, v, model.layers // v
        self.size = self.units - (p - 1)  # count indices a rank can have (the others at least v layers each)
        m = template.microbatches
        self.scale = m * (1 + params.stage_jitter * math.sqrt(2 * math.log(p)))
        if shared is not None:  # the same template under another capacity: only the caps differ
            self.links, self.cost, self.per_layer = shared.links, shared.cost, shared.per_layer
            self.first, self.last, self.middle, self._bytes = shared.first, shared.last, shared.middle, shared._bytes
        else:
            self.links = Links.of(cluster, params)
            self.cost = _layer_cost(model, cluster, template, params, self.links) if cost is None else cost
            self.first, self.last, self.middle = _Kind(self, 0), _Kind(self, p - 1), _Kind(self, 1)
            self.per_layer = (layer_activation_bytes(model, template, Recompute.NONE),
                              layer_activation_bytes(model, template, Recompute.FULL))  # fmt: skip
            self._bytes = {}
        # memory caps: the largest count index whose bytes fit (-1: not even v layers fit). The middle ranks differ
        # only in their micro-batches in flight, which never grow with the rank: their caps never fall, so one
        # upward sweep finds them all.
        self.caps = [self._cap(0, capacity)]
        last = self._cap(p - 1, capacity)
        if self.caps[0] < 0 or last < 0:
            self.caps = [-1] * p  # (the ends alone cannot take v layers: no split fits)
            return
        k = 0
        for r in range(1, p - 1):
            k = max(k, 0)
            while k + 1 < self.size and self.bytes_of(r, k + 1) <= capacity:
                k += 1
            self.caps.append(k if self.bytes_of(r, k) <= capacity else self._cap(r, capacity))
        self.caps.append(last)

    def kind_of(self, rank: int) -> _Kind:
        return self.first if rank == 0 else self.last if rank == self.p - 1 else self.middle

    def bytes_of(self, rank: int, k: int) -> float:
        key = (rank, k)
        if key not in self._bytes:
            n = (k + 1) * self.v
            self._bytes[key] = rank_bytes(self.model, self.template, rank, n, self.params, self.per_layer)
        return self._bytes[key]

    def _cap(self, rank: int, capacity: float) -> int:
        return _last_true(lambda k: self.bytes_of(rank, k) <= capacity, self.size)

    def upper(self, rank: int, limit: float) -> int:
        """The largest count index of ``rank`` whose step is at most ``limit`` (-1: none)."""
        return self.kind_of(rank).upper(limit, self.size)


def _last_true(pred: Callable[[int], bool], size: int) -> int:
    """The largest k < size with pred(k) for a predicate true on a prefix (-1: none)."""
    lo, hi = 0, size  # pred true below lo, false from hi
    while lo < hi:
        mid = (lo + hi) // 2
        if pred(mid):
            lo = mid + 1
        else:
            hi = mid
    return lo - 1


@dataclass(frozen=True)
class FreeSplit:
    """The best free split of one shape and mode: per-rank counts, formula time (seconds), memory (bytes)."""

    counts: tuple[int, ...]
    seconds: float
    memory: float


def _middles(pb: _Problem, k_h: int) -> list[int]:
    """The middle ranks able to hold count index ``k_h`` (candidates for a pinned middle rank)."""
    return [r for r in range(1, pb.p - 1) if pb.caps[r] >= k_h]


def _lighter(kind: _Kind, value: float, strict: bool) -> Callable[[int], bool]:
    """Count index k -> the kind's parameters at k are below (``strict``) or at most ``value``."""
    if strict:
        return lambda k: kind.param(k) < value
    return lambda k: kind.param(k) <= value


def _bounds(pb: _Problem, h: int, k_h: int) -> list[int] | None:
    """Count-index bounds of the ranks (parameter rule and memory cap) with rank ``h`` pinned at index ``k_h``
    (its own entry -2). A pinned middle rank stands for the first middle rank at that count: the other middle
    ranks may equal it (same kind, same count: the same tail seconds). None: some rank cannot take v layers."""
    p = pb.p
    value = pb.kind_of(h).param(k_h)
    middle = 0 < h < p - 1
    out = []
    lightest: dict[tuple[int, bool], int] = {}  # per kind and strictness: the largest index within the rule
    for r in range(p):
        if r == h:
            out.append(-2)
            continue
        kind = pb.kind_of(r)
        # ranks before h in the order 0, p-1, 1, 2, ... must stay strictly lighter, the others may tie
        before = r == 0 or (r == p - 1 and middle)
        if (kind.rank, before) not in lightest:
            lightest[(kind.rank, before)] = _last_true(_lighter(kind, value, before), pb.size)
        # (the rule holds on a prefix of the indices: its last index below the cap is the smaller of the two)
        b = min(lightest[(kind.rank, before)], pb.caps[r])
        if b < 0:
            return None
        out.append(b)
    return out


def _need(pb: _Problem, k_h: int) -> int:
    """Count units (of v layers, beyond each rank's first v) the other ranks must take."""
    return pb.units - (k_h + 1) - (pb.p - 1)


def _least_step(pb: _Problem, bounds: list[int], need: int, floor: float) -> float | None:
    """The least M >= floor among ``floor`` and the step values with which the other ranks take ``need`` extra
    units (feasibility is monotone in M; the least feasible value of each kind's non-decreasing steps is found by
    bisection, and the least of those, or ``floor``, is the answer)."""
    if need < 0:
        return None
    tops = {r: b for r, b in enumerate(bounds) if b != -2}
    kinds = {id(pb.kind_of(r)): pb.kind_of(r) for r in tops}
    ends = [(pb.kind_of(r), b) for r, b in tops.items() if r in (0, pb.p - 1)]
    mids = sorted(b for r, b in tops.items() if 0 < r < pb.p - 1)
    prefix = [0]
    for b in mids:
        prefix.append(prefix[-1] + b)

    def ok(limit: float) -> bool:
        # sum over the other ranks of min(bound, largest index under the limit), one bisection per kind: the
        # middle ranks share their kind, so their sum is the bounds below its index plus the index for the rest
        total = 0
        for kind, b in ends:
            u = min(b, kind.upper(limit, pb.size))
            if u < 0:
                return False
            total += u
        if mids:
            u = pb.middle.upper(limit, pb.size)
            if u < 0 or mids[0] < 0:
                return False
            j = bisect.bisect_left(mids, u)
            total += prefix[j] + u * (len(mids) - j)
        return total >= need

    if ok(floor):
        return floor
    best: float | None = None
    for kind in kinds.values():
        start = kind.upper(floor, pb.size) + 1  # the first step above floor
        lo, hi = start, pb.size
        while lo < hi:
            mid = (lo + hi) // 2
            if ok(kind.step(mid)):
                hi = mid
            else:
                lo = mid + 1
        if lo < pb.size and (best is None or kind.step(lo) < best):
            best = kind.step(lo)
    return best


def _least_bytes(pb: _Problem, bounds: list[int], need: int, step: float, own: float) -> tuple[float, list[int]]:
    """The least Q >= own with which the other ranks take ``need`` units with steps <= ``step`` and bytes
    <= Q, and their count indices (some greedy reduction to the exact sum)."""
    tops = [-2 if b == -2 else min(b, pb.upper(r, step)) for r, b in enumerate(bounds)]

    def fits_under(rank: int, limit: float) -> Callable[[int], bool]:
        return lambda k: pb.bytes_of(rank, k) <= limit

    def counts_at(limit: float) -> list[int] | None:
        out = []
        for r, top in enumerate(tops):
            if top == -2:
                out.append(-2)
                continue
            u = _last_true(fits_under(r, limit), top + 1)
            if u < 0:
                return None
            out.append(u)
        return out if sum(c for c in out if c != -2) >= need else None

    cands = sorted({own} | {pb.bytes_of(r, k) for r, top in enumerate(tops) if top != -2 for k in range(top + 1)})
    # (every count up to each rank's top is sized here: this runs for the few winning pairs only)
    cands = cands[bisect.bisect_left(cands, own) :]
    lo, hi = 0, len(cands) - 1
    while lo < hi:
        mid = (lo + hi) // 2
        if counts_at(cands[mid]) is not None:
            hi = mid
        else:
            lo = mid + 1
    counts = counts_at(cands[lo])
    assert counts is not None  # the caller's step is feasible, and so is the largest byte value
    extra = sum(c for c in counts if c != -2) - need
    for r in range(len(counts)):  # give back the surplus (counts only fall: every bound still holds)
        if extra <= 0:
            break
        if counts[r] == -2:
            continue
        drop = min(extra, counts[r])
        counts[r] -= drop
        extra -= drop
    return cands[lo], counts


def _constant(pb: _Problem) -> float:
    """The split-independent seconds: the bubble (the sum of the steps is the same for every split in these
    modes; taken on one split) and the fixed overhead."""
    p, units = pb.p, pb.units
    idx = [units // p - 1 + (1 if r < units % p else 0) for r in range(p)]
    total = sum(pb.kind_of(r).step(c) for r, c in enumerate(idx))
    bubble = (p - 1) / pb.v * total / p
    if pb.template.schedule.zero_bubble:
        bubble /= 3.0
    return bubble + pb.params.iteration_overhead_s


def _pinned_options(pb: _Problem, h: int, k: int) -> Iterator[tuple[int, list[int]]]:
    """(pinned rank, bounds) for a pair: itself, or for a middle kind every middle rank able to hold it (lazily:
    the scan takes the first only)."""
    ranks = _middles(pb, k) if 0 < h < pb.p - 1 else [h]
    for r in ranks:
        bounds = _bounds(pb, r, k)
        if bounds is not None:
            yield r, bounds


def best_free_split(
    model: TransformerSpec, cluster: Cluster, template: Layout, params: PerfParams, capacity: float,
    incumbent: float = math.inf, cost: _LayerCost | None = None,
) -> list[Layout]:  # fmt: skip
    """The layouts of the best free split(s) of ``template`` (a shape with its recomputation mode, p >= 3).

    Returns the candidates whose time (by the formula of the module docstring) is within :data:`TIE_RTOL` of the
    least, each with the least memory of its pinned pair; the caller prices them with the model and keeps the
    best. Empty when no split fits or none can beat ``incumbent`` seconds (the search's best so far). ``cost``:
    the shape's per-layer cost when the caller has it (it does not depend on the recomputation).
    """
    return FreeSplits(model, cluster, template, params, cost).best(capacity, incumbent)


class FreeSplits:
    """:func:`best_free_split` of one template under successive capacities (the Pareto front's walk down the
    memory caps), sharing the model's numbers per rank kind and count, which do not depend on the capacity."""

    def __init__(
        self, model: TransformerSpec, cluster: Cluster, template: Layout, params: PerfParams,
        cost: _LayerCost | None = None,
    ) -> None:  # fmt: skip
        self.model, self.cluster, self.template, self.params, self.cost = model, cluster, template, params, cost
        self._shared: _Problem | None = None

    def best(self, capacity: float, incumbent: float = math.inf) -> list[Layout]:
        """:func:`best_free_split` of the template with GPU memory ``capacity`` (bytes)."""
        model, template = self.model, self.template
        if template.pipeline < 3 or model.layers % template.virtual_stages:
            return []
        pb = _Problem(model, self.cluster, template, self.params, capacity, self.cost, self._shared)
        self._shared = pb
        return _best_of_problem(pb, template, incumbent)


def _best_of_problem(pb: _Problem, template: Layout, incumbent: float) -> list[Layout]:
    """The body of :func:`best_free_split` on a built problem."""
    if min(pb.caps) < 0 or pb.units < pb.p or sum(pb.caps) < pb.units - pb.p:
        return []
    # M_0: the least max step of any fitting split (a lower bound for every pair)
    m0 = _least_step(pb, list(pb.caps), pb.units - pb.p, -math.inf)
    if m0 is None:
        return []
    const = _constant(pb)
    # pairs in increasing order of scale * max(S_h(k), M_0) + const, a bound without the (non-negative) tail: one
    # stream per kind (steps never fall as k grows), merged by a heap; a middle pair stands for every middle rank
    kinds = [(0, pb.caps[0])] + [(pb.p - 1, pb.caps[pb.p - 1])] + ([(1, max(pb.caps[1:-1]))] if pb.p > 2 else [])
    heap = [(pb.scale * max(pb.kind_of(h).step(0), m0) + const, h, 0, top) for h, top in kinds if top >= 0]
    heapq.heapify(heap)
    best = incumbent
    found: list[tuple[float, int, int, float]] = []  # (seconds, pinned kind's rank, count index, least step)
    while heap:
        key, h, k, top = heapq.heappop(heap)
        if key > best * (1 + TIE_RTOL):
            break  # every pair left has a bound at least this
        if k < top:
            heapq.heappush(heap, (pb.scale * max(pb.kind_of(h).step(k + 1), m0) + const, h, k + 1, top))
        kind = pb.kind_of(h)
        if key + kind.tail(k) > best * (1 + TIE_RTOL):
            continue
        for _, bounds in itertools.islice(_pinned_options(pb, h, k), 1):  # any able middle rank: the same least step
            step = _least_step(pb, bounds, _need(pb, k), kind.step(k))
            if step is None:
                continue
            seconds = pb.scale * step + kind.tail(k) + const
            if seconds <= best * (1 + TIE_RTOL):
                found.append((seconds, h, k, step))
                best = min(best, seconds)
    out = []
    for seconds, h, k, step in found:
        if seconds > best * (1 + TIE_RTOL):
            continue
        options = []
        for r, bounds in _pinned_options(pb, h, k):  # the pinned middle rank matters for memory
            if _least_step(pb, bounds, _need(pb, k), step) != step:
                continue
            q, idx = _least_bytes(pb, bounds, _need(pb, k), step, pb.bytes_of(r, k))
            options.append((q, r, idx))
        q, r, idx = min(options)
        counts = tuple(((k if c == -2 else c) + 1) * pb.v for c in idx)
        out.append(with_counts(template, counts))
    return out


def price(model: TransformerSpec, cluster: Cluster, layout: Layout, params: PerfParams) -> float:
    """The model's own iteration seconds of a layout (for tests and the caller's final choice)."""
    return iteration_time(model, cluster, layout, params).total


def free_bound(
    model: TransformerSpec, cluster: Cluster, shape: Layout, params: PerfParams,
    ends: tuple[float, ...] | None = None, cost: _LayerCost | None = None,
) -> float:  # fmt: skip
    """A lower bound of the predicted time of every free split of ``shape`` (with its recomputation when that is
    selective or full of every layer, else without any: a bound for every recomputation).

    As :func:`placement.perf.splits.split_bounds` for first/last splits: ``m (1 + jitter sqrt(2 ln p))
    (max_i (n_i c + e_i) + s) + bubble fraction ((L c + e_0 + e_{p-1}) / p + s) + overhead``, minimised over every
    split (counts multiples of v) by bisection on the largest step (each rank then takes as many layers as fit
    under it); recomputation, data-parallel and optimizer seconds only add.
    """
    from .splits import _ends_seconds

    p, v, units = shape.pipeline, shape.virtual_stages, model.layers // shape.virtual_stages
    c, emb, head, p2p = _ends_seconds(model, cluster, shape, params) if ends is None else ends
    if shape.recompute is not Recompute.NONE:  # what each layer recomputes (every layer: the free modes)
        if cost is None:
            cost = _layer_cost(model, cluster, shape, params, Links.of(cluster, params))
        if shape.recompute is Recompute.SELECTIVE:
            c += cost.selective
        elif shape.recompute_layers is None:
            c += cost.fwd + cost.tp_fwd + cost.cp_fwd + cost.ep_fwd
    offsets = [emb] + [0.0] * (p - 2) + [head]

    def takes(limit: float) -> bool:
        total = 0
        for e in offsets:
            k = math.floor((limit - e) / (v * c) + 1e-9) if c > 0 else units
            if k < 1:
                return False
            total += k
        return total >= units

    values = sorted({k * v * c + e for e in set(offsets) for k in range(1, units + 1)})
    lo, hi = 0, len(values) - 1
    while lo < hi:
        mid = (lo + hi) // 2
        if takes(values[mid]):
            hi = mid
        else:
            lo = mid + 1
    # (the quotient is rounded up by 1e-9 and the value stepped back by a relative 1e-9: a bound stays below)
    most = values[lo] * (1 - 1e-9)
    scale = shape.microbatches * (1 + params.stage_jitter * math.sqrt(2 * math.log(p)))
    bubble = (
        (p - 1) / v * (1.0 / 3.0 if shape.schedule.zero_bubble else 1.0) * ((model.layers * c + emb + head) / p + p2p)
    )
    return scale * (most + p2p) + bubble + params.iteration_overhead_s
