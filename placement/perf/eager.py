"""Plain PyTorch eager on one GPU: the kernels ``measure``'s torch model launches, and the host that issues them.

Framework ``torch-eager`` of the performance model. A training iteration of :mod:`placement.perf.torch_model`
under ``torch.autocast(bf16)`` is a sequence of aten operations, each issued by the CPU (Python, the
dispatcher, autograd and autocast) and, when it is not a view, run as one GPU kernel. This module lists them
per layer, forward and backward, as :class:`Op` (GPU seconds, aten operations), and replays the sequence on
two clocks: the host issues operation ``i`` at ``host_i = host_{i-1} + c``, and the GPU runs it when both the
host has issued it and the previous kernel has finished, ``gpu_i = max(gpu_{i-1}, host_i) + g_i``. When
kernels are shorter than the host's time per operation, the step is host-bound (small micro-batches); when
they are longer, the host runs ahead and the GPU is busy throughout.

What each layer launches (``b`` sequences of ``s`` tokens, ``T = b s``, hidden ``h``, ``a`` heads of ``d``,
``g`` key/value groups, FFN ``f``):

* the residual stream is fp32 (the embedding's table is fp32; autocast does not cast a lookup), so each norm
  reads and writes fp32; **RMSNorm** is composite: ``pow``, ``mean``, ``add``, ``rsqrt``, ``mul``, ``mul``
  (LayerNorm: one kernel);
* every linear layer casts its fp32 weight to bf16 (autocast, each micro-batch) and, for an fp32 input, its
  input; then one GEMM (``addmm`` with a bias);
* **RoPE** on q and k: two ``to`` casts of the tables, ``mul``, ``neg``, ``cat``, ``mul``, ``add``;
* **GQA**: ``repeat_interleave`` copies K and V to ``a`` heads; fused SDPA (flash) forward and backward;
  the transposed output is copied contiguous before the projection;
* **SwiGLU**: ``silu`` and ``mul`` separate (GELU: one kernel); residual adds fp32 + bf16 -> fp32;
* the **loss**: logits GEMM, ``logits.float()`` (fp32 copy of ``T x V``), ``log_softmax``, ``nll_loss``;
  backward ``nll_loss_backward`` (zeros + scatter), ``log_softmax_backward``, the cast back;
* **MoE**: router GEMM, fp32 softmax, ``topk``, a zero output, then per expert ``eq``, ``nonzero`` (which
  waits for the GPU: the host cannot run ahead past it), two gathers, the expert MLP on its ``T k / E`` rows,
  a ``mul`` by the routing weight and an ``index_add``;
* backward: each GEMM's dgrad and wgrad, each elementwise kernel's backward at
  ``PerfParams.elementwise_bwd_factor`` times its forward bytes, the casts' gradients (bf16 -> fp32) and the
  accumulation into ``.grad`` (from the second micro-batch on);
* **AdamW** (``fused=True``): one pass over parameters, gradients and both moments (fp32: read 16, write 12
  bytes per parameter) in a few launches; ``zero_grad(set_to_none=True)`` launches nothing.

Parameters are measured, none fitted to a run: GEMM and attention rates and streaming bandwidth from the
device's profile (:mod:`placement.perf.kernels`), the host's time per aten operation ``c`` as
:data:`HOST_OP_TRIVIAL_OPS` times the profile's launch cost (the time of a trivial in-place ``add_``, which on
a GPU is the host's dispatch plus the launch). :data:`HOST_OP_TRIVIAL_OPS` is the time of one aten operation
of a training layer (Python module calls, autograd recording and the backward engine included) in units of a
trivial ``add_``, measured on a CPU by ``scripts/measure_eager_host.py`` (tiny shapes, so that the arithmetic
is negligible).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import PlacementError
from . import kernels
from .eager_memory import EagerMemory, eager_memory_parts, parameter_tensors
from .hardware import Accelerator, Dtype
from .layout import Layout
from .params import PerfParams
from .transformer import Norm, TransformerSpec

#: Host time of one aten operation of an eager training layer, in trivial in-place ``add_`` operations
#: (measured by ``scripts/measure_eager_host.py``: see the module docstring).
HOST_OP_TRIVIAL_OPS = 1.7

FRAMEWORK = "torch-eager"


@dataclass(frozen=True)
class Op:
    """``ops`` aten operations issued by the host, running ``gpu`` seconds of kernels; ``sync``: the host waits."""

    gpu: float
    ops: int = 1
    sync: bool = False


@dataclass(frozen=True)
class EagerPrediction:
    """Seconds per iteration and peak allocated bytes of one eager training iteration on one GPU."""

    iteration_seconds: float
    gpu_seconds: float
    host_seconds: float
    memory: float
    aten_ops: int
    memory_parts: EagerMemory | None = None  #: the memory by part (``memory`` is its peak)


def check_one_device(layout: Layout) -> None:
    """Refuse a layout plain torch eager on one device does not run (one line naming the flag).

    Raises
    ------
    PlacementError
        Tensor, pipeline, context, expert or data parallelism, or fp8.
    """
    for name, flag in (("tensor", "--tensor-model-parallel-size"), ("pipeline", "--pipeline-model-parallel-size"),
                       ("context", "--context-parallel-size"), ("expert", "--expert-model-parallel-size"),
                       ("data", "the data-parallel size")):  # fmt: skip
        if getattr(layout, name) != 1:
            raise PlacementError(f"{FRAMEWORK} runs on one device: {flag} must be 1, got {getattr(layout, name)}")
    if layout.dtype is Dtype.FP8:
        raise PlacementError(
            f"{FRAMEWORK} trains in bf16, fp16 or fp32 (fp8 needs Transformer Engine): drop --fp8-format"
        )


class _Pricer:
    """Seconds of kernels on one accelerator (bf16 activations under autocast)."""

    def __init__(self, acc: Accelerator, params: PerfParams, dtype: Dtype) -> None:
        self.acc, self.params, self.dtype = acc, params, dtype
        self.bw = kernels.hbm_bytes_per_s(acc, params)
        self.launch = params.kernel_launch_s
        self.autocast = dtype in (Dtype.BF16, Dtype.FP16)  # fp32 weights cast to 16 bits per micro-batch

    def stream(self, nbytes: float, ops: int = 1) -> Op:
        return Op(nbytes / self.bw + self.launch if nbytes > 0 else 0.0, ops)

    def gemm(self, m: float, n: float, k: float, ops: int = 1) -> Op:
        return Op(kernels.gemm_seconds(m, n, k, self.acc, self.dtype, self.params), ops)

    def view(self, ops: int = 1) -> Op:
        return Op(0.0, ops)


def _linear(p: _Pricer, m: float, n: float, k: float, cast_input: bool, bias: bool) -> tuple[list[Op], list[Op]]:
    """Forward and backward operations of an autocast linear layer (m tokens, k in, n out)."""
    cast_input = cast_input and p.autocast
    fwd = [p.stream(6.0 * n * k)] if p.autocast else []  # the weight's bf16 copy
    if cast_input:
        fwd.append(p.stream(6.0 * m * k))
    if bias:
        fwd.append(p.stream(6.0 * n))
    fwd += [p.view(), p.gemm(m, n, k), p.view(2)]  # t, mm/addmm, views
    bwd = [p.view(2), p.gemm(m, k, n), p.gemm(k, n, m), p.view(2)]
    if p.autocast:
        bwd.append(p.stream(6.0 * n * k))  # the weight gradient bf16 -> fp32
    if cast_input:
        bwd.append(p.stream(6.0 * m * k))
    if bias:
        bwd += [p.stream(2.0 * m * n), p.stream(6.0 * n)]
    return fwd, bwd


def _elementwise(p: _Pricer, fwd_bytes: list[float], views: int = 0) -> tuple[list[Op], list[Op]]:
    """Elementwise kernels of ``fwd_bytes`` each, and their backward (the params' factor, two ops each)."""
    f = p.params.elementwise_bwd_factor
    fwd = [p.stream(x) for x in fwd_bytes] + ([p.view(views)] if views else [])
    bwd = [Op(p.stream(f * x).gpu, 2) for x in fwd_bytes] + ([p.view(views)] if views else [])
    return fwd, bwd


def _norm(p: _Pricer, model: TransformerSpec, T: float) -> tuple[list[Op], list[Op]]:
    h = model.hidden
    if model.norm is Norm.RMSNORM:  # pow, mean, add, rsqrt, mul, mul (fp32)
        return _elementwise(p, [8 * T * h, 4 * T * h, 8 * T, 8 * T, 8 * T * h + 4 * T, 8 * T * h], views=2)
    return _elementwise(p, [8 * T * h])


def _attention(p: _Pricer, model: TransformerSpec, b: float) -> tuple[list[Op], list[Op]]:
    s, h, a, g, d = model.seq_length, model.hidden, model.heads, model.groups, model.head_dim
    T = b * s
    fwd, bwd = _linear(p, T, (a + 2 * g) * d, h, True, model.bias)
    sub = [p.view(7)]  # split, three views, three transposes
    subb = [p.view(4), p.stream(2.0 * 2 * T * (a + 2 * g) * d)]  # the split's gradient: a cat
    if model.rope:
        for heads in (a, g):
            e = T * heads * d  # elements
            f, bk = _elementwise(p, [8.0 * s * d, 4 * e, 2 * e, 4 * e, 4 * e, 6 * e], views=3)
            sub += f
            subb += bk
    if g != a:
        rep = T * a * d
        f, bk = _elementwise(p, [2.0 * (T * g * d + rep)] * 2, views=4)
        sub += f
        subb += bk + [p.stream(4.0 * rep)]
    fa, ba = kernels.flash_attention_seconds(b * a, s, s, d, True, p.acc, p.dtype, p.params)
    sub += [Op(fa, 2)]
    subb += [Op(ba, 2)]
    sub += [p.view(2), p.stream(4.0 * T * a * d)]  # transpose, contiguous copy
    subb += [p.view(2)]
    pf, pb = _linear(p, T, h, a * d, False, model.bias)
    return fwd + sub + pf, pb + subb[::-1] + bwd


def _mlp(p: _Pricer, model: TransformerSpec, m: float) -> tuple[list[Op], list[Op]]:
    h, f = model.hidden, model.ffn
    f1, b1 = _linear(p, m, (2 if model.swiglu else 1) * f, h, True, model.bias)
    act = [4.0 * m * f, 6.0 * m * f] if model.swiglu else [4.0 * m * f]
    fa, ba = _elementwise(p, act, views=1 if model.swiglu else 0)
    f2, b2 = _linear(p, m, h, f, False, model.bias)
    return f1 + fa + f2, b2 + ba + b1


def _moe(p: _Pricer, model: TransformerSpec, T: float) -> tuple[list[Op], list[Op]]:
    h, E, k = model.hidden, model.num_experts, model.moe_topk
    rf, rb = _linear(p, T, E, h, True, False)
    fwd = rf + [p.stream(6.0 * T * E), p.stream(4.0 * T * E), p.stream(4.0 * T * h), p.view(2)]
    bwd = [p.stream(8.0 * T * E, 3)] + rb
    rows = T * k / E  # tokens per expert; the residual stream (and so the gathered rows) is fp32
    for _ in range(E):
        mf, mb = _mlp(p, model, rows)
        # eq, nonzero (the host waits for the count), two gathers; the expert; mul by the weight, index_add
        fwd += [p.stream(T * k, 1), Op(p.stream(T * k).gpu, 2, sync=True), p.stream(8.0 * rows * h, 2)]
        fwd += mf + [p.stream(6.0 * rows * h, 3), p.stream(8.0 * T * h + 12.0 * rows * h)]
        bwd += [p.stream(8.0 * rows * h, 2), p.stream(8.0 * rows * h, 2), p.stream(6.0 * rows * h)] + mb
        bwd += [p.stream(4.0 * T * h + 12.0 * rows * h, 3), p.stream(12.0 * T * h)]  # index backward, accumulate
    return fwd, bwd


def layer_ops(p: _Pricer, model: TransformerSpec, b: float) -> tuple[list[Op], list[Op]]:
    """Forward and backward operations of one transformer layer for a micro-batch of ``b`` sequences."""
    T = b * model.seq_length
    h = model.hidden
    n1f, n1b = _norm(p, model, T)
    af, ab = _attention(p, model, b)
    n2f, n2b = _norm(p, model, T)
    mf, mb = _moe(p, model, T) if model.moe else _mlp(p, model, T)
    add_f, add_b = [p.stream(10.0 * T * h)], [p.stream(12.0 * T * h), p.stream(6.0 * T * h)]
    fwd = n1f + af + add_f + n2f + mf + add_f
    bwd = add_b + mb + n2b + add_b + ab + n1b
    return fwd, bwd


def _head_ops(p: _Pricer, model: TransformerSpec, b: float) -> tuple[list[Op], list[Op]]:
    """Embedding, final norm, output GEMM and the fp32 cross-entropy, forward and backward."""
    T, h, V = b * model.seq_length, model.hidden, model.padded_vocab(1)
    fwd = [p.stream(8.0 * T * h)] + ([] if model.rope else [p.stream(12.0 * T * h, 2)])
    bwd = [p.stream(8.0 * model.vocab * h + 8.0 * T * h, 3)]  # embedding_dense_backward (zeros + index_add)
    nf, nb = _norm(p, model, T)
    lf, lb = _linear(p, T, V, h, True, False)
    ce_f = [p.stream(6.0 * T * V), p.view(2), p.stream(8.0 * T * V), p.stream(4.0 * T, 2)]
    ce_b = [p.stream(4.0 * T * V, 3), p.stream(12.0 * T * V, 2), p.stream(6.0 * T * V)]
    return fwd + nf + lf + ce_f, ce_b + lb + nb + bwd


def _optimizer_ops(p: _Pricer, parameters: float, tensors: int) -> list[Op]:
    """Fused AdamW: one pass reading parameters, gradients, moments (16 B) and writing three (12 B)."""
    chunks = max(1, tensors // 64)
    return [Op(28.0 * parameters / p.bw + chunks * p.launch, 2 * chunks)]


def _replay(sequence: list[Op], host_per_op: float, serial: bool = False) -> tuple[float, float, float]:
    """(finish, GPU busy, host busy) seconds of issuing ``sequence`` on one host thread to one GPU stream.

    ``serial``: the device is the host's CPU, each kernel runs when issued (host and kernel times add up).
    """
    if serial:
        busy = sum(op.gpu for op in sequence)
        host = sum(op.ops for op in sequence) * host_per_op
        return busy + host, busy, host
    host = gpu = busy = 0.0
    for op in sequence:
        host += op.ops * host_per_op
        if op.gpu > 0:
            gpu = max(gpu, host) + op.gpu
            busy += op.gpu
        if op.sync:
            host = gpu
    return max(gpu, host), busy, host


def eager_predict(
    model: TransformerSpec, acc: Accelerator, micro_batch: int, micro_batches: int, params: PerfParams,
    parameters: float, dtype: Dtype = Dtype.BF16, serial: bool = False,
) -> EagerPrediction:  # fmt: skip
    """Seconds per iteration of ``micro_batches`` forward/backward passes and a fused AdamW step in torch eager.

    Parameters
    ----------
    model : TransformerSpec
        The transformer (built as :mod:`placement.perf.torch_model` builds it).
    acc : Accelerator
        The GPU (a profiled one prices kernels at measured rates).
    micro_batch, micro_batches : int
        Sequences per micro-batch and micro-batches per iteration.
    params : PerfParams
        ``kernel_launch_s`` is the profile's launch cost (the host's time per trivial operation).
    parameters : float
        The model's parameter count.
    dtype : Dtype
        Autocast's data type (fp32: no casts are priced, still the same kernels).
    serial : bool
        The device is the CPU that issues the operations (no overlap of host and kernels; the memory's dropout
        masks in the input's type).

    Returns
    -------
    EagerPrediction
    """
    p = _Pricer(acc, params, dtype)
    fwd, bwd = layer_ops(p, model, micro_batch)
    hf, hb = _head_ops(p, model, micro_batch)
    one = hf[:1] + fwd * model.layers + hf[1:] + hb[:-1] + bwd * model.layers + hb[-1:]
    grad_accumulate = [p.stream(12.0 * parameters / max(1, parameter_tensors(model)))] * parameter_tensors(model)
    sequence = one + (one + grad_accumulate) * (micro_batches - 1)
    sequence += _optimizer_ops(p, parameters, parameter_tensors(model))
    total, busy, host = _replay(sequence, HOST_OP_TRIVIAL_OPS * params.kernel_launch_s, serial)
    parts = eager_memory_parts(model, micro_batch, dtype, cpu=serial)
    return EagerPrediction(total, busy, host, parts.peak(micro_batches), sum(op.ops for op in sequence), parts)
