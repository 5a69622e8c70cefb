"""Megatron-LM flags: parse, write, round trip, errors."""

import pytest

from placement.errors import InvalidLayoutError
from placement.perf import (
    MODELS,
    Attention,
    Dtype,
    Layout,
    Recompute,
    RecomputeMethod,
    megatron_args,
    parse_megatron_args,
    parse_megatron_command,
)
from placement.perf.megatron import _SWITCHES, _VALUED

LLAMA_CMD = (
    "--num-layers 80 --hidden-size 8192 --ffn-hidden-size 28672 --num-attention-heads 64 --group-query-attention "
    "--num-query-groups 8 --seq-length 8192 --max-position-embeddings 8192 --vocab-size 128256 --swiglu "
    "--normalization RMSNorm --position-embedding-type rope --disable-bias-linear --untie-embeddings-and-output-weights "
    "--micro-batch-size 1 --global-batch-size 512 --tensor-model-parallel-size 8 --pipeline-model-parallel-size 4 "
    "--num-layers-per-virtual-pipeline-stage 5 --context-parallel-size 2 --sequence-parallel --use-distributed-optimizer "
    "--overlap-grad-reduce --overlap-param-gather --tp-comm-overlap --bf16 --lr 3e-4 --train-iters 10 --log-interval=1"
)


def test_parse_llama_command():
    model, layout, notes = parse_megatron_args(LLAMA_CMD.split(), gpus=1024)
    assert (model.layers, model.hidden, model.groups, model.ffn, model.vocab) == (80, 8192, 8, 28672, 128256)
    assert model.swiglu and model.rope and not model.bias and not model.tied_embeddings
    assert (layout.tensor, layout.pipeline, layout.context, layout.data, layout.virtual_stages) == (8, 4, 2, 16, 4)
    assert layout.sequence_parallel and layout.zero_stage == 1 and layout.tp_comm_overlap
    assert layout.dtype is Dtype.BF16 and layout.attention is Attention.FLASH
    assert any("--lr" in n and "--log-interval" in n for n in notes)


ROUND_TRIP = [
    (MODELS["gpt3-175b"], Layout(tensor=8, pipeline=8, data=16, virtual_stages=3, global_batch=1536,
                                 recompute=Recompute.FULL, dtype=Dtype.FP16, attention=Attention.UNFUSED,
                                 tp_async_backward=False)),
    (MODELS["llama3-70b"], Layout(tensor=8, pipeline=4, data=8, context=2, micro_batch=2, global_batch=512,
                                  sequence_parallel=True, zero_stage=1, recompute=Recompute.SELECTIVE,
                                  overlap_grad_reduce=True, overlap_param_gather=True, tp_comm_overlap=True)),
    (MODELS["mixtral-8x7b"], Layout(tensor=2, pipeline=1, data=32, expert=8, global_batch=256, zero_stage=3,
                                    recompute=Recompute.FULL, recompute_method=RecomputeMethod.BLOCK,
                                    recompute_layers=4, dtype=Dtype.FP8, grad_reduce_fp32=True)),
]  # fmt: skip


@pytest.mark.parametrize("model, layout", ROUND_TRIP)
def test_round_trip(model, layout):
    flags = megatron_args(model, layout)
    back_model, back_layout, notes = parse_megatron_args(flags, gpus=layout.gpus)
    assert back_model == model
    assert back_layout == layout
    assert not any(n.startswith("ignored") for n in notes)


@pytest.mark.parametrize(
    "cmd, words",
    [
        ("--hidden-size 64 --num-attention-heads 4 --seq-length 8", "--num-layers is required"),
        ("--num-layers 2 --hidden-size 64 --num-attention-heads 4 --seq-length 8 --recompute-granularity some",
         "--recompute-granularity"),
        ("--num-layers x --hidden-size 64 --num-attention-heads 4 --seq-length 8", "--num-layers 'x'"),
        ("--num-layers 4 --hidden-size 64 --num-attention-heads 4 --seq-length 8 --tensor-model-parallel-size 3",
         "does not divide --gpus 8"),
        ("--num-layers 4 --hidden-size 64 --num-attention-heads 4 --seq-length 8 --pipeline-model-parallel-size 2 "
         "--num-layers-per-virtual-pipeline-stage 3", "--num-layers-per-virtual-pipeline-stage 3"),
    ],
)  # fmt: skip
def test_bad_flags_one_line(cmd, words):
    with pytest.raises(InvalidLayoutError) as err:
        parse_megatron_args(cmd.split(), gpus=8)
    assert words in str(err.value) and "\n" not in str(err.value)


def test_pasted_command_with_torchrun():
    text = """CUDA_DEVICE_MAX_CONNECTIONS=1 torchrun --nproc_per_node 8 --nnodes 16 pretrain_gpt.py \\
        --num-layers 32 --hidden-size 4096 --num-attention-heads 32 --seq-length 4096 \\
        --tensor-model-parallel-size 2 --pipeline-model-parallel-size 2 --global-batch-size 256 --bf16  # comment
    """
    model, layout, notes = parse_megatron_command(text)
    assert model.layers == 32 and (layout.tensor, layout.pipeline, layout.data) == (2, 2, 32)
    assert any("world size 128" in n for n in notes)
    assert parse_megatron_command(text, gpus=64)[1].data == 16
    with pytest.raises(InvalidLayoutError, match="command line"):
        parse_megatron_command("--num-layers 'unclosed")


@pytest.mark.slow  # importing megatron-core takes about 14 s
def test_flag_names_are_megatron_core_config_fields():
    """Flags whose names Megatron-LM derives from megatron-core's config dataclasses exist there."""
    import dataclasses

    core = pytest.importorskip("megatron.core.transformer.transformer_config")
    ddp = pytest.importorskip("megatron.core.distributed")
    names = {f.name for f in dataclasses.fields(core.TransformerConfig)}
    names |= {f.name for f in dataclasses.fields(ddp.DistributedDataParallelConfig)}
    for flag in ("--num-layers", "--hidden-size", "--ffn-hidden-size", "--num-attention-heads",
                 "--num-query-groups", "--moe-router-topk", "--normalization", "--hidden-dropout",
                 "--attention-dropout", "--tensor-model-parallel-size", "--pipeline-model-parallel-size",
                 "--context-parallel-size", "--expert-model-parallel-size", "--recompute-granularity",
                 "--recompute-method", "--recompute-num-layers", "--attention-backend", "--sequence-parallel",
                 "--use-distributed-optimizer", "--bf16", "--fp16", "--overlap-grad-reduce",
                 "--overlap-param-gather", "--tp-comm-overlap", "--data-parallel-sharding-strategy"):  # fmt: skip
        assert flag in _VALUED or flag in _SWITCHES
        assert flag[2:].replace("-", "_") in names, flag
