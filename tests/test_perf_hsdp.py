"""HSDP (``Layout.replicate``): FSDP2 over each replica's shard group, the reduced shards all-reduced across the
replicas; checked against the installed PyTorch and torchtitan sources, priced by the model, read and written."""

from __future__ import annotations

import pytest

from placement.errors import InvalidLayoutError, PlacementError
from placement.perf.collectives import (
    Links,
    allgather_seconds,
    allreduce_seconds,
    reduce_scatter_seconds,
    strided_group,
)
from placement.perf.hardware import Cluster, accelerator
from placement.perf.launch import deepspeed_config, torchtitan_toml
from placement.perf.layout import Kernels, Layout
from placement.perf.megatron import megatron_args
from placement.perf.memory import stage_parameters, static_parts
from placement.perf.params import DEFAULT_PARAMS
from placement.perf.predict import _dp_seconds, _StageTime, predict
from placement.perf.search import search
from placement.perf.shapes import shapes
from placement.perf.spaces import SPACES
from placement.perf.torchtitan_job import read_torchtitan_job
from placement.perf.transformer import MODELS

from .test_perf_fsdp2 import _method, _source

MODEL = MODELS["llama3-8b"].with_changes(seq_length=1024)


def _fsdp(data: int, replicate: int = 1, **changes) -> Layout:
    fields = dict(data=data, global_batch=data, zero_stage=3, overlap_grad_reduce=True, overlap_param_gather=True,
                  kernels=Kernels.COMPILED, replicate=replicate)  # fmt: skip
    return Layout(**{**fields, **changes})


def test_fsdp2_all_reduces_each_reduced_shard_across_the_replicate_group():
    """torch's foreach_reduce: after the reduce-scatter, an all-reduce of its output over the replicate group on
    its own stream; torchtitan shards over ("dp_replicate", "fsdp") with fsdp = dp_shard x cp, tensor innermost."""
    collectives = _source("torch", "distributed/fsdp/_fully_shard/_fsdp_collectives.py")
    reduce = _method(collectives, None, "foreach_reduce")
    assert "if all_reduce_group is not None:" in reduce
    assert "dist.all_reduce(reduce_output, group=all_reduce_group" in reduce
    assert "with device_handle.stream(all_reduce_stream):" in reduce
    parallelize = _source("torchtitan", "models/llama3/infra/parallelize.py")
    assert "['dp_replicate', 'fsdp'] if parallel_dims.dp_replicate_enabled else ['fsdp']" in _method(
        parallelize, None, "parallelize_llama"
    )
    dims = _source("torchtitan", "distributed/parallel_dims.py")
    assert "fsdp = self.dp_shard * self.cp" in dims
    assert '["pp", "dp_replicate", "fsdp", "tp"]' in dims


@pytest.mark.parametrize(
    ("changes", "words"),
    [
        ({"zero_stage": 1}, "ZeRO stage 3"),
        ({"replicate": 3}, "must divide data 8"),
        ({"replicate": 8}, "at least 2 ranks"),
        ({"replicate": 0}, "integer from 1"),
    ],
)
def test_hsdp_rules_are_one_line(changes, words):
    with pytest.raises(InvalidLayoutError, match=words):
        _fsdp(8, 2).with_changes(**changes)


def test_hsdp_with_expert_parallelism_is_refused():
    moe = dict(data=8, global_batch=8, zero_stage=3, expert=2, kernels=Kernels.COMPILED)
    Layout(**moe)
    with pytest.raises(InvalidLayoutError, match="expert parallel"):
        Layout(**moe, replicate=2)


def test_sharded_state_splits_over_one_replicas_shard_group():
    """HSDP 2 x 4 holds what FSDP over 4 ranks holds: weights, gradients and optimizer state by part."""
    hsdp, fsdp4, fsdp8 = _fsdp(8, 2), _fsdp(4), _fsdp(8)
    assert hsdp.fsdp_shard == 4
    for stage in (0, None):
        assert static_parts(MODEL, hsdp, stage) == pytest.approx(static_parts(MODEL, fsdp4, stage), rel=1e-12)
        assert static_parts(MODEL, hsdp, stage)[2] == pytest.approx(2 * static_parts(MODEL, fsdp8, stage)[2])


def test_the_gathers_stay_in_the_shard_group_and_the_replicas_all_reduce_the_shard():
    """The exposed data-parallel time, recomputed from the collectives on a rank whose compute hides every layer's
    communication but the first gather of each pass and the last layer's reduce-scatter and all-reduce: the gather
    and reduce-scatter over one node's 8 ranks, the all-reduce of the 1/8 shard over the 4 nodes."""
    cluster = Cluster(accelerator("H100"), 32)
    hsdp = _fsdp(32, 4)
    links = Links.of(cluster, DEFAULT_PARAMS)
    dense, _ = stage_parameters(MODEL, hsdp, 0)
    node = strided_group(8, 1, 8)
    gather = allgather_seconds(2.0 * dense, node, links)
    reduce = reduce_scatter_seconds(4.0 * dense, node, links)  # fp32 gradients (torchtitan's reduce type)
    across = allreduce_seconds(4.0 * dense / 8, strided_group(4, 8, 8), links)
    assert across > 0 and node.nodes == 1
    busy = _StageTime(compute=1e6, recompute=0.0, tp=0.0, cp=0.0, ep=0.0, p2p=0.0, fwd=5e5, bwd=5e5)
    n = MODEL.layers
    got = _dp_seconds(MODEL, cluster, hsdp, DEFAULT_PARAMS, links, busy, 0)
    assert got == pytest.approx(2 * gather / n + reduce / n + across / n, rel=1e-12)
    # FSDP over all 32 ranks: its gather crosses the nodes, and no all-reduce follows
    flat = _fsdp(32)
    wide = strided_group(32, 1, 8)
    want = (2 * allgather_seconds(2.0 * dense, wide, links) + reduce_scatter_seconds(4.0 * dense, wide, links)) / n
    assert _dp_seconds(MODEL, cluster, flat, DEFAULT_PARAMS, links, busy, 0) == pytest.approx(want, rel=1e-12)


def test_hsdp_trades_memory_for_exposed_gathers_across_nodes():
    """Small work per GPU on 16 nodes: HSDP within a node exposes less communication than FSDP over 128 ranks
    (its gathers on NVLink) and holds more memory; with 8,192 tokens of work per GPU both hide it."""
    cluster = Cluster(accelerator("H100"), 128)
    fsdp, hsdp = predict(MODEL, cluster, _fsdp(128)), predict(MODEL, cluster, _fsdp(128, 16))
    assert hsdp.time.dp_comm < 0.6 * fsdp.time.dp_comm
    assert hsdp.iteration_seconds < fsdp.iteration_seconds
    assert hsdp.memory.total > fsdp.memory.total
    assert hsdp.time.optimizer > fsdp.time.optimizer  # each rank updates a 16x larger shard


def test_torchtitans_flags_read_as_hsdp_and_written_back(tmp_path):
    argv = ["--model.flavor", "8B", "--training.seq_len", "1024", "--training.local_batch_size", "1",
            "--parallelism.data_parallel_shard_degree", "4", "--parallelism.data_parallel_replicate_degree", "4",
            "--activation_checkpoint.mode", "none"]  # fmt: skip
    model, layout, _ = read_torchtitan_job(argv, None, 16)
    assert (layout.data, layout.replicate, layout.fsdp_shard, layout.zero_stage) == (16, 4, 4, 3)
    text = torchtitan_toml(model, layout)
    assert "data_parallel_replicate_degree = 4" in text and "data_parallel_shard_degree = 4" in text
    path = tmp_path / "job.toml"
    path.write_text(text, encoding="utf-8")
    _, again, _ = read_torchtitan_job([], str(path), 16)
    assert again == layout


def test_other_frameworks_refuse_hsdp_in_one_line():
    layout = _fsdp(8, 2)
    with pytest.raises(InvalidLayoutError, match="HSDP"):
        megatron_args(MODEL, layout)
    with pytest.raises(PlacementError, match="HSDP"):
        deepspeed_config(MODEL, layout)


def test_the_torchtitan_space_offers_hsdp_of_whole_nodes():
    cluster = Cluster(accelerator("H100"), 64)
    found = {(s.tensor, s.context, s.data, s.replicate) for s in shapes(SPACES["torchtitan"], MODEL, cluster, 64)}
    assert {(1, 1, 64, 8), (1, 1, 64, 4), (1, 1, 64, 2), (2, 1, 32, 8), (2, 2, 16, 4), (8, 1, 8, 1)} <= found
    assert not any(r > 1 and (d // r) * t * cp % 8 for t, cp, d, r in found)  # shard groups of whole nodes
    assert not any(s.replicate > 1 for s in shapes(SPACES["megatron"], MODEL, cluster, 64))


def test_plan_picks_hsdp_where_the_gathers_would_cross_nodes():
    """Llama 3 8B, 1,024 tokens per GPU on 128 H100: the optimum keeps FSDP's gathers inside a node."""
    result = search(MODEL, Cluster(accelerator("H100"), 128), 128, "torchtitan")
    assert result.plan is not None and result.plan.layout.replicate > 1
    best_fsdp = min(
        predict(MODEL, Cluster(accelerator("H100"), 128), s).iteration_seconds
        for s in shapes(SPACES["torchtitan"], MODEL, Cluster(accelerator("H100"), 128), 128)
        if s.replicate == 1 and s.tensor == 1 and s.pipeline == 1 and s.context == 1 and s.micro_batch == 1
    )
    assert result.plan.iteration_seconds < best_fsdp
