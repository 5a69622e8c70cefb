"""placement/perf/layer_cost.py's Megatron-LM kernels (``Kernels.FUSED``), checked against the installed
Megatron-Core: its own ``TransformerLayer`` (the local spec: no Transformer Engine here) traced on the CPU, and
its Transformer Engine spec read from source."""

from __future__ import annotations

import ast
import importlib.util
import json
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from placement.perf.layer_cost import layer_ops
from placement.perf.layout import Attention, Layout
from placement.perf.transformer import MODELS


def _megatron_root() -> Path | None:
    try:
        spec = importlib.util.find_spec("megatron.core")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


ROOT = _megatron_root()
needs_megatron = pytest.mark.skipif(ROOT is None, reason="Megatron-Core (the export extra)")

#: Runs Megatron-Core's layer (llama-style: RMSNorm, SwiGLU, GQA, no biases) forward and backward on the CPU and
#: prints its products: [pass, op, shapes]. Its CUDA-only helpers (a global buffer, the RNG tracker) are stubbed.
TRACE = """
import contextlib, json, os, sys, types
import torch
os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=sys.argv[1], RANK="0", WORLD_SIZE="1")
torch.distributed.init_process_group("gloo", rank=0, world_size=1)
from megatron.core import parallel_state, tensor_parallel, utils
parallel_state.initialize_model_parallel(1, 1)
utils.GlobalMemoryBuffer.get_tensor = lambda self, shape, dtype, name, **kw: torch.empty(shape, dtype=dtype)
tensor_parallel.get_cuda_rng_tracker = lambda *a, **k: types.SimpleNamespace(fork=lambda *a, **k: contextlib.nullcontext())
from megatron.core.models.gpt.gpt_layer_specs import get_gpt_layer_local_spec
from megatron.core.transformer.spec_utils import build_module
from megatron.core.transformer.transformer_config import TransformerConfig
from torch.utils._python_dispatch import TorchDispatchMode
config = TransformerConfig(
    num_layers=1, hidden_size=64, num_attention_heads=4, num_query_groups=2, ffn_hidden_size=176,
    gated_linear_unit=True, activation_func=torch.nn.functional.silu, normalization="RMSNorm",
    add_bias_linear=False, bf16=True, params_dtype=torch.bfloat16, use_cpu_initialization=True, hidden_dropout=0.0,
    attention_dropout=0.0, masked_softmax_fusion=False, bias_activation_fusion=False, bias_dropout_fusion=False,
    apply_rope_fusion=False)
layer = build_module(get_gpt_layer_local_spec(normalization="RMSNorm"), config=config, layer_number=1)
ops, phase = [], ["forward"]
class Record(TorchDispatchMode):
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        name = func.overloadpacket.__name__
        if name in ("mm", "bmm", "baddbmm"):
            ops.append([phase[0], name, [list(a.shape) for a in args if isinstance(a, torch.Tensor)]])
        return func(*args, **(kwargs or {}))
x = torch.randn(8, 2, 64, dtype=torch.bfloat16, requires_grad=True)
mask = torch.triu(torch.ones(1, 1, 8, 8, dtype=torch.bool), 1)
with Record():
    out, _ = layer(x, attention_mask=mask)
    phase[0] = "backward"
    out.float().sum().backward()
torch.distributed.destroy_process_group()
print(json.dumps(ops))
"""


@pytest.fixture(scope="module")
def traced():
    if ROOT is None:
        pytest.skip("Megatron-Core (the export extra)")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    run = subprocess.run(
        [sys.executable, "-c", TRACE, str(port)], capture_output=True, text=True, timeout=300, check=False
    )
    assert run.returncode == 0, run.stderr[-2000:]
    return json.loads(run.stdout.strip().splitlines()[-1])


#: The traced layer's shape: sequence 8, batch 2, hidden 64, 4 heads of 16 in 2 groups, FFN 176 (SwiGLU).
SMALL = MODELS["llama3-8b"].with_changes(layers=1, hidden=64, heads=4, query_groups=2, ffn_hidden=176, seq_length=8)


@needs_megatron
def test_megatrons_layer_runs_the_products_the_fused_list_prices(traced):
    """One QKV product of width (a + 2g) d, the attention projection, fc1 of width 2f (SwiGLU's two halves in one
    product) and fc2: forward shapes (m, k) x (k, n) equal the list's (m, n, k); two backward products each."""
    forward = [(shapes[0][0], shapes[1][1], shapes[0][1]) for phase, op, shapes in traced
               if phase == "forward" and op == "mm"]  # fmt: skip
    layout = Layout(micro_batch=2, global_batch=2, attention=Attention.UNFUSED)
    ours = [(name, w) for name, kind, works in layer_ops(SMALL, layout) if kind == "MatMul" for w in works]
    assert [name for name, _ in ours] == ["qkv", "proj", "fc1", "fc2"]
    assert forward == [(w.m, w.n, w.k) for _, w in ours]
    assert sum(1 for phase, op, _ in traced if phase == "backward" and op == "mm") == 2 * len(ours)


@needs_megatron
def test_unfused_attention_is_two_batched_products(traced):
    """Megatron-Core's local core attention: baddbmm (scores) and bmm (context) over batch x heads, K and V
    expanded to every head; the list's unfused attention prices the same two products."""
    batched = [shapes for phase, op, shapes in traced if phase == "forward" and op in ("bmm", "baddbmm")]
    layout = Layout(micro_batch=2, global_batch=2, attention=Attention.UNFUSED)
    (attention,) = [works for name, _, works in layer_ops(SMALL, layout) if name == "attention"]
    products = [w for w in attention if w.kind == "gemm"]
    scores, context = batched[0][-2:], batched[1]
    got = [(s[0][0], s[0][1], s[1][2], s[0][2]) for s in (scores, context)]  # (batch, m, n, k)
    assert got == [(w.batch, w.m, w.n, w.k) for w in products]


@needs_megatron
def test_transformer_engines_spec_fuses_the_norms_into_the_qkv_and_fc1_modules():
    """The TE spec (what Megatron-LM runs with Transformer Engine): linear_qkv and a dense layer's linear_fc1 are
    LayerNorm-Linear modules and the MLP's own norm is IdentityOp: one QKV product and one fc1 product, each after
    its norm, as the list has them."""
    assert ROOT is not None
    tree = ast.parse((ROOT / "models/gpt/gpt_layer_specs.py").read_text(encoding="utf-8"))
    (spec,) = [n for n in tree.body if isinstance(n, ast.FunctionDef)
               and n.name == "get_gpt_layer_with_transformer_engine_spec"]  # fmt: skip
    source = ast.unparse(spec)
    assert "linear_qkv=backend.column_parallel_layer_norm_linear()" in source
    assert "pre_mlp_layernorm=backend.layer_norm() if num_experts else IdentityOp" in source
    names = [name for name, _, _ in layer_ops(MODELS["llama3-8b"], Layout())]
    assert names[:2] == ["input_norm", "qkv"] and names[names.index("post_norm") + 1] == "fc1"
