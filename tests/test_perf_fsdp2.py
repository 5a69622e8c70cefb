"""torchtitan's FSDP2 under pipelining (Layout.fsdp_keeps_gathered, Layout.fsdp_accumulates_unsharded): what the
installed PyTorch and torchtitan sources do, and what the model prices from it."""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

import pytest

from placement.errors import PlacementError
from placement.perf.hardware import Cluster, accelerator
from placement.perf.layout import Kernels, Layout
from placement.perf.memory import stage_parameters
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


def _method(source: str, cls: str | None, name: str) -> str:
    """The source of ``cls.name`` (or module-level ``name``)."""
    tree = ast.parse(source)
    scope = tree.body
    if cls is not None:
        (found,) = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls]
        scope = found.body
    (fn,) = [n for n in scope if isinstance(n, ast.FunctionDef) and n.name == name]
    return ast.unparse(fn)


def test_pytorchs_schedules_keep_fsdp2_gathered_and_unsynchronised_until_the_last_micro_batch():
    """torch.distributed.pipelining: every micro-batch's backward with no reshard and no gradient sync; one
    reduction after the last (perform_reduce_grad); FSDP2 accumulates such gradients in the reduce type."""
    stage = _source("torch", "distributed/pipelining/stage.py")
    backward = _method(stage, "_PipelineStageBase", "backward_maybe_with_nosync")
    for call in ("set_reshard_after_backward(False)", "set_requires_gradient_sync(False)"):
        assert call in backward
    reduce = _method(stage, "_PipelineStageBase", "perform_reduce_grad")
    assert "set_requires_gradient_sync(True)" in reduce and "post_backward()" in reduce
    fsdp_param = _source("torch", "distributed/fsdp/_fully_shard/_fsdp_param.py")
    accumulate = _method(fsdp_param, "FSDPParam", "to_accumulated_grad_if_needed")
    assert "self.unsharded_accumulated_grad = unsharded_grad.to(self.reduce_dtype)" in accumulate


def test_torchtitans_default_keeps_the_weights_gathered_under_pipelining_only():
    source = _method(_source("torchtitan", "models/llama3/infra/parallelize.py"), None, "apply_fsdp")
    assert "reshard_after_forward = not pp_enabled" in source
    assert "case 'always':" in source and "case 'never':" in source


MODEL = MODELS["llama3-70b"].with_changes(seq_length=8192)
CLUSTER = Cluster(accelerator("H100"), 64)


def _layout(**changes) -> Layout:
    base = Layout(tensor=8, pipeline=4, data=2, global_batch=64, sequence_parallel=True, zero_stage=3,
                  overlap_grad_reduce=True, overlap_param_gather=True, recompute="full", kernels=Kernels.COMPILED)  # fmt: skip
    return base.with_changes(**changes)


def test_under_pipelining_the_stage_keeps_its_weights_and_unsharded_fp32_gradients():
    default, always = _layout(), _layout(reshard_after_forward=True)
    assert default.fsdp_keeps_gathered and not always.fsdp_keeps_gathered
    assert default.fsdp_accumulates_unsharded and always.fsdp_accumulates_unsharded
    dense, expert = stage_parameters(MODEL, default, 0)
    kept, freed = predict(MODEL, CLUSTER, default).memory, predict(MODEL, CLUSTER, always).memory
    assert kept.gradients == pytest.approx(4.0 * (dense + expert))  # fp32, unsharded
    assert freed.gradients == kept.gradients
    per_layer = (dense + expert) / (MODEL.layers / 4)
    assert kept.weights - freed.weights == pytest.approx(2.0 * (dense + expert) - 2 * 2.0 * per_layer)


def test_weights_kept_gathered_are_gathered_once_per_step():
    kept, always = predict(MODEL, CLUSTER, _layout()), predict(MODEL, CLUSTER, _layout(reshard_after_forward=True))
    assert kept.time.dp_comm < always.time.dp_comm


def test_without_pipelining_never_saves_the_backwards_gather_and_reduces_each_micro_batch():
    layout = Layout(tensor=8, data=8, global_batch=64, sequence_parallel=True, zero_stage=3, overlap_grad_reduce=True,
                    overlap_param_gather=True, recompute="full", kernels=Kernels.COMPILED)  # fmt: skip
    never = layout.with_changes(reshard_after_forward=False)
    assert not layout.fsdp_keeps_gathered and never.fsdp_keeps_gathered
    assert not never.fsdp_accumulates_unsharded
    a, b = predict(MODEL, CLUSTER, layout), predict(MODEL, CLUSTER, never)
    assert b.time.dp_comm <= a.time.dp_comm and b.memory.weights > a.memory.weights
    assert b.memory.gradients == a.memory.gradients


def test_megatron_layouts_keep_their_zero3_accounting():
    fused = _layout(kernels=Kernels.FUSED)
    assert not fused.fsdp_keeps_gathered and not fused.fsdp_accumulates_unsharded
    assert (
        predict(MODEL, CLUSTER, fused).memory
        == predict(MODEL, CLUSTER, fused.with_changes(reshard_after_forward=False)).memory
    )


@pytest.mark.parametrize(("value", "want"), [("default", None), ("always", True), ("never", False)])
def test_the_job_reader_takes_fsdp_reshard_after_forward(value, want):
    argv = ["--model.flavor", "8B", "--training.local_batch_size", "1",
            "--parallelism.fsdp_reshard_after_forward", value]  # fmt: skip
    _, layout, _ = read_torchtitan_job(argv, None, 8)
    assert layout.reshard_after_forward is want


def test_a_bad_reshard_policy_is_one_line():
    with pytest.raises(PlacementError, match="must be default, always or never"):
        read_torchtitan_job(["--model.flavor", "8B", "--parallelism.fsdp_reshard_after_forward", "sometimes"], None, 8)
    with pytest.raises(PlacementError, match="reshard_after_forward"):
        Layout(reshard_after_forward="never")  # type: ignore[arg-type]


@pytest.mark.parametrize("value", [None, True, False])
def test_the_policy_round_trips_through_the_toml(tmp_path, value):
    from placement.perf.launch import torchtitan_toml

    model = MODELS["llama3-8b"].with_changes(seq_length=2048)
    layout = Layout(pipeline=2, data=4, global_batch=32, zero_stage=3, overlap_grad_reduce=True,
                    overlap_param_gather=True, kernels=Kernels.COMPILED, reshard_after_forward=value)  # fmt: skip
    path = tmp_path / "job.toml"
    path.write_text(torchtitan_toml(model, layout), encoding="utf-8")
    _, read, _ = read_torchtitan_job([], str(path), 8)
    assert read.reshard_after_forward is value


def test_fsdp2_exposes_what_each_layers_predecessor_does_not_cover():
    """Layer-by-layer prefetch: the first gather of a pass, each later layer's gather (with its reduce-scatter in
    a backward) beyond its predecessor's compute, the last reduce-scatter; under pipelining the step's one
    reduction whole."""
    from placement.perf.predict import _fsdp2_seconds, _StageTime

    def stage(fwd: float, bwd: float) -> _StageTime:
        return _StageTime(compute=fwd + bwd, recompute=0.0, tp=0.0, cp=0.0, ep=0.0, p2p=0.0, fwd=fwd, bwd=bwd)

    plain = Layout(data=8, global_batch=16, zero_stage=3, kernels=Kernels.COMPILED)  # 2 micro-batches
    n, gather, reduce = 4, 4.0, 8.0  # per layer: gather 1, reduce-scatter 2
    hidden = _fsdp2_seconds(plain, stage(40.0, 80.0), n, gather, reduce)  # layers of 10 / 20 s hide everything
    assert hidden == pytest.approx(2 * (1.0 + (1.0 + 2.0)))  # per micro-batch: first gathers, last scatter
    short = _fsdp2_seconds(plain, stage(2.0, 4.0), n, gather, reduce)  # 0.5 s / 1 s layers
    assert short == pytest.approx(2 * ((1 + 3 * 0.5) + (1 + 3 * (1 + 2 - 1) + 2)))
    piped = plain.with_changes(pipeline=2, global_batch=16)
    assert piped.fsdp_keeps_gathered and piped.fsdp_accumulates_unsharded
    # one forward gathers (the first micro-batch); backwards gather nothing; the step's reduction after all
    assert _fsdp2_seconds(piped, stage(2.0, 4.0), n, gather, reduce) == pytest.approx((1 + 3 * 0.5) + reduce)


def test_small_per_gpu_work_exposes_more_of_fsdp2():
    cluster = Cluster(accelerator("H100"), 64)
    layout = Layout(data=64, global_batch=64, zero_stage=3, kernels=Kernels.COMPILED)
    exposed = {
        seq: predict(MODELS["llama3-8b"].with_changes(seq_length=seq), cluster, layout).time.dp_comm
        for seq in (512, 8192)
    }
    assert exposed[512] > exposed[8192]
