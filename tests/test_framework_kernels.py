"""placement/perf/framework_kernels.py: torchtitan's kernels per layer, checked against its installed source.

The block is torchtitan 0.2.2's own ``TransformerBlock`` (``models/llama3/model/model.py``), its classes and
functions read from the installed source (the package itself imports tokenizers and more that the export extra
does not install), run on the CPU in bf16 under a dispatch mode that records every aten operation that is not
a view, and the module it ran in.
"""

from __future__ import annotations

import ast
import importlib.util
import math
from collections import Counter
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace
from typing import cast

import pytest

from placement.errors import PlacementError
from placement.perf.framework_kernels import float8_products, selective_recomputed, torch_layer_ops, torch_output_ops
from placement.perf.hardware import Cluster, Dtype, accelerator
from placement.perf.kernels import Work
from placement.perf.layer_cost import layer_ops, output_ops
from placement.perf.layout import Float8Recipe, Float8Training, Kernels, Layout
from placement.perf.predict import predict
from placement.perf.transformer import MODELS

torch = pytest.importorskip("torch")

#: aten operations that move no data (shape changes the dispatch mode does not flag as views).
NO_DATA = {"_unsafe_view"}


def _torchtitan_root() -> Path | None:
    try:
        spec = importlib.util.find_spec("torchtitan")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    root = Path(next(iter(spec.submodule_search_locations)))
    return root if (root / "models/llama3/model/model.py").is_file() else None


ROOT = _torchtitan_root()
needs_torchtitan = pytest.mark.skipif(ROOT is None, reason="torchtitan's source (the export extra)")


def _definitions(path: Path, names: set[str]) -> str:
    """The source of the module-level functions and classes ``names`` of ``path``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    body = [n for n in tree.body if isinstance(n, ast.FunctionDef | ast.ClassDef) and n.name in names]
    assert {n.name for n in body} == names, f"{path}: {names - {n.name for n in body}} not found"
    return ast.unparse(ast.Module(body=body, type_ignores=[]))


def _block(heads: int = 4, kv_heads: int = 2, dim: int = 64):
    """torchtitan's TransformerBlock (its installed source), bf16, SDPA attention."""
    from torch import nn
    from torch.nn import functional
    from torch.nn.attention import SDPBackend, sdpa_kernel

    assert ROOT is not None
    names: dict[str, object] = {
        "torch": torch, "F": functional, "nn": nn, "math": math, "cast": cast, "sdpa_kernel": sdpa_kernel,
        "SDPBackend": SDPBackend, "trunc_normal_": nn.init.trunc_normal_, "ClassVar": object,
        # names of the annotations and of the attention types the SDPA block does not use
        "AttentionMasksType": object, "BlockMask": object, "VarlenMetadata": object, "TransformerModelArgs": object,
        "FlexAttentionWrapper": object, "VarlenAttentionWrapper": object,
    }  # fmt: skip
    exec(_definitions(ROOT / "models/attention.py", {"ScaledDotProductAttentionWrapper"}), names)  # noqa: S102
    model_py = ROOT / "models/llama3/model/model.py"
    wanted = {"reshape_for_broadcast", "apply_rotary_emb", "Attention", "FeedForward", "TransformerBlock"}
    exec(_definitions(model_py, wanted), names)  # noqa: S102
    args = SimpleNamespace(dim=dim, n_heads=heads, n_kv_heads=kv_heads, attn_type="sdpa", multiple_of=16,
                           ffn_dim_multiplier=None, norm_eps=1e-5, depth_init=True, n_layers=1)  # fmt: skip
    return names["TransformerBlock"](0, args).to(torch.bfloat16)  # type: ignore[operator]


def _trace(block, seq: int = 8, batch: int = 2):
    """[(module or '<backward>', aten operation, tensor shapes)] of one forward and backward of ``block``."""
    from torch.utils._python_dispatch import TorchDispatchMode

    stack: list[str] = []
    for name, module in block.named_modules():
        module.register_forward_pre_hook(lambda _m, _a, name=name: stack.append(name))
        module.register_forward_hook(lambda _m, _a, _o: (stack.pop(), None)[1])
    head_dim = block.attention.head_dim
    freqs = torch.polar(
        torch.ones(seq, head_dim // 2), torch.outer(torch.arange(seq).float(), torch.rand(head_dim // 2))
    )
    x = torch.randn(batch, seq, block.dim, dtype=torch.bfloat16, requires_grad=True)
    ops: list[tuple[str, str, list[tuple[int, ...]]]] = []
    calls.clear()

    class Record(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: ANN001, ANN204
            name = func.overloadpacket.__name__
            out = func(*args, **(kwargs or {}))
            if not func.is_view and name not in NO_DATA:
                shapes = [tuple(a.shape) for a in args if isinstance(a, torch.Tensor)]
                where = stack[-1] if stack else "<backward>"
                ops.append((where, name, shapes))
                if where != "<backward>":
                    first = out[0] if isinstance(out, tuple) else out
                    outputs = [o for o in (out if isinstance(out, tuple) else (out,)) if isinstance(o, torch.Tensor)]
                    nbytes = sum(o.numel() * o.element_size() for o in outputs[:2])  # sdpa: output and log-sum-exp
                    calls.append((func, args, nbytes if isinstance(first, torch.Tensor) else 0))
            return out

    with Record():
        block(x, freqs, None).float().sum().backward()
    return ops


#: The forward operations of the last trace: (aten overload, arguments, bytes of its outputs).
calls: list = []


@pytest.fixture(scope="module")
def traced():
    if ROOT is None:
        pytest.skip("torchtitan's source (the export extra)")
    return _trace(_block())


def _ours(kernels: Kernels = Kernels.EAGER):
    model = MODELS["llama3-8b"]
    return {name: (kind, works) for name, kind, works in torch_layer_ops(model, Layout(kernels=kernels))}


def _forward(traced, module: str) -> Counter:
    """The aten operations run directly in ``module`` (not in its children) in the forward pass."""
    return Counter(op for where, op, _ in traced if where == module)


@needs_torchtitan
def test_the_products_are_torchtitans_linear_layers(traced):
    """Seven products, by torchtitan's names (wq, wk, wv separate; w1 and w3 separate), each dgrad + wgrad."""
    ran = {where.rsplit(".", 1)[-1] for where, op, _ in traced if op == "mm" and where != "<backward>"}
    ours = {name for name, (kind, _) in _ours().items() if kind == "MatMul"}
    assert ran == ours == {"wq", "wk", "wv", "wo", "w1", "w2", "w3"}
    backward = sum(1 for where, op, _ in traced if where == "<backward>" and op == "mm")
    assert backward == 2 * len(ours)


@needs_torchtitan
def test_rotary_is_six_kernels_and_the_attention_output_is_not_copied(traced):
    """apply_rotary_emb: float(), a complex multiply, type_as, for q and k; contiguous() copies nothing."""
    assert _forward(traced, "attention") == Counter({"_to_copy": 4, "mul": 2})
    (work,) = _ours()["rope"][1]
    assert work.launches == 6
    assert "contiguous" not in _ours()


@needs_torchtitan
def test_attention_reads_the_key_value_heads_without_copies(traced):
    """SDPA with enable_gqa: K and V enter with their 2 heads (no repeat_kv copies)."""
    (attention,) = [shapes for where, op, shapes in traced if where == "attention.inner_attention"]
    query, key, value = attention[:3]
    assert query[1] == 4 and key[1] == value[1] == 2


@needs_torchtitan
def test_swiglu_and_residual_adds_are_separate_kernels_in_eager(traced):
    assert _forward(traced, "feed_forward") == Counter({"silu": 1, "mul": 1})
    assert _forward(traced, "") == Counter({"add": 2})  # the block's two residual adds
    ours = _ours()
    assert {"silu", "mul", "residual1", "residual2"} <= set(ours)
    # backward: two residual forks and three sums of input gradients (wq + wk + wv: two, w1 + w3: one), besides
    # the adds inside the two norms' backward (the CPU's decomposition of rms_norm; one fused kernel on a GPU)
    adds = sum(1 for where, op, _ in traced if where == "<backward>" and op == "add")
    assert adds - 2 * _norm_backward_adds() == 5


def _norm_backward_adds() -> int:
    """The adds of one nn.RMSNorm's backward on this machine (what the block's trace holds per norm)."""
    from torch.utils._python_dispatch import TorchDispatchMode

    norm = torch.nn.RMSNorm(64, eps=1e-5).to(torch.bfloat16)
    x = torch.randn(2, 8, 64, dtype=torch.bfloat16, requires_grad=True)
    y = norm(x).float().sum()
    ops: list[str] = []

    class Record(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: ANN001, ANN204
            ops.append(func.overloadpacket.__name__)
            return func(*args, **(kwargs or {}))

    with Record():
        y.backward()
    return ops.count("add")


@needs_torchtitan
def test_the_norms_are_torchs_rms_norm_one_kernel_on_a_gpu(traced):
    """nn.RMSNorm: aten::_fused_rms_norm, one CUDA kernel (on the CPU it decomposes, as the trace shows)."""
    block = _block()
    assert type(block.attention_norm) is torch.nn.RMSNorm and type(block.ffn_norm) is torch.nn.RMSNorm
    assert hasattr(torch.ops.aten, "_fused_rms_norm")
    assert "pow" in _forward(traced, "attention_norm")  # the CPU's decomposition, inside the norm only
    ours = _ours()
    assert ours["attention_norm"][1][0].launches == ours["ffn_norm"][1][0].launches == 1


@needs_torchtitan
def test_the_loss_copies_the_logits_to_fp32():
    """torchtitan's cross_entropy_loss runs on ``pred.flatten(0, 1).float()``: the eager loss moves the fp32 copy."""
    assert ROOT is not None
    source = _definitions(ROOT / "components/loss.py", {"cross_entropy_loss"})
    assert ".float()" in source
    model, layout = MODELS["llama3-8b"], Layout(kernels=Kernels.EAGER)
    (_, _, (eager,)), compiled = (
        torch_output_ops(model, layout)[-1],
        torch_output_ops(model, replace(layout, kernels=Kernels.COMPILED))[-1],
    )
    logits = model.seq_length * model.padded_vocab(1)
    assert eager.nbytes == 14 * logits and compiled[2][0].nbytes == 2 * logits


def test_fused_layouts_keep_megatrons_kernels():
    model = MODELS["llama3-8b"]
    assert [name for name, _, _ in layer_ops(model, Layout())][:2] == ["input_norm", "qkv"]
    assert [name for name, _, _ in layer_ops(model, Layout(kernels=Kernels.EAGER))][:2] == ["attention_norm", "wq"]
    assert output_ops(model, Layout(kernels=Kernels.COMPILED)) == torch_output_ops(
        model, Layout(kernels=Kernels.COMPILED)
    )


def test_eager_moves_more_bytes_than_compiled_and_the_products_are_the_same():
    eager, compiled = _ours(Kernels.EAGER), _ours(Kernels.COMPILED)
    streamed = {k: sum(w.nbytes for _, works in ops.values() for w in works) for k, ops in
                (("eager", eager), ("compiled", compiled))}  # fmt: skip
    assert streamed["compiled"] < 0.6 * streamed["eager"]
    products = {k: [(n, w) for n, (kind, w) in ops.items() if kind == "MatMul"] for k, ops in
                (("eager", eager), ("compiled", compiled))}  # fmt: skip
    assert products["eager"] == products["compiled"]


def test_predicted_times_order_fused_compiled_eager_and_fsdp_adds_its_copies():
    """Same layout, three frameworks' kernels: Megatron's fused kernels fastest, torchtitan eager slowest."""
    model = MODELS["llama3-8b"].with_changes(seq_length=8192)
    cluster = Cluster(accelerator("H100"), 8)
    base = Layout(data=8, global_batch=8, zero_stage=3, overlap_grad_reduce=True, overlap_param_gather=True)
    seconds = {k: predict(model, cluster, base.with_changes(kernels=k)).time.compute for k in Kernels}
    assert seconds[Kernels.FUSED] < seconds[Kernels.COMPILED] < seconds[Kernels.EAGER]
    names = [name for name, _, _ in torch_layer_ops(model, base.with_changes(kernels=Kernels.EAGER))]
    assert names[-1] == "fsdp_copies"
    assert "fsdp_copies" not in [name for name, _, _ in torch_layer_ops(model, Layout(kernels=Kernels.EAGER))]


def _torchtitan_policy(extra_saved: set):
    """torchtitan's per-op selective checkpointing policy (its installed source) with llama3's save list."""
    from torch.utils.checkpoint import CheckpointPolicy

    assert ROOT is not None
    tree = ast.parse((ROOT / "distributed/activation_checkpoint.py").read_text(encoding="utf-8"))
    (apply,) = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "_apply_op_sac"]
    (policy,) = [n for n in apply.body if isinstance(n, ast.FunctionDef) and n.name == "_get_custom_policy"]
    parallelize = ast.parse((ROOT / "models/llama3/infra/parallelize.py").read_text(encoding="utf-8"))
    (listed,) = [
        n for n in parallelize.body if isinstance(n, ast.Assign) and ast.unparse(n.targets[0]) == "_op_sac_save_list"
    ]
    save_list = set(extra_saved)
    for element in listed.value.elts:  # type: ignore[attr-defined]
        try:
            save_list.add(eval(ast.unparse(element), {"torch": torch}))  # noqa: S307 - torchtitan's own names
        except (AttributeError, RuntimeError):  # an op this torch does not have (flex, varlen)
            pass
    names = {"torch": torch, "CheckpointPolicy": CheckpointPolicy, "op_sac_save_list": save_list,
             "mm_recompute_shapes": set()}  # fmt: skip
    exec(ast.unparse(policy), names)  # noqa: S102
    from collections import defaultdict

    return names["_get_custom_policy"](defaultdict(int)), CheckpointPolicy


@needs_torchtitan
def test_per_op_selective_checkpointing_saves_what_torchtitans_policy_saves(traced):
    """Issue 44.1/44.5: the bytes a layer keeps under selective_ac_option "op" are the outputs torchtitan's own
    policy marks MUST_SAVE on the traced block's forward (the CPU's flash attention counted as the GPU's), plus the
    block's input."""
    from placement.perf.framework_kernels import selective_saved_bytes

    cpu_flash = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu.default
    policy, decision = _torchtitan_policy({cpu_flash})
    context = SimpleNamespace(is_recompute=False)
    saved = 2 * 2 * 8 * 64  # the block's input: batch 2, sequence 8, dim 64, bf16
    for func, args, nbytes in calls:
        if policy(context, func, *args) is decision.MUST_SAVE:
            saved += nbytes
    ffn = 176  # FeedForward: int(2 * 4 * 64 / 3) rounded up to a multiple of 16
    model = MODELS["llama3-8b"].with_changes(
        layers=1, hidden=64, heads=4, query_groups=2, ffn_hidden=ffn, seq_length=8, vocab=128
    )
    layout = Layout(micro_batch=2, global_batch=2, recompute="selective", kernels=Kernels.EAGER)
    assert selective_saved_bytes(model, layout) == pytest.approx(saved, rel=1e-9)
    recomputed = [name for name, _, _ in selective_recomputed(torch_layer_ops(model, layout)) if name.startswith("w")]
    assert recomputed == ["wk", "wo", "w3"]


def _float8_layout(**changes) -> Layout:
    return Layout(kernels=Kernels.COMPILED, float8=Float8Training(**changes))


@needs_torchtitan
@pytest.mark.parametrize(
    ("ffn", "vocab", "filter_fqns"),
    [(176, 128, []), (168, 100, []), (176, 128, ["output", "attention.wk"]), (176, 128, ["attention"])],
)
def test_float8_converts_the_linear_layers_torchtitans_filter_converts(ffn, vocab, filter_fqns):
    """Issue 44.1/44.5: torchtitan's own ``module_filter_fn`` (its source) on the block's and the output's
    ``nn.Linear`` modules picks the products :func:`float8_products` names: dimensions multiples of 16, minus the
    filtered names (substrings of the module path)."""
    from torch import nn

    assert ROOT is not None
    names: dict[str, object] = {"nn": nn}
    exec(_definitions(ROOT / "components/quantization/utils.py", {"module_filter_fn"}), names)  # noqa: S102
    keep = names["module_filter_fn"]
    block = _block()
    block.feed_forward.w1 = nn.Linear(64, ffn, bias=False)  # the FFN width the model gives (168: not a multiple of 16)
    block.feed_forward.w3 = nn.Linear(64, ffn, bias=False)
    block.feed_forward.w2 = nn.Linear(ffn, 64, bias=False)
    modules = [(f"layers.0.{fqn}", module) for fqn, module in block.named_modules()]
    modules.append(("output", nn.Linear(64, vocab, bias=False)))
    theirs = {fqn.rsplit(".", 1)[-1] for fqn, module in modules if keep(module, fqn, filter_fqns)}  # type: ignore[operator]
    model = MODELS["llama3-8b"].with_changes(
        layers=1, hidden=64, heads=4, query_groups=2, ffn_hidden=ffn, seq_length=8, vocab=vocab
    )
    skip = [name for name in ("wq", "wk", "wv", "wo", "w1", "w2", "w3", "output") if
            any(f in (name if name == "output" else ("attention." if name in "wq wk wv wo" else "feed_forward.") + name)
                for f in filter_fqns)]  # fmt: skip
    assert float8_products(model, _float8_layout(skip=tuple(skip))) == theirs


@needs_torchtitan
@pytest.mark.parametrize("recipe", [Float8Recipe.TENSORWISE, Float8Recipe.ROWWISE])
def test_per_op_checkpointing_recomputes_every_float8_product(traced, recipe):
    """Issue 44.1/44.5: a float8 product runs ``aten._scaled_mm``, which torchtitan's policy neither saves nor
    counts in its every-second-mm parity; the tensorwise amaxes (``aten.max``) are saved, the rowwise ones
    (``aten.amax``) are not. The block's forward with each product replaced so, under the policy read from
    torchtitan's source, keeps exactly :func:`selective_saved_bytes`."""
    from placement.perf.framework_kernels import selective_saved_bytes

    cpu_flash = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu.default
    policy, decision = _torchtitan_policy({cpu_flash})
    context = SimpleNamespace(is_recompute=False)
    amax = torch.ops.aten.max.default if recipe is Float8Recipe.TENSORWISE else torch.ops.aten.amax.default
    saved = 2 * 2 * 8 * 64  # the block's input
    for func, args, nbytes in calls:
        steps = [(func, args, nbytes)]
        if func == torch.ops.aten.mm.default:  # x and W: amax (a bf16 scalar), then the float8 product
            steps = [(amax, args[:1], 2), (amax, args[1:2], 2), (torch.ops.aten._scaled_mm.default, args, nbytes)]
        for op, op_args, op_bytes in steps:
            if policy(context, op, *op_args) is decision.MUST_SAVE:
                saved += op_bytes
    model = MODELS["llama3-8b"].with_changes(
        layers=1, hidden=64, heads=4, query_groups=2, ffn_hidden=176, seq_length=8, vocab=128
    )
    layout = Layout(micro_batch=2, global_batch=2, recompute="selective", kernels=Kernels.EAGER,
                    float8=Float8Training(recipe))  # fmt: skip
    assert selective_saved_bytes(model, layout) == pytest.approx(saved, rel=1e-9)
    ops = torch_layer_ops(model, layout)
    recomputed = {name for name, _, _ in selective_recomputed(ops)}
    assert {"wq", "wk", "wv", "wo", "w1", "w2", "w3"} <= recomputed  # all of them, not every second one


def test_float8_casts_are_the_documented_bytes():
    """One product's casts: forward input and weight, backward the gradient twice, the weight and the input again;
    the float8 all-gather drops the weight's casts for a transposed copy; gw_hp keeps the weight gradient in bf16."""
    model = MODELS["llama3-8b"].with_changes(seq_length=4096)
    m, n, k, e = 4096, model.heads * model.head_dim, model.hidden, 2.0

    def parts(layout: Layout) -> dict[str, tuple[float, float, Work]]:
        ops = {name: works[0] for name, _, works in torch_layer_ops(model, layout)}
        amax = ops.get("wq_amax_tensorwise") or ops["wq_amax"]
        return {"amax": (amax.nbytes, amax.nbytes * amax.backward_factor), "cast": (ops["wq_cast"].nbytes,
                ops["wq_cast"].nbytes * ops["wq_cast"].backward_factor), "product": ops["wq"]}  # fmt: skip

    x, w, g = m * k, n * k, m * n
    plain = parts(_float8_layout())
    assert plain["amax"] == pytest.approx((e * (x + w), e * (2 * g + w + x)))
    assert plain["cast"] == pytest.approx(((e + 1) * (x + w), (e + 1) * (2 * g + w + x)))
    assert (
        plain["product"].dtype == "fp8" and plain["product"].element_bytes == 1 and plain["product"].wgrad_dtype is None
    )
    gathered = parts(_float8_layout(all_gather=True))
    assert gathered["amax"] == pytest.approx((e * x, e * (2 * g + x)))
    assert gathered["cast"] == pytest.approx(((e + 1) * x, (e + 1) * (2 * g + x) + 2 * w))
    high = parts(_float8_layout(recipe=Float8Recipe.ROWWISE_GW_HP))
    assert high["amax"] == pytest.approx((e * (x + w), e * (g + w)))
    assert high["product"].wgrad_dtype == "bf16"


def test_float8_prices_its_products_at_the_float8_peak_and_its_casts():
    """Same torchtitan layout on 8 H100: float8 products are faster; the casts, gw_hp's bf16 weight gradient and the
    bf16 output layer give some of it back; the float8 all-gather moves fewer bytes."""
    model = MODELS["llama3-8b"].with_changes(seq_length=8192)
    cluster = Cluster(accelerator("H100"), 8)
    base = Layout(data=8, global_batch=8, zero_stage=3, overlap_grad_reduce=True, overlap_param_gather=True,
                  kernels=Kernels.COMPILED)  # fmt: skip
    run = {
        name: predict(model, cluster, base.with_changes(float8=f8))
        for name, f8 in (("bf16", None), ("tensorwise", Float8Training()),
                         ("no output", Float8Training(skip=("output",))),
                         ("gw_hp", Float8Training(Float8Recipe.ROWWISE_GW_HP)),
                         ("gather", Float8Training(all_gather=True, precompute_scale=True)),
                         ("gather, no precompute", Float8Training(all_gather=True)))
    }  # fmt: skip
    compute = {name: p.time.compute for name, p in run.items()}
    assert compute["tensorwise"] < compute["no output"] < compute["bf16"]
    assert compute["tensorwise"] < compute["gw_hp"] < compute["bf16"]
    assert compute["gather"] < compute["tensorwise"]  # the weight's casts gone, a shard cast and a copy instead
    dp = {name: p.time.dp_comm for name, p in run.items()}
    assert (
        dp["gather"] < dp["tensorwise"] and dp["gather"] < dp["gather, no precompute"]
    )  # an amax reduction per weight
    assert run["tensorwise"].mfu > run["bf16"].mfu  # MFU against the bf16 peak, the same FLOPs
    assert "torchtitan float8 (tensorwise)" in run["tensorwise"].notes[-1]


def test_float8_under_per_op_checkpointing_recomputes_more_and_keeps_less():
    model = MODELS["llama3-8b"].with_changes(seq_length=8192)
    cluster = Cluster(accelerator("H100"), 8)
    base = Layout(data=8, global_batch=8, zero_stage=3, overlap_grad_reduce=True, overlap_param_gather=True,
                  kernels=Kernels.COMPILED, recompute="selective")  # fmt: skip
    bf16, f8 = predict(model, cluster, base), predict(model, cluster, base.with_changes(float8=Float8Training()))
    assert f8.memory.activations < bf16.memory.activations
    assert f8.time.recompute / f8.time.compute > bf16.time.recompute / bf16.time.compute


def test_float8_layouts_are_torchtitans_only():
    with pytest.raises(PlacementError, match="float8 linear layers are torchtitan's"):
        Layout(float8=Float8Training())
    with pytest.raises(PlacementError, match="tensorwise scaling only"):
        Float8Training(Float8Recipe.ROWWISE, all_gather=True)
    with pytest.raises(PlacementError, match="must be a tuple of"):
        Float8Training(skip=("lm_head",))


def test_a_work_with_a_bf16_weight_gradient_prices_it_in_bf16():
    from placement.perf.kernels import gemm_seconds
    from placement.perf.params import DEFAULT_PARAMS

    acc = accelerator("H100")
    work = Work("gemm", 4096, 4096, 4096, element_bytes=1.0, dtype="fp8", wgrad_dtype="bf16")
    fwd, bwd = work.seconds(acc, Dtype.BF16, DEFAULT_PARAMS)
    fp8, bf16 = (gemm_seconds(4096, 4096, 4096, acc, d, DEFAULT_PARAMS, 1.0, b) for d, b in
                 ((Dtype.FP8, 1.0), (Dtype.BF16, 2.0)))  # fmt: skip
    assert fwd == pytest.approx(fp8) and bwd == pytest.approx(fp8 + bf16)
    assert Work.from_dict(work.as_dict()) == work


def test_a_small_eager_layer_waits_on_the_host_that_issues_it():
    """Eager: each aten operation costs the host HOST_OP_TRIVIAL_OPS launches; a layer of short kernels runs at the
    host's pace, a long one at the GPU's; compiled layers are not charged so."""
    from placement.perf.collectives import Links
    from placement.perf.eager import HOST_OP_TRIVIAL_OPS
    from placement.perf.layer_cost import _layer_cost, host_seconds, ops_seconds
    from placement.perf.params import DEFAULT_PARAMS

    cluster = Cluster(accelerator("H100"), 8)
    links = Links.of(cluster, DEFAULT_PARAMS)
    for seq, bound in ((64, "host"), (8192, "gpu")):
        model = MODELS["llama3-8b"].with_changes(seq_length=seq)
        layout = Layout(tensor=8, global_batch=1, sequence_parallel=True, kernels=Kernels.EAGER)
        ops = torch_layer_ops(model, layout)
        gpu, host = (
            ops_seconds(ops, cluster.accelerator, layout.dtype, DEFAULT_PARAMS),
            host_seconds(ops, DEFAULT_PARAMS),
        )
        cost = _layer_cost(model, cluster, layout, DEFAULT_PARAMS, links)
        assert (cost.fwd, cost.bwd) == (max(gpu[0], host[0]), max(gpu[1], host[1]))
        assert (host[0] > gpu[0]) == (bound == "host")
        compiled = _layer_cost(model, cluster, layout.with_changes(kernels=Kernels.COMPILED), DEFAULT_PARAMS, links)
        assert compiled.fwd == ops_seconds(
            torch_layer_ops(model, layout.with_changes(kernels=Kernels.COMPILED)), cluster.accelerator,
            layout.dtype, DEFAULT_PARAMS,
        )[0]  # fmt: skip
    launches = sum(w.launches if w.kind == "stream" else 1 for _, _, works in ops for w in works)
    assert host[0] == pytest.approx(launches * HOST_OP_TRIVIAL_OPS * DEFAULT_PARAMS.kernel_launch_s)


def test_the_float8_all_gather_holds_the_gathered_weights_at_one_byte():
    """FSDP2's gathered copies of the converted weights (two layers in flight, or a pipeline stage's whole set
    kept gathered) take one byte per element instead of two."""
    from placement.perf.framework_kernels import float8_gathered
    from placement.perf.memory import static_parts

    model = MODELS["llama3-8b"].with_changes(seq_length=4096)
    for pipeline, kept_layers in ((1, 2), (4, 8)):
        base = Layout(pipeline=pipeline, data=8, global_batch=32, zero_stage=3, kernels=Kernels.COMPILED)
        gathered = base.with_changes(float8=Float8Training(all_gather=True))
        low, tensors = float8_gathered(model, gathered)
        assert tensors == 7 and low == pytest.approx(model.layer_parameters() - 2 * model.norm_parameters())
        plain, fp8 = static_parts(model, base, 1, 8)[0], static_parts(model, gathered, 1, 8)[0]
        assert plain - fp8 == pytest.approx(kept_layers * low)
