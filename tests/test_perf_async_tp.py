"""Tensor parallelism as torchtitan runs it: synchronous DTensor collectives, or async TP (Inductor's
micro_pipeline_tp pass), checked against the installed sources; the model's exposed communication."""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

import pytest

from placement.errors import PlacementError
from placement.perf.collectives import Links
from placement.perf.hardware import Cluster, Dtype, accelerator
from placement.perf.kernels import gemm_seconds
from placement.perf.launch import torchtitan_toml
from placement.perf.layer_cost import _layer_cost, _torchtitan_tp, layer_ops
from placement.perf.layout import Kernels, Layout
from placement.perf.params import DEFAULT_PARAMS
from placement.perf.predict import predict
from placement.perf.torchtitan_job import read_torchtitan_job
from placement.perf.transformer import MODELS


def _source(package: str, relative: str) -> str:
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        pytest.skip(f"{package} is not installed")
    path = Path(next(iter(spec.submodule_search_locations))) / relative
    if not path.is_file():
        pytest.skip(f"{package}: {relative} not found")
    return path.read_text(encoding="utf-8")


def _function(source: str, name: str) -> str:
    (fn,) = [n for n in ast.parse(source).body if isinstance(n, ast.FunctionDef) and n.name == name]
    return ast.unparse(fn)


def test_inductors_pass_fuses_all_gathers_with_consumers_and_reduce_scatters_with_one_producer():
    """micro_pipeline_tp: an all-gather with every matmul that reads it; a reduce-scatter only when one matmul
    (mm or _scaled_mm, perhaps reshaped) produces its input; collectives are not reordered by default."""
    source = _source("torch", "_inductor/fx_passes/micro_pipeline_tp.py")
    passes = _function(source, "micro_pipeline_tp_pass")
    assert "fuse_all_gather_matmul(all_gather)" in passes and "fuse_matmul_reduce_scatter(reduce_scatter)" in passes
    producer = _function(source, "_find_producer_matmul")
    assert "aten.mm.default" in producer and "return None" in producer
    consumers = _function(source, "_find_consumer_matmuls")
    assert "for user in node.users" in consumers
    import torch._inductor.config as inductor

    assert inductor.reorder_for_compute_comm_overlap is False


def test_torchtitan_requires_compile_for_async_tp():
    source = _function(_source("torchtitan", "distributed/tensor_parallel.py"), "maybe_enable_async_tp")
    assert "compile.enable" in source and "_micro_pipeline_tp = True" in source
    with pytest.raises(PlacementError, match="requires --compile.enable"):
        read_torchtitan_job(["--model.flavor", "8B", "--parallelism.tensor_parallel_degree", "8",
                             "--parallelism.enable_async_tensor_parallel"], None, 8)  # fmt: skip


MODEL = MODELS["llama3-70b"].with_changes(seq_length=8192)
ACC = accelerator("H100")


def _layout(async_tp: bool) -> Layout:
    return Layout(tensor=8, data=1, global_batch=1, sequence_parallel=True, kernels=Kernels.COMPILED,
                  tp_comm_overlap=async_tp)  # fmt: skip


def _chunk_penalty(names: tuple[str, ...], backward: bool) -> tuple[float, float]:
    """(unchunked, chunked) seconds of the products ``names`` (input-gradient products when ``backward``)."""
    ops = {name: works[0] for name, _, works in layer_ops(MODEL, _layout(True))}
    whole = chunked = 0.0
    for name in names:
        w = ops[name]
        n, k = (w.k, w.n) if backward else (w.n, w.k)
        whole += gemm_seconds(w.m, n, k, ACC, Dtype.BF16, DEFAULT_PARAMS)
        chunked += 8 * gemm_seconds(w.m / 8, n, k, ACC, Dtype.BF16, DEFAULT_PARAMS)
    return whole, chunked


@pytest.mark.parametrize(("gather", "scatter"), [(0.0, 0.0), (1e-4, 2e-4), (1.0, 1.0)])
def test_async_tp_exposes_what_the_chunked_pipeline_cannot_hide(gather, scatter):
    ops = layer_ops(MODEL, _layout(True))
    fwd, bwd = _torchtitan_tp(MODEL, ops, _layout(True), ACC, DEFAULT_PARAMS, gather, scatter)
    want_fwd = want_bwd = 0.0
    for comm, names in ((gather, ("wq", "wk", "wv")), (scatter, ("wo",)), (gather, ("w1", "w3")), (scatter, ("w2",))):
        g, chunked = _chunk_penalty(names, False)
        want_fwd += max(chunked, comm + chunked / 8) - g
    for comm, names in ((gather, ("wo",)), (gather, ("w2",))):
        g, chunked = _chunk_penalty(names, True)
        want_bwd += max(chunked, comm + chunked / 8) - g
    want_bwd += 2 * scatter  # the summed input gradients of wq+wk+wv and w1+w3: not one product
    assert (fwd, bwd) == pytest.approx((want_fwd, want_bwd), rel=1e-12, abs=1e-15)
    assert fwd >= 0 and bwd >= 2 * scatter
    sync = _torchtitan_tp(MODEL, ops, _layout(False), ACC, DEFAULT_PARAMS, gather, scatter)
    assert sync == (2 * (gather + scatter), 2 * (gather + scatter))


def test_torchtitans_tp_is_exposed_without_async_tp_and_partly_hidden_with_it():
    cluster = Cluster(ACC, 8)
    links = Links.of(cluster, DEFAULT_PARAMS)
    sync = _layer_cost(MODEL, cluster, _layout(False), DEFAULT_PARAMS, links)
    fused = _layer_cost(MODEL, cluster, _layout(True), DEFAULT_PARAMS, links)
    assert fused.tp_fwd < sync.tp_fwd and fused.tp_bwd < sync.tp_bwd
    megatron = _layer_cost(MODEL, cluster, _layout(False).with_changes(kernels=Kernels.FUSED), DEFAULT_PARAMS, links)
    assert megatron.tp_bwd < sync.tp_bwd  # Megatron hides the backward's reduction under the weight gradients


def test_async_tp_round_trips_through_the_toml(tmp_path):
    model = MODELS["llama3-8b"].with_changes(seq_length=2048)
    layout = Layout(tensor=8, global_batch=8, micro_batch=1, sequence_parallel=True, zero_stage=3,
                    kernels=Kernels.COMPILED, tp_comm_overlap=True)  # fmt: skip
    path = tmp_path / "job.toml"
    path.write_text(torchtitan_toml(model, layout), encoding="utf-8")
    _, read, _ = read_torchtitan_job([], str(path), 8)
    assert read.tp_comm_overlap
    cluster = Cluster(ACC, 8)
    assert predict(model, cluster, read).iteration_seconds == pytest.approx(
        predict(model, cluster, layout).iteration_seconds, rel=1e-9
    )
