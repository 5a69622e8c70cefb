"""torchtitan's own job description read into the performance model: ``predict --framework torchtitan``.

:func:`read_torchtitan_job` takes torchtitan 0.2.2's ``ConfigManager`` names (:data:`~placement.perf.launch.
TORCHTITAN_VERSION`, the release :func:`~placement.perf.launch.torchtitan_toml` writes for), as flags
(``--parallelism.tensor_parallel_degree 8``, ``--compile.enable``) and from a job config TOML (``--config FILE``
or ``--job.config_file FILE``; flags override the file, as torchtitan does), with torchtitan's defaults for what
neither gives. It returns the model (the preset of the llama3 flavor: 8B, 70B, 405B) and the :class:`Layout` of
the torchtitan search space of :mod:`placement.perf.spaces` (FSDP2 over the data-parallel shard ranks, TP with
sequence parallelism, PP with its schedule and torchtitan's own layer split, CP, activation checkpointing), so
that ``predict`` prices it with the same function ``plan --framework torchtitan`` prices its layouts.

Read: ``[model]`` name, flavor, converters (``quantize.linear.float8``: torchao's float8 linear layers, with
``[quantize.linear.float8]`` recipe_name, the float8 all-gather, its precomputed scales and filter_fqns);
``[training]``
local_batch_size, global_batch_size, seq_len, mixed_precision_param; ``[parallelism]`` the degrees, the
schedule, the micro-batch size and the stage split; ``[activation_checkpoint]`` mode and selective_ac_option;
``[compile]`` enable and components (the layer's kernels: eager or compiled, :mod:`placement.perf.framework_kernels`).
Other fields of torchtitan's JobConfig are accepted and listed as not modelled; a name that is not a JobConfig
field, a value of the wrong type, a
degree product that is not the GPU count or a batch that does not divide is one line naming the flag or field.
"""

from __future__ import annotations

import math
import tomllib
from collections.abc import Sequence
from pathlib import Path

from ..errors import InvalidLayoutError, label, quote
from .hardware import Dtype
from .launch import TORCHTITAN_MODELS, TORCHTITAN_MODULE_PATHS, TORCHTITAN_SCHEDULES, TORCHTITAN_VERSION
from .layout import Float8Recipe, Float8Training, Kernels, Layout, Recompute, RecomputeMethod, Schedule, stage_layers
from .transformer import MAX_SIZE, MODELS, TransformerSpec

#: The largest job config read (a real one is a few KiB).
MAX_CONFIG_BYTES = 1 << 20

#: The sections of torchtitan 0.2.2's ``JobConfig`` (``torchtitan/config/job_config.py``; checked by tests).
SECTIONS = (
    "job", "profiling", "metrics", "model", "optimizer", "lr_scheduler", "training", "parallelism", "checkpoint",
    "activation_checkpoint", "compile", "quantize", "comm", "memory_estimation", "fault_tolerance", "experimental",
    "validation", "debug",
)  # fmt: skip

#: The fields of the sections read here (all of torchtitan 0.2.2's, so that a misspelt one is refused).
FIELDS: dict[str, tuple[str, ...]] = {
    "model": ("name", "flavor", "hf_assets_path", "tokenizer_path", "converters", "print_after_conversion"),
    "training": (
        "dataset", "dataset_path", "local_batch_size", "global_batch_size", "seq_len", "max_norm", "steps",
        "enable_cpu_offload", "dtype", "mixed_precision_param", "mixed_precision_reduce", "gc_freq", "gc_debug",
        "dataloader",
    ),
    "parallelism": (
        "data_parallel_replicate_degree", "data_parallel_shard_degree", "fsdp_reshard_after_forward",
        "tensor_parallel_degree", "disable_loss_parallel", "enable_async_tensor_parallel", "pipeline_parallel_degree",
        "module_fqns_per_model_part", "pipeline_parallel_first_stage_less_layers",
        "pipeline_parallel_last_stage_less_layers", "pipeline_parallel_layers_per_stage", "pipeline_parallel_schedule",
        "pipeline_parallel_schedule_csv", "pipeline_parallel_microbatch_size", "pipeline_parallel_expert_parallel_overlap",
        "context_parallel_degree", "context_parallel_load_balancer", "context_parallel_rotate_method",
        "expert_parallel_degree", "expert_tensor_parallel_degree", "expert_parallel_comm_backend",
    ),
    "activation_checkpoint": (
        "mode", "selective_ac_option", "per_op_sac_force_recompute_mm_shapes_by_fqns", "early_stop", "memory_budget",
        "visualize_memory_budget_pareto", "preserve_rng_state", "determinism_check", "debug",
    ),
    "compile": ("enable", "components", "backend"),
}  # fmt: skip

#: The fields read, their type and torchtitan 0.2.2's default.
READ: dict[str, tuple[type, object]] = {
    "model.name": (str, "llama3"),
    "model.flavor": (str, "debugmodel"),
    "model.converters": (list, []),
    "training.local_batch_size": (int, 8),
    "training.global_batch_size": (int, -1),
    "training.seq_len": (int, 2048),
    "training.mixed_precision_param": (str, "bfloat16"),
    "parallelism.data_parallel_replicate_degree": (int, 1),
    "parallelism.data_parallel_shard_degree": (int, -1),
    "parallelism.tensor_parallel_degree": (int, 1),
    "parallelism.pipeline_parallel_degree": (int, 1),
    "parallelism.context_parallel_degree": (int, 1),
    "parallelism.expert_parallel_degree": (int, 1),
    "parallelism.pipeline_parallel_schedule": (str, "1F1B"),
    "parallelism.fsdp_reshard_after_forward": (str, "default"),
    "parallelism.enable_async_tensor_parallel": (bool, False),
    "parallelism.pipeline_parallel_microbatch_size": (int, 1),
    "parallelism.pipeline_parallel_layers_per_stage": (int, None),
    "parallelism.pipeline_parallel_first_stage_less_layers": (int, 1),
    "parallelism.pipeline_parallel_last_stage_less_layers": (int, 1),
    "activation_checkpoint.mode": (str, "selective"),
    "activation_checkpoint.selective_ac_option": (str, "2"),
    "compile.enable": (bool, False),
    "compile.components": (list, ["model", "loss"]),
    "quantize.linear.float8.recipe_name": (str, None),
    "quantize.linear.float8.enable_fsdp_float8_all_gather": (bool, False),
    "quantize.linear.float8.precompute_float8_dynamic_scale_for_fsdp": (bool, False),
    "quantize.linear.float8.filter_fqns": (list, []),
    "quantize.linear.float8.emulate": (bool, False),
}

#: The schedules torchtitan names, by the model's schedule (single-stage ones run one stage per rank).
SCHEDULES = {name: schedule for schedule, name in TORCHTITAN_SCHEDULES.items()}
SINGLE_STAGE = ("1F1B", "GPipe")

#: The float8 converter of torchtitan 0.2.2 (``--model.converters``).
FLOAT8 = "quantize.linear.float8"

Values = dict[str, object]


def _where(key: str, from_file: bool) -> str:
    section, _, name = key.rpartition(".")
    return label(f"[{section}] {name}" if from_file else f"--{key}")


def _typed(key: str, value: object, from_file: bool) -> object:
    """``value`` checked against the field's type (flags arrive as text and are converted)."""
    where = _where(key, from_file)
    kind, _ = READ[key]
    if not from_file and isinstance(value, str):
        if kind is int:
            try:
                value = int(value)
            except ValueError:
                raise InvalidLayoutError(f"{where} {quote(value)}: not an integer") from None
        elif kind is bool:
            if value.lower() not in ("true", "false"):
                raise InvalidLayoutError(f"{where} {quote(value)}: must be true or false")
            value = value.lower() == "true"
        elif kind is list:
            value = [v for v in value.split(",") if v]
    if kind is int:
        if key == "parallelism.pipeline_parallel_layers_per_stage" and value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int):
            raise InvalidLayoutError(f"{where} = {quote(value)}: must be an integer")
        low = -1 if key in ("training.global_batch_size", "parallelism.data_parallel_shard_degree") else 0
        if not low <= value <= MAX_SIZE or (value == 0 and not key.endswith("less_layers")):
            raise InvalidLayoutError(f"{where} = {quote(value)}: must be an integer from 1 to {MAX_SIZE}" + (
                " (or -1: torchtitan's default)" if low == -1 else ""))  # fmt: skip
        return value
    if kind is list:
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise InvalidLayoutError(f"{where} = {quote(value)}: must be a list of strings")
        return value
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise InvalidLayoutError(f"{where} = {quote(value)}: must be a {kind.__name__}")
    return value


def _check_name(key: str, from_file: bool, notes: list[str]) -> bool:
    """Whether ``key`` (``section.field``) is read; refuses a name that is not a JobConfig field."""
    where = _where(key, from_file)
    parts = key.split(".")
    if len(parts) < 2 or parts[0] not in SECTIONS:
        raise InvalidLayoutError(
            f"{where}: not a torchtitan {TORCHTITAN_VERSION} JobConfig field (sections: {', '.join(SECTIONS)})"
        )
    if parts[0] in FIELDS and parts[1] not in FIELDS[parts[0]]:
        raise InvalidLayoutError(f"{where}: not a field of torchtitan {TORCHTITAN_VERSION}'s [{parts[0]}]")
    if key.startswith(FLOAT8 + ".") and key not in READ:
        raise InvalidLayoutError(f"{where}: not a field of torchtitan {TORCHTITAN_VERSION}'s [{FLOAT8}]")
    if key in READ:
        return True
    if parts[0] != "job":  # the job's name, folders and description do not change its speed
        notes.append(f"not modelled: {where}")
    return False


def _flatten(data: dict[str, object]) -> list[tuple[str, object]]:
    """``section.field`` (sub-tables dotted further) and value of every entry of a loaded TOML."""
    out: list[tuple[str, object]] = []

    def nested(body: dict[str, object], prefix: str) -> None:
        for key, value in body.items():
            if isinstance(value, dict):
                nested(value, f"{prefix}.{key}")
            else:
                out.append((f"{prefix}.{key}", value))

    for section, body in data.items():
        if section not in SECTIONS:
            raise InvalidLayoutError(f"[{label(section)}]: not a torchtitan {TORCHTITAN_VERSION} JobConfig section")
        if not isinstance(body, dict):
            raise InvalidLayoutError(f"{label(section)} = {quote(body)}: must be a [{label(section)}] table")
        nested(body, section)
    return out


def load_job_config(path: str) -> list[tuple[str, object]]:
    """The ``section.field`` values of a job config TOML, in file order.

    Raises
    ------
    InvalidLayoutError
        An unreadable, oversized or non-TOML file, one line naming it.
    """
    where = f"--config {label(path)}"
    try:
        if not Path(path).is_file():
            raise InvalidLayoutError(f"{where}: not a regular file")
        size = Path(path).stat().st_size
        if size > MAX_CONFIG_BYTES:
            raise InvalidLayoutError(f"{where}: {size:,} bytes, more than a job config's limit of {MAX_CONFIG_BYTES:,}")
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise InvalidLayoutError(f"{where}: cannot read ({exc.strerror or exc})") from None
    except UnicodeDecodeError:
        raise InvalidLayoutError(f"{where}: not UTF-8 text") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InvalidLayoutError(f"{where}: not TOML ({label(str(exc), 300)})") from None
    except RecursionError:
        raise InvalidLayoutError(f"{where}: nested too deeply for a job config") from None
    return _flatten(data)


def _scan_flags(argv: Sequence[str]) -> tuple[list[tuple[str, object]], str | None]:
    """(``section.field`` text values, ``--job.config_file``) of torchtitan's flags."""
    out: list[tuple[str, object]] = []
    config = None
    args, i = list(argv), 0
    while i < len(args):
        token = args[i]
        if not token.startswith("--") or len(token) < 3:
            raise InvalidLayoutError(f"{quote(token)}: not a torchtitan flag (--section.field value)")
        name, eq, inline = token[2:].partition("=")
        key = name.replace("-", "_")
        has_value = bool(eq) or (i + 1 < len(args) and not args[i + 1].startswith("--"))
        value: object = inline if eq else (args[i + 1] if has_value else None)
        i += 1 if eq or not has_value else 2
        if key == "job.config_file":
            if value is None:
                raise InvalidLayoutError("--job.config_file: expects a file")
            config = str(value)
            continue
        if value is None:
            if READ.get(key, (None,))[0] is not bool and key in READ:
                raise InvalidLayoutError(f"{label('--' + name)}: expects a value")
            value = "true"
        out.append((key, value))
    return out, config


def read_values(argv: Sequence[str], config: str | None) -> tuple[Values, list[str]]:
    """The fields read (torchtitan's defaults, then the file's, then the flags'), and notes.

    Raises
    ------
    InvalidLayoutError
        One line naming the flag or field broken.
    """
    flags, from_flag = _scan_flags(argv)
    if config is not None and from_flag is not None and config != from_flag:
        raise InvalidLayoutError(
            f"--config {label(config)} and --job.config_file {label(from_flag)}: give one job config"
        )
    config = config or from_flag
    notes: list[str] = []
    values: Values = {k: default for k, (_, default) in READ.items()}
    for source, from_file in (([] if config is None else load_job_config(config)), True), (flags, False):
        for key, value in source:
            if _check_name(key, from_file, notes):
                values[key] = _typed(key, value, from_file)
    return values, list(dict.fromkeys(notes))


def _int(values: Values, key: str) -> int:
    """An integer field (already checked by :func:`_typed`)."""
    value = values[key]
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidLayoutError(f"--{key} = {quote(value)}: must be an integer")
    return value


def _model(values: Values, base: TransformerSpec | None, notes: list[str]) -> TransformerSpec:
    seq = _int(values, "training.seq_len")
    if seq < 1:
        raise InvalidLayoutError(f"--training.seq_len {seq}: must be a positive integer")
    if base is not None:
        notes.append("the model's shape from --model ([model] name and flavor not read)")
        return base.with_changes(seq_length=seq)
    name, flavor = values["model.name"], values["model.flavor"]
    known = {pair: preset for preset, pair in TORCHTITAN_MODELS.items()}
    preset = known.get((str(name), str(flavor)))
    if preset is None:
        flavors = ", ".join(f for n, f in known if n == name) or "none"
        raise InvalidLayoutError(
            f"--model.name {quote(name)} --model.flavor {quote(flavor)}: not a modelled torchtitan {TORCHTITAN_VERSION} model "
            f"(llama3 flavors: {', '.join(f for _, f in known)}; of {quote(name)}: {flavors}); or give --model"
        )
    return MODELS[preset].with_changes(seq_length=seq)


def _data(values: Values, gpus: int) -> tuple[int, int, int]:
    """(data-parallel size, ZeRO stage, replicas): FSDP2 over the shard ranks (3; HSDP: ``replicas`` copies of
    the shard group), or plain replication (0)."""
    degree = {k: _int(values, f"parallelism.{k}") for k in (
        "data_parallel_replicate_degree", "data_parallel_shard_degree", "tensor_parallel_degree",
        "pipeline_parallel_degree", "context_parallel_degree")}  # fmt: skip
    rest = math.prod(v for k, v in degree.items() if k != "data_parallel_shard_degree")
    shard = degree["data_parallel_shard_degree"]
    if shard == -1:
        if gpus % rest:
            raise InvalidLayoutError(
                f"--parallelism.*_degree: replicate x tensor x pipeline x context = {rest} does not divide --gpus {gpus}"
            )
        shard = gpus // rest
    if shard * rest != gpus:
        raise InvalidLayoutError(
            f"--parallelism.*_degree: shard {shard} x replicate x tensor x pipeline x context = {shard * rest}, "
            f"not --gpus {gpus}"
        )
    replicate = degree["data_parallel_replicate_degree"]
    if replicate > 1 and shard > 1:  # HSDP: FSDP2 over each replica's shard group, gradients all-reduced across
        return replicate * shard, 3, replicate
    return (replicate, 0, 1) if replicate > 1 else (shard, 3, 1)


def _stage_counts(layers: int, stages: int, first: int, last: int) -> list[int]:
    """Transformer layers per stage as torchtitan 0.2.2 splits them (``generate_llm_fqn_per_model_part``)."""
    effective = layers + first + last
    per, extra = divmod(effective, stages)
    if stages > effective or per == 0 or first > per or last > per:
        raise InvalidLayoutError(
            f"--parallelism.pipeline_parallel_*: torchtitan cannot split {layers} layers (+{first} +{last}) into "
            f"{stages} stages"
        )
    counts, left = [], layers
    for i in range(stages):
        size = per + (1 if i < extra else 0) - (first if i == 0 else last if i == stages - 1 else 0)
        counts.append(min(size, left))
        left -= counts[-1]
    return counts


def _pipeline(values: Values, layers: int, p: int) -> tuple[Schedule, int, tuple[int, ...] | None, list[str]]:
    """(schedule, virtual stages, layers per rank or None for the even split, notes) of the pipeline fields."""
    name = str(values["parallelism.pipeline_parallel_schedule"])
    if p == 1:
        return Schedule.ONE_F_ONE_B, 1, None, []
    if name not in SCHEDULES:
        raise InvalidLayoutError(
            f"--parallelism.pipeline_parallel_schedule {quote(name)}: not modelled (known: {', '.join(SCHEDULES)})"
        )
    first = _int(values, "parallelism.pipeline_parallel_first_stage_less_layers")
    last = _int(values, "parallelism.pipeline_parallel_last_stage_less_layers")
    per_stage = values["parallelism.pipeline_parallel_layers_per_stage"]
    if per_stage is None:
        stages = p * (1 if name in SINGLE_STAGE else 2)
    else:
        stages = -(-(layers + first + last) // _int(values, "parallelism.pipeline_parallel_layers_per_stage"))
    if stages % p:
        raise InvalidLayoutError(
            f"--parallelism.pipeline_parallel_layers_per_stage {per_stage}: {stages} stages, not a multiple of the "
            f"pipeline degree {p} (torchtitan refuses it)"
        )
    v = stages // p
    if (name in SINGLE_STAGE) != (v == 1) or (name == "ZBVZeroBubble" and v != 2):
        need = "1" if name in SINGLE_STAGE else "2" if name == "ZBVZeroBubble" else "2 or more"
        raise InvalidLayoutError(
            f"--parallelism.pipeline_parallel_schedule {name}: runs {need} stages per rank, the split gives {v}"
        )
    counts = _stage_counts(layers, stages, first, last)
    if len(set(counts)) == 1:
        return SCHEDULES[name], v, None, []
    if v > 1:
        raise InvalidLayoutError(
            f"--parallelism.pipeline_parallel_*: torchtitan splits the {stages} stages unevenly ({counts}); the model "
            "prices even stages with several stages per rank (set pipeline_parallel_first/last_stage_less_layers 0 "
            "and a layers_per_stage dividing the layers)"
        )
    note = f"torchtitan's stage split (embedding and head counted as layers): layers per rank {counts}"
    return SCHEDULES[name], 1, tuple(counts), [note]


def _batch(values: Values, data: int, p: int) -> tuple[int, int, list[str]]:
    """(micro-batch, global batch, notes): without pipelining a local batch is one micro-batch (gradient
    accumulation over global / (local x data) of them); with it a local batch is cut into micro-batches."""
    local = _int(values, "training.local_batch_size")
    total = _int(values, "training.global_batch_size")
    if total == -1:
        total = local * data
    if total % (local * data):
        raise InvalidLayoutError(
            f"--training.global_batch_size {total}: not a multiple of local_batch_size {local} x data-parallel "
            f"degree {data}"
        )
    if p == 1:
        return local, total, []
    micro = _int(values, "parallelism.pipeline_parallel_microbatch_size")
    if local % micro:
        raise InvalidLayoutError(
            f"--parallelism.pipeline_parallel_microbatch_size {micro}: does not divide --training.local_batch_size "
            f"{local}"
        )
    notes = []
    if total > local * data:
        notes.append(
            f"{total // (local * data)} accumulated local batches per step with pipelining: priced as one pipeline "
            "flush of all the step's micro-batches (torchtitan runs one flush per local batch)"
        )
    return micro, total, notes


def _recompute(values: Values, model: TransformerSpec, layout: Layout, notes: list[str]) -> Layout:
    """The layout with torchtitan's activation checkpointing (as the torchtitan search space sets it)."""
    mode, option = str(values["activation_checkpoint.mode"]), str(values["activation_checkpoint.selective_ac_option"])
    chunk = max(stage_layers(model, layout)) // layout.virtual_stages
    if mode == "none":
        return layout
    if mode == "full":
        return layout.with_changes(recompute=Recompute.FULL, recompute_method=RecomputeMethod.BLOCK,
                                   recompute_layers=chunk)  # fmt: skip
    if mode != "selective":
        raise InvalidLayoutError(
            f"--activation_checkpoint.mode {quote(mode)}: not modelled (none, selective, full; memory_budget needs the "
            "compiler's partitioner)"
        )
    if option == "op":  # torchtitan's per-op policy (placement.perf.framework_kernels.selective_recomputed)
        return layout.with_changes(recompute=Recompute.SELECTIVE)
    if not (option.isascii() and option.isdigit() and len(option) <= 9) or int(option) < 1:
        raise InvalidLayoutError(
            f"--activation_checkpoint.selective_ac_option {quote(option)}: must be op or a positive integer"
        )
    k = chunk // int(option)
    notes.append(
        f"selective_ac_option {option} (one layer in {option} checkpointed): priced as full recomputation of {k} "
        f"of the {chunk} layers of each stage chunk"
    )
    if k == 0:
        return layout
    return layout.with_changes(recompute=Recompute.FULL, recompute_method=RecomputeMethod.BLOCK, recompute_layers=k)


def _dtype(values: Values, notes: list[str]) -> Dtype:
    """The training type: bf16 (float8 products are :func:`_float8`'s), or fp32."""
    listed = values["model.converters"]
    converters = [str(c) for c in listed] if isinstance(listed, list) else []
    if "float8" in converters:
        raise InvalidLayoutError(
            f"--model.converters float8: not a torchtitan {TORCHTITAN_VERSION} converter (its name is {FLOAT8})"
        )
    other = [c for c in converters if c != FLOAT8]
    if other:
        notes.append("not modelled: --model.converters " + quote(",".join(other)))
    if values["training.mixed_precision_param"] == "float32":
        if FLOAT8 in converters:
            raise InvalidLayoutError(
                f"--training.mixed_precision_param float32 with --model.converters {FLOAT8}: not modelled (float8 "
                "products beside bf16 training)"
            )
        notes.append("mixed_precision_param float32: fp32 training")
        return Dtype.FP32
    if values["training.mixed_precision_param"] != "bfloat16":
        raise InvalidLayoutError(
            f"--training.mixed_precision_param {quote(values['training.mixed_precision_param'])}: must be bfloat16 or float32"
        )
    return Dtype.BF16


def _float8(values: Values, model: TransformerSpec, fsdp: bool, notes: list[str]) -> Float8Training | None:
    """torchtitan's float8 converter (``Float8LinearConverter``), or ``None`` without it."""
    listed = values["model.converters"]
    if not isinstance(listed, list) or FLOAT8 not in listed:
        return None
    prefix = f"--{FLOAT8}."
    if values[FLOAT8 + ".emulate"]:
        raise InvalidLayoutError(f"{prefix}emulate: float8 emulated in high precision (a test mode) is not modelled")
    name = values[FLOAT8 + ".recipe_name"]
    gather = bool(values[FLOAT8 + ".enable_fsdp_float8_all_gather"])
    if name is not None and gather:
        raise InvalidLayoutError(
            f"{prefix}recipe_name {quote(name)} with {prefix}enable_fsdp_float8_all_gather: torchtitan refuses them "
            "together (the float8 all-gather is tensorwise's)"
        )
    try:
        recipe = Float8Recipe(name or "tensorwise")
    except ValueError:
        raise InvalidLayoutError(
            f"{prefix}recipe_name {quote(name)}: must be one of {', '.join(r.value for r in Float8Recipe)}"
        ) from None
    gather = gather and fsdp  # torchtitan: only when the shard degree is above 1
    precompute = gather and bool(values[FLOAT8 + ".precompute_float8_dynamic_scale_for_fsdp"])
    listed_fqns = values[FLOAT8 + ".filter_fqns"]
    patterns = [str(p) for p in listed_fqns] if isinstance(listed_fqns, list) else []
    if "auto_filter_small_kn" in patterns:
        notes.append("filter_fqns auto_filter_small_kn: torchao's size filter is not modelled (every product "
                     "whose dimensions are multiples of 16 runs in float8)")  # fmt: skip
        patterns.remove("auto_filter_small_kn")
    skip = []
    for product, path in TORCHTITAN_MODULE_PATHS.items():
        if product == "output":
            continue
        hits = {any(p in f"layers.{i}.{path}" for p in patterns) for i in range(model.layers)}
        if hits == {True, False}:
            raise InvalidLayoutError(
                f"{prefix}filter_fqns {quote(','.join(patterns))}: skips {path} in some layers only (not modelled)"
            )
        if hits == {True}:
            skip.append(product)
    if any(p in "output" for p in patterns):
        skip.append("output")
    return Float8Training(recipe=recipe, all_gather=gather, precompute_scale=precompute, skip=tuple(skip))


def read_torchtitan_job(
    argv: Sequence[str], config: str | None, gpus: int, model: TransformerSpec | None = None
) -> tuple[TransformerSpec, Layout, list[str]]:
    """The model, layout and notes of a torchtitan 0.2.2 job (flags ``argv`` over the TOML ``config``).

    Parameters
    ----------
    argv : sequence of str
        torchtitan's flags (``--section.field value``, ``--section.field=value``; a bare boolean flag is true).
    config : str or None
        A job config TOML (``--job.config_file`` in ``argv`` names one too).
    gpus : int
        World size: the degrees' product must equal it (a shard degree of -1 takes what is left).
    model : TransformerSpec or None
        The model's shape when given (``--model``); else the preset of ``[model]`` name and flavor.

    Returns
    -------
    (TransformerSpec, Layout, list of str)

    Raises
    ------
    InvalidLayoutError
        One line naming the flag or field broken.
    """
    values, notes = read_values(argv, config)
    spec = _model(values, model, notes)
    data, zero, replicas = _data(values, gpus)
    t = _int(values, "parallelism.tensor_parallel_degree")
    p = _int(values, "parallelism.pipeline_parallel_degree")
    cp = _int(values, "parallelism.context_parallel_degree")
    schedule, v, counts, more = _pipeline(values, spec.layers, p)
    micro, total, batch_notes = _batch(values, data, p)
    layout = Layout(
        tensor=t, pipeline=p, data=data, context=cp, expert=_int(values, "parallelism.expert_parallel_degree"),
        virtual_stages=v, micro_batch=micro, global_batch=total, sequence_parallel=t > 1, zero_stage=zero,
        dtype=_dtype(values, notes), overlap_grad_reduce=data * cp > 1, overlap_param_gather=zero >= 1 and data * cp > 1,
        schedule=schedule, pipeline_layers=counts,
    )  # fmt: skip
    kernels = _kernels(values, notes)
    layout = _recompute(values, spec, layout, notes).with_changes(
        kernels=kernels,
        float8=_float8(values, spec, data > 1 and zero == 3, notes),
        reshard_after_forward=_reshard(values),
        tp_comm_overlap=_async_tp(values, kernels, t),
        replicate=replicas,
    )
    return spec, layout, [*more, *batch_notes, *notes]


def _async_tp(values: Values, kernels: Kernels, tensor: int) -> bool:
    """``enable_async_tensor_parallel``: torchtitan refuses it unless the model is compiled."""
    if not values["parallelism.enable_async_tensor_parallel"]:
        return False
    if kernels is not Kernels.COMPILED:
        raise InvalidLayoutError(
            "--parallelism.enable_async_tensor_parallel: torchtitan requires --compile.enable with model in "
            "--compile.components"
        )
    return tensor > 1


def _reshard(values: Values) -> bool | None:
    """``fsdp_reshard_after_forward``: default (``None``: torchtitan keeps the weights under pipelining only),
    always or never."""
    policy = values["parallelism.fsdp_reshard_after_forward"]
    choices = {"default": None, "always": True, "never": False}
    if policy not in choices:
        raise InvalidLayoutError(
            f"--parallelism.fsdp_reshard_after_forward {quote(policy)}: must be default, always or never"
        )
    return choices[str(policy)]


def _kernels(values: Values, notes: list[str]) -> Kernels:
    """torchtitan's kernels: compiled when ``compile.enable`` compiles the model, eager otherwise."""
    listed = values["compile.components"]
    components = [str(c) for c in listed] if isinstance(listed, list) else []
    if not values["compile.enable"] or "model" not in components:
        if values["compile.enable"]:
            notes.append("compile.components without model: the layers are priced as eager kernels")
        return Kernels.EAGER
    if "loss" not in components:
        notes.append("compile.components without loss: the loss is priced as compiled too")
    return Kernels.COMPILED
