"""Megatron-LM command lines: read a launch command into a model and a layout, and write one back.

:func:`parse_megatron_args` takes Megatron-LM's own flag names (``--num-layers``, ``--hidden-size``,
``--tensor-model-parallel-size``, ...); flags it does not model are accepted and listed in the notes.
The data-parallel size is not a Megatron flag (it is the world size over ``t * p * cp``): pass ``gpus``.
:func:`megatron_args` writes the flags back so that ``parse(write(m, l)) == (m, l)``.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Sequence

from ..errors import InvalidLayoutError
from .hardware import Dtype
from .layout import Attention, Layout, Recompute, RecomputeMethod
from .transformer import Norm, TransformerSpec

# Flags taking one value -> (destination, converter).
_VALUED: dict[str, tuple[str, Callable[[str], object]]] = {
    "--num-layers": ("layers", int),
    "--hidden-size": ("hidden", int),
    "--ffn-hidden-size": ("ffn_hidden", int),
    "--num-attention-heads": ("heads", int),
    "--num-query-groups": ("query_groups", int),
    "--seq-length": ("seq_length", int),
    "--max-position-embeddings": ("max_position_embeddings", int),
    "--vocab-size": ("vocab", int),
    "--num-experts": ("num_experts", int),
    "--moe-router-topk": ("moe_topk", int),
    "--normalization": ("normalization", str),
    "--position-embedding-type": ("position_embedding_type", str),
    "--hidden-dropout": ("hidden_dropout", float),
    "--attention-dropout": ("attention_dropout", float),
    "--micro-batch-size": ("micro_batch", int),
    "--global-batch-size": ("global_batch", int),
    "--tensor-model-parallel-size": ("tensor", int),
    "--pipeline-model-parallel-size": ("pipeline", int),
    "--num-layers-per-virtual-pipeline-stage": ("layers_per_virtual", int),
    "--num-virtual-stages-per-pipeline-rank": ("virtual_stages", int),
    "--decoder-first-pipeline-num-layers": ("first_stage_layers", int),
    "--decoder-last-pipeline-num-layers": ("last_stage_layers", int),
    "--pipeline-model-parallel-layout": ("pipeline_layout", str),
    "--context-parallel-size": ("context", int),
    "--expert-model-parallel-size": ("expert", int),
    "--recompute-granularity": ("recompute", str),
    "--recompute-method": ("recompute_method", str),
    "--recompute-num-layers": ("recompute_layers", int),
    "--fp8-format": ("fp8_format", str),
    "--attention-backend": ("attention_backend", str),
    "--data-parallel-sharding-strategy": ("sharding", str),
    # torchrun's own flags give the world size when no GPU count is passed
    "--nproc_per_node": ("nproc", int),
    "--nproc-per-node": ("nproc", int),
    "--nnodes": ("nnodes", int),
}

# Switches -> destination set to True.
_SWITCHES: dict[str, str] = {
    "--group-query-attention": "group_query_attention",
    "--sequence-parallel": "sequence_parallel",
    "--use-distributed-optimizer": "distributed_optimizer",
    "--swiglu": "swiglu",
    "--bf16": "bf16",
    "--fp16": "fp16",
    "--overlap-grad-reduce": "overlap_grad_reduce",
    "--overlap-param-gather": "overlap_param_gather",
    "--tp-comm-overlap": "tp_comm_overlap",
    "--untie-embeddings-and-output-weights": "untie",
    "--disable-bias-linear": "no_bias",
    "--add-qkv-bias": "qkv_bias",
    "--use-flash-attn": "flash",
    "--recompute-activations": "recompute_activations",
    "--accumulate-allreduce-grads-in-fp32": "grads_fp32",
    "--use-torch-fsdp2": "fsdp",
    "--no-async-tensor-model-parallel-allreduce": "no_async_tp",
}


def _convert(flag: str, text: str | None, conv: Callable[[str], object]) -> object:
    if text is None or text.startswith("--"):
        raise InvalidLayoutError(f"{flag}: expects a value")
    try:
        return conv(text)
    except ValueError:
        raise InvalidLayoutError(f"{flag} {text!r}: not a valid {conv.__name__}") from None


def _scan(argv: Sequence[str]) -> tuple[dict[str, object], list[str]]:
    """Flags to values (``--flag=value`` and ``--flag value`` forms); unknown flags go to the notes."""
    values: dict[str, object] = {}
    ignored: list[str] = []
    i = 0
    args = list(argv)
    while i < len(args):
        token = args[i]
        flag, _, inline = token.partition("=")
        if flag in _VALUED:
            dest, conv = _VALUED[flag]
            if inline:
                values[dest] = _convert(flag, inline, conv)
                i += 1
            else:
                values[dest] = _convert(flag, args[i + 1] if i + 1 < len(args) else None, conv)
                i += 2
        elif flag in _SWITCHES:
            values[_SWITCHES[flag]] = True
            i += 1
        elif token.startswith("--"):
            # An unmodelled flag: skip it and the values following it.
            ignored.append(flag)
            i += 1
            while i < len(args) and not args[i].startswith("--") and not inline:
                i += 1
        else:
            ignored.append(token)
            i += 1
    return values, ignored


def _required(values: dict[str, object], dest: str, flag: str) -> int:
    if dest not in values:
        raise InvalidLayoutError(f"{flag} is required")
    return _int(values, dest, 0)


def _int(values: dict[str, object], dest: str, default: int) -> int:
    """``values[dest]`` as an int, ``default`` when the flag is absent (the scan converted what it read)."""
    return int(values.get(dest, default))  # type: ignore[call-overload]


_SHARDING = {"no_shard": 0, "optim": 1, "optim_grads": 2, "optim_grads_params": 3}


def _model(values: dict[str, object], notes: list[str]) -> TransformerSpec:
    layers = _required(values, "layers", "--num-layers")
    hidden = _required(values, "hidden", "--hidden-size")
    heads = _required(values, "heads", "--num-attention-heads")
    seq = _required(values, "seq_length", "--seq-length")
    if "vocab" not in values:
        notes.append("--vocab-size not given (a tokenizer file sets it): assumed GPT-2's 50,257")
    groups = None
    if values.get("group_query_attention"):
        groups = _int(values, "query_groups", 1)
    elif "query_groups" in values:
        notes.append("--num-query-groups ignored without --group-query-attention (as Megatron-LM does)")
    norm_text = str(values.get("normalization", "LayerNorm")).lower()
    if norm_text not in ("layernorm", "rmsnorm"):
        raise InvalidLayoutError(f"--normalization {values['normalization']!r}: must be LayerNorm or RMSNorm")
    position = str(values.get("position_embedding_type", "learned_absolute"))
    if position not in ("learned_absolute", "rope", "none"):
        raise InvalidLayoutError(f"--position-embedding-type {position!r}: must be learned_absolute, rope or none")
    dropout = float(values.get("hidden_dropout", 0.1)) > 0 or float(values.get("attention_dropout", 0.1)) > 0  # type: ignore[arg-type]
    experts = _int(values, "num_experts", 1)
    return TransformerSpec(
        layers=layers,
        hidden=hidden,
        heads=heads,
        seq_length=seq,
        vocab=_int(values, "vocab", 50257),
        ffn_hidden=values.get("ffn_hidden"),  # type: ignore[arg-type]
        query_groups=groups,
        swiglu=bool(values.get("swiglu", False)),
        norm=Norm.RMSNORM if norm_text == "rmsnorm" else Norm.LAYERNORM,
        rope=position != "learned_absolute",
        bias=not values.get("no_bias", False),
        qkv_bias=bool(values.get("qkv_bias", False)),
        dropout=dropout,
        tied_embeddings=not values.get("untie", False),
        num_experts=experts,
        moe_topk=_int(values, "moe_topk", 2 if experts > 1 else 1),
        max_position_embeddings=values.get("max_position_embeddings"),  # type: ignore[arg-type]
        name="megatron",
    )


def _layout(values: dict[str, object], model: TransformerSpec, gpus: int | None, notes: list[str]) -> Layout:
    t = _int(values, "tensor", 1)
    p = _int(values, "pipeline", 1)
    cp = _int(values, "context", 1)
    if gpus is None and "nproc" in values:
        gpus = _int(values, "nproc", 1) * _int(values, "nnodes", 1)
        notes.append(f"world size {gpus} from torchrun's --nproc-per-node x --nnodes")
    if gpus is None:
        data = 1
        notes.append("data-parallel size is not a Megatron flag: assumed 1 (give the GPU count)")
    else:
        if gpus % (t * p * cp):
            raise InvalidLayoutError(
                f"tensor {t} x pipeline {p} x context {cp} = {t * p * cp} does not divide --gpus {gpus}"
            )
        data = gpus // (t * p * cp)
    v = _int(values, "virtual_stages", 1)
    if "layers_per_virtual" in values:
        per = _int(values, "layers_per_virtual", 1)
        if per < 1 or model.layers % (p * per):
            raise InvalidLayoutError(
                f"--num-layers-per-virtual-pipeline-stage {per}: --num-layers {model.layers} is not a multiple "
                f"of it x pipeline size {p}"
            )
        v = model.layers // (p * per)
    first, last = values.get("first_stage_layers"), values.get("last_stage_layers")
    counts: tuple[int, ...] | None = None
    if "pipeline_layout" in values:
        v, counts = _free_layout(values, model, p, v)
    micro = _int(values, "micro_batch", 1)
    zero = 1 if values.get("distributed_optimizer") else 0
    if "sharding" in values:
        if values["sharding"] not in _SHARDING:
            raise InvalidLayoutError(
                f"--data-parallel-sharding-strategy {values['sharding']!r}: must be one of {', '.join(_SHARDING)}"
            )
        zero = max(zero, _SHARDING[str(values["sharding"])])
    if values.get("fsdp"):
        zero = 3
    recompute = Recompute.NONE
    if values.get("recompute_activations"):
        recompute = Recompute.SELECTIVE
    if "recompute" in values:
        try:
            recompute = Recompute(str(values["recompute"]))
        except ValueError:
            raise InvalidLayoutError(
                f"--recompute-granularity {values['recompute']!r}: must be full or selective"
            ) from None
    try:
        method = RecomputeMethod(str(values.get("recompute_method", "uniform")))
    except ValueError:
        raise InvalidLayoutError(
            f"--recompute-method {values['recompute_method']!r}: must be uniform or block"
        ) from None
    dtype = Dtype.FP32
    if values.get("fp16"):
        dtype = Dtype.FP16
    if values.get("bf16"):
        dtype = Dtype.BF16
    if values.get("fp16") and values.get("bf16"):
        raise InvalidLayoutError("--fp16 and --bf16 are exclusive")
    if "fp8_format" in values:
        dtype = Dtype.FP8
    if dtype is Dtype.FP32:
        notes.append("neither --bf16 nor --fp16: fp32 training")
    attention = Attention.FLASH
    backend = values.get("attention_backend")
    if backend is not None:
        if backend not in ("flash", "fused", "auto", "unfused", "local"):
            raise InvalidLayoutError(f"--attention-backend {backend!r}: must be flash, fused, unfused, local or auto")
        attention = Attention.UNFUSED if backend in ("unfused", "local") else Attention.FLASH
    return Layout(
        tensor=t,
        pipeline=p,
        data=data,
        context=cp,
        expert=_int(values, "expert", 1),
        virtual_stages=v,
        micro_batch=micro,
        global_batch=_int(values, "global_batch", micro * data),
        sequence_parallel=bool(values.get("sequence_parallel", False)),
        zero_stage=zero,
        recompute=recompute,
        recompute_method=method,
        recompute_layers=values.get("recompute_layers"),  # type: ignore[arg-type]
        dtype=dtype,
        attention=attention,
        overlap_grad_reduce=bool(values.get("overlap_grad_reduce", False)),
        overlap_param_gather=bool(values.get("overlap_param_gather", False)),
        tp_comm_overlap=bool(values.get("tp_comm_overlap", False)),
        grad_reduce_fp32=True if values.get("grads_fp32") else None,
        tp_async_backward=not values.get("no_async_tp", False),
        first_stage_layers=first,  # type: ignore[arg-type]
        last_stage_layers=last,  # type: ignore[arg-type]
        pipeline_layers=counts,
    )


def _free_layout(values: dict[str, object], model: TransformerSpec, p: int, v: int) -> tuple[int, tuple[int, ...]]:
    """(v, layers of each rank) from --pipeline-model-parallel-layout (:mod:`placement.perf.pp_layout`)."""
    from .pp_layout import read_pipeline_layout

    if "first_stage_layers" in values or "last_stage_layers" in values:
        raise InvalidLayoutError(
            "--pipeline-model-parallel-layout cannot be set with --decoder-first/last-pipeline-num-layers "
            "(Megatron-Core)"
        )
    found, counts = read_pipeline_layout(str(values["pipeline_layout"]), model.layers, p)
    if ("virtual_stages" in values or "layers_per_virtual" in values) and found != v:
        raise InvalidLayoutError(
            f"--pipeline-model-parallel-layout has {found} virtual stages per rank, the virtual-stage flag {v}"
        )
    return found, counts


def parse_megatron_args(
    argv: Sequence[str], gpus: int | None = None, model: TransformerSpec | None = None
) -> tuple[TransformerSpec, Layout, list[str]]:
    """Read a Megatron-LM launch command's flags.

    Parameters
    ----------
    argv : sequence of str
        The flags (``--num-layers 96 --hidden-size 12288 ...``); a leading program name or ``torchrun``
        arguments are ignored with a note.
    gpus : int or None
        World size; the data-parallel size is ``gpus / (t p cp)`` (1 with a note when ``None``).
    model : TransformerSpec or None
        The model's shape (a preset or a HuggingFace config, :func:`~placement.perf.hf_config.model_from_argument`):
        its flags (:func:`model_flags`) come first, so that shape flags in ``argv`` change it.

    Returns
    -------
    (TransformerSpec, Layout, list of str)
        The model, the layout and notes (ignored flags, assumptions).

    Raises
    ------
    InvalidLayoutError
        A missing required flag or a bad value (one line naming the flag).
    """
    base = [] if model is None else model_flags(model)
    values, ignored = _scan([*base, *argv])
    notes: list[str] = []
    spec = _model(values, notes)
    if model is not None:
        spec = spec.with_changes(name=model.name)
    layout = _layout(values, spec, gpus, notes)
    if ignored:
        notes.append("ignored (not modelled): " + " ".join(dict.fromkeys(ignored)))
    return spec, layout, notes


#: Megatron-LM flags that set the model's shape (the others set the layout or are not modelled).
SHAPE_FLAGS = frozenset(
    ["--num-layers", "--hidden-size", "--ffn-hidden-size", "--num-attention-heads", "--num-query-groups",
     "--seq-length", "--max-position-embeddings", "--vocab-size", "--num-experts", "--moe-router-topk",
     "--normalization", "--position-embedding-type", "--hidden-dropout", "--attention-dropout",
     "--group-query-attention", "--swiglu", "--untie-embeddings-and-output-weights", "--disable-bias-linear",
     "--add-qkv-bias"]
)  # fmt: skip


def parse_megatron_model(
    argv: Sequence[str], model: TransformerSpec | None = None
) -> tuple[TransformerSpec, list[str]]:
    """The model's shape from Megatron-LM flags (on top of ``model``'s when given); other flags are noted, not read.

    Raises
    ------
    InvalidLayoutError
        A missing shape flag (without ``model``) or a bad value, one line naming the flag.
    """
    base = [] if model is None else model_flags(model)
    values, ignored = _scan([*base, *argv])
    notes: list[str] = []
    spec = _model(values, notes)
    if model is not None:
        spec = spec.with_changes(name=model.name)
    layout_flags = [t.partition("=")[0] for t in argv if t.startswith("--") and t.partition("=")[0] not in SHAPE_FLAGS]
    if layout_flags:
        notes.append("not read (the plan chooses the layout): " + " ".join(dict.fromkeys(layout_flags)))
    return spec, notes


def megatron_args(model: TransformerSpec, layout: Layout, pipeline_layout: bool = False) -> list[str]:
    """The Megatron-LM flags of ``model`` and ``layout`` (``parse_megatron_args(..., gpus)`` reads them back).

    ``pipeline_layout``: the layer split as ``--pipeline-model-parallel-layout`` (Megatron-Core's free layout)
    instead of the virtual-stage and first/last-rank flags (when p > 1). A free split (``layout.free_split``:
    no first/last counts express it) is always written so.
    """
    from .layout import Schedule

    if layout.schedule in (Schedule.GPIPE, Schedule.ZB_H1, Schedule.ZBV):
        raise InvalidLayoutError(f"schedule {layout.schedule}: Megatron-LM has no flag for it (1f1b, interleaved)")
    if layout.replicate > 1:
        raise InvalidLayoutError(f"layout replicate {layout.replicate}: HSDP is written for torchtitan's FSDP2 only, "
                                 "not as Megatron-LM flags")  # fmt: skip
    out = model_flags(model)
    out += [
        "--micro-batch-size", str(layout.micro_batch), "--global-batch-size", str(layout.global_batch),
        "--tensor-model-parallel-size", str(layout.tensor), "--pipeline-model-parallel-size", str(layout.pipeline),
    ]  # fmt: skip
    return out + _layout_flags(model, layout, pipeline_layout)


def model_flags(model: TransformerSpec) -> list[str]:
    """The Megatron-LM flags of the model's shape alone (:func:`parse_megatron_args` reads them back)."""
    out = [
        "--num-layers", str(model.layers), "--hidden-size", str(model.hidden),
        "--num-attention-heads", str(model.heads), "--seq-length", str(model.seq_length),
        "--vocab-size", str(model.vocab),
    ]  # fmt: skip
    if model.ffn_hidden is not None:
        out += ["--ffn-hidden-size", str(model.ffn_hidden)]
    if model.query_groups is not None:
        out += ["--group-query-attention", "--num-query-groups", str(model.query_groups)]
    if model.max_position_embeddings is not None:
        out += ["--max-position-embeddings", str(model.max_position_embeddings)]
    if model.swiglu:
        out.append("--swiglu")
    if model.norm is Norm.RMSNORM:
        out += ["--normalization", "RMSNorm"]
    if model.rope:
        out += ["--position-embedding-type", "rope"]
    if not model.bias:
        out.append("--disable-bias-linear")
    if model.qkv_bias and not model.bias:
        out.append("--add-qkv-bias")
    if not model.dropout:
        out += ["--hidden-dropout", "0", "--attention-dropout", "0"]
    if not model.tied_embeddings:
        out.append("--untie-embeddings-and-output-weights")
    if model.moe:
        out += ["--num-experts", str(model.num_experts), "--moe-router-topk", str(model.moe_topk)]
    return out


def _layout_flags(model: TransformerSpec, layout: Layout, pipeline_layout: bool) -> list[str]:
    out: list[str] = []
    pipeline_layout = (pipeline_layout and layout.pipeline > 1) or layout.free_split
    if pipeline_layout:
        from .pp_layout import pipeline_layout_string

        out += ["--pipeline-model-parallel-layout", pipeline_layout_string(model, layout)]
    elif layout.virtual_stages > 1 and layout.uneven:  # Megatron-LM: layers-per-virtual-stage assumes the even split
        out += ["--num-virtual-stages-per-pipeline-rank", str(layout.virtual_stages)]
    elif layout.virtual_stages > 1:
        per = model.layers // (layout.pipeline * layout.virtual_stages)
        out += ["--num-layers-per-virtual-pipeline-stage", str(per)]
    if layout.first_stage_layers is not None and not pipeline_layout:
        out += ["--decoder-first-pipeline-num-layers", str(layout.first_stage_layers)]
    if layout.last_stage_layers is not None and not pipeline_layout:
        out += ["--decoder-last-pipeline-num-layers", str(layout.last_stage_layers)]
    if layout.context > 1:
        out += ["--context-parallel-size", str(layout.context)]
    if layout.expert > 1:
        out += ["--expert-model-parallel-size", str(layout.expert)]
    if layout.sequence_parallel:
        out.append("--sequence-parallel")
    if layout.zero_stage == 1:
        out.append("--use-distributed-optimizer")
    elif layout.zero_stage > 1:
        strategy = {v: k for k, v in _SHARDING.items()}[layout.zero_stage]
        out += ["--use-distributed-optimizer", "--data-parallel-sharding-strategy", strategy]
    if layout.recompute is not Recompute.NONE:
        out += ["--recompute-granularity", str(layout.recompute)]
    if layout.recompute_method is not RecomputeMethod.UNIFORM:
        out += ["--recompute-method", str(layout.recompute_method)]
    elif layout.recompute is Recompute.FULL:
        out += ["--recompute-method", "uniform"]
    if layout.recompute_layers is not None:
        out += ["--recompute-num-layers", str(layout.recompute_layers)]
    if layout.dtype is Dtype.FP8:
        out += ["--bf16", "--fp8-format", "hybrid"]
    elif layout.dtype in (Dtype.BF16, Dtype.FP16):
        out.append(f"--{layout.dtype}")
    if layout.attention is Attention.UNFUSED:
        out += ["--attention-backend", "unfused"]
    for name in ("overlap_grad_reduce", "overlap_param_gather", "tp_comm_overlap"):
        if getattr(layout, name):
            out.append("--" + name.replace("_", "-"))
    if layout.grad_reduce_fp32:
        out.append("--accumulate-allreduce-grads-in-fp32")
    if not layout.tp_async_backward:
        out.append("--no-async-tensor-model-parallel-allreduce")
    return out


def parse_megatron_command(text: str, gpus: int | None = None) -> tuple[TransformerSpec, Layout, list[str]]:
    """:func:`parse_megatron_args` on a pasted shell command (``torchrun ... pretrain_gpt.py --num-layers ...``).

    Line continuations, quotes and ``VAR=value`` prefixes are handled by :func:`shlex.split`; without
    ``gpus``, torchrun's ``--nproc-per-node`` times ``--nnodes`` gives the world size.
    """
    try:
        argv = shlex.split(text, comments=True)
    except ValueError as exc:
        raise InvalidLayoutError(f"command line: {exc}") from None
    return parse_megatron_args(argv, gpus)
