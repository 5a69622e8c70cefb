"""Hand a plan over to a framework: Megatron-LM arguments, a torchtitan TOML job config, a DeepSpeed JSON config.

* :func:`megatron_command` - the complete Megatron-LM argument list of :func:`placement.perf.megatron.megatron_args`
  (the flags ``python -m placement predict`` reads, so predicting it again gives the plan's own numbers).
* :func:`torchtitan_toml` - a torchtitan :data:`TORCHTITAN_VERSION` job config (``--job.config_file``, launched by
  :func:`torchtitan_command`), sections ``[model]``, ``[training]``, ``[parallelism]`` and
  ``[activation_checkpoint]`` with that release's field names (``data_parallel_shard_degree`` is FSDP2 over the
  data-parallel ranks). 0.2.2 is the last release with TOML job configs: 0.3.0 replaced them by Python config
  registries (``--module`` / ``--config``).
* :func:`deepspeed_config` - a DeepSpeed config dictionary (``zero_optimization``, ``pipeline``,
  ``activation_checkpointing``, batch sizes, precision; ``tensor_parallel.autotp_size`` for t > 1).

:func:`check_configs` runs the real parsers that can be imported here: Megatron-Core's
``TransformerConfig`` (its validation of the parallel sizes and recomputation settings),
``deepspeed.runtime.config.DeepSpeedConfig``, and for torchtitan ``tomllib`` plus the field names and literal
choices of torchtitan 0.2.2's ``JobConfig`` read from the installed release's source
(:mod:`placement.perf.torchtitan_check`: its package cannot be imported here, it imports triton).
"""

from __future__ import annotations

import json
import shlex
import tomllib
from dataclasses import dataclass

from ..errors import PlacementError
from .hardware import Dtype
from .layout import Float8Training, Kernels, Layout, Recompute, Schedule
from .megatron import megatron_args
from .transformer import TransformerSpec

#: torchtitan's pipeline schedule names (torch.distributed.pipelining) for the model's schedules.
TORCHTITAN_SCHEDULES = {
    Schedule.ONE_F_ONE_B: "1F1B",
    Schedule.INTERLEAVED: "Interleaved1F1B",
    Schedule.ZBV: "ZBVZeroBubble",
    Schedule.GPIPE: "GPipe",
}

#: The torchtitan release :func:`torchtitan_toml` writes for (the last with TOML job configs).
TORCHTITAN_VERSION = "0.2.2"

#: torchtitan 0.2.2's train spec and flavor of the model builders it ships (``torchtitan/models/llama3``).
TORCHTITAN_MODELS = {"llama3-8b": ("llama3", "8B"), "llama3-70b": ("llama3", "70B"), "llama3-405b": ("llama3", "405B")}

#: Field names of torchtitan 0.2.2's ``Parallelism`` section used in the TOML (checked against its source by tests).
TORCHTITAN_PARALLELISM_FIELDS = (
    "data_parallel_replicate_degree",
    "data_parallel_shard_degree",
    "tensor_parallel_degree",
    "pipeline_parallel_degree",
    "pipeline_parallel_first_stage_less_layers",
    "pipeline_parallel_last_stage_less_layers",
    "pipeline_parallel_schedule",
    "pipeline_parallel_microbatch_size",
    "pipeline_parallel_layers_per_stage",
    "context_parallel_degree",
    "expert_parallel_degree",
)


def megatron_command(model: TransformerSpec, layout: Layout, pipeline_layout: bool = False) -> list[str]:
    """The plan as Megatron-LM arguments (``pretrain_gpt.py`` flags), one list element per token.

    ``pipeline_layout``: the layer split as Megatron-Core's ``--pipeline-model-parallel-layout``.
    """
    return list(megatron_args(model, layout, pipeline_layout))


def _toml_value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    return json.dumps(str(value))


def torchtitan_toml(model: TransformerSpec, layout: Layout) -> str:
    """A torchtitan 0.2.2 job config (TOML) running ``layout`` (launch it with :func:`torchtitan_command`).

    The pipeline stages: ``pipeline_parallel_layers_per_stage`` layers each, with the first and last stages'
    "less layers" set to 0 (torchtitan's default of 1 counts the embedding and the head as a layer each, so
    ``L / (p v)`` layers per stage would make ``ceil((L + 2) / (L / (p v)))`` stages, more than ``p v``:
    :func:`torchtitan_stage_count`). ``[compile]`` is enabled unless the layout's kernels are eager.

    Raises
    ------
    PlacementError
        For what torchtitan cannot run: ZeRO stages other than FSDP2 over the data ranks (0 or 3 with
        d = 1 is plain replication), schedules it has no name for, per-stage layer counts, and tensor
        parallelism without sequence parallelism (torchtitan 0.2.2 always shards the norms with TP).
    """
    if layout.schedule not in TORCHTITAN_SCHEDULES:
        raise PlacementError(f"torchtitan: schedule {layout.schedule} has no torchtitan equivalent here")
    if layout.uneven:
        raise PlacementError(
            "torchtitan: pipeline_parallel_layers_per_stage gives every stage the same layer count (no first/last or "
            "per-rank counts)"
        )
    if layout.zero_stage not in (0, 3) and layout.data * layout.context > 1:
        raise PlacementError(f"torchtitan: ZeRO stage {layout.zero_stage} (torchtitan shards with FSDP2: stage 3)")
    if layout.tensor > 1 and not layout.sequence_parallel:
        raise PlacementError(
            "torchtitan: tensor parallelism always comes with sequence parallelism in torchtitan 0.2.2"
        )
    local = layout.global_batch // layout.data
    parallel: dict[str, object] = {
        "data_parallel_replicate_degree": layout.replicate if layout.zero_stage == 3 else layout.data,
        "data_parallel_shard_degree": layout.fsdp_shard if layout.zero_stage == 3 else 1,
        "tensor_parallel_degree": layout.tensor,
        "pipeline_parallel_degree": layout.pipeline,
        "pipeline_parallel_schedule": TORCHTITAN_SCHEDULES[layout.schedule],
        "pipeline_parallel_microbatch_size": layout.micro_batch,
        "context_parallel_degree": layout.context,
        "expert_parallel_degree": layout.expert,
    }
    if layout.tp_comm_overlap and layout.tensor > 1:
        parallel["enable_async_tensor_parallel"] = True
    if layout.reshard_after_forward is not None:
        parallel["fsdp_reshard_after_forward"] = "always" if layout.reshard_after_forward else "never"
    if layout.pipeline > 1:
        parallel["pipeline_parallel_layers_per_stage"] = model.layers // (layout.pipeline * layout.virtual_stages)
        parallel["pipeline_parallel_first_stage_less_layers"] = 0
        parallel["pipeline_parallel_last_stage_less_layers"] = 0
    mode = {Recompute.NONE: "none", Recompute.SELECTIVE: "selective", Recompute.FULL: "full"}[layout.recompute]
    name, flavor = TORCHTITAN_MODELS.get(model.name, (model.name, model.name))
    sections: dict[str, dict[str, object]] = {
        "job": {"description": f"{model.name}: plan of python -m placement plan"},
        "model": {"name": name, "flavor": flavor},
        "training": {
            # without pipelining torchtitan accumulates gradients over local batches of the micro-batch size
            "local_batch_size": local if layout.pipeline > 1 else layout.micro_batch,
            "global_batch_size": layout.global_batch,
            "seq_len": model.seq_length,
            "mixed_precision_param": "bfloat16" if layout.dtype is Dtype.BF16 else "float32",
        },
        "parallelism": parallel,
        "activation_checkpoint": {"mode": mode, **({"selective_ac_option": "op"} if mode == "selective" else {})},
        # the layers' kernels: eager, or each block and the loss compiled (a fused layout runs compiled)
        "compile": {"enable": layout.kernels is not Kernels.EAGER, "components": ["model", "loss"]},
    }
    if layout.float8 is not None:
        sections["model"]["converters"] = ["quantize.linear.float8"]
        sections["quantize.linear.float8"] = _float8_section(layout.float8)
    lines = [f"# torchtitan {TORCHTITAN_VERSION} job config (--job.config_file)"]
    if model.name not in TORCHTITAN_MODELS:
        lines.append(
            f"# torchtitan {TORCHTITAN_VERSION} ships no train spec for {model.name}: register one under this name"
        )
    for section, body in sections.items():
        lines.append(f"[{section}]")
        lines += [f"{k} = {_toml_value(v)}" for k, v in body.items()]
        lines.append("")
    return "\n".join(lines)


#: Where torchtitan's llama3 products sit: a block's module path, or the model's (``output``).
TORCHTITAN_MODULE_PATHS = {
    "wq": "attention.wq", "wk": "attention.wk", "wv": "attention.wv", "wo": "attention.wo",
    "w1": "feed_forward.w1", "w2": "feed_forward.w2", "w3": "feed_forward.w3", "output": "output",
}  # fmt: skip


def _float8_section(f8: Float8Training) -> dict[str, object]:
    """``[quantize.linear.float8]`` of a layout's float8 linear layers (torchtitan 0.2.2's names)."""
    body: dict[str, object] = {}
    if f8.all_gather:  # tensorwise by torchtitan's default config (a recipe name turns the all-gather off)
        body["enable_fsdp_float8_all_gather"] = True
        body["precompute_float8_dynamic_scale_for_fsdp"] = f8.precompute_scale
    else:
        body["recipe_name"] = str(f8.recipe)
    body["filter_fqns"] = [TORCHTITAN_MODULE_PATHS[name] for name in f8.skip]
    return body


def torchtitan_command(layout: Layout, gpus_per_node: int = 8, config: str = "torchtitan.toml") -> list[str]:
    """The ``torchrun`` command line that launches the job config ``config`` on every node, one token per element."""
    gpus = layout.gpus
    per_node = min(gpus_per_node, gpus)
    nodes = -(-gpus // per_node)
    return [
        "torchrun",
        f"--nnodes={nodes}",
        f"--nproc_per_node={per_node}",
        "-m",
        "torchtitan.train",
        "--job.config_file",
        config,
    ]


#: The Megatron-LM training script the launch command runs (from a Megatron-LM checkout).
MEGATRON_SCRIPT = "pretrain_gpt.py"


def megatron_launch(
    model: TransformerSpec, layout: Layout, gpus_per_node: int = 8, pipeline_layout: bool = False
) -> list[str]:
    """The whole launch: ``torchrun`` on every node (node rank and master address from the environment, as a
    cluster scheduler sets them) running :data:`MEGATRON_SCRIPT` with :func:`megatron_command`'s arguments."""
    per_node = min(gpus_per_node, layout.gpus)
    nodes = -(-layout.gpus // per_node)
    launcher = ["torchrun", f"--nproc-per-node={per_node}", f"--nnodes={nodes}"]
    if nodes > 1:
        launcher += ["--node-rank=$NODE_RANK", "--master-addr=$MASTER_ADDR", "--master-port=6000"]
    return [*launcher, MEGATRON_SCRIPT, *megatron_command(model, layout, pipeline_layout)]


def shell_text(argv: list[str], width: int = 100) -> str:
    """``argv`` as a shell command to copy: quoted where needed (``$VARIABLES`` left to the shell), each flag with its
    value, lines continued with a backslash once they pass ``width`` characters. Nothing is cut."""

    def word(token: str) -> str:
        name, eq, value = token.partition("=")
        if "$" in token and eq and value.startswith("$") and value[1:].replace("_", "").isalnum():
            return f"{shlex.quote(name)}={value}"
        return shlex.quote(token)

    groups: list[str] = []
    for token in argv:
        if groups and not token.startswith("-") and groups[-1].startswith("-") and " " not in groups[-1]:
            groups[-1] += " " + word(token)  # a flag's value stays beside it
        else:
            groups.append(word(token))
    lines = [""]
    for group in groups:
        if lines[-1] and len(lines[-1]) + 1 + len(group) > width:
            lines.append("    " + group)
        else:
            lines[-1] = f"{lines[-1]} {group}" if lines[-1] else group
    return " \\\n".join(lines)


def torchtitan_stage_count(layers: int, layers_per_stage: int, first_less: int, last_less: int) -> int:
    """Pipeline stages torchtitan 0.2.2 builds (``distributed/pipeline_parallel.py``, ``pipeline_llm``).

    ``ceil((layers + first_less + last_less) / layers_per_stage)``: the embedding and the head count as
    ``first_less`` and ``last_less`` layers.
    """
    return -(-(layers + first_less + last_less) // layers_per_stage)


def deepspeed_config(model: TransformerSpec, layout: Layout) -> dict[str, object]:
    """A DeepSpeed config dictionary running ``layout`` (write it with ``json.dumps``).

    Raises
    ------
    PlacementError
        For what DeepSpeed cannot run: context or expert parallelism, interleaved schedules, ZeRO 2/3
        with the pipeline engine, selective recomputation.
    """
    if layout.context > 1 or layout.expert > 1:
        raise PlacementError("deepspeed: context / expert parallelism are not in DeepSpeed's pipeline engine")
    if layout.replicate > 1:
        raise PlacementError(
            "deepspeed: HSDP replicas (replicate > 1) are torchtitan's FSDP2; not written for DeepSpeed"
        )
    if layout.virtual_stages > 1:
        raise PlacementError("deepspeed: the pipeline engine runs one stage per GPU (no interleaving)")
    if layout.pipeline > 1 and layout.zero_stage > 1:
        raise PlacementError("deepspeed: the pipeline engine supports ZeRO stage 0 or 1 only")
    if layout.recompute is Recompute.SELECTIVE:
        raise PlacementError("deepspeed: activation checkpointing is per layer (none or full)")
    if layout.uneven:
        raise PlacementError(
            "deepspeed: the pipeline engine's partition here is uniform (its partition_method balances parameters, "
            "not given per-rank layer counts)"
        )
    m = layout.global_batch // (layout.micro_batch * layout.data)
    config: dict[str, object] = {
        "train_batch_size": layout.global_batch,
        "train_micro_batch_size_per_gpu": layout.micro_batch,
        "gradient_accumulation_steps": m,
        "gradient_clipping": 1.0,
        "zero_optimization": {"stage": layout.zero_stage, "overlap_comm": True, "contiguous_gradients": True},
        "steps_per_print": 10,
    }
    zero: dict[str, object] = config["zero_optimization"]  # type: ignore[assignment]
    if layout.offload_optimizer:
        zero["offload_optimizer"] = {"device": "cpu", "pin_memory": True}
    if layout.offload_params:
        zero["offload_param"] = {"device": "cpu", "pin_memory": True}
    config["bf16" if layout.dtype is Dtype.BF16 else "fp16"] = {"enabled": True}
    if layout.pipeline > 1:
        interval = 1 if layout.recompute is Recompute.FULL else 0
        config["pipeline"] = {
            "stages": layout.pipeline,
            "partition": "uniform",
            "activation_checkpoint_interval": interval,
        }
    if layout.recompute is Recompute.FULL:
        config["activation_checkpointing"] = {
            "partition_activations": layout.tensor > 1,
            "contiguous_memory_optimization": False,
            "cpu_checkpointing": False,
            "number_checkpoints": model.layers // layout.pipeline,
        }
    if layout.tensor > 1:
        config["tensor_parallel"] = {"autotp_size": layout.tensor}
    return config


@dataclass(frozen=True)
class ConfigCheck:
    """Outcome of one real parser on one config: ``ok`` or the parser's one-line message.

    ``checked`` is False when the parser could not run here (its framework is not installed): then ``ok`` is
    False and ``message`` says so; the config is neither accepted nor rejected.
    """

    target: str
    parser: str
    ok: bool
    message: str = ""
    checked: bool = True

    def line(self) -> str:
        """One line for the CLI and the pages: ``checked by P: ok``, ``... REJECTED: why`` or ``P: not checked (...)``."""
        if not self.checked:
            return f"{self.parser}: {self.message}"
        return f"checked by {self.parser}: " + ("ok" if self.ok else "REJECTED: " + self.message)


def check_megatron(model: TransformerSpec, layout: Layout, pipeline_layout: bool = False) -> ConfigCheck:
    """Megatron-Core's ``TransformerConfig`` built from the plan (its own checks of sizes and recomputation).

    ``pipeline_layout``: the split given as ``pipeline_model_parallel_layout`` (parsed and validated by
    Megatron-Core's ``PipelineParallelLayerLayout``) instead of the first/last-rank counts (always for a free
    split).
    """
    parser = "megatron.core.transformer.TransformerConfig"
    try:
        import warnings

        import torch

        with warnings.catch_warnings():  # megatron-core warns that Transformer Engine and Apex are absent
            warnings.simplefilter("ignore")
            from megatron.core.transformer import TransformerConfig
    except ImportError:
        return ConfigCheck("megatron", parser, False, "not checked (Megatron not installed)", checked=False)
    dtype = torch.bfloat16 if layout.dtype is Dtype.BF16 else torch.float16
    kwargs: dict[str, object] = {
        "num_layers": model.layers,
        "hidden_size": model.hidden,
        "num_attention_heads": model.heads,
        "num_query_groups": model.groups,
        "ffn_hidden_size": model.ffn,
        "gated_linear_unit": model.swiglu,
        "tensor_model_parallel_size": layout.tensor,
        "pipeline_model_parallel_size": layout.pipeline,
        "virtual_pipeline_model_parallel_size": layout.virtual_stages if layout.virtual_stages > 1 else None,
        "context_parallel_size": layout.context,
        "expert_model_parallel_size": layout.expert,
        "sequence_parallel": layout.sequence_parallel,
        "bf16": layout.dtype is Dtype.BF16,
        "fp16": layout.dtype is Dtype.FP16,
        "params_dtype": dtype,
        "pipeline_dtype": dtype,
    }
    if (pipeline_layout and layout.pipeline > 1) or layout.free_split:
        from .pp_layout import pipeline_layout_string

        kwargs["pipeline_model_parallel_layout"] = pipeline_layout_string(model, layout)
    else:
        if layout.first_stage_layers is not None:
            kwargs["num_layers_in_first_pipeline_stage"] = layout.first_stage_layers
        if layout.last_stage_layers is not None:
            kwargs["num_layers_in_last_pipeline_stage"] = layout.last_stage_layers
    if model.moe:
        kwargs.update(num_moe_experts=model.num_experts, moe_router_topk=model.moe_topk)
    if layout.recompute is not Recompute.NONE:
        kwargs["recompute_granularity"] = str(layout.recompute)
    if layout.recompute is Recompute.FULL:
        kwargs.update(recompute_method=str(layout.recompute_method), recompute_num_layers=layout.recompute_layers or 1)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            TransformerConfig(**kwargs)
    except (ValueError, AssertionError, TypeError) as exc:
        return ConfigCheck("megatron", parser, False, str(exc).splitlines()[0])
    return ConfigCheck("megatron", parser, True)


def check_deepspeed(config: dict[str, object], data_parallel: int) -> ConfigCheck:
    """``DeepSpeedConfig`` on the dict; the batch identity against d checked here (no process group: world size 1)."""
    parser = "deepspeed.runtime.config.DeepSpeedConfig"
    try:
        from deepspeed.runtime.config import DeepSpeedConfig
    except ImportError:
        return ConfigCheck("deepspeed", parser, False, "not checked (DeepSpeed not installed)", checked=False)
    micro, acc = int(config["train_micro_batch_size_per_gpu"]), int(config["gradient_accumulation_steps"])  # type: ignore[call-overload]
    if config["train_batch_size"] != micro * acc * data_parallel:
        return ConfigCheck("deepspeed", parser, False, "train_batch_size != micro batch x accumulation x data parallel")
    # Without torch.distributed DeepSpeed sees one rank: give it the per-replica batch.
    local = {**config, "train_batch_size": micro * acc}
    try:
        DeepSpeedConfig(local)
    except Exception as exc:  # noqa: BLE001 - DeepSpeed raises assertion, pydantic and value errors
        return ConfigCheck("deepspeed", parser, False, str(exc).splitlines()[0])
    return ConfigCheck("deepspeed", parser, True)


def check_torchtitan(text: str, layers: int | None = None) -> ConfigCheck:
    """The TOML against the installed torchtitan's ``JobConfig`` (:mod:`~placement.perf.torchtitan_check`).

    Without torchtitan installed: ``tomllib`` and :data:`TORCHTITAN_PARALLELISM_FIELDS` only. ``layers``
    (the model's) also checks that torchtitan builds ``p x v`` pipeline stages (:func:`torchtitan_stage_count`).
    """
    from .torchtitan_check import installed_job_config, job_config_errors

    found = installed_job_config()
    if found is None:
        parser = f"tomllib + torchtitan {TORCHTITAN_VERSION} field names (torchtitan is not installed here)"
    else:
        parser = f"tomllib + torchtitan {found[0]} JobConfig (field names and types read from its source)"
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        return ConfigCheck("torchtitan", parser, False, str(exc))
    if found is None:
        unknown = sorted(set(data.get("parallelism", {})) - set(TORCHTITAN_PARALLELISM_FIELDS))
        errors = [f"unknown [parallelism] keys: {', '.join(unknown)}"] if unknown else []
    else:
        errors = job_config_errors(data, found[1].read_text(encoding="utf-8"))
    par = data.get("parallelism", {})
    if layers is not None and not errors and par.get("pipeline_parallel_degree", 1) > 1:
        per_stage = int(par["pipeline_parallel_layers_per_stage"])
        stages = torchtitan_stage_count(
            layers,
            per_stage,
            int(par.get("pipeline_parallel_first_stage_less_layers", 1)),
            int(par.get("pipeline_parallel_last_stage_less_layers", 1)),
        )
        if stages * per_stage != layers or stages % int(par["pipeline_parallel_degree"]):
            errors.append(f"torchtitan would build {stages} stages of {per_stage} layers for {layers} layers")
    if errors:
        return ConfigCheck("torchtitan", parser, False, "; ".join(errors))
    return ConfigCheck("torchtitan", parser, True)
