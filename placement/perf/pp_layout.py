"""Megatron-Core's free pipeline layout, ``--pipeline-model-parallel-layout``: read and write the modelled family.

Megatron-Core 0.16 (``megatron/core/transformer/pipeline_parallel_layer_layout.py``,
``PipelineParallelLayerLayout.parse_str_to_list`` and ``validate_layer_layout``; the conflicts in
``TransformerConfig.__post_init__``) reads a string of stages separated by ``|``: ``E`` the embedding, ``t`` a
decoder layer, ``L`` the loss (output layer), ``m`` an MTP layer; ``x*n`` and ``(...)*n`` repeat, commas are
cosmetic. The number of stages is a multiple of the pipeline size p, ``v = stages / p`` virtual stages, and stage
``k`` runs on pipeline rank ``k mod p`` as its virtual stage ``k // p``. It must start with ``E``, end with ``L``
(each exactly once) and hold exactly ``--num-layers`` ``t``; empty stages are allowed; it cannot be combined with
``--decoder-first/last-pipeline-num-layers`` (nor the ``account-for-embedding/loss`` options).

The performance model covers the layouts whose ranks' virtual stages hold equal layers and every rank at least
one decoder layer: any count per rank (a multiple of v). Those are read into a
:class:`~placement.perf.layout.Layout` (``virtual_stages`` and ``pipeline_layers``, which the layout stores as
``first_stage_layers`` / ``last_stage_layers`` or the even split where those express it); any other accepted
string (unequal chunks of one rank, a rank holding only the loss, MTP layers) is refused in one line naming the
rule.
"""

from __future__ import annotations

import re

from ..errors import InvalidLayoutError, quote
from .layout import Layout, stage_layers
from .transformer import TransformerSpec

_FLAG = "--pipeline-model-parallel-layout"


#: Most characters a layout string may unroll to (a hostile ``(t)*99999999999`` would fill memory first).
MAX_UNROLLED = 1_000_000


def parse_stages(text: str) -> list[str]:
    """The stages of a layout string, repetitions unrolled (Megatron-Core's ``parse_str_to_list`` grammar)."""
    flat = text.replace(",", "").replace(" ", "")
    room = [MAX_UNROLLED - len(flat)]  # what the repetitions may still add

    def repeat(match: re.Match) -> str:
        digits = match.group(2)
        count = int(digits) if len(digits) <= 9 else MAX_UNROLLED + 1
        room[0] -= len(match.group(1)) * max(count - 1, 0)
        if room[0] < 0:
            raise InvalidLayoutError(
                f"{_FLAG}: the repetition {quote(match.group(0), 40)} unrolls past {MAX_UNROLLED:,} characters"
            )
        return match.group(1) * count

    for pattern in (r"\(([^)]+)\)\*(\d+)", r"(.)\*(\d+)"):  # (..)*n first, then x*n, as Megatron-Core does
        flat = re.sub(pattern, repeat, flat)
    stages = flat.split("|")
    for stage in stages:
        bad = set(stage) - set("ELtm")
        if bad:
            raise InvalidLayoutError(
                f"{_FLAG} {quote(text)}: unknown layer character {quote(sorted(bad)[0])} (E, t, L, m)"
            )
    return stages


def read_pipeline_layout(text: str, layers: int, p: int) -> tuple[int, tuple[int, ...]]:
    """(virtual stages v, decoder layers of each pipeline rank, first rank first) of a layout string.

    Raises
    ------
    InvalidLayoutError
        One line: a rule Megatron-Core enforces, or a layout outside the modelled family.
    """
    stages = parse_stages(text)
    if len(stages) % p:
        raise InvalidLayoutError(f"{_FLAG}: {len(stages)} stages are not a multiple of pipeline size {p}")
    v = len(stages) // p
    flat = "".join(stages)  # stage k = virtual stage k // p of rank k % p: the string is in layer order
    if not flat.startswith("E") or not flat.endswith("L") or flat.count("E") != 1 or flat.count("L") != 1:
        raise InvalidLayoutError(f"{_FLAG}: must start with E (embedding) and end with L (loss), each once")
    if flat.count("t") != layers:
        raise InvalidLayoutError(f"{_FLAG}: {flat.count('t')} decoder layers (t), but --num-layers is {layers}")
    if "m" in flat:
        raise InvalidLayoutError(f"{_FLAG}: MTP layers (m) are not modelled")
    counts = [[stages[k * p + r].count("t") for k in range(v)] for r in range(p)]
    if any(len(set(chunks)) > 1 for chunks in counts):
        raise InvalidLayoutError(f"{_FLAG}: modelled only when each rank's virtual stages hold equal layers")
    per_rank = tuple(chunks[0] * v for chunks in counts)
    if min(per_rank) == 0:
        raise InvalidLayoutError(f"{_FLAG}: a rank without decoder layers is not modelled")
    return v, per_rank


def pipeline_layout_string(model: TransformerSpec, layout: Layout) -> str:
    """The layout as ``--pipeline-model-parallel-layout`` (``read_pipeline_layout`` reads it back): ``p v``
    stages, stage k holding rank ``k mod p``'s chunk ``k // p`` (its layers / v), ``E`` first, ``L`` last."""
    p, v = layout.pipeline, layout.virtual_stages
    per_chunk = [n // v for n in stage_layers(model, layout)]
    stages = []
    for k in range(p * v):
        rank = k % p
        body = f"t*{per_chunk[rank]}" if per_chunk[rank] > 1 else "t" * per_chunk[rank]
        stages.append(("E" if k == 0 else "") + body + ("L" if k == p * v - 1 else ""))
    return "|".join(stages)
