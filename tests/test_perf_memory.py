"""Activation memory against Korthikanti et al. 2022's per-layer formulas; weights/optimizer bytes."""

import pytest

from placement.perf import (
    ACCELERATORS,
    Attention,
    Cluster,
    Layout,
    Recompute,
    TransformerSpec,
    korthikanti_layer_bytes,
    layer_activation_bytes,
    layers_in_flight,
    memory_breakdown,
    predict,
)

GPT = TransformerSpec(layers=96, hidden=12288, heads=96, seq_length=2048, vocab=51200)


@pytest.mark.parametrize("t", [1, 2, 4, 8])
@pytest.mark.parametrize("b", [1, 4])
@pytest.mark.parametrize(
    "sp, recompute",
    [(False, Recompute.NONE), (True, Recompute.NONE), (True, Recompute.SELECTIVE), (False, Recompute.SELECTIVE),
     (False, Recompute.FULL), (True, Recompute.FULL)],
)  # fmt: skip
def test_activations_equal_korthikanti(t, b, sp, recompute):
    layout = Layout(tensor=t, micro_batch=b, sequence_parallel=sp, recompute=recompute, attention=Attention.UNFUSED)
    got = layer_activation_bytes(GPT, layout)
    want = korthikanti_layer_bytes(2048, b, 12288, 96, t, sp, recompute)
    assert got == pytest.approx(want, rel=1e-12)


def test_korthikanti_reference_values():
    # The paper's own numbers, written out: sbh(34 + 5as/h) at t = 1; 34 sbh / t with SP and selective.
    s, b, h, a = 2048, 1, 12288, 96
    assert korthikanti_layer_bytes(s, b, h, a, 1, False, Recompute.NONE) == s * b * h * (34 + 5 * a * s / h)
    assert korthikanti_layer_bytes(s, b, h, a, 8, True, Recompute.SELECTIVE) == 34 * s * b * h / 8
    assert korthikanti_layer_bytes(s, b, h, a, 8, False, Recompute.FULL) == 2 * s * b * h


def test_flash_attention_stores_no_square_term():
    unfused = Layout(tensor=8, sequence_parallel=True, attention=Attention.UNFUSED)
    flash = Layout(tensor=8, sequence_parallel=True, attention=Attention.FLASH)
    selective = korthikanti_layer_bytes(2048, 1, 12288, 96, 8, True, Recompute.SELECTIVE)
    # flash keeps the selective-recompute memory plus a 4-byte log-sum-exp per row and head
    assert layer_activation_bytes(GPT, flash) == pytest.approx(selective + 4 * 96 * 2048 / 8)
    assert layer_activation_bytes(GPT, unfused) > layer_activation_bytes(GPT, flash) * 1.5


def test_layers_in_flight_schedules():
    layout = Layout(tensor=1, pipeline=8, data=1, global_batch=64)
    assert layers_in_flight(GPT, layout, 0) == 96  # first stage: p micro-batches of L/p layers
    assert layers_in_flight(GPT, layout, 7) == 12
    inter = Layout(pipeline=8, virtual_stages=2, global_batch=64)
    assert layers_in_flight(GPT, inter, 0) == pytest.approx(96 * (1 + 7 / 16))


def test_optimizer_sharding_and_fit():
    cluster = Cluster(ACCELERATORS["A100"], 512)
    base = Layout(tensor=8, pipeline=8, data=8, global_batch=512, recompute=Recompute.FULL)
    dist = base.with_changes(zero_stage=1)
    plain, sharded = memory_breakdown(GPT, base), memory_breakdown(GPT, dist)
    assert sharded.optimizer_state == pytest.approx(plain.optimizer_state / 8)
    assert sharded.weights == plain.weights and sharded.gradients == plain.gradients
    assert predict(GPT, cluster, dist).fits
    # no recomputation, 1F1B, one pipeline stage of 96 layers at t=1: does not fit in 80 GB
    huge = Layout(tensor=1, pipeline=1, data=512, global_batch=512, recompute=Recompute.NONE)
    assert not predict(GPT, cluster, huge).fits
