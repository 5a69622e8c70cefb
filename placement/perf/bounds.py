"""Lower bounds of the search (:mod:`placement.perf.search`): memory every layout of a family needs, and the
least iteration time of a shape and of all its recompute variants (each a property of the model)."""

from __future__ import annotations

import math

from .hardware import Cluster
from .layout import Layout
from .memory import memory_breakdown, static_parts
from .params import DEFAULT_PARAMS, PerfParams
from .transformer import TransformerSpec


def static_memory_bound(
    model: TransformerSpec, layout: Layout, params: PerfParams = DEFAULT_PARAMS, any_split: bool = False
) -> float:
    """Bytes every layout of the layout's family needs whatever its micro-batch, schedule or recomputation.

    The family is (t, p, d, cp, ep, ZeRO stage, dtype): weights, gradients, optimizer state and the reserve
    of the first and the last pipeline rank do not depend on the rest, and the memory of the most loaded
    GPU is at least each rank's (activations and the output layer are non-negative). ``any_split``: a bound
    for every layer split of the family (:mod:`placement.perf.splits`), not only the layout's own.
    """
    if any_split and layout.pipeline > 1:
        # every split has a rank of at least ceil(L / p) layers; embedding and output layer only add
        most = -(-model.layers // layout.pipeline)
        return sum(static_parts(model, layout, None, most)) + params.reserve_bytes
    worst = 0.0
    for stage in {0, layout.pipeline - 1}:
        m = memory_breakdown(model, layout, params, stage)
        worst = max(worst, m.weights + m.gradients + m.optimizer_state + m.reserve)
    return worst


def _layer_seconds(model: TransformerSpec, cluster: Cluster, layout: Layout, params: PerfParams) -> float:
    """Forward + backward of one layer and one micro-batch with its exposed tensor/context/expert communication.

    The model's own per-layer cost (``predict._layer_cost``); it depends on t, cp, ep, micro-batch, sequence
    parallel, dtype and the overlap flags only (the tensor, context and expert groups are innermost, so d and p
    do not move them).
    """
    from .collectives import Links
    from .layer_cost import _layer_cost

    c = _layer_cost(model, cluster, layout, params, Links.of(cluster, params))
    return c.fwd + c.bwd + c.tp_fwd + c.tp_bwd + c.cp_fwd + c.cp_bwd + c.ep_fwd + c.ep_bwd


def time_bound(layer_seconds: float, model: TransformerSpec, layout: Layout, params: PerfParams) -> float:
    """A lower bound of the predicted iteration time of ``layout`` and of every recompute variant of it.

    The model's iteration is ``m * critical stage * (1 + jitter * sqrt(2 ln p)) + bubble + data-parallel +
    optimizer + overhead`` where every stage runs at least its ``L/p`` layers (so the critical stage and the
    mean stage of the bubble ``(p-1)/v * mean`` are at least ``L/p * layer_seconds``) and the other terms are
    non-negative.
    """
    p, v, m = layout.pipeline, layout.virtual_stages, layout.microbatches
    return _bound(layer_seconds, model.layers, p, v, m, layout.schedule.zero_bubble, params)


def _bound(layer_seconds: float, layers: int, p: int, v: int, m: int, zb: bool, params: PerfParams) -> float:
    bubble = (p - 1) / v * (1.0 / 3.0 if zb else 1.0)
    sync = m * params.stage_jitter * math.sqrt(2 * math.log(p))  # the model's stage-jitter term, x critical stage
    return (m + sync + bubble) * (layers / p) * layer_seconds + params.iteration_overhead_s
