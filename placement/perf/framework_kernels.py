"""The kernels torchtitan's transformer launches per layer on one GPU, in PyTorch eager and under torch.compile.

:func:`placement.perf.layer_cost.layer_ops` lists Megatron-LM's kernels (Transformer Engine's fusions: one QKV
product, one fc1 product of width ``2f`` for SwiGLU, fused norms, rotary and activation). A layout whose
:class:`~placement.perf.layout.Kernels` is ``eager`` or ``compiled`` gets the kernels of torchtitan 0.2.2's
``llama3`` model instead (``torchtitan/models/llama3/model/model.py``; ``tests/test_framework_kernels.py``
traces that module's aten operations and checks this list against them):

* **Products**: ``wq``, ``wk``, ``wv`` (three GEMMs, not one), ``wo``; ``w1`` and ``w3`` (two GEMMs of width
  ``f``), ``w2``. GEMMs are priced by shape as everywhere (:func:`placement.perf.kernels.gemm_seconds`), so three
  narrow products cost what their shapes cost.
* **Norms**: ``nn.RMSNorm``, one fused kernel forward and one backward on a GPU (``aten::_fused_rms_norm``,
  PyTorch 2.8 and later).
* **Rotary** (eager): ``xq.float()``, a complex multiply, ``type_as`` back, for q and for k: six kernels moving
  ``2e + 16`` bytes per element (``e`` bytes per element of the activations), the same backward.
* **Attention**: ``scaled_dot_product_attention`` with ``enable_gqa`` (no copies of K and V); the output's
  ``transpose(1, 2).contiguous()`` copies nothing (the fused kernels write the output token-major).
* **SwiGLU** (eager): ``silu`` and ``mul``, two kernels (backward: ``silu_backward`` and two products).
* **Residual adds**: one kernel each; backward, the gradient of the residual stream is summed where it forks,
  and the input gradients of the products one norm feeds (wq, wk, wv; w1, w3) are summed: three more adds.
* **Loss**: ``cross_entropy(pred.float())``: an fp32 copy of the logits, ``log_softmax``, ``nll_loss``; backward
  ``nll_loss_backward`` (zeros and a scatter), ``log_softmax_backward`` and the cast back.
* **FSDP2** (ZeRO stage 3): per layer the all-gather's copy-out into the unsharded parameters (forward, and again
  for the backward: parameters are resharded after the forward) and the gradients' copy-in for the
  reduce-scatter, cast to fp32 when gradients are reduced in fp32 (torchtitan's default).

Under **torch.compile** (torchtitan compiles each ``TransformerBlock`` and the loss) Inductor fuses each chain of
elementwise operations into one kernel that reads its inputs and writes its outputs once: rotary of q and k in one
kernel of ``2e`` bytes per element; ``silu(w1 x) * w3 x`` one kernel (``3e`` forward, ``5e`` backward); the first
residual add with the norm that follows it, and the sums of input gradients with the norms' backward; the
cross-entropy reading the bf16 logits once. The products, the attention and FSDP2's copies stay as in eager.

Bytes are per GPU: ``T = b s / cp`` tokens, heads, FFN width and vocabulary split over the tensor-parallel ranks,
norms and residual adds over the sequence-parallel ranks (torchtitan always shards the norms with TP).
**Selective checkpointing** under these kernels is torchtitan's per-op policy (:func:`selective_recomputed`,
:func:`selective_saved_bytes`), not Megatron-LM's core-attention recomputation.

**float8** (``layout.float8``, torchtitan's converter): the converted products (:func:`float8_products`) run at
the float8 peak with torchao's casts before them (:func:`float8_product`); FSDP2's float8 all-gather
(:func:`float8_gathered`).

What is not here: the host's time to issue eager operations (:func:`placement.perf.layer_cost.host_seconds`
charges it per layer), and the activations kept without or with full checkpointing (:mod:`placement.perf.memory`
keeps Megatron-LM's accounting for those).
"""

from __future__ import annotations

from functools import lru_cache

from .kernels import Work
from .layout import Float8Recipe, Kernels, Layout
from .transformer import TransformerSpec

#: One operator of a layer: (name, operator type, its kernels).
Op = tuple[str, str, tuple[Work, ...]]

#: The framework whose model these lists follow, and its release.
SOURCE = "torchtitan 0.2.2 (models/llama3), PyTorch >= 2.8"


def selective_recomputed(ops: list[Op]) -> list[Op]:
    """What torchtitan's per-op selective checkpointing (``selective_ac_option = "op"``) runs again in the backward.

    Its policy (``distributed/activation_checkpoint.py``) saves the outputs of the attention and of every ``mm``
    but each second one of a block (counted from 1 in execution order: wk, wo and w3 of a llama3 block are
    recomputed), and recomputes everything else; FSDP2's copies are paid in the backward anyway. A float8 product
    runs ``aten._scaled_mm``, which the policy neither saves nor counts: it is recomputed, and the parity counts
    the bf16 products only. The tensorwise amax reductions (``aten.max``) are saved, the rowwise ones
    (``aten.amax``) recomputed.
    """
    out, products = [], 0
    for op in ops:
        if op[1] == "MatMul" and _is_float8(op):
            out.append(op)
        elif op[1] == "MatMul":
            products += 1
            if products % 2 == 0:
                out.append(op)
        elif op[1] == "ReduceMax" and op[0].endswith(_SAVED_AMAX):
            continue
        elif op[1] not in ("Attention", "Copy"):
            out.append(op)
    return out


#: The suffix of the tensorwise amax reductions, which torchtitan's policy saves (``aten.max``).
_SAVED_AMAX = "_amax_tensorwise"


def _is_float8(op: Op) -> bool:
    return any(w.dtype == "fp8" for w in op[2])


def _element_bytes(layout: Layout) -> float:
    return 4.0 if layout.dtype.value in ("fp32", "tf32") else 2.0


def _stream(name: str, op_type: str, forward: float, backward: float, launches: int = 1) -> Op:
    """A streaming operator moving ``forward`` bytes, and ``backward`` bytes in its backward pass."""
    factor = backward / forward if forward > 0 else 0.0
    return (name, op_type, (Work("stream", nbytes=forward, launches=launches, backward_factor=factor),))


def float8_products(model: TransformerSpec, layout: Layout) -> frozenset[str]:
    """The products torchtitan's float8 converter makes ``Float8Linear`` (names of :data:`FLOAT8_PRODUCTS`).

    torchtitan's ``module_filter_fn``: an ``nn.Linear`` whose weight's two dimensions (before any parallelism)
    are multiples of 16, and that the filter does not skip. MoE experts are not ``nn.Linear``.
    """
    if layout.float8 is None:
        return frozenset()
    h, q, kv, f = model.hidden, model.heads * model.head_dim, model.groups * model.head_dim, model.ffn
    shapes = {"wq": (q, h), "wk": (kv, h), "wv": (kv, h), "wo": (h, q), "output": (model.vocab, h)}
    if not model.moe:
        shapes.update({"w1": (f, h), "w2": (h, f)} | ({"w3": (f, h)} if model.swiglu else {}))
    return frozenset(
        name for name, (rows, cols) in shapes.items()
        if rows % 16 == 0 and cols % 16 == 0 and name not in layout.float8.skip
    )  # fmt: skip


def float8_product(
    name: str, m: float, n: float, k: float, layout: Layout, converted: frozenset[str], module: str | None = None
) -> list[Op]:
    """A linear layer's product ``(m, n, k)`` (torchtitan's module ``module``, default ``name``), in bf16, or in
    float8 with torchao's casts before it.

    A float8 product reads one byte per operand element. Every operand a float8 product takes is cast: its
    absolute maximum (a reduction reading it) and a scaled conversion (reading it, writing one byte per element),
    for each layout a product needs it in. Forward: the input and the weight (with the float8 all-gather the weight
    arrives cast, with its scale). Backward: the output gradient for the input gradient's product and, unless
    the recipe keeps the weight gradient in bf16, again for the weight gradient's with the input; the weight
    again (with the float8 all-gather, a transposed copy of its float8 bytes). ``tests/test_framework_kernels.py``
    checks which products and which policy; the casts' operations are this model's accounting (torchao is not
    traced). Eager runs each amax as two kernels and each conversion as three; compiled, one each.
    """
    e = _element_bytes(layout)
    if (module or name) not in converted or layout.float8 is None:
        return [(name, "MatMul", (Work("gemm", m, n, k, element_bytes=e),))]
    f8 = layout.float8
    hp_wgrad = f8.recipe is Float8Recipe.ROWWISE_GW_HP
    x, w, g = m * k, n * k, m * n  # elements of the input, the weight and the output gradient
    w_forward = 0.0 if f8.all_gather else w
    read_fwd = x + w_forward  # tensors cast in the forward
    read_bwd = g * (1 if hp_wgrad else 2) + (0.0 if f8.all_gather else w) + (0.0 if hp_wgrad else x)
    transposed = 2.0 * w if f8.all_gather else 0.0  # the gathered float8 weight in the dgrad's layout
    eager = layout.kernels is Kernels.EAGER
    tensors = 1 if f8.all_gather else 2
    suffix = _SAVED_AMAX if f8.recipe is Float8Recipe.TENSORWISE else "_amax"
    amax = _stream(name + suffix, "ReduceMax", e * read_fwd, e * read_bwd, tensors * (2 if eager else 1))
    cast = _stream(
        name + "_cast", "Cast", (e + 1) * read_fwd, (e + 1) * read_bwd + transposed, tensors * (3 if eager else 1)
    )
    work = Work("gemm", m, n, k, element_bytes=1.0, dtype="fp8", wgrad_dtype="bf16" if hp_wgrad else None)
    return [amax, cast, (name, "MatMul", (work,))]


def torch_layer_ops(model: TransformerSpec, layout: Layout) -> list[Op]:
    """torchtitan's kernels of one transformer layer, one micro-batch, one GPU, in execution order.

    ``layout.kernels`` says eager or compiled (module docstring); the names of the products follow torchtitan's
    modules (``wq`` ... ``w3``). Not for ``Kernels.FUSED`` (Megatron-LM's list is
    :func:`placement.perf.layer_cost.layer_ops`).
    """
    return list(_layer_ops(model, kernel_fields(layout)))


def kernel_fields(layout: Layout) -> Layout:
    """The layout with only the fields a layer's kernel list reads, the rest at their defaults.

    Layouts that differ only in recomputation, pipelining or batch share one list (:func:`torch_layer_ops`
    computes it once for them); the result is valid wherever ``layout`` is.
    """
    return Layout(
        tensor=layout.tensor, context=layout.context, data=layout.data, expert=layout.expert,
        micro_batch=layout.micro_batch, sequence_parallel=layout.sequence_parallel, zero_stage=layout.zero_stage,
        dtype=layout.dtype, kernels=layout.kernels, float8=layout.float8, grad_reduce_fp32=layout.grad_reduce_fp32,
        replicate=layout.replicate,
    )  # fmt: skip


@lru_cache(maxsize=1024)
def _layer_ops(model: TransformerSpec, layout: Layout) -> tuple[Op, ...]:
    compiled = layout.kernels is Kernels.COMPILED
    e = _element_bytes(layout)
    t, cp = layout.tensor, layout.context
    s, b, h, d = model.seq_length, layout.micro_batch, model.hidden, model.head_dim
    tokens = b * s / cp
    sharded = tokens / (t if layout.sequence_parallel else 1)  # tokens of a norm or residual add
    q_width, kv_width, ffn = model.heads * d / t, model.groups * d / t, model.ffn / t
    norm = "RMSNormalization" if model.norm.value == "rmsnorm" else "LayerNormalization"

    def product(name: str, m: float, n: float, k: float) -> list[Op]:
        return float8_product(name, m, n, k, layout, converted)

    converted = float8_products(model, layout)

    def norm_op(name: str, summed: int) -> Op:
        """One fused kernel: reads x, writes y (+ fp32 statistics); backward reads x and dy, writes dx, after
        ``summed`` adds of the input gradients of the products the norm feeds (their dgrads, on every token)."""
        grads = summed * (e if compiled else 3 * e) * tokens * h  # compiled: the adds fused into the norm's backward
        return _stream(name, norm, 2 * e * sharded * h + 4 * sharded, 3 * e * sharded * h + grads)

    add = 3 * e * sharded * h  # read two, write one
    ops: list[Op] = [
        norm_op("attention_norm", 2),  # wq + wk + wv
        *product("wq", tokens, q_width, h),
        *product("wk", tokens, kv_width, h),
        *product("wv", tokens, kv_width, h),
    ]
    if model.rope:
        elements = tokens * (q_width + kv_width)
        if compiled:
            ops.append(_stream("rope", "RotaryEmbedding", 2 * e * elements, 2 * e * elements))
        else:  # float(), complex mul, type_as; for q and for k
            ops.append(_stream("rope", "RotaryEmbedding", (2 * e + 16) * elements, (2 * e + 16) * elements, 6))
    heads = b * model.heads / t
    ops += [
        ("attention", "Attention", (Work("attention", s / cp, s, d, heads, element_bytes=e, causal=True),)),
        *product("wo", tokens, h, q_width),
    ]
    summed = 1 if model.swiglu else 0  # w1 + w3
    if compiled:  # the residual add fused with the norm after it: read x and the branch, write h and the norm
        ops.append(
            _stream("residual1_ffn_norm", norm, 4 * e * sharded * h, (5 * e * sharded + summed * e * tokens) * h)
        )
    else:
        ops += [_stream("residual1", "Add", add, add), norm_op("ffn_norm", summed)]
    ops += _feed_forward(model, layout, tokens, ffn, e, compiled, converted)
    ops.append(_stream("residual2", "Add", add, add))
    if layout.zero_stage == 3:
        ops.append(_fsdp_copies(model, layout, e))
    return tuple(ops)


def _feed_forward(
    model: TransformerSpec, layout: Layout, tokens: float, ffn: float, e: float, compiled: bool,
    converted: frozenset[str],
) -> list[Op]:  # fmt: skip
    """The feed-forward block: w1, w3 (SwiGLU), the activation, w2; MoE experts as grouped products (never float8:
    torchtitan's experts are not ``nn.Linear``)."""
    h = model.hidden
    if model.moe:
        local = model.num_experts / layout.expert
        rows = tokens * model.moe_topk * layout.expert / model.num_experts
        topk = model.moe_topk
        ops: list[Op] = [
            ("router", "MatMul", (Work("gemm", tokens, model.num_experts, h, element_bytes=e),)),
            _stream("permute", "Gather", 4 * e * tokens * topk * h, 4 * e * tokens * topk * h, 2),
        ]
        up: list[Op] = [("w1", "MatMul", (Work("gemm", rows, ffn, h, local, element_bytes=e),))]
        gate: list[Op] = [("w3", "MatMul", up[0][2])]
        down: list[Op] = [("w2", "MatMul", (Work("gemm", rows, h, ffn, local, element_bytes=e),))]
    else:
        ops, topk = [], 1
        up, gate = (float8_product(name, tokens, ffn, h, layout, converted) for name in ("w1", "w3"))
        down = float8_product("w2", tokens, h, ffn, layout, converted)
    elements = tokens * ffn * topk
    if model.swiglu:
        ops += [*up, *gate]
        if compiled:
            ops.append(_stream("swiglu", "Swiglu", 3 * e * elements, 5 * e * elements))
        else:
            ops += [
                _stream("silu", "Silu", 2 * e * elements, 3 * e * elements),
                _stream("mul", "Mul", 3 * e * elements, 6 * e * elements, 1),
            ]
    else:
        ops += [*up, _stream("gelu", "Gelu", 2 * e * elements, 3 * e * elements)]
    return ops + down


def _fsdp_copies(model: TransformerSpec, layout: Layout, e: float) -> Op:
    """FSDP2's per-layer copies: all-gather copy-out (forward and backward), gradient copy-in (backward).

    With the float8 all-gather the converted weights are copied out at one byte per element, and each gather
    first casts the GPU's fp32 shard of them (read 4 bytes, write 1; and read 4 more for its amax unless the scale
    is precomputed once per step).
    """
    experts = model.num_experts * model.expert_parameters() / (layout.expert if model.moe else 1)
    weights = (model.layer_parameters() - model.num_experts * model.expert_parameters() + experts) / layout.tensor
    grad_in = (2.0 + 4.0) if layout.fp32_grads() else 2.0 * e
    low, _ = float8_gathered(model, layout)
    shard_cast = 0.0
    if low > 0 and layout.float8 is not None:
        shard_cast = (
            (5.0 + (0.0 if layout.float8.precompute_scale else 4.0)) * low / (layout.fsdp_shard * layout.context)
        )
    copy_out = 2 * e * (weights - low) + 2 * low + shard_cast
    return _stream("fsdp_copies", "Copy", copy_out, copy_out + grad_in * weights)


def float8_gathered(model: TransformerSpec, layout: Layout) -> tuple[float, int]:
    """(parameters on one GPU, weight tensors) of one layer that FSDP2 gathers in float8 (0 without the float8
    all-gather)."""
    if layout.float8 is None or not layout.float8.all_gather or layout.zero_stage != 3:
        return 0.0, 0
    h, q, kv, f = model.hidden, model.heads * model.head_dim, model.groups * model.head_dim, model.ffn
    sizes = {"wq": q * h, "wk": kv * h, "wv": kv * h, "wo": q * h, "w1": f * h, "w2": f * h, "w3": f * h}
    names = [name for name in float8_products(model, layout) if name in sizes]
    return sum(sizes[name] for name in names) / layout.tensor, len(names)


def torch_output_ops(model: TransformerSpec, layout: Layout) -> list[Op]:
    """The final norm, the output product and torchtitan's cross-entropy of one micro-batch (eager or compiled)."""
    e, t = _element_bytes(layout), layout.tensor
    tokens = layout.micro_batch * model.seq_length / layout.context
    vocab = model.padded_vocab(t) / t
    norm = "RMSNormalization" if model.norm.value == "rmsnorm" else "LayerNormalization"
    logits = tokens * vocab
    if layout.kernels is Kernels.COMPILED:  # read the logits once; backward reads them and writes the gradient
        loss = _stream("loss", "SoftmaxCrossEntropyLoss", e * logits, 2 * e * logits, 2)
    else:  # float(), log_softmax, nll_loss; zeros + scatter, log_softmax_backward, cast back
        loss = _stream("loss", "SoftmaxCrossEntropyLoss", (e + 12) * logits, (20 + e) * logits, 3)
    return [
        _stream("final_norm", norm, 2 * e * tokens * model.hidden, 3 * e * tokens * model.hidden),
        *float8_product("lm_head", tokens, vocab, model.hidden, layout, float8_products(model, layout), "output"),
        loss,
    ]


def selective_saved_bytes(model: TransformerSpec, layout: Layout) -> float:
    """Bytes one layer keeps per micro-batch on one GPU under torchtitan's per-op selective checkpointing.

    The block's input (the checkpoint's), the outputs of the products the policy saves (each odd one of the block:
    wq, wv, w1, w2 of a llama3 block; a product's output is ``m x n`` of its GEMM), the attention's output and its
    fp32 log-sum-exp per row and head, and with tensor parallelism the outputs of the two reduce-scatters (also
    saved by the policy). Everything else is recomputed in the backward (:func:`selective_recomputed`).
    """
    e = _element_bytes(layout)
    t = layout.tensor
    tokens = layout.micro_batch * model.seq_length / layout.context
    sharded = tokens / (t if layout.sequence_parallel else 1)
    ops = torch_layer_ops(model, layout)
    recomputed = {name for name, _, _ in selective_recomputed(ops)}
    saved = e * sharded * model.hidden  # the block's input
    for name, kind, works in ops:
        if kind == "MatMul" and name not in recomputed:
            saved += sum(e * w.m * w.n * w.batch for w in works)
        elif kind == "Attention":
            (work,) = works
            saved += e * tokens * model.heads * model.head_dim / t + 4.0 * work.batch * work.m
        elif kind == "ReduceMax" and name not in recomputed and layout.float8 is not None:  # tensorwise amaxes
            saved += e * (1 if layout.float8.all_gather else 2)
    if t > 1:
        saved += 2 * e * sharded * model.hidden
    return saved
