"""HuggingFace ``config.json`` files as :class:`~placement.perf.transformer.TransformerSpec` shapes.

:func:`spec_from_hf_config` reads the config of six decoder-only families; :func:`model_from_argument` takes
what a user types after ``--model``: a preset name of :data:`~placement.perf.transformer.MODELS` or the path of
such a file (JSON only, at most :data:`MAX_CONFIG_BYTES`; nothing in it is run).

==========  =========================================================================================
model_type  what the shape is
==========  =========================================================================================
llama       grouped-query attention, SwiGLU, RMSNorm, RoPE; ``attention_bias``/``mlp_bias`` as given
mistral     as llama; the sliding window is not modelled (attention is priced as full causal)
qwen2       as llama, with biases on the query, key and value projections (not on the output one)
mixtral     as mistral, each FFN a mixture of ``num_local_experts`` experts, ``num_experts_per_tok`` active
gpt2        multi-head attention, GeLU FFN, LayerNorm, learned positions, biases, tied embeddings
gpt_neox    GeLU FFN, LayerNorm, biases, RoPE; the parallel residual is priced as sequential (same
            kernels, same FLOPs) and partial rotary (``rotary_pct``) as full (it adds no weights)
==========  =========================================================================================

The parameter count of the shape equals the model's own (``sum(p.numel() for p in model.parameters())``):
every weight and bias of the embeddings, layers, final norm and, when untied, the output layer.
The training sequence length is ``max_position_embeddings`` (``n_positions`` for GPT-2), at most
:data:`DEFAULT_SEQ_CAP` for rotary models (their table size is a context limit, not a training length; pass
``--seq-length`` to choose).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ..errors import InvalidModelSpecError, label, quote
from .transformer import MAX_SIZE, MODELS, Norm, TransformerSpec, model_preset

#: Largest config file read (a real config.json is a few kB).
MAX_CONFIG_BYTES = 1_000_000

#: Longest training sequence taken from a rotary model's ``max_position_embeddings``.
DEFAULT_SEQ_CAP = 8192

#: ``model_type`` values read, in the order the documentation lists them.
FAMILIES = ("llama", "mistral", "qwen2", "mixtral", "gpt2", "gpt_neox")


class _Fields:
    """Typed reads of one config's fields; every error names the file and the field."""

    def __init__(self, data: Mapping[str, Any], source: str) -> None:
        self.data = data
        self.source = label(source)

    def fail(self, name: str, rule: str) -> InvalidModelSpecError:
        return InvalidModelSpecError(f"{self.source}: {name}: {rule}")

    def size(self, name: str, default: int | None = None, *, aliases: tuple[str, ...] = ()) -> int:
        """A positive integer field (``aliases``: older names of it), ``default`` when absent (required if None)."""
        for key in (name, *aliases):
            if key in self.data and self.data[key] is not None:
                value = self.data[key]
                if isinstance(value, bool) or not isinstance(value, int):
                    raise self.fail(key, f"must be an integer, got {label(repr(value), 40)}")
                if not 1 <= value <= MAX_SIZE:
                    raise self.fail(key, f"must be from 1 to {MAX_SIZE:,}, got {value:,}")
                return value
        if default is None:
            raise self.fail(name, "missing (required for this model_type)")
        return default

    def flag(self, name: str, default: bool) -> bool:
        value = self.data.get(name, default)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise self.fail(name, f"must be true or false, got {label(repr(value), 40)}")
        return value

    def rate(self, name: str) -> float:
        """A dropout probability (0 when absent)."""
        value = self.data.get(name, 0.0)
        if value is None:
            return 0.0
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
            raise self.fail(name, f"must be a number from 0 to 1, got {label(repr(value), 40)}")
        return float(value)


def _llama_like(fields: _Fields, name: str, family: str) -> TransformerSpec:
    hidden = fields.size("hidden_size")
    heads = fields.size("num_attention_heads")
    groups = fields.size("num_key_value_heads", heads)
    if hidden % heads:
        raise fields.fail("hidden_size", f"{hidden:,} is not divisible by num_attention_heads {heads:,}")
    if "head_dim" in fields.data and fields.data["head_dim"] is not None:
        head_dim = fields.size("head_dim")
        if head_dim != hidden // heads:
            raise fields.fail(
                "head_dim", f"{head_dim:,} differs from hidden_size / num_attention_heads = {hidden // heads:,} "
                "(not modelled)"
            )  # fmt: skip
    if heads % groups:
        raise fields.fail("num_key_value_heads", f"{groups:,} does not divide num_attention_heads {heads:,}")
    attention_bias = fields.flag("attention_bias", False) if family == "llama" else False
    mlp_bias = fields.flag("mlp_bias", False) if family == "llama" else False
    if attention_bias != mlp_bias:
        raise fields.fail(
            "mlp_bias", f"{mlp_bias} with attention_bias {attention_bias}: not modelled (both or neither)"
        )
    experts, topk = 1, 1
    if family == "mixtral":
        experts = fields.size("num_local_experts", 8)
        topk = fields.size("num_experts_per_tok", 2)
        if topk > experts:
            raise fields.fail("num_experts_per_tok", f"{topk} exceeds num_local_experts {experts}")
    positions = fields.size("max_position_embeddings", DEFAULT_SEQ_CAP)
    return TransformerSpec(
        layers=fields.size("num_hidden_layers"),
        hidden=hidden,
        heads=heads,
        seq_length=min(positions, DEFAULT_SEQ_CAP),
        vocab=fields.size("vocab_size"),
        ffn_hidden=fields.size("intermediate_size"),
        query_groups=groups,
        swiglu=True,
        norm=Norm.RMSNORM,
        rope=True,
        bias=attention_bias,
        qkv_bias=family == "qwen2",
        dropout=fields.rate("attention_dropout") > 0,
        tied_embeddings=fields.flag("tie_word_embeddings", False),
        num_experts=experts,
        moe_topk=topk,
        name=name,
    )


def _gpt2(fields: _Fields, name: str, family: str) -> TransformerSpec:
    hidden = fields.size("n_embd", aliases=("hidden_size",))
    heads = fields.size("n_head", aliases=("num_attention_heads",))
    if hidden % heads:
        raise fields.fail("n_embd", f"{hidden:,} is not divisible by n_head {heads:,}")
    positions = fields.size("n_positions", aliases=("max_position_embeddings",))
    dropout = max(fields.rate("resid_pdrop"), fields.rate("attn_pdrop"), fields.rate("embd_pdrop"))
    return TransformerSpec(
        layers=fields.size("n_layer", aliases=("num_hidden_layers",)),
        hidden=hidden,
        heads=heads,
        seq_length=fields.size("n_ctx", positions),
        vocab=fields.size("vocab_size"),
        ffn_hidden=fields.size("n_inner", 4 * hidden),
        dropout=dropout > 0,
        tied_embeddings=fields.flag("tie_word_embeddings", True),
        max_position_embeddings=positions,
        name=name,
    )


def _gpt_neox(fields: _Fields, name: str, family: str) -> TransformerSpec:
    hidden = fields.size("hidden_size")
    heads = fields.size("num_attention_heads")
    if hidden % heads:
        raise fields.fail("hidden_size", f"{hidden:,} is not divisible by num_attention_heads {heads:,}")
    bias = fields.flag("attention_bias", True)
    if not bias:
        raise fields.fail("attention_bias", "false: not modelled (GPT-NeoX's MLP keeps its biases)")
    dropout = max(fields.rate("hidden_dropout"), fields.rate("attention_dropout"))
    positions = fields.size("max_position_embeddings", 2048)
    return TransformerSpec(
        layers=fields.size("num_hidden_layers"),
        hidden=hidden,
        heads=heads,
        seq_length=min(positions, DEFAULT_SEQ_CAP),
        vocab=fields.size("vocab_size"),
        ffn_hidden=fields.size("intermediate_size", 4 * hidden),
        rope=True,
        dropout=dropout > 0,
        tied_embeddings=fields.flag("tie_word_embeddings", False),
        name=name,
    )


_READERS: dict[str, Callable[[_Fields, str, str], TransformerSpec]] = {
    "llama": _llama_like,
    "mistral": _llama_like,
    "qwen2": _llama_like,
    "mixtral": _llama_like,
    "gpt2": _gpt2,
    "gpt_neox": _gpt_neox,
}


def spec_from_hf_config(data: Mapping[str, Any], source: str) -> TransformerSpec:
    """The shape described by a HuggingFace ``config.json`` (already parsed).

    Parameters
    ----------
    data : mapping
        The parsed JSON object.
    source : str
        Where it came from (the file name), for the messages and the spec's name.

    Returns
    -------
    TransformerSpec
        Named after ``source``'s folder (``Meta-Llama-3-8B/config.json`` gives ``Meta-Llama-3-8B``).

    Raises
    ------
    InvalidModelSpecError
        An unknown ``model_type``, a missing or wrongly typed field, a size out of range: one line naming
        ``source`` and the field.

    Examples
    --------
    >>> cfg = {"model_type": "gpt2", "n_embd": 768, "n_layer": 12, "n_head": 12, "n_positions": 1024,
    ...        "vocab_size": 50257}
    >>> spec_from_hf_config(cfg, "gpt2/config.json").parameters()
    124439808
    """
    fields = _Fields(data if isinstance(data, Mapping) else {}, source)
    if not isinstance(data, Mapping):
        raise InvalidModelSpecError(f"{fields.source}: not a JSON object (a config.json holds one)")
    family = data.get("model_type")
    if family not in _READERS:
        shown = "missing" if family is None else quote(str(family), 40)
        raise fields.fail("model_type", f"{shown}: not one of {', '.join(FAMILIES)}")
    path = Path(source)
    name = path.parent.name if path.name == "config.json" and path.parent.name else path.stem
    try:
        return _READERS[str(family)](fields, name or str(family), str(family))
    except InvalidModelSpecError as exc:
        message = str(exc)
        if message.startswith(fields.source):
            raise
        raise fields.fail("model", message) from None


def load_hf_config(path: str | Path) -> TransformerSpec:
    """:func:`spec_from_hf_config` of a file (a regular file of at most :data:`MAX_CONFIG_BYTES`, JSON)."""
    from ..io import parse_json, read_file_bytes

    data = read_file_bytes(path, InvalidModelSpecError, limit=MAX_CONFIG_BYTES)
    return spec_from_hf_config(parse_json(data, str(path), InvalidModelSpecError), str(path))


def model_from_argument(text: str) -> TransformerSpec:
    """A preset of :data:`~placement.perf.transformer.MODELS` by name, or the path of a HuggingFace ``config.json``.

    Raises
    ------
    InvalidModelSpecError
        Neither a preset nor a readable config (one line naming the file and field, or the known presets).
    """
    key = text.strip().lower().replace("_", "-").replace(" ", "-")
    if key in MODELS:
        return model_preset(text)
    if text.endswith(".json") or os.sep in text or os.path.isfile(text):  # (isfile: False on any OS error)
        return load_hf_config(text)
    raise InvalidModelSpecError(f"--model {quote(text)}: neither a preset ({', '.join(MODELS)}) nor a config.json file")
