"""``python -m placement plan``: the fastest launchable layout of a transformer on a cluster, and its launch config.

::

    python -m placement plan --model llama3-70b --gpu H100 --gpus 1024 --global-batch 1024 \\
        --seq-length 8192 --framework megatron [--json] [--pareto]

Prints the plan (proven optimal in the framework's space of :mod:`placement.perf.spaces`), its predicted
numbers and memory breakdown, and the launch configuration (Megatron-LM arguments, a torchtitan TOML or a
DeepSpeed JSON config), checked by the real parsers where importable. ``--gpu A100:8,V100:4`` plans a
heterogeneous cluster (:mod:`placement.perf.hetero`). Bad input: one line, exit 2.
"""

from __future__ import annotations

import argparse
import json
import math
from typing import Any

from ..errors import PlacementError
from .claims import Claim, compare_claim
from .coverage import calibration_lines
from .hardware import GIB, Cluster, accelerator
from .launch import (
    check_deepspeed,
    check_megatron,
    check_torchtitan,
    deepspeed_config,
    megatron_command,
    torchtitan_command,
    torchtitan_toml,
)
from .layout import Layout
from .megatron import parse_megatron_args
from .params import DEFAULT_PARAMS, PerfParams
from .pareto import pareto_front
from .predict import predict
from .profile import load_profile
from .profiled import accelerator_from_profile, profile_params
from .search import Plan, SearchResult, search
from .spaces import SPACES
from .transformer import MODELS, TransformerSpec, model_preset


def add_plan_parser(commands: Any, count: Any) -> None:
    """Register the ``plan`` subcommand on the CLI's subparsers (``count``: the CLI's integer type)."""
    cmd = commands.add_parser("plan", help="fastest launchable transformer layout (Megatron / torchtitan / DeepSpeed)")
    cmd.add_argument("--model", required=True, help=f"model preset: {', '.join(MODELS)}")
    cmd.add_argument("--seq-length", type=count, default=None, help="sequence length (default: the preset's)")
    cmd.add_argument("--gpu", required=True, help="accelerator (A100, H100, ...); KIND:N,KIND:N for a mixed cluster")
    cmd.add_argument("--gpus", type=count, default=None, help="number of GPUs (one kind)")
    cmd.add_argument("--gpus-per-node", type=count, default=8, help="GPUs per node (default 8)")
    cmd.add_argument("--global-batch", type=count, required=True, help="sequences per iteration")
    cmd.add_argument("--framework", default="megatron", help=f"search space: {', '.join(SPACES)} (default megatron)")
    cmd.add_argument("--price", type=float, default=None, help="price per GPU-hour (adds cost to the Pareto front)")
    cmd.add_argument("--pareto", action="store_true", help="also the Pareto front (time, memory, GPUs[, cost])")
    cmd.add_argument("--json", action="store_true", help="one JSON object")
    cmd.add_argument(
        "--profile", default=None, help="device profile from calibrate: measured rates, not the spec sheet"
    )
    cmd.add_argument("--band", type=float, default=None, help="relative error of each prediction for the comparison")
    cmd.add_argument("baseline", nargs=argparse.REMAINDER, help="-- then Megatron-LM flags of a layout to compare")


def _model(args: argparse.Namespace) -> TransformerSpec:
    model = model_preset(args.model)
    if args.seq_length is not None:
        if args.seq_length < 1:
            raise PlacementError(f"--seq-length {args.seq_length}: must be a positive integer")
        model = model.with_changes(seq_length=int(args.seq_length))
    return model


def _cluster(args: argparse.Namespace) -> Cluster:
    if args.gpus is None:
        raise PlacementError("--gpus: required with one GPU kind (or give --gpu KIND:N,KIND:N)")
    acc = accelerator(args.gpu)
    if args.profile is not None:
        acc = accelerator_from_profile(load_profile(args.profile), acc)
    if args.price is not None:
        if not (math.isfinite(args.price) and args.price >= 0):
            raise PlacementError(f"--price {args.price}: must be a finite number >= 0")
        from dataclasses import replace

        acc = replace(acc, price_per_hour=float(args.price))
    return Cluster(acc, int(args.gpus), int(args.gpus_per_node))


def launch_configs(model: TransformerSpec, plan: Plan, framework: str, gpus_per_node: int = 8) -> dict[str, Any]:
    """The plan's launch configuration for ``framework`` and the real parsers' verdicts.

    torchtitan: ``torchtitan_toml`` (the job config) and ``torchtitan_command`` (``torchrun`` on
    ``gpus_per_node`` GPUs per node, reading it as ``torchtitan.toml``).
    """
    layout = plan.layout
    out: dict[str, Any] = {}
    try:  # also for the other frameworks, where Megatron-LM can run the layout (it has no flag for ZBV)
        out["megatron_args"] = megatron_command(model, layout)
    except PlacementError:
        if framework.startswith("megatron"):
            raise
    checks = []
    if framework.startswith("megatron"):
        checks.append(check_megatron(model, layout))
    elif framework == "torchtitan":
        out["torchtitan_toml"] = torchtitan_toml(model, layout)
        out["torchtitan_command"] = torchtitan_command(layout, gpus_per_node)
        checks.append(check_torchtitan(out["torchtitan_toml"], model.layers))
    elif framework == "deepspeed":
        out["deepspeed_config"] = deepspeed_config(model, layout)
        checks.append(check_deepspeed(out["deepspeed_config"], layout.data * layout.context))
    out["checks"] = [{"parser": c.parser, "ok": c.ok, "message": c.message} for c in checks]
    return out


def layout_dict(plan: Plan) -> dict[str, Any]:
    """The plan's layout as plain JSON values."""
    fields = plan.layout.__dataclass_fields__
    return {
        k: (v if isinstance(v, bool | int | float) or v is None else list(v) if isinstance(v, tuple) else str(v))
        for k in fields
        for v in [getattr(plan.layout, k)]
    }


def plan_dict(plan: Plan) -> dict[str, Any]:
    """A plan as JSON: layout, GPUs, prediction (``iteration_seconds``, memory...) and cost per iteration."""
    return {
        "layout": layout_dict(plan),
        "gpus": plan.gpus,
        "prediction": plan.prediction.as_dict(),
        "cost_per_iteration": plan.cost_per_iteration,
    }


def describe_layout(plan: Plan | Layout) -> str:
    """One line: t, p, d, cp, ep, v, b, SP, ZeRO, recompute (of a plan or a layout)."""
    lay = plan.layout if isinstance(plan, Plan) else plan
    rec = str(lay.recompute)
    if lay.recompute.value == "full":
        count = lay.recompute_layers
        layers = "" if count is None else f", {count} layer" + ("" if count == 1 else "s")
        rec += f" ({lay.recompute_method}{layers})"
    parts = [f"t={lay.tensor}", f"p={lay.pipeline}", f"d={lay.data}", f"cp={lay.context}"]
    if lay.expert > 1:
        parts.append(f"ep={lay.expert}")
    parts += [f"v={lay.virtual_stages}", f"micro-batch {lay.micro_batch}", f"schedule {lay.schedule}"]
    if lay.free_split:
        parts.append("layers per rank " + "/".join(str(n) for n in lay.pipeline_layers or ()))
    elif lay.uneven:
        parts.append(f"layers first/last rank {lay.first_stage_layers}/{lay.last_stage_layers}")
    parts += [f"SP {'on' if lay.sequence_parallel else 'off'}", f"ZeRO {lay.zero_stage}", f"recompute {rec}"]
    if lay.offload_optimizer:
        parts.append("offload optimizer" + (" and weights" if lay.offload_params else "") + " to CPU")
    return ", ".join(parts)


def _text(model: TransformerSpec, result: SearchResult, configs: dict[str, Any], front: list[Plan] | None) -> str:
    lines = [f"space: {result.space_title}"]
    s = result.stats
    lines.append(
        f"searched {s.shapes} shapes in {result.seconds:.3f} s: {s.predictions} predictions, "
        f"{s.memory_checks} memory checks, shapes pruned: {s.pruned_by_memory} by memory, {s.pruned_by_bound} by the time bound"
    )
    if result.plan is None:
        lines.append(f"infeasible: {result.reason}")
        return "\n".join(lines)
    plan, pred = result.plan, result.plan.prediction
    lines.append(f"optimal (proven in the model {pred.model_id}): {describe_layout(plan)}")
    band = f" (calibration band +-{pred.band.max_abs_error:.0%})" if pred.band else ""
    lines.append(
        f"iteration {pred.iteration_seconds:.4g} s{band}, {pred.tokens_per_second:,.0f} tokens/s, "
        f"{pred.tflops_per_gpu:.1f} TFLOP/s per GPU, MFU {pred.mfu:.1%}"
    )
    mem = pred.memory.as_dict()
    lines.append(
        "memory per GPU: "
        + ", ".join(f"{k} {v / GIB:.2f} GiB" for k, v in mem.items())
        + f" of {pred.memory_capacity / GIB:.1f} GiB"
    )
    lines += calibration_lines(pred.band, pred.outside_calibration)
    if "megatron_args" in configs:
        lines.append("megatron args: " + " ".join(configs["megatron_args"]))
    if "torchtitan_toml" in configs:
        lines += ["torchtitan job config (torchtitan.toml):", configs["torchtitan_toml"]]
        lines.append("torchtitan command: " + " ".join(configs["torchtitan_command"]))
    if "deepspeed_config" in configs:
        lines += ["deepspeed config:", json.dumps(configs["deepspeed_config"], indent=2)]
    for check in configs["checks"]:
        lines.append(f"checked by {check['parser']}: {'ok' if check['ok'] else 'REJECTED: ' + check['message']}")
    if front is not None:
        free = result.space in SPACES and SPACES[result.space].free_layouts
        scope = "; even, first/last and free per-rank splits" if free else ""
        lines.append(f"Pareto front ({len(front)} plans{scope}): seconds, GiB per GPU, GPUs, layout")
        for p in front:
            lines.append(f"  {p.iteration_seconds:.4g}  {p.memory_bytes / GIB:.2f}  {p.gpus}  {describe_layout(p)}")
    return "\n".join(lines)


def run_plan(args: argparse.Namespace) -> int:
    """The ``plan`` subcommand; prints text or JSON, returns the exit status."""
    if args.framework not in SPACES:
        raise PlacementError(f"--framework {args.framework!r}: must be one of {', '.join(SPACES)}")
    model = _model(args)
    if ":" in args.gpu:
        if args.profile is not None or args.baseline:
            raise PlacementError("--profile and a layout to compare apply to one GPU kind, not KIND:N,KIND:N")
        from .hetero import hetero_text, parse_kinds, search_hetero

        hetero = search_hetero(model, parse_kinds(args.gpu, int(args.gpus_per_node)), int(args.global_batch))
        print(json.dumps(hetero.as_dict(), indent=1, allow_nan=False) if args.json else hetero_text(hetero))
        return 0
    cluster = _cluster(args)
    measured = cluster.accelerator.measured
    params = profile_params(measured) if measured is not None else DEFAULT_PARAMS
    result = search(model, cluster, int(args.global_batch), args.framework, params=params)
    configs = launch_configs(model, result.plan, args.framework, args.gpus_per_node) if result.plan is not None else {}
    front = pareto_front(model, cluster, int(args.global_batch), args.framework, params=params) if args.pareto else None
    claim = _claim(args, model, cluster, params, result)
    if args.json:
        out: dict[str, Any] = {
            "status": str(result.status),
            "space": result.space,
            "space_title": result.space_title,
            "model": model.name,
            "gpu": cluster.accelerator.name,
            "gpus": cluster.gpus,
            "seconds": result.seconds,
            "stats": result.stats.__dict__,
            "reason": result.reason,
            "plan": plan_dict(result.plan) if result.plan is not None else None,
            **configs,
        }
        if front is not None:
            out["pareto"] = [plan_dict(p) for p in front]
        if measured is not None:
            out["profile"] = {"device": measured.name, "date": measured.date}
        if claim is not None:
            out["comparison"] = claim.as_dict()
        print(json.dumps(out, indent=1, allow_nan=False))
    else:
        text = _text(model, result, configs, front)
        if measured is not None:
            text = f"priced from the profile of {measured.name} measured {measured.date}\n" + text
        print(text if claim is None else text + "\ncompared with your layout: " + claim.text())
    return 0


def _claim(
    args: argparse.Namespace, model: TransformerSpec, cluster: Cluster, params: PerfParams, result: SearchResult
) -> Claim | None:
    """The optimum against the layout of the Megatron-LM flags after ``--`` (None without them)."""
    flags = list(args.baseline or [])
    if flags and flags[0] == "--":
        flags = flags[1:]
    if not flags:
        return None
    if result.plan is None:
        raise PlacementError("no optimum to compare your layout with: the plan is infeasible")
    if cluster.accelerator.measured is not None and args.band is None:
        raise PlacementError("with --profile give --band (the error measure found on this device): no table applies")
    base_model, layout, _ = parse_megatron_args(flags, gpus=cluster.gpus)
    if abs(base_model.parameters() / model.parameters() - 1.0) > 0.01:
        raise PlacementError(
            f"the flags after -- describe a model of {base_model.parameters() / 1e9:.2f}B parameters, "
            f"not --model {model.name} ({model.parameters() / 1e9:.2f}B)"
        )
    baseline = predict(base_model, cluster, layout, params)
    return compare_claim(baseline, result.plan.prediction, args.band)
