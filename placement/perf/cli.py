"""``python -m placement predict``: the performance model on a Megatron-LM command line.

``python -m placement predict --gpu A100 --gpus 1024 [--model PRESET|CONFIG.json] [--profile PROFILE.json]
[--gpus-per-node 8] [--nvlink-gbps X] [--nic-gbps Y] [--framework megatron|torch-eager] [--json]
-- <Megatron-LM flags>`` prints the parameter count (total, and active for a mixture of experts), the iteration
time (with the calibration band), tokens/s, TFLOP/s
per GPU, MFU, the memory of the most loaded GPU by part and whether it fits. Bandwidth overrides are in
GB/s (gigabytes per second), per GPU and direction.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
from typing import Any

from ..errors import PlacementError
from .eager import FRAMEWORK as EAGER
from .eager import check_one_device, eager_predict
from .error_statement import error_statement
from .hardware import GB, Accelerator, Cluster, accelerator, power_note
from .hf_config import model_from_argument
from .megatron import parse_megatron_args
from .params import DEFAULT_PARAMS, PerfParams
from .predict import Prediction, predict
from .profile import load_profile
from .profiled import accelerator_from_profile, catalogue_match, profile_params
from .transformer import TransformerSpec


def parameters_dict(model: TransformerSpec) -> dict[str, int]:
    """``{"total": N}``, and ``"active"`` (weights used per token) for a mixture of experts."""
    out = {"total": model.parameters()}
    if model.moe:
        out["active"] = model.active_parameters()
    return out


def parameters_text(model: TransformerSpec) -> str:
    """One line: the total parameter count (and the active one for a mixture of experts)."""
    count = parameters_dict(model)
    text = f"parameters {count['total']:,} ({count['total'] / 1e9:.2f} B)"
    if "active" in count:
        text += f", {count['active']:,} active per token ({model.moe_topk} of {model.num_experts} experts)"
    return text


def _positive(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"must be a finite number > 0: {text!r}")
    return value


def _gpus(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 1 or value > 1_000_000:
        raise argparse.ArgumentTypeError(f"must be an integer from 1 to 1,000,000: {text!r}")
    return value


def register(commands: Any) -> None:
    """Add the ``predict`` subcommand to an ``argparse`` subparsers object."""
    cmd = commands.add_parser(
        "predict",
        help="iteration time, throughput and memory of a Megatron-LM run (flags after --)",
        description="Predict a Megatron-LM training run: give the cluster, then the launch flags after --.",
    )
    cmd.add_argument(
        "--gpu",
        default=None,
        help="accelerator: A100, A100-40GB, A100-40GB-PCIe, H100, H100-PCIe, H100-NVL, H200, H200-NVL, B200, MI300X, L4, V100",
    )
    cmd.add_argument(
        "--profile", default=None, help="device profile from calibrate (measured rates; --gpu then gives the links)"
    )
    cmd.add_argument("--gpus", required=True, type=_gpus, help="number of GPUs (world size)")
    cmd.add_argument(
        "--model",
        default=None,
        help="model shape: a preset or a HuggingFace config.json (Megatron shape flags after -- change it)",
    )
    cmd.add_argument("--gpus-per-node", type=_gpus, default=8, help="GPUs per NVLink node (default 8)")
    cmd.add_argument("--nvlink-gbps", type=_positive, default=None, help="NVLink GB/s per GPU and direction")
    cmd.add_argument("--nic-gbps", type=_positive, default=None, help="network GB/s per GPU and direction")
    cmd.add_argument(
        "--framework",
        choices=FRAMEWORKS,
        default="megatron",
        help="megatron (Megatron-LM flags, its kernels with TransformerEngine; default), torch-eager (plain PyTorch "
        "eager on one GPU, what measure runs) or torchtitan (torchtitan 0.2.2's flags and --config TOML, priced as "
        "plan --framework torchtitan prices its layouts)",
    )
    cmd.add_argument(
        "--power-limit",
        type=_positive,
        default=None,
        help="board power limit in W (40 %% of the TDP to the TDP): dense peaks x (W/TDP)^(1/3), an assumption",
    )
    cmd.add_argument(
        "--config", default=None, help="--framework torchtitan: a torchtitan job config TOML (flags after -- override)"
    )
    cmd.add_argument("--json", action="store_true", help="print one JSON object")
    cmd.add_argument(
        "megatron",
        nargs=argparse.REMAINDER,
        help="-- then Megatron-LM flags (torchtitan's own with --framework torchtitan)",
    )


FRAMEWORKS = ("megatron", EAGER, "torchtitan")


def _gib(value: float) -> str:
    return f"{value / 2**30:.1f} GiB"


def _text(model: TransformerSpec, pred: Prediction, notes: list[str]) -> str:
    error = pred.error
    band_text = f" ({error.headline})"
    lines = [
        f"model {pred.model_id}",
        f"transformer {model.name}: {parameters_text(model)}",
        f"iteration {pred.iteration_seconds:.3g} s{band_text}",
        f"tokens/s {pred.tokens_per_second:,.0f}",
        f"TFLOP/s per GPU {pred.tflops_per_gpu:.1f} (recomputation counted)",
        f"MFU {pred.mfu:.1%}",
        f"memory (pipeline rank {pred.memory.stage}): {_gib(pred.memory.total)} of {_gib(pred.memory_capacity)}: "
        + ("fits" if pred.fits else "DOES NOT FIT"),
    ]
    lines += [f"  {k:16s} {_gib(v)}" for k, v in pred.memory.as_dict().items() if k != "total"]
    lines.append("time by part (s):")
    lines += [f"  {k:16s} {v:.4g}" for k, v in pred.time.as_dict().items()]
    lines += [f"note: {n}" for n in [*notes, *pred.notes]]
    lines += error.lines()
    return "\n".join(lines)


def _device(args: argparse.Namespace) -> tuple[Accelerator, PerfParams]:
    """The accelerator (catalogue, or measured by a profile) and the model's constants for it."""
    if args.gpu is None and args.profile is None:
        raise PlacementError("predict: give --gpu (a catalogue GPU) or --profile (a calibrated device)")
    if args.profile is None:
        return _limited(accelerator(args.gpu), args), DEFAULT_PARAMS
    base = accelerator(args.gpu) if args.gpu is not None else None
    profile = load_profile(args.profile)
    acc = accelerator_from_profile(profile, base or catalogue_match(profile.name))
    return _limited(acc, args), profile_params(profile)


def _limited(acc: Accelerator, args: argparse.Namespace) -> Accelerator:
    """``acc`` under ``--power-limit`` when given (:meth:`Accelerator.with_power_limit`)."""
    watts = getattr(args, "power_limit", None)
    return acc if watts is None else acc.with_power_limit(watts)


def cmd_predict(args: argparse.Namespace) -> int:
    """Run ``predict``; :class:`~placement.errors.PlacementError` propagates to the CLI's one-line handler."""
    flags = list(args.megatron)
    if flags and flags[0] == "--":
        flags = flags[1:]
    acc, params = _device(args)
    if args.config is not None and args.framework != "torchtitan":
        raise PlacementError("--config: a torchtitan job config (give --framework torchtitan)")
    cluster = Cluster(
        acc,
        args.gpus,
        args.gpus_per_node,
        nvlink_bytes_per_s=None if args.nvlink_gbps is None else args.nvlink_gbps * GB,
        nic_bytes_per_s=None if args.nic_gbps is None else args.nic_gbps * GB,
    )
    base = None if args.model is None else model_from_argument(args.model)
    if args.framework == "torchtitan":
        from .torchtitan_job import read_torchtitan_job

        model, layout, notes = read_torchtitan_job(flags, args.config, args.gpus, base)
    else:
        model, layout, notes = parse_megatron_args(flags, gpus=args.gpus, model=base)
    if acc.power_limit_watts is not None:
        notes.append(power_note(acc))
    if args.framework == EAGER:
        return _predict_eager(args, acc, params, model, layout, notes)
    pred = predict(model, cluster, layout, params, with_band=acc.measured is None, framework=args.framework)
    if acc.measured is not None:
        notes.append(
            f"priced from the profile of {acc.measured.name} measured {acc.measured.date}: the published runs' "
            "calibration band does not apply (python -m placement measure gives this device's error)"
        )
    if args.json:
        out = pred.as_dict()
        out["model"] = model.name
        out["parameters"] = parameters_dict(model)
        out["accelerator"] = cluster.accelerator.name
        out["gpus"] = cluster.gpus
        out["notes"] = [*notes, *pred.notes]
        print(json.dumps(out, allow_nan=False))
    else:
        print(_text(model, pred, notes))
    return 0


def _eager_parts_lines(parts: Any, micro_batches: int) -> list[str]:
    """The eager loop's memory by part, one line (none without parts)."""
    if parts is None:
        return []
    when = "all held at the loss" if micro_batches > 1 else "one micro-batch: the gradients come after the loss"
    return [
        f"  by part: weights {_gib(parts.weights)}, gradients {_gib(parts.gradients)}, AdamW state "
        f"{_gib(parts.optimizer)}, 16-bit weight copies {_gib(parts.weight_copies)}, saved activations "
        f"{_gib(parts.activations)}, loss {_gib(parts.loss)} ({when})"
    ]


def _predict_eager(
    args: argparse.Namespace, acc: Accelerator, params: PerfParams, model: Any, layout: Any, notes: list[str]
) -> int:
    """``predict --framework torch-eager``: one GPU, the eager kernels and the host that issues them."""
    check_one_device(layout)
    micro = layout.global_batch // layout.micro_batch
    pred = eager_predict(model, acc, layout.micro_batch, micro, params, model.parameters(), layout.dtype)
    tokens = layout.global_batch * model.seq_length / pred.iteration_seconds
    fits = pred.memory <= acc.memory_bytes
    error = error_statement(framework=EAGER, accelerator=acc)
    band = error.headline
    if args.json:
        out = {"framework": EAGER, "accelerator": acc.name, "iteration_seconds": pred.iteration_seconds,
               "gpu_busy_seconds": pred.gpu_seconds, "host_seconds": pred.host_seconds, "aten_ops": pred.aten_ops,
               "tokens_per_second": tokens, "memory": pred.memory, "memory_capacity": acc.memory_bytes,
               "fits": fits, "band": band, "calibration_band": None, "error": error.as_dict(),
               "memory_parts": None if pred.memory_parts is None else dataclasses.asdict(pred.memory_parts),
               "notes": notes}  # fmt: skip
        print(json.dumps(out, allow_nan=False))
        return 0
    lines = [
        f"framework {EAGER} (plain PyTorch eager, autocast {layout.dtype}, fused AdamW) on {acc.name}",
        f"iteration {pred.iteration_seconds:.4g} s (GPU busy {pred.gpu_seconds:.4g} s, host issuing "
        f"{pred.host_seconds:.4g} s, {pred.aten_ops:,} aten operations)",
        f"tokens/s {tokens:,.0f}",
        f"peak memory {_gib(pred.memory)} of {_gib(acc.memory_bytes)}: " + ("fits" if fits else "DOES NOT FIT"),
        *_eager_parts_lines(pred.memory_parts, micro),
        f"error: {band}",
        *[f"note: {n}" for n in notes],
    ]
    print("\n".join(lines))
    return 0
