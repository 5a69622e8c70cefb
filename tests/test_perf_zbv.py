"""torchtitan's zero-bubble V schedule (ZBVZeroBubble) in the performance model and its hand-over."""

from __future__ import annotations

import pytest

from placement.errors import InvalidLayoutError
from placement.perf.hardware import ACCELERATORS, Cluster
from placement.perf.launch import check_torchtitan, torchtitan_toml
from placement.perf.layout import Layout, Schedule
from placement.perf.megatron import megatron_args
from placement.perf.memory import layers_in_flight, memory_breakdown
from placement.perf.predict import predict
from placement.perf.transformer import MODELS

MODEL = MODELS["llama3-8b"]  # 32 layers
CLUSTER = Cluster(ACCELERATORS["H100"], 32, 8)
ONE = Layout(tensor=2, pipeline=4, data=4, micro_batch=1, global_batch=64, sequence_parallel=True, zero_stage=3)
ZBV = ONE.with_changes(virtual_stages=2, schedule=Schedule.ZBV)
INTERLEAVED = ONE.with_changes(virtual_stages=2)


def test_bubble_is_a_third_of_the_interleaved_one():
    zbv, inter = predict(MODEL, CLUSTER, ZBV).time, predict(MODEL, CLUSTER, INTERLEAVED).time
    assert zbv.pipeline_bubble == pytest.approx(inter.pipeline_bubble / 3)
    assert zbv.compute == pytest.approx(inter.compute) and zbv.pipeline_p2p == pytest.approx(inter.pipeline_p2p)
    assert zbv.total < inter.total


def test_memory_is_1f1b_peak_on_every_rank():
    m = ONE.microbatches
    for stage in range(4):
        assert layers_in_flight(MODEL, ZBV, stage) == 32 / 4 * min(m, 4)
    assert memory_breakdown(MODEL, ZBV, stage=0).activations == pytest.approx(
        memory_breakdown(MODEL, ONE, stage=0).activations
    )


def test_rules_and_hand_over():
    with pytest.raises(InvalidLayoutError, match="exactly 2 virtual stages"):
        Layout(pipeline=4, virtual_stages=3, schedule="zbv")
    toml = torchtitan_toml(MODEL, ZBV)
    assert 'pipeline_parallel_schedule = "ZBVZeroBubble"' in toml and "pipeline_parallel_layers_per_stage = 4" in toml
    assert check_torchtitan(toml).ok
    with pytest.raises(InvalidLayoutError, match="Megatron-LM has no flag"):
        megatron_args(MODEL, ZBV)
