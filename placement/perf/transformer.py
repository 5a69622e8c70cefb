"""Shapes of GPT/Llama-style decoder-only transformers (dense or mixture-of-experts).

Names follow Megatron-LM: ``hidden`` is h, ``heads`` a, ``query_groups`` g (GQA; g = a is multi-head
attention), ``ffn_hidden`` f (the per-expert FFN width for MoE), ``seq_length`` s, ``vocab`` V.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from enum import Enum

from ..errors import InvalidModelSpecError

#: Largest value of any size field (layers, widths, sequence, vocabulary, experts): keeps every count finite.
MAX_SIZE = 2**31


class Norm(str, Enum):
    """Normalisation layer kind."""

    LAYERNORM = "layernorm"
    RMSNORM = "rmsnorm"

    def __str__(self) -> str:
        return str(self.value)


@dataclass(frozen=True)
class TransformerSpec:
    """A decoder-only transformer.

    Parameters
    ----------
    layers, hidden, heads, seq_length, vocab : int
        Depth, model width, attention heads, training sequence length and (unpadded) vocabulary.
    ffn_hidden : int or None
        FFN width (per expert); ``None`` means 4h (GeLU) or Megatron's SwiGLU default ``int(8h/3/64)*64``.
    query_groups : int or None
        Key/value heads (GQA); ``None`` means ``heads`` (multi-head attention).
    swiglu : bool
        Gated FFN (three weight matrices) instead of GeLU (two).
    norm : Norm
        LayerNorm (weight and bias) or RMSNorm (weight only).
    rope : bool
        Rotary position embeddings; otherwise learned absolute ones (``max_position_embeddings x h`` weights).
    bias : bool
        Linear layers have biases (GPT) or not (Llama: ``--disable-bias-linear``).
    qkv_bias : bool
        Only the query, key and value projections have biases (Qwen2; Megatron's ``--add-qkv-bias`` with
        ``--disable-bias-linear``); implied by ``bias``.
    dropout : bool
        Hidden and attention dropout are on (Megatron's default 0.1) or both 0.
    tied_embeddings : bool
        The output layer shares the input embedding's weights.
    num_experts, moe_topk : int
        Experts per MoE FFN (1: dense) and experts each token is routed to.
    max_position_embeddings : int or None
        Learned position table size (``None``: ``seq_length``).
    name : str
        A label (not part of equality: two specs of the same shape are equal).
    """

    layers: int
    hidden: int
    heads: int
    seq_length: int
    vocab: int
    ffn_hidden: int | None = None
    query_groups: int | None = None
    swiglu: bool = False
    norm: Norm = Norm.LAYERNORM
    rope: bool = False
    bias: bool = True
    qkv_bias: bool = False
    dropout: bool = True
    tied_embeddings: bool = True
    num_experts: int = 1
    moe_topk: int = 1
    max_position_embeddings: int | None = None
    name: str = field(default="transformer", compare=False)

    def __post_init__(self) -> None:
        for field_name in ("layers", "hidden", "heads", "seq_length", "vocab", "num_experts", "moe_topk"):
            value = getattr(self, field_name)
            if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_SIZE:
                raise InvalidModelSpecError(
                    f"{self.name}: {field_name} must be an integer from 1 to {MAX_SIZE}, got {value!r}"
                )
        for field_name in ("ffn_hidden", "query_groups", "max_position_embeddings"):
            value = getattr(self, field_name)
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_SIZE
            ):
                raise InvalidModelSpecError(f"{self.name}: {field_name} must be a positive integer, got {value!r}")
        object.__setattr__(self, "norm", Norm(self.norm))
        if self.hidden % self.heads:
            raise InvalidModelSpecError(
                f"{self.name}: hidden size {self.hidden} is not divisible by the {self.heads} attention heads"
            )
        if self.heads % self.groups:
            raise InvalidModelSpecError(
                f"{self.name}: {self.heads} attention heads are not divisible by {self.groups} query groups"
            )
        if self.moe_topk > self.num_experts:
            raise InvalidModelSpecError(f"{self.name}: moe_topk {self.moe_topk} exceeds the {self.num_experts} experts")

    @property
    def ffn(self) -> int:
        """The FFN width f actually used."""
        if self.ffn_hidden is not None:
            return self.ffn_hidden
        return int(4 * self.hidden * 2 / 3 / 64) * 64 if self.swiglu else 4 * self.hidden

    @property
    def groups(self) -> int:
        """Key/value heads g."""
        return self.query_groups if self.query_groups is not None else self.heads

    @property
    def head_dim(self) -> int:
        """Per-head width d = h / a."""
        return self.hidden // self.heads

    @property
    def moe(self) -> bool:
        """Whether the FFN is a mixture of experts."""
        return self.num_experts > 1

    @property
    def positions(self) -> int:
        """Rows of the learned position table (0 with rotary embeddings)."""
        return 0 if self.rope else (self.max_position_embeddings or self.seq_length)

    def padded_vocab(self, tensor: int = 1, multiple: int = 128) -> int:
        """Megatron's padded vocabulary: the next multiple of ``multiple * tensor``."""
        unit = multiple * tensor
        return -(-self.vocab // unit) * unit

    def attention_parameters(self) -> int:
        """Weights (and biases) of one attention block: QKV and output projections."""
        h, d = self.hidden, self.head_dim
        qkv = h * (self.heads + 2 * self.groups) * d
        proj = self.heads * d * h
        qkv_biases = (self.heads + 2 * self.groups) * d if (self.bias or self.qkv_bias) else 0
        return qkv + proj + qkv_biases + (h if self.bias else 0)

    def expert_parameters(self) -> int:
        """Weights (and biases) of one FFN (one expert of an MoE layer)."""
        h, f = self.hidden, self.ffn
        weights = (3 if self.swiglu else 2) * h * f
        biases = ((2 * f if self.swiglu else f) + h) if self.bias else 0
        return weights + biases

    def norm_parameters(self) -> int:
        """Weights of one norm."""
        return self.hidden * (2 if self.norm is Norm.LAYERNORM else 1)

    def layer_parameters(self) -> int:
        """All weights of one transformer layer (every expert, the router and two norms)."""
        router = self.hidden * self.num_experts if self.moe else 0
        return (
            self.attention_parameters()
            + self.num_experts * self.expert_parameters()
            + router
            + 2 * self.norm_parameters()
        )

    def embedding_parameters(self, vocab: int | None = None) -> int:
        """Input embedding (and learned positions) for a (padded) vocabulary."""
        return (vocab or self.vocab) * self.hidden + self.positions * self.hidden

    def parameters(self, vocab: int | None = None) -> int:
        """Total weights (untied output layer included, final norm included).

        >>> MODELS["gpt3-175b"].parameters() // 10**9
        174
        """
        output = 0 if self.tied_embeddings else (vocab or self.vocab) * self.hidden
        return (
            self.layers * self.layer_parameters() + self.embedding_parameters(vocab) + output + self.norm_parameters()
        )

    def active_parameters(self) -> int:
        """Weights used per token (top-k experts of each MoE layer)."""
        inactive = (self.num_experts - self.moe_topk) * self.expert_parameters() * self.layers
        return self.parameters() - inactive

    def with_changes(self, **changes: object) -> TransformerSpec:
        """A copy with some fields replaced (validated again)."""
        return replace(self, **changes)  # type: ignore[arg-type]


def _llama(name: str, layers: int, hidden: int, ffn: int, heads: int) -> TransformerSpec:
    return TransformerSpec(
        layers=layers,
        hidden=hidden,
        heads=heads,
        seq_length=8192,
        vocab=128256,
        ffn_hidden=ffn,
        query_groups=8,
        swiglu=True,
        norm=Norm.RMSNORM,
        rope=True,
        bias=False,
        dropout=False,
        tied_embeddings=False,
        name=name,
    )


#: Published model shapes (GPT-3: Brown et al. 2020; Llama 3: Meta 2024; Mixtral: Mistral AI 2024).
MODELS: dict[str, TransformerSpec] = {
    "gpt3-175b": TransformerSpec(layers=96, hidden=12288, heads=96, seq_length=2048, vocab=50257, name="gpt3-175b"),
    "llama3-8b": _llama("llama3-8b", 32, 4096, 14336, 32),
    "llama3-70b": _llama("llama3-70b", 80, 8192, 28672, 64),
    "llama3-405b": _llama("llama3-405b", 126, 16384, 53248, 128),
    # Llama's block shape (grouped queries, SwiGLU, RMSNorm, RoPE) with 8 experts, 2 active per token.
    "mixtral-8x7b": _llama("mixtral-8x7b", 32, 4096, 14336, 32).with_changes(
        seq_length=4096, vocab=32000, num_experts=8, moe_topk=2
    ),
}


def model_preset(name: str) -> TransformerSpec:
    """The preset called ``name`` (case-insensitive, ``_`` and spaces read as ``-``)."""
    key = name.strip().lower().replace("_", "-").replace(" ", "-")
    if key not in MODELS:
        raise InvalidModelSpecError(f"model {name!r}: unknown preset (known: {', '.join(MODELS)})")
    return MODELS[key]
