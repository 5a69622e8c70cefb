"""Uneven pipeline splits: the layer counts of the first, the middle and the last ranks, best-first.

Megatron-Core gives the first and the last pipeline rank their own layer counts
(``--decoder-first-pipeline-num-layers`` / ``--decoder-last-pipeline-num-layers``); the ``p - 2`` middle ranks
split the rest evenly. A split is ``(first, middle, last)`` with ``first + (p - 2) * middle + last = L``, every
count at least 1 (``p = 2``: ``first + last = L``). The even split (``first = middle = last = L / p``) is one of
them and is written as the layout without the two flags.

:func:`splits_best_first` yields the splits of a shape in increasing order of a lower bound of their predicted
iteration time, lazily, so that a search stops at the first bound above its incumbent. The bound (every term
non-negative in :func:`placement.perf.predict.iteration_time`): rank i's step takes at least
``n_i * c + e_i`` (``c``: one layer's forward, backward and exposed tensor/context/expert communication;
``e_0`` the embedding, ``e_{p-1}`` the output layer and loss), the iteration at least
``m (1 + jitter sqrt(2 ln p)) (max_i (n_i c + e_i) + s) + bubble fraction * ((L c + e_0 + e_{p-1}) / p + s) +
overhead`` (``s``: the pipeline sends of a micro-batch, the same on every rank).
For a fixed middle count the maximum is unimodal in ``first``, so each middle count is a pair of streams
(left and right of the balance point) with non-decreasing bounds, merged by a heap.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Iterator
from typing import TYPE_CHECKING

from .hardware import Cluster
from .layout import Layout
from .params import PerfParams
from .transformer import TransformerSpec

if TYPE_CHECKING:
    from .predict import _LayerCost


def all_splits(layers: int, p: int, v: int = 1) -> Iterator[tuple[int, int, int]]:
    """Every ``(first, middle, last)`` split of ``layers`` over ``p >= 2`` ranks (``middle = 0`` when ``p = 2``),
    each count a multiple of ``v`` (Megatron-Core's rule with ``v`` virtual stages per rank)."""
    if layers % v:
        return
    for first, middle, last in _unit_splits(layers // v, p):
        yield first * v, middle * v, last * v


def _unit_splits(units: int, p: int) -> Iterator[tuple[int, int, int]]:
    if p == 2:
        for first in range(1, units):
            yield first, 0, units - first
        return
    for middle in range(1, (units - 2) // (p - 2) + 1):
        rest = units - (p - 2) * middle
        for first in range(1, rest):
            yield first, middle, rest - first


def with_split(shape: Layout, layers: int, split: tuple[int, int, int]) -> Layout:
    """``shape`` with the split's first/last counts (``None`` for the even split)."""
    first, middle, last = split
    p = shape.pipeline
    if first == last and (p == 2 or first == middle) and first * p == layers:
        return shape.with_changes(first_stage_layers=None, last_stage_layers=None)
    return shape.with_changes(first_stage_layers=first, last_stage_layers=last)


def default_split(layers: int, p: int, v: int = 1) -> tuple[int | None, int | None]:
    """A valid (first, last) pair for a pipeline size (and ``v`` virtual stages, ``v`` dividing ``layers``) that
    may not divide the layers (``None``: even)."""
    if layers % (p * v) == 0:
        return None, None
    units = layers // v
    middle = units // p
    return (units - (p - 1) * middle) * v, middle * v


def _ends_seconds(
    model: TransformerSpec, cluster: Cluster, shape: Layout, params: PerfParams, cost: _LayerCost | None = None
) -> tuple[float, ...]:
    """(one layer's step, the embedding's, the output layer's, the pipeline sends'), seconds per micro-batch
    (``cost``: the shape's ``predict._layer_cost`` when the caller has it)."""
    from .collectives import Links
    from .predict import _layer_cost, _stage_time

    links = Links.of(cluster, params)
    c = _layer_cost(model, cluster, shape, params, links) if cost is None else cost
    layer = c.fwd + c.bwd + c.tp_fwd + c.tp_bwd + c.cp_fwd + c.cp_bwd + c.ep_fwd + c.ep_bwd
    p2p = _stage_time(model, cluster, shape, params, links, c, False, False, 1.0).p2p  # the same on every rank
    return layer, c.embedding, c.head_fwd + c.head_bwd, p2p


def splits_best_first(
    model: TransformerSpec, cluster: Cluster, shape: Layout, params: PerfParams, ends: tuple[float, ...] | None = None
) -> Iterator[tuple[float, Layout]]:
    """(time lower bound, layout) of every split of ``shape`` (v = 1, p >= 2), bounds non-decreasing (``ends``:
    :func:`_ends_seconds` of the shape when the caller has it)."""
    for lb, split in split_bounds(model, cluster, shape, params, ends):
        yield lb, with_split(shape, model.layers, split)


def split_bounds(
    model: TransformerSpec, cluster: Cluster, shape: Layout, params: PerfParams, ends: tuple[float, ...] | None = None
) -> Iterator[tuple[float, tuple[int, int, int]]]:
    """(time lower bound, ``(first, middle, last)``) of every split, as :func:`splits_best_first` (no layouts).

    With ``v`` virtual stages the counts are multiples of ``v`` and the bubble term is divided by ``v`` (the
    model's ``(p - 1) / v`` mean stages); the streams step by ``v``.
    """
    p, big_l, m, v = shape.pipeline, model.layers, shape.microbatches, shape.virtual_stages
    if big_l % v:
        return
    c, emb, head, p2p = _ends_seconds(model, cluster, shape, params) if ends is None else ends
    zb = shape.schedule.zero_bubble
    scale = m * (1 + params.stage_jitter * math.sqrt(2 * math.log(p)))
    bubble = (p - 1) / v * (1.0 / 3.0 if zb else 1.0) * ((big_l * c + emb + head) / p + p2p)
    base = bubble + params.iteration_overhead_s

    def bound(first: int, middle: int, rest: int) -> float:
        return scale * (max(first * c + emb, middle * c, (rest - first) * c + head) + p2p) + base

    heap: list[tuple[float, int, int, int, int, int]] = []  # (bound, order, first, middle, rest, step)
    units = big_l // v
    middles = [0] if p == 2 else [k * v for k in range(1, (units - 2) // (p - 2) + 1)]
    for middle in middles:
        rest = big_l - (p - 2) * middle
        balance = (rest * c + head - emb) / (2 * c)  # first * c + emb == (rest - first) * c + head
        start = min(max(v, math.floor(balance / v) * v), rest - v)
        heap.append((bound(start, middle, rest), len(heap), start, middle, rest, -v))
        if start + v <= rest - v:
            heap.append((bound(start + v, middle, rest), len(heap), start + v, middle, rest, v))
    heapq.heapify(heap)
    order = len(heap)
    while heap:
        lb, _, first, middle, rest, step = heapq.heappop(heap)
        yield lb, (first, middle, rest - first)
        nxt = first + step
        if v <= nxt <= rest - v:
            heapq.heappush(heap, (bound(nxt, middle, rest), order, nxt, middle, rest, step))
            order += 1
