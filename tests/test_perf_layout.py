"""Layout rules (one line each), hardware and model presets, and how predictions respond to the knobs."""

import doctest

import pytest

import placement.perf
import placement.perf.transformer
from placement.errors import InvalidDevicesError, InvalidLayoutError, InvalidModelSpecError, PlacementError
from placement.perf import (
    ACCELERATORS,
    MODELS,
    Attention,
    Cluster,
    Dtype,
    Layout,
    Recompute,
    Schedule,
    TransformerSpec,
    accelerator,
    check_layout,
    model_preset,
    predict,
)

GPT = MODELS["gpt3-175b"]
A100x1024 = Cluster(ACCELERATORS["A100"], 1024)
BASE = Layout(tensor=8, pipeline=8, data=16, global_batch=1536, sequence_parallel=True, zero_stage=1,
              recompute=Recompute.SELECTIVE)  # fmt: skip


@pytest.mark.parametrize(
    "model, cluster, layout, words",
    [
        (GPT, A100x1024, BASE.with_changes(data=8), "= 512 GPUs, but the cluster has 1024"),
        (GPT, Cluster(ACCELERATORS["A100"], 1280), BASE.with_changes(tensor=10, data=16), "heads 96 is not divisible"),
        (MODELS["llama3-70b"], Cluster(ACCELERATORS["H100"], 1024), Layout(tensor=16, pipeline=4, data=16,
         global_batch=512), "--num-query-groups 8 is not divisible by tensor parallel size 16"),
        (GPT, A100x1024, BASE.with_changes(pipeline=16, data=8, virtual_stages=5), "not divisible by pipeline size 16 x virtual stages 5"),
        (GPT, A100x1024, BASE.with_changes(global_batch=1000), "--global-batch-size 1000"),
        (GPT, A100x1024, BASE.with_changes(expert=2), "--expert-model-parallel-size 2 needs --num-experts > 1"),
        (MODELS["mixtral-8x7b"], Cluster(ACCELERATORS["H100"], 64), Layout(tensor=1, data=64, expert=3,
         global_batch=64), "--num-experts 8 is not divisible by expert parallel size 3"),
        (GPT, A100x1024, BASE.with_changes(tp_comm_overlap=True, sequence_parallel=False), "--tp-comm-overlap needs"),
        (GPT, A100x1024, BASE.with_changes(overlap_param_gather=True, zero_stage=0), "--overlap-param-gather needs"),
        (GPT, Cluster(ACCELERATORS["A100"], 1024), BASE.with_changes(dtype=Dtype.FP8), "A100 has no fp8"),
        (GPT, A100x1024, BASE.with_changes(pipeline=1, data=128, virtual_stages=2), "needs pipeline parallel size > 1"),
    ],
)  # fmt: skip
def test_rules_one_line(model, cluster, layout, words):
    with pytest.raises(InvalidLayoutError) as err:
        check_layout(model, cluster, layout)
    assert words in str(err.value) and "\n" not in str(err.value)


def test_context_parallel_sequence_rule():
    model = GPT.with_changes(seq_length=2050)
    layout = Layout(tensor=8, context=2, data=64, global_batch=64)
    with pytest.raises(InvalidLayoutError, match="--seq-length 2050 is not divisible by 2 x context parallel size 2"):
        check_layout(model, A100x1024, layout)


def test_construction_errors():
    with pytest.raises(InvalidLayoutError, match="tensor"):
        Layout(tensor=0)
    with pytest.raises(InvalidLayoutError, match="zero_stage"):
        Layout(zero_stage=4)
    with pytest.raises(InvalidLayoutError, match="recompute"):
        Layout(recompute="sometimes")
    with pytest.raises(InvalidModelSpecError, match="not divisible by the 7 attention heads"):
        TransformerSpec(layers=2, hidden=64, heads=7, seq_length=8, vocab=10)
    with pytest.raises(InvalidDevicesError, match="whole nodes"):
        Cluster(ACCELERATORS["H100"], 12)
    with pytest.raises(InvalidDevicesError, match="unknown accelerator"):
        accelerator("TPU")
    with pytest.raises(PlacementError, match="unknown preset"):
        model_preset("gpt-5")
    assert Layout(virtual_stages=2).schedule is Schedule.INTERLEAVED


def test_presets():
    assert accelerator("h100") is ACCELERATORS["H100"] and accelerator("A100-SXM") is ACCELERATORS["A100"]
    assert set(ACCELERATORS) >= {"V100", "A100-40GB", "A100", "H100", "H100-PCIe", "H200", "B200", "MI300X", "L4"}
    assert ACCELERATORS["H100"].peak_flops("bf16") == pytest.approx(989.4e12)
    assert ACCELERATORS["V100"].peak_flops(Dtype.BF16) == 0
    # published parameter counts
    for name, billions in (("gpt3-175b", 174.6), ("llama3-8b", 8.03), ("llama3-70b", 70.55),
                           ("llama3-405b", 405.85), ("mixtral-8x7b", 46.70)):  # fmt: skip
        assert MODELS[name].parameters() / 1e9 == pytest.approx(billions, abs=0.01)
    assert MODELS["mixtral-8x7b"].active_parameters() / 1e9 == pytest.approx(12.88, abs=0.01)
    assert model_preset("Llama3_70B") == MODELS["llama3-70b"]


def _it(layout, model=GPT, cluster=A100x1024):
    return predict(model, cluster, layout, with_band=False)


def test_knobs_move_the_prediction_the_right_way():
    base = _it(BASE)
    assert _it(BASE.with_changes(recompute=Recompute.FULL)).iteration_seconds > base.iteration_seconds
    assert _it(BASE.with_changes(recompute=Recompute.FULL)).memory.activations < base.memory.activations
    inter = _it(BASE.with_changes(virtual_stages=3))
    assert inter.time.pipeline_bubble == pytest.approx(base.time.pipeline_bubble / 3, rel=0.05)
    zb = _it(BASE.with_changes(schedule=Schedule.ZB_H1))
    assert zb.time.pipeline_bubble == pytest.approx(base.time.pipeline_bubble / 3)
    over = _it(BASE.with_changes(overlap_grad_reduce=True, overlap_param_gather=True, tp_comm_overlap=True))
    assert over.time.dp_comm < base.time.dp_comm and over.time.tp_comm < base.time.tp_comm
    unfused = _it(BASE.with_changes(attention=Attention.UNFUSED))
    assert unfused.iteration_seconds > base.iteration_seconds
    # selective: no s^2 term is kept; the unfused kernel recreates one layer's (5 a s^2 b / t bytes) at a time
    assert unfused.memory.activations - base.memory.activations == pytest.approx(5 * 96 * 2048**2 / 8)
    kept = BASE.with_changes(recompute=Recompute.NONE)
    assert _it(kept.with_changes(attention=Attention.UNFUSED)).memory.activations > _it(kept).memory.activations
    slow_net = _it(BASE, cluster=A100x1024.with_changes(nic_bytes_per_s=2.5e9))
    assert slow_net.time.dp_comm > 5 * base.time.dp_comm
    h100 = _it(BASE, cluster=Cluster(ACCELERATORS["H100"], 1024))
    assert h100.iteration_seconds < base.iteration_seconds / 2
    assert base.tokens_per_second == pytest.approx(1536 * 2048 / base.iteration_seconds)
    assert base.iteration_seconds == pytest.approx(base.time.total)


def test_moe_and_context_parallel_run():
    mix = predict(MODELS["mixtral-8x7b"], Cluster(ACCELERATORS["H100"], 64),
                  Layout(tensor=1, data=64, expert=8, global_batch=256, zero_stage=1, recompute=Recompute.FULL))  # fmt: skip
    assert mix.time.ep_comm > 0 and 0 < mix.mfu < 1
    long = predict(MODELS["llama3-8b"].with_changes(seq_length=131072), Cluster(ACCELERATORS["H100"], 64),
                   Layout(tensor=8, context=8, global_batch=8, sequence_parallel=True, zero_stage=1))  # fmt: skip
    assert long.iteration_seconds > 0 and long.memory.activations > 0


@pytest.mark.parametrize("module", [placement.perf, placement.perf.transformer])
def test_docstring_examples(module):
    outcome = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert outcome.failed == 0 and outcome.attempted > 0
