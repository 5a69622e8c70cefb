"""DeepSpeed ZeRO-Offload in the performance model (memory, time) and its hand-over."""

from __future__ import annotations

from dataclasses import replace

import pytest

from placement.errors import InvalidLayoutError
from placement.perf.hardware import ACCELERATORS, Cluster
from placement.perf.launch import check_deepspeed, deepspeed_config
from placement.perf.layout import Layout, check_layout
from placement.perf.memory import memory_breakdown, stage_parameters
from placement.perf.params import DEFAULT_PARAMS
from placement.perf.predict import predict
from placement.perf.transformer import MODELS

MODEL = MODELS["llama3-8b"]
CLUSTER = Cluster(ACCELERATORS["H100"], 8, 8)
BASE = Layout(tensor=1, pipeline=1, data=8, micro_batch=1, global_batch=32, zero_stage=3)


def _owned() -> float:
    dense, expert = stage_parameters(MODEL, BASE, 0)
    return (dense + expert) / 8


def test_memory_drops_by_the_offloaded_part():
    plain = memory_breakdown(MODEL, BASE)
    opt = memory_breakdown(MODEL, BASE.with_changes(offload_optimizer=True))
    both = memory_breakdown(MODEL, BASE.with_changes(offload_optimizer=True, offload_params=True))
    assert opt.optimizer_state == 0 and plain.optimizer_state == pytest.approx(12 * _owned())
    assert plain.total - opt.total == pytest.approx(plain.optimizer_state)
    assert opt.host == pytest.approx(plain.optimizer_state)
    assert opt.total - both.total == pytest.approx(2 * _owned())  # the bf16 weight shard
    assert both.host == pytest.approx(14 * _owned())
    assert plain.host == 0


def test_time_adds_the_pcie_transfer_and_the_cpu_step():
    plain = predict(MODEL, CLUSTER, BASE).time
    opt = predict(MODEL, CLUSTER, BASE.with_changes(offload_optimizer=True)).time
    pcie = ACCELERATORS["H100"].pcie_bytes_per_s
    assert opt.offload == pytest.approx(_owned() * 4 / pcie)  # bf16 gradients down, bf16 weights up
    assert opt.optimizer == pytest.approx(_owned() * DEFAULT_PARAMS.host_adam_seconds_per_param)
    assert opt.total - plain.total == pytest.approx(opt.offload + opt.optimizer - plain.optimizer)
    # weights fetched per micro-batch: exposed only where the fetch outlasts the compute it hides under
    slow = replace(ACCELERATORS["H100"], pcie_bytes_per_s=1e8)
    both = predict(MODEL, Cluster(slow, 8, 8), BASE.with_changes(offload_optimizer=True, offload_params=True)).time
    fast = predict(MODEL, CLUSTER, BASE.with_changes(offload_optimizer=True, offload_params=True)).time
    assert both.offload > _owned() * 4 / 1e8  # the fetch is exposed on a slow link
    assert fast.offload == pytest.approx(opt.offload)  # and hidden on PCIe 5


def test_rules_host_memory_and_config():
    with pytest.raises(InvalidLayoutError, match="offload_param needs ZeRO stage 3"):
        check_layout(MODEL, CLUSTER, BASE.with_changes(zero_stage=1, offload_optimizer=True, offload_params=True))
    with pytest.raises(InvalidLayoutError, match="offload_optimizer needs ZeRO"):
        check_layout(MODEL, CLUSTER, BASE.with_changes(zero_stage=0, data=8, offload_optimizer=True))
    small_host = Cluster(ACCELERATORS["H100"], 8, 8, host_memory_per_gpu=1.0 * 2**30)
    pred = predict(MODEL, small_host, BASE.with_changes(offload_optimizer=True))
    assert not pred.fits and any("host memory" in n for n in pred.notes)
    config = deepspeed_config(MODEL, BASE.with_changes(offload_optimizer=True, offload_params=True))
    zero = config["zero_optimization"]
    assert zero["offload_optimizer"]["device"] == "cpu" and zero["offload_param"]["device"] == "cpu"
    check = check_deepspeed(config, 8)
    assert check.ok, check.message
