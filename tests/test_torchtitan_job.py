"""``predict --framework torchtitan``: torchtitan 0.2.2's own job description (flags and TOML) in, the plan's physics out."""

from __future__ import annotations

import json

import pytest

from placement.cli import main
from placement.errors import PlacementError
from placement.perf.hardware import Cluster, accelerator
from placement.perf.launch import torchtitan_toml
from placement.perf.layout import Float8Recipe, Float8Training, Kernels, Layout, Recompute, RecomputeMethod, Schedule
from placement.perf.predict import predict
from placement.perf.torchtitan_check import dataclass_fields, installed_job_config
from placement.perf.torchtitan_job import FIELDS, READ, SECTIONS, read_torchtitan_job
from placement.perf.transformer import MODELS


def _json(capsys, *argv: str) -> dict:
    assert main(list(argv)) == 0, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)


def _toml_to_flags(text: str) -> list[str]:
    """The TOML's fields as torchtitan flags (``--section.field value``)."""
    import tomllib

    flags = []
    for section, body in tomllib.loads(text).items():
        for key, value in body.items():
            if isinstance(value, list):  # torchtitan's command line takes a list comma-separated
                value = ",".join(value)
            flags += [f"--{section}.{key}", str(value).lower() if isinstance(value, bool) else str(value)]
    return flags


@pytest.mark.parametrize(
    ("model", "gpu", "gpus", "batch"),
    [("llama3-8b", "H100", 64, 256), ("llama3-70b", "H100", 16, 16), ("llama3-70b", "A100", 32, 32)],
)
def test_the_plans_toml_predicts_the_plans_numbers(capsys, tmp_path, model, gpu, gpus, batch):
    """Acceptance (issue 44.2): plan's TOML fed to predict gives the plan's iteration seconds and memory, through
    --config and through the same fields as flags (FSDP + TP + CP with full recomputation; ZBV pipelining)."""
    argv = ["--gpus", str(gpus), "--gpu", gpu]
    plan = _json(
        capsys, "plan", "--model", model, "--global-batch", str(batch), "--framework", "torchtitan", "--json", *argv
    )
    path = tmp_path / "job.toml"
    path.write_text(plan["torchtitan_toml"], encoding="utf-8")
    want = plan["plan"]["prediction"]
    by_file = _json(capsys, "predict", "--framework", "torchtitan", "--config", str(path), "--json", *argv)
    flags = _toml_to_flags(plan["torchtitan_toml"])
    by_flags = _json(capsys, "predict", "--framework", "torchtitan", "--json", *argv, "--", *flags)
    for got in (by_file, by_flags):
        assert got["iteration_seconds"] == pytest.approx(want["iteration_seconds"], rel=1e-9)
        assert got["memory"] == pytest.approx(want["memory"], rel=1e-9)
        assert got["error"] == want["error"] and got["error"]["kind"] == "extrapolated"
        assert got["calibration_band"] is None


@pytest.mark.parametrize(
    "layout",
    [
        Layout(tensor=2, pipeline=2, data=2, virtual_stages=2, micro_batch=1, global_batch=16, sequence_parallel=True,
               zero_stage=3, overlap_grad_reduce=True, overlap_param_gather=True, recompute=Recompute.SELECTIVE,
               kernels=Kernels.COMPILED),
        Layout(tensor=1, pipeline=4, data=2, micro_batch=2, global_batch=32, zero_stage=3, overlap_grad_reduce=True,
               overlap_param_gather=True, recompute=Recompute.FULL, recompute_method=RecomputeMethod.BLOCK,
               recompute_layers=8, kernels=Kernels.COMPILED),
        Layout(tensor=8, pipeline=1, data=1, global_batch=4, micro_batch=2, sequence_parallel=True, zero_stage=3,
               kernels=Kernels.EAGER),
        Layout(tensor=2, pipeline=2, data=8, micro_batch=1, global_batch=32, sequence_parallel=True, zero_stage=3,
               overlap_grad_reduce=True, overlap_param_gather=True, kernels=Kernels.COMPILED, replicate=2),
    ],
    ids=["interleaved, selective", "1F1B, full", "TP only, accumulation, eager", "HSDP 2 x 4, PP"],
)  # fmt: skip
def test_torchtitan_toml_round_trips_to_the_layout(tmp_path, layout):
    """Any torchtitan-space layout written as TOML reads back to the same prediction (interleaved, selective)."""
    model = MODELS["llama3-8b"].with_changes(seq_length=2048)
    cluster = Cluster(accelerator("H100"), layout.gpus)
    path = tmp_path / "job.toml"
    path.write_text(torchtitan_toml(model, layout), encoding="utf-8")
    spec, read, _ = read_torchtitan_job([], str(path), layout.gpus)
    assert spec == model and read.kernels is layout.kernels
    want = predict(model, cluster, layout, framework="torchtitan")
    got = predict(spec, cluster, read, framework="torchtitan")
    assert got.iteration_seconds == pytest.approx(want.iteration_seconds, rel=1e-9)
    assert got.memory.as_dict() == pytest.approx(want.memory.as_dict(), rel=1e-9)


def test_flags_override_the_file_and_defaults_are_torchtitans(tmp_path):
    path = tmp_path / "job.toml"
    path.write_text('[model]\nflavor = "8B"\n[parallelism]\ntensor_parallel_degree = 2\n', encoding="utf-8")
    model, layout, notes = read_torchtitan_job(["--parallelism.tensor_parallel_degree", "4"], str(path), 16)
    assert layout.tensor == 4 and layout.data == 4 and layout.zero_stage == 3  # shard degree -1: the rest
    assert model.seq_length == 2048 and layout.micro_batch == 8  # torchtitan's seq_len and local batch defaults
    # torchtitan's default checkpointing: selective, every 2nd layer -> full recomputation of half of each chunk
    assert layout.recompute is Recompute.FULL and layout.recompute_layers == 16
    assert any("one layer in 2 checkpointed" in n for n in notes)
    _, layout, _ = read_torchtitan_job([f"--job.config_file={path}", "--compile.enable"], None, 2)
    assert layout.tensor == 2 and layout.data == 1


def test_torchtitans_own_stage_split_and_schedules():
    """Default less_layers of 1: the embedding and head count as layers (torchtitan's split, priced as such)."""
    base = ["--model.flavor", "8B", "--parallelism.pipeline_parallel_degree", "4", "--training.local_batch_size", "4"]
    _, layout, notes = read_torchtitan_job(base, None, 8)
    assert layout.pipeline_layers == (8, 9, 8, 7) and any("layers per rank" in n for n in notes)
    zbv = [*base, "--parallelism.pipeline_parallel_schedule", "ZBVZeroBubble", "--parallelism.pipeline_parallel_layers_per_stage", "4",
           "--parallelism.pipeline_parallel_first_stage_less_layers", "0", "--parallelism.pipeline_parallel_last_stage_less_layers", "0"]  # fmt: skip
    _, layout, _ = read_torchtitan_job(zbv, None, 8)
    assert layout.schedule is Schedule.ZBV and layout.virtual_stages == 2
    with pytest.raises(PlacementError, match="runs 2 stages per rank"):
        read_torchtitan_job([*zbv[:-6], "--parallelism.pipeline_parallel_layers_per_stage", "2", *zbv[-4:]], None, 8)


def test_float8_and_compile_are_read_by_torchtitans_names():
    argv = ["--model.flavor", "70B", "--model.converters", "quantize.linear.float8", "--compile.enable"]
    _, layout, notes = read_torchtitan_job(argv, None, 8)
    assert layout.dtype.value == "bf16" and layout.kernels is Kernels.COMPILED
    assert layout.float8 == Float8Training(Float8Recipe.TENSORWISE)  # torchtitan's default config: tensorwise


F8 = "--quantize.linear.float8."


@pytest.mark.parametrize(
    ("argv", "gpus", "want"),
    [
        ([F8 + "recipe_name", "rowwise"], 8, Float8Training(Float8Recipe.ROWWISE)),
        ([F8 + "recipe_name", "rowwise_with_gw_hp"], 8, Float8Training(Float8Recipe.ROWWISE_GW_HP)),
        ([F8 + "enable_fsdp_float8_all_gather", F8 + "precompute_float8_dynamic_scale_for_fsdp"], 8,
         Float8Training(all_gather=True, precompute_scale=True)),
        # no FSDP (one shard): torchtitan turns the float8 all-gather off
        ([F8 + "enable_fsdp_float8_all_gather", "--parallelism.tensor_parallel_degree", "8"], 8, Float8Training()),
        ([F8 + "filter_fqns", "output,attention.wk"], 8, Float8Training(skip=("wk", "output"))),
        ([F8 + "filter_fqns", "attention"], 8, Float8Training(skip=("wq", "wk", "wv", "wo"))),  # substrings
        ([F8 + "filter_fqns", "auto_filter_small_kn"], 8, Float8Training()),
    ],
)  # fmt: skip
def test_the_float8_converters_fields_are_read(argv, gpus, want):
    """Issue 44.1: torchtitan's [quantize.linear.float8] (Float8LinearConverter's reading of it)."""
    base = ["--model.flavor", "8B", "--model.converters", "quantize.linear.float8", "--training.local_batch_size", "1"]
    _, layout, notes = read_torchtitan_job([*base, *argv], None, gpus)
    assert layout.float8 == want
    assert ("auto_filter_small_kn" in " ".join(notes)) == ("auto_filter_small_kn" in argv)


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["--model.converters", "float8"], "not a torchtitan 0.2.2 converter (its name is quantize.linear.float8)"),
        ([F8 + "recipe_name", "rowwise", F8 + "enable_fsdp_float8_all_gather"], "torchtitan refuses them together"),
        ([F8 + "recipe_name", "blockwise"], "must be one of tensorwise, rowwise, rowwise_with_gw_hp"),
        ([F8 + "emulate"], "emulated in high precision"),
        ([F8 + "filter_fqn", "output"], "not a field of torchtitan 0.2.2's [quantize.linear.float8]"),
        ([F8 + "filter_fqns", "layers.1."], "skips attention.wq in some layers only"),
        (["--training.mixed_precision_param", "float32"], "float8 products beside bf16 training"),
    ],
)
def test_float8_mistakes_are_one_line(capsys, argv, words):
    base = ["predict", "--framework", "torchtitan", "--gpu", "H100", "--gpus", "8", "--", "--model.flavor", "8B"]
    converters = (
        [] if argv[:2] == ["--model.converters", "float8"] else ["--model.converters", "quantize.linear.float8"]
    )
    assert main([*base, "--training.local_batch_size", "1", *converters, *argv]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and words in err[0], err


def test_float8_needs_a_gpu_with_float8_products(capsys):
    """torchtitan refuses float8 below SM 8.9: the A100 has no float8 peak."""
    argv = ["--", "--model.flavor", "8B", "--model.converters", "quantize.linear.float8"]
    assert main(["predict", "--framework", "torchtitan", "--gpu", "A100", "--gpus", "8", *argv]) == 2
    assert "SM 8.9 or later" in capsys.readouterr().err


@pytest.mark.parametrize(
    "float8",
    [Float8Training(all_gather=True, precompute_scale=True), Float8Training(Float8Recipe.ROWWISE, skip=("output",)),
     Float8Training(Float8Recipe.ROWWISE_GW_HP, skip=("wq", "wk", "wv"))],
)  # fmt: skip
def test_float8_round_trips_through_the_toml(tmp_path, float8):
    model = MODELS["llama3-8b"].with_changes(seq_length=2048)
    layout = Layout(data=8, global_batch=8, zero_stage=3, overlap_grad_reduce=True, overlap_param_gather=True,
                    kernels=Kernels.COMPILED, recompute=Recompute.SELECTIVE, float8=float8)  # fmt: skip
    path = tmp_path / "job.toml"
    path.write_text(torchtitan_toml(model, layout), encoding="utf-8")
    _, read, _ = read_torchtitan_job([], str(path), 8)
    assert read.float8 == float8
    cluster = Cluster(accelerator("H100"), 8)
    want = predict(model, cluster, layout, framework="torchtitan")
    assert predict(model, cluster, read, framework="torchtitan").iteration_seconds == pytest.approx(
        want.iteration_seconds, rel=1e-9
    )


@pytest.mark.parametrize(
    ("argv", "kernels", "note"),
    [
        ([], Kernels.EAGER, None),  # torchtitan's default: compile off
        (["--compile.enable"], Kernels.COMPILED, None),
        (["--compile.enable", "--compile.components", "loss"], Kernels.EAGER, "without model"),
        (["--compile.enable", "--compile.components", "model"], Kernels.COMPILED, "without loss"),
        (["--compile.enable", "false", "--compile.components", "model,loss"], Kernels.EAGER, None),
    ],
)
def test_compile_sets_the_layers_kernels(argv, kernels, note):
    """Issue 44.1: torchtitan's kernels are eager unless torch.compile compiles the model."""
    _, layout, notes = read_torchtitan_job(["--model.flavor", "8B", *argv], None, 8)
    assert layout.kernels is kernels
    assert note is None or any(note in n for n in notes), notes


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["--parallelism.bogus", "1"], "--parallelism.bogus: not a field of torchtitan 0.2.2's [parallelism]"),
        (["--training.global_batch_size", "12"], "--training.global_batch_size 12: not a multiple of"),
        (["--parallelism.data_parallel_shard_degree", "4"], "not --gpus 8"),
        (["--model.flavor", "3B"], "'3B': not a modelled torchtitan 0.2.2 model (llama3 flavors: 8B, 70B, 405B"),
        (["--parallelism.tensor_parallel_degree", "two"], "--parallelism.tensor_parallel_degree 'two': not an integer"),
    ],
)
def test_bad_flags_are_one_line_exit_2(capsys, argv, words):
    base = ["predict", "--framework", "torchtitan", "--gpu", "H100", "--gpus", "8", "--"]
    assert main([*base, "--model.flavor", "8B", "--training.local_batch_size", "1", *argv]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and words in err[0], err


def test_config_needs_the_torchtitan_framework(capsys, tmp_path):
    assert main(["predict", "--gpu", "H100", "--gpus", "8", "--config", str(tmp_path / "x.toml"), "--", "--bf16"]) == 2
    assert "--framework torchtitan" in capsys.readouterr().err


def test_field_lists_are_torchtitans():
    """The sections and fields read are those of the installed torchtitan 0.2.2 JobConfig (where installed)."""
    found = installed_job_config()
    if found is None:
        pytest.skip("torchtitan is not installed (the export extra)")
    classes = dataclass_fields(found[1].read_text(encoding="utf-8"))
    sections = classes["JobConfig"]
    assert set(sections) == set(SECTIONS)
    for section, names in FIELDS.items():
        assert set(names) == set(classes[sections[section].id]), section  # type: ignore[attr-defined]
    for key in READ:  # a dotted field through its nested dataclasses ([quantize.linear.float8] recipe_name)
        *path, name = key.split(".")
        owner = "JobConfig"
        for part in path:
            owner = classes[owner][part].id  # type: ignore[attr-defined]
        assert name in classes[owner], key
