"""measure's eager loop on the CPU, part by part: weights, gradients, AdamW state, the 16-bit weight copies and every
tensor autograd saves, against :func:`placement.perf.eager_memory.eager_memory_parts`."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from placement.perf.eager_memory import eager_memory_parts, parameter_tensors  # noqa: E402
from placement.perf.hardware import Dtype  # noqa: E402
from placement.perf.megatron import parse_megatron_args  # noqa: E402
from placement.perf.torch_model import build  # noqa: E402

#: T = 96 tokens (2 x 48), a size no weight has, so a saved 16-bit tensor shaped like a weight is its copy.
BASE = ("--num-layers 2 --hidden-size 64 --num-attention-heads 4 --seq-length 48 --max-position-embeddings 48 "
        "--micro-batch-size 2 --global-batch-size 2 --vocab-size 1000 --ffn-hidden-size 160").split()  # fmt: skip
NO_DROPOUT = ["--hidden-dropout", "0", "--attention-dropout", "0"]
LLAMA = ["--swiglu", "--normalization", "RMSNorm", "--position-embedding-type", "rope", "--disable-bias-linear"]
CASES = {
    "llama, GQA, bf16": ([*LLAMA, *NO_DROPOUT, "--group-query-attention", "--num-query-groups", "2"], Dtype.BF16),
    "llama, no GQA, fp32": ([*LLAMA, *NO_DROPOUT, "--untie-embeddings-and-output-weights"], Dtype.FP32),
    "gpt, biases, dropout, bf16": ([], Dtype.BF16),
    "gpt, GQA, learned positions, fp32": (
        [*NO_DROPOUT, "--group-query-attention", "--num-query-groups", "2"], Dtype.FP32),
    "llama, no GQA, dropout, bf16": ([*LLAMA], Dtype.BF16),
    "llama MoE, 4 experts top 2, bf16": ([*LLAMA, *NO_DROPOUT, "--num-experts", "4", "--moe-router-topk", "2"], Dtype.BF16),
    "gpt MoE, 4 experts top 1, fp32": ([*NO_DROPOUT, "--num-experts", "4", "--moe-router-topk", "1"], Dtype.FP32),
}  # fmt: skip


def _run(flags: list[str], dtype: Dtype) -> dict[str, float]:
    """One forward, backward and AdamW step of measure's torch model on the CPU, its memory by part."""
    spec, layout, _ = parse_megatron_args([*BASE, *flags], gpus=1)
    torch.manual_seed(0)
    model = build(spec, "cpu")
    model.train()
    params = list(model.parameters())
    own = {p.untyped_storage().data_ptr() for p in params}
    shapes = {tuple(p.shape) for p in params} | {tuple(p.shape)[::-1] for p in params}
    saved: dict[int, tuple[int, bool]] = {}

    def pack(t):
        storage = t.untyped_storage()
        if storage.data_ptr() not in own:
            copy = t.dtype in (torch.bfloat16, torch.float16) and tuple(t.shape) in shapes
            saved.setdefault(storage.data_ptr(), (storage.nbytes(), copy))
        return t

    tokens = torch.randint(0, spec.vocab, (layout.micro_batch, spec.seq_length + 1))
    amp = dtype is not Dtype.FP32
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=amp):
            loss = model(tokens[:, :-1], tokens[:, 1:])
    loss.backward()
    optimizer = torch.optim.AdamW(params, lr=1e-5)
    optimizer.step()
    state = [t for s in optimizer.state.values() for t in s.values() if torch.is_tensor(t)]
    return {
        "spec": spec,
        "micro_batch": layout.micro_batch,
        "weights": sum(p.numel() * p.element_size() for p in params),
        "gradients": sum(p.grad.numel() * p.grad.element_size() for p in params),
        "optimizer": sum(t.numel() * t.element_size() for t in state),
        "weight_copies": sum(n for n, copy in saved.values() if copy),
        "activations": sum(n for n, copy in saved.values() if not copy),
        "tensors": len(params),
    }


@pytest.mark.parametrize("case", list(CASES))
def test_every_part_is_what_the_cpu_run_holds(case):
    flags, dtype = CASES[case]
    run = _run(flags, dtype)
    spec = run["spec"]
    assert parameter_tensors(spec) == run["tensors"]
    parts = eager_memory_parts(spec, run["micro_batch"], dtype, cpu=True)
    for name in ("weights", "gradients", "optimizer", "weight_copies", "activations"):
        assert getattr(parts, name) == run[name], name
    assert parts.total > sum(run[name] for name in ("weights", "gradients", "optimizer", "activations"))


def test_a_gpu_keeps_one_byte_per_dropout_mask():
    spec, layout, _ = parse_megatron_args(BASE, gpus=1)
    assert spec.dropout
    cpu = eager_memory_parts(spec, 2, Dtype.BF16, cpu=True)
    gpu = eager_memory_parts(spec, 2, Dtype.BF16, cpu=False)
    tokens = 2 * spec.seq_length
    masks = spec.layers * 2 * spec.hidden * (2 - 1) + spec.hidden * (4 - 1)  # per token: the layers', the embedding's
    assert cpu.activations - gpu.activations == tokens * masks
