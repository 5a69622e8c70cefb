"""Memory of ``measure``'s eager training loop by part: what :mod:`placement.perf.torch_model` holds on one device.

A training iteration of the torch model (fp32 parameters, ``torch.autocast`` to bf16 or fp16, or plain fp32)
holds, at the peak of its first backward:

* **weights**, **gradients** and the **optimizer**'s AdamW moments: 4, 4 and 8 bytes per parameter, and AdamW's
  ``step`` (one fp32 scalar per parameter tensor);
* **weight copies**: under autocast each linear layer's weight cast to 16 bits, kept by autograd for the
  backward (the embedding's lookup is not cast; a tied output layer casts the embedding's table);
* **activations**: every tensor autograd saves for the backward, per token (``e`` = 2 under autocast, else 4;
  ``T`` tokens, hidden ``h``, ``a`` heads of ``d``, ``g`` key/value groups, FFN ``f``):

  - each norm its fp32 input and statistics (RMSNorm, composite: also its normalised fp32 output, ``8h + 4``;
    LayerNorm: ``4h + 8``);
  - each linear layer its input (``e h`` for the QKV projection and fc1; the projection's input is the
    attention's output, the same storage);
  - attention: the rotated q (``e a d``) and k (``e g d``, repeated to ``a`` heads under GQA: ``e a d``), v (under
    GQA repeated: ``e a d``), the fused QKV output whole where q or v is still a view of it (no rotary, or no
    GQA: ``e (a + 2g) d``), the output (``e a d``) and the fp32 log-sum-exp (``4 a``); the rotary tables
    (``cos``, ``sin``; cast per call under autocast, four per layer; one fp32 pair otherwise);
  - the MLP: GELU its input and output (``2 e f``), SwiGLU the fused gate-and-up output, the SiLU output and
    the product (``4 e f``); a routed MLP the router's input, fp32 softmax and top-k indices, and per routed row
    the expert's input and intermediates, its output, the routing weight, the fp32 weighted output and the
    row and slot indices;
  - dropout masks where the spec has dropout (the input's type on a CPU, one byte on a GPU);
  - the token ids (``8 b (s + 1)`` bytes: inputs and labels are views of one tensor) and the positions' ids, the
    final norm, the output layer's input (``e h``), the labels' copy and the fp32 log-softmax (``4 V``);
* the peak holds them all at once from the second micro-batch of an iteration on (:meth:`EagerMemory.peak`);
* **loss**: the transient at the loss beyond what is saved: the 16-bit logits, their fp32 copy (fp32 runs have
  none) and the logits' gradient in fp32 (``(e + 4 + 4) V`` per token under autocast, ``8 V`` in fp32).

Each part except the transient loss is checked against a CPU run of the torch model by
``tests/test_eager_memory.py`` (saved tensors by storage, the optimizer's state, the gradients), mixture-of-experts
layers included (their routed rows sum to ``k`` per token whatever the routing).
"""

from __future__ import annotations

from dataclasses import dataclass

from .hardware import Dtype
from .transformer import Norm, TransformerSpec

#: Autocast's 16-bit types (the rest run in fp32).
_AUTOCAST = (Dtype.BF16, Dtype.FP16)


@dataclass(frozen=True)
class EagerMemory:
    """Bytes of one eager training iteration on one device, by part (module docstring)."""

    weights: float
    gradients: float
    optimizer: float
    weight_copies: float
    activations: float
    loss: float

    @property
    def total(self) -> float:
        """Every part held at once."""
        return self.weights + self.gradients + self.optimizer + self.weight_copies + self.activations + self.loss

    def peak(self, micro_batches: int) -> float:
        """The allocator's peak over iterations of ``micro_batches`` micro-batches.

        From the second micro-batch on, the forward runs with the summed gradients held, so every part is held at
        the loss. With one micro-batch, ``zero_grad(set_to_none=True)`` leaves no gradient at the loss: the backward
        allocates them as it frees the activations and the weight copies, so the peak is the larger of the two ends.
        """
        if micro_batches > 1:
            return self.total
        at_loss = self.weight_copies + self.activations + self.loss
        return self.weights + self.optimizer + max(at_loss, self.gradients)


def cast_parameters(model: TransformerSpec) -> float:
    """Weights autocast casts and autograd keeps: every linear layer's weight (not its bias, which the backward
    does not need), the routers' and the output layer's (the embedding's table when tied); not the embedding's
    lookup, the norms' or the learned positions'."""
    h, a, g, d, f = model.hidden, model.heads, model.groups, model.head_dim, model.ffn
    mlp = ((2 if model.swiglu else 1) * f * h + f * h) * (model.num_experts if model.moe else 1)
    router = model.num_experts * h if model.moe else 0
    layer = (a + 2 * g) * d * h + a * d * h + mlp + router
    return model.layers * layer + model.padded_vocab(1) * h


def _norm_bytes(model: TransformerSpec) -> float:
    return 8.0 * model.hidden + 4.0 if model.norm is Norm.RMSNORM else 4.0 * model.hidden + 8.0


def layer_saved_bytes(model: TransformerSpec, e: float, mask: float) -> float:
    """Bytes one layer saves for the backward per token (module docstring), rotary tables excluded."""
    h, a, g, d, f = model.hidden, model.heads, model.groups, model.head_dim, model.ffn
    gqa = g != a
    attention = e * h + e * a * d + 4.0 * a  # QKV input, output, log-sum-exp
    if model.rope:
        attention += e * a * d  # rotated q
        attention += 0.0 if gqa else e * g * d  # rotated k (under GQA saved after its repeat, below)
    if not model.rope or not gqa:  # q or v still a view of the fused QKV output
        attention += e * (a + 2 * g) * d
    if gqa:
        attention += 2 * e * a * d  # k and v repeated to a heads
    mlp = e * h + (4.0 if model.swiglu else 2.0) * e * f
    if model.moe:  # the router's input, its fp32 softmax and top-k indices; then per routed row (k per token):
        # the expert's input and intermediates, its output and routing weight (the product, fp32: the residual
        # stream's type), the product, and the row and slot indices (one int64 pair)
        k = model.moe_topk
        row = (2 * e + 4.0) * h + (4.0 if model.swiglu else 2.0) * e * f + 4.0 + 16.0
        mlp = e * h + 4.0 * model.num_experts + 8.0 * k + k * row
    masks = 2 * mask * h if model.dropout else 0.0
    return 2 * _norm_bytes(model) + attention + mlp + masks


def torch_parameters(model: TransformerSpec) -> float:
    """Parameters of the torch model: the spec's, with the vocabulary padded (``padded_vocab(1)``) in the
    embedding and, untied, the output layer."""
    extra = (model.padded_vocab(1) - model.vocab) * model.hidden
    return model.parameters() + extra * (1 if model.tied_embeddings else 2)


def eager_memory_parts(
    model: TransformerSpec, micro_batch: int, dtype: Dtype = Dtype.BF16, cpu: bool = False
) -> EagerMemory:
    """Bytes of ``measure``'s eager training loop by part (module docstring).

    Parameters
    ----------
    model : TransformerSpec
        The transformer as :mod:`placement.perf.torch_model` builds it.
    micro_batch : int
        Sequences per micro-batch.
    dtype : Dtype
        Autocast's type (bf16 or fp16), or fp32 (no autocast).
    cpu : bool
        The device is a CPU (dropout masks in the input's type instead of one byte).
    """
    s, h, d, V = model.seq_length, model.hidden, model.head_dim, model.padded_vocab(1)
    T = micro_batch * s
    autocast = Dtype(dtype) in _AUTOCAST
    e = 2.0 if autocast else 4.0
    mask = e if cpu else 1.0
    tables = model.layers * 4 * e * s * d if autocast else 2 * 4.0 * s * d  # rotary cos and sin
    head = _norm_bytes(model) + e * h + 8.0 + 4.0 * V  # final norm, output layer's input, labels, log-softmax
    embedding_mask = (4.0 if cpu else 1.0) * h if model.dropout else 0.0  # dropout of the fp32 embedding
    activations = T * (model.layers * layer_saved_bytes(model, e, mask) + head + embedding_mask)
    activations += 8.0 * micro_batch * (s + 1)  # the token ids (inputs and labels are views of one tensor)
    activations += tables if model.rope else 8.0 * s  # or the positions' indices
    activations += 4.0  # the loss
    tensors, parameters = parameter_tensors(model), torch_parameters(model)
    return EagerMemory(
        weights=4.0 * parameters,
        gradients=4.0 * parameters,
        optimizer=8.0 * parameters + 4.0 * tensors,
        weight_copies=2.0 * cast_parameters(model) if autocast else 0.0,
        activations=activations,
        loss=((e + 8.0) if autocast else 8.0) * T * V,
    )


def parameter_tensors(model: TransformerSpec) -> int:
    """Parameter tensors of the torch model (embedding, positions, norms, each linear layer's weight and bias)."""
    norm = 2 if model.norm is Norm.LAYERNORM and model.bias else 1
    linear = 2 if model.bias else 1
    experts = model.num_experts * 2 * linear + 1 if model.moe else 2 * linear
    per_layer = 2 * norm + 2 * linear + experts
    return 1 + (0 if model.rope else 1) + model.layers * per_layer + norm + (0 if model.tied_embeddings else 1)
