"""Hand-over of a plan (placement/perf/launch.py) and the ``plan`` subcommand (placement/perf/plan_cli.py)."""

from __future__ import annotations

import json
import tomllib
from dataclasses import replace

import pytest

from placement.cli import main
from placement.errors import PlacementError
from placement.perf.hardware import ACCELERATORS, Cluster
from placement.perf.launch import (
    TORCHTITAN_PARALLELISM_FIELDS,
    check_deepspeed,
    check_megatron,
    check_torchtitan,
    deepspeed_config,
    megatron_command,
    torchtitan_command,
    torchtitan_stage_count,
    torchtitan_toml,
)
from placement.perf.layout import Kernels, Layout, Recompute, RecomputeMethod, stage_layers
from placement.perf.megatron import parse_megatron_args
from placement.perf.plan_cli import describe_layout
from placement.perf.predict import predict
from placement.perf.search import search
from placement.perf.spaces import get_space
from placement.perf.torchtitan_check import installed_job_config, job_config_errors
from placement.perf.transformer import MODELS

LLAMA8 = MODELS["llama3-8b"]


@pytest.mark.parametrize(
    ("model", "gpu", "gpus", "batch", "space"),
    [
        ("llama3-8b", "H100", 64, 256, "megatron"),
        ("llama3-70b", "H100", 256, 512, "megatron"),
        ("gpt3-175b", "A100", 512, 1536, "megatron"),
        ("mixtral-8x7b", "H100", 64, 256, "megatron"),
        ("llama3-8b", "A100", 32, 128, "torchtitan"),
        ("llama3-8b", "A100", 32, 128, "deepspeed"),
        ("llama3-405b", "H100", 16384, 16384, "megatron"),  # uneven: 126 layers over 16 ranks
    ],
)
def test_megatron_args_reproduce_the_plan(model, gpu, gpus, batch, space):
    spec = MODELS[model].with_changes(seq_length=8192) if model == "llama3-405b" else MODELS[model]
    cluster = Cluster(ACCELERATORS[gpu], gpus, 8)
    plan = search(spec, cluster, batch, space).plan
    argv = megatron_command(spec, plan.layout)
    parsed_model, parsed_layout, _ = parse_megatron_args(argv, gpus)
    again = predict(parsed_model, cluster, parsed_layout)
    # Megatron-LM runs the layout with its own (fused) kernels: the torchtitan plan's layout priced with them
    want = (
        plan.prediction
        if space == "megatron"
        else predict(spec, cluster, plan.layout.with_changes(kernels=Kernels.FUSED))
    )
    assert parsed_layout.kernels is Kernels.FUSED
    assert again.iteration_seconds == want.iteration_seconds
    assert again.memory.total == want.memory.total
    assert again.tflops_per_gpu == want.tflops_per_gpu
    if space == "megatron":
        check = check_megatron(spec, plan.layout)
        assert check.ok, check.message


def test_megatron_parser_rejects_what_megatron_rejects():
    bad = Layout(tensor=3, pipeline=1, data=1, global_batch=8)  # 32 heads not divisible by 3
    check = check_megatron(LLAMA8, bad)
    assert not check.ok and "tensor_model_parallel_size" in check.message


def test_torchtitan_toml_parses_and_uses_its_field_names():
    lay = Layout(tensor=2, pipeline=4, data=4, virtual_stages=2, micro_batch=2, global_batch=64, zero_stage=3,
                 sequence_parallel=True, recompute=Recompute.SELECTIVE)  # fmt: skip
    text = torchtitan_toml(LLAMA8, lay)
    data = tomllib.loads(text)
    par = data["parallelism"]
    assert set(par) <= set(TORCHTITAN_PARALLELISM_FIELDS)
    assert par["data_parallel_shard_degree"] == 4 and par["tensor_parallel_degree"] == 2
    assert par["pipeline_parallel_schedule"] == "Interleaved1F1B" and par["pipeline_parallel_layers_per_stage"] == 4
    assert data["model"] == {"name": "llama3", "flavor": "8B"}  # torchtitan's train spec and flavor
    assert data["activation_checkpoint"]["mode"] == "selective"
    assert data["training"]["global_batch_size"] == 64 and data["training"]["local_batch_size"] == 16
    assert check_torchtitan(text, LLAMA8.layers).ok
    assert not check_torchtitan(text + "\n[parallelism]\n").ok  # duplicate table: tomllib refuses
    with pytest.raises(PlacementError, match="ZeRO stage 1"):
        torchtitan_toml(LLAMA8, replace(lay, zero_stage=1))
    with pytest.raises(PlacementError, match="sequence parallelism"):
        torchtitan_toml(LLAMA8, replace(lay, sequence_parallel=False))


def test_torchtitan_builds_the_planned_pipeline_stages():
    """torchtitan 0.2.2 counts the embedding and the head as one layer each unless told not to."""
    assert torchtitan_stage_count(32, 4, 1, 1) == 9  # its defaults: 9 stages, not divisible by p = 4
    assert torchtitan_stage_count(32, 4, 0, 0) == 8
    for p, v in ((2, 1), (4, 1), (4, 2), (8, 2), (2, 8)):
        lay = Layout(pipeline=p, data=2, virtual_stages=v, global_batch=64, schedule="interleaved" if v > 1 else "1f1b")
        par = tomllib.loads(torchtitan_toml(LLAMA8, lay))["parallelism"]
        stages = torchtitan_stage_count(
            LLAMA8.layers,
            par["pipeline_parallel_layers_per_stage"],
            par["pipeline_parallel_first_stage_less_layers"],
            par["pipeline_parallel_last_stage_less_layers"],
        )
        assert stages == p * v
    text = torchtitan_toml(LLAMA8, Layout(pipeline=4, data=2, global_batch=64))
    defaults = "\n".join(line for line in text.splitlines() if "_stage_less_layers" not in line)
    check = check_torchtitan(defaults, LLAMA8.layers)
    assert not check.ok and "would build 5 stages" in check.message


def test_torchtitan_command_and_models_without_a_train_spec():
    assert torchtitan_command(Layout(tensor=8, data=16, global_batch=128), gpus_per_node=8) == [
        "torchrun", "--nnodes=16", "--nproc_per_node=8", "-m", "torchtitan.train", "--job.config_file", "torchtitan.toml"
    ]  # fmt: skip
    assert "--nproc_per_node=2" in torchtitan_command(Layout(data=2, global_batch=8))
    lay = Layout(tensor=8, pipeline=8, data=2, global_batch=64, sequence_parallel=True)
    text = torchtitan_toml(MODELS["gpt3-175b"], lay)
    assert "ships no train spec for gpt3-175b" in text and tomllib.loads(text)["model"]["name"] == "gpt3-175b"


JOB_CONFIG = """
from dataclasses import dataclass, field
from typing import Literal

@dataclass
class Parallelism:
    tensor_parallel_degree: int = 1
    pipeline_parallel_layers_per_stage: int | None = None
    fsdp_reshard_after_forward: Literal["default", "always", "never"] = "default"

@dataclass
class Training:
    seq_len: int = 2048
    max_norm: float | int = 1.0

@dataclass
class JobConfig:
    parallelism: Parallelism = field(default_factory=Parallelism)
    training: Training = field(default_factory=Training)
"""


@pytest.mark.parametrize(
    ("data", "error"),
    [
        ({"parallelism": {"tensor_parallel_degree": 2, "pipeline_parallel_layers_per_stage": None}}, None),
        ({"training": {"seq_len": 8192, "max_norm": 0.5}}, None),
        ({"parallelism": {"enable_sequence_parallel": True}}, "enable_sequence_parallel is not a field of Parallelism"),
        ({"parallelism": {"tensor_parallel_degree": "2"}}, "does not fit int"),
        ({"parallelism": {"tensor_parallel_degree": True}}, "does not fit int"),
        ({"parallelism": {"fsdp_reshard_after_forward": "sometimes"}}, "does not fit Literal"),
        ({"parallelism": {"pipeline_parallel_layers_per_stage": 2.5}}, "does not fit int | None"),
        ({"optimizer": {"lr": 1.0}}, "[optimizer] is not a section of JobConfig"),
    ],
)
def test_job_config_errors_follow_the_dataclasses(data, error):
    errors = job_config_errors(data, JOB_CONFIG)
    assert (errors == []) if error is None else any(error in e for e in errors), errors


@pytest.mark.skipif(installed_job_config() is None, reason="torchtitan not installed (scripts/setup.sh --export)")
def test_every_torchtitan_plan_passes_the_installed_job_config():
    """The TOML of torchtitan-space plans, against the JobConfig source of the installed release (0.2.2)."""
    version, path = installed_job_config()  # type: ignore[misc]
    assert version == "0.2.2"
    source = path.read_text(encoding="utf-8")
    assert "enable_sequence_parallel" not in source  # 0.3.0's field: absent from 0.2.2's job config
    for name, gpus, batch in (("llama3-8b", 64, 256), ("llama3-70b", 256, 512)):
        model = MODELS[name]
        result = search(model, Cluster(ACCELERATORS["H100"], gpus), batch, space=get_space("torchtitan"))
        text = torchtitan_toml(model, result.plan.layout)
        assert job_config_errors(tomllib.loads(text), source) == []
        check = check_torchtitan(text, model.layers)
        assert check.ok and "0.2.2 JobConfig" in check.parser, check


def test_deepspeed_config_passes_deepspeed_config_class():
    lay = Layout(tensor=1, pipeline=4, data=8, micro_batch=2, global_batch=128, zero_stage=1, recompute=Recompute.FULL)
    cfg = deepspeed_config(LLAMA8, lay)
    assert cfg["gradient_accumulation_steps"] == 8 and cfg["pipeline"]["stages"] == 4
    assert check_deepspeed(cfg, 8).ok
    assert not check_deepspeed({**cfg, "zero_optimization": {"stage": 7}}, 8).ok
    assert not check_deepspeed(cfg, 16).ok  # batch identity broken for d = 16
    with pytest.raises(PlacementError, match="ZeRO stage 0 or 1"):
        deepspeed_config(LLAMA8, replace(lay, zero_stage=3))


def test_cli_plan_json(capsys):
    code = main(["plan", "--model", "llama3-8b", "--gpu", "H100", "--gpus", "64", "--global-batch", "256",
                 "--framework", "torchtitan", "--json"])  # fmt: skip
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out["status"] == "optimal" and out["space"] == "torchtitan"
    assert out["plan"]["prediction"]["fits"] and out["plan"]["layout"]["zero_stage"] == 3
    assert tomllib.loads(out["torchtitan_toml"])["parallelism"]["data_parallel_shard_degree"] >= 1
    assert out["torchtitan_command"][:2] == ["torchrun", "--nnodes=8"]
    assert all(c["ok"] for c in out["checks"])


def test_cli_plan_text_and_pareto(capsys):
    code = main(["plan", "--model", "llama3-8b", "--gpu", "A100", "--gpus", "16", "--global-batch", "64",
                 "--framework", "deepspeed", "--pareto", "--price", "2.5"])  # fmt: skip
    out = capsys.readouterr().out
    assert code == 0 and "optimal (proven in the model" in out and "Pareto front" in out
    assert '"zero_optimization"' in out


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["--framework", "colossal"], "--framework"),
        (["--gpu", "Z80"], "--gpu"),
        (["--model", "llama9"], "llama9"),
        (["--price", "-1"], "--price"),
    ],
)
def test_cli_plan_bad_input_one_line(capsys, argv, needle):
    base = {"--model": "llama3-8b", "--gpu": "H100", "--gpus": "64", "--global-batch": "256"}
    for flag, value in zip(argv[::2], argv[1::2], strict=True):
        base[flag] = value
    code = main(["plan", *[x for kv in base.items() for x in kv]])
    err = capsys.readouterr().err
    assert code == 2 and needle in err and len(err.strip().splitlines()) == 1


def test_uneven_split_round_trip_and_feasibility():
    """Llama 3 405B on 16,384 H100s: no even split of 126 layers fits; the uneven one does, and hands over."""
    spec = MODELS["llama3-405b"].with_changes(seq_length=8192)
    cluster = Cluster(ACCELERATORS["H100"], 16384, 8)
    even_only = replace(get_space("megatron"), uneven=False)
    assert str(search(spec, cluster, 16384, even_only).status) == "infeasible"
    plan = search(spec, cluster, 16384, "megatron").plan
    lay = plan.layout
    assert lay.uneven and sum(stage_layers(spec, lay)) == 126 and lay.pipeline > 1
    argv = megatron_command(spec, lay)
    assert "--decoder-first-pipeline-num-layers" in argv and "--decoder-last-pipeline-num-layers" in argv
    _, parsed, _ = parse_megatron_args(argv, 16384)
    assert (parsed.first_stage_layers, parsed.last_stage_layers) == (lay.first_stage_layers, lay.last_stage_layers)
    with pytest.raises(PlacementError, match="layers_per_stage"):
        torchtitan_toml(spec, lay)
    bad = argv + ["--decoder-first-pipeline-num-layers", "200"]
    with pytest.raises(PlacementError, match="decoder-first"):
        check = parse_megatron_args(bad, 16384)[1]
        predict(spec, cluster, check)


def test_uneven_split_with_virtual_stages_round_trip():
    """Megatron-Core accepts --decoder-first/last-pipeline-num-layers with interleaving when every rank's count
    is a multiple of v (TransformerConfig.__post_init__); the model, the exporter and the real config agree."""
    cluster = Cluster(ACCELERATORS["H100"], 64, 8)
    # 32 layers over p = 4, v = 2: first 6, last 6, middle ranks 10 each (all even)
    lay = Layout(tensor=2, pipeline=4, data=8, virtual_stages=2, micro_batch=1, global_batch=64,
                 sequence_parallel=True, first_stage_layers=6, last_stage_layers=6)  # fmt: skip
    assert stage_layers(LLAMA8, lay) == (6, 10, 10, 6)
    plan = predict(LLAMA8, cluster, lay)
    even = predict(LLAMA8, cluster, replace(lay, first_stage_layers=None, last_stage_layers=None))
    assert plan.iteration_seconds != even.iteration_seconds
    argv = megatron_command(LLAMA8, lay)
    assert "--num-virtual-stages-per-pipeline-rank" in argv and "--num-layers-per-virtual-pipeline-stage" not in argv
    parsed_model, parsed, _ = parse_megatron_args(argv, 64)
    assert parsed == lay
    again = predict(parsed_model, cluster, parsed)
    assert (again.iteration_seconds, again.memory.total) == (plan.iteration_seconds, plan.memory.total)
    check = check_megatron(LLAMA8, lay)
    assert check.ok, check.message
    # a first-rank count that is not a multiple of v: both the model and Megatron-Core refuse it
    bad = replace(lay, first_stage_layers=5, last_stage_layers=7)
    with pytest.raises(PlacementError, match="multiple of the 2 virtual stages"):
        stage_layers(LLAMA8, bad)
    refused = check_megatron(LLAMA8, bad)
    assert not refused.ok and "divisible by virtual" in refused.message


def test_free_split_plan_hands_over_as_the_layout_string():
    """A searched free split (memory forces it) is exported as --pipeline-model-parallel-layout only; parsed and
    predicted again it gives the plan's numbers; Megatron-Core's TransformerConfig accepts it; torchtitan and
    DeepSpeed refuse it in one line saying why."""
    from placement.perf.transformer import TransformerSpec

    wide = TransformerSpec(layers=12, hidden=3072, heads=32, seq_length=2048, vocab=32000, name="wide")
    cluster = Cluster(replace(ACCELERATORS["A100"], memory_bytes=12 * 2**30), 4, 1)
    plan = search(wide, cluster, 8, "megatron").plan
    lay = plan.layout
    assert lay.free_split and stage_layers(wide, lay) == (2, 3, 4, 3)
    argv = megatron_command(wide, lay)
    assert argv[argv.index("--pipeline-model-parallel-layout") + 1] == "Et*2|t*3|t*4|t*3L"
    assert not {"--decoder-first-pipeline-num-layers", "--decoder-last-pipeline-num-layers"} & set(argv)
    parsed_model, parsed, _ = parse_megatron_args(argv, 4)
    assert parsed == lay
    again = predict(parsed_model, cluster, parsed)
    assert (again.iteration_seconds, again.memory.total) == (plan.iteration_seconds, plan.memory_bytes)
    assert again.tflops_per_gpu == plan.prediction.tflops_per_gpu
    check = check_megatron(wide, lay)
    assert check.ok, check.message
    for export, needle in ((torchtitan_toml, "same layer count"), (deepspeed_config, "uniform")):
        with pytest.raises(PlacementError, match=needle) as info:
            export(wide, lay)
        assert "\n" not in str(info.value)


def test_free_split_with_partial_recomputation_hands_over():
    """A searched free split with block recomputation of k layers below a chunk exports as the layout string plus
    --recompute-granularity full --recompute-method block --recompute-num-layers k; parsed and predicted again it
    gives the plan's numbers, and Megatron-Core's TransformerConfig accepts it."""
    from placement.perf.transformer import TransformerSpec

    wide = TransformerSpec(layers=12, hidden=3072, heads=32, seq_length=2048, vocab=32000, name="wide")
    cluster = Cluster(replace(ACCELERATORS["A100"], memory_bytes=11.875 * 2**30), 4, 1)
    plan = search(wide, cluster, 8, "megatron").plan
    lay = plan.layout
    assert lay.free_split and stage_layers(wide, lay) == (2, 3, 4, 3) and lay.recompute_layers == 1
    argv = megatron_command(wide, lay)
    assert argv[argv.index("--pipeline-model-parallel-layout") + 1] == "Et*2|t*3|t*4|t*3L"
    for flag, value in (("--recompute-granularity", "full"), ("--recompute-method", "block"),
                        ("--recompute-num-layers", "1")):  # fmt: skip
        assert argv[argv.index(flag) + 1] == value
    parsed_model, parsed, _ = parse_megatron_args(argv, 4)
    assert parsed == lay
    again = predict(parsed_model, cluster, parsed)
    assert (again.iteration_seconds, again.memory.total) == (plan.iteration_seconds, plan.memory_bytes)
    check = check_megatron(wide, lay)
    assert check.ok, check.message


@pytest.mark.parametrize(
    ("method", "count", "shown"),
    [
        ("block", 1, "recompute full (block, 1 layer)"),
        ("block", 3, "recompute full (block, 3 layers)"),
        ("uniform", None, "recompute full (uniform)"),
    ],
)
def test_the_plan_line_counts_recomputed_layers_in_words(method, count, shown):
    layout = Layout(
        tensor=1,
        pipeline=4,
        data=1,
        recompute=Recompute.FULL,
        recompute_method=RecomputeMethod(method),
        recompute_layers=count,
    )
    assert shown in describe_layout(layout)
