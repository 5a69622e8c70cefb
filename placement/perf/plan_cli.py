"""``python -m placement plan``: the fastest launchable layout of a transformer on a cluster, and its launch config.

::

    python -m placement plan --model llama3-70b|CONFIG.json --gpu H100 --gpus 1024 --global-batch 1024 \\
        [--seq-length 8192] [--framework megatron] [--tokens 15e12] [--price 2.5|KIND=P,...] [--currency USD] \\
        [--compare-gpus A100,H100,B200] [--json] [--pareto] [-- <Megatron-LM shape flags>]

Prints the model's parameter count, the plan (proven optimal in the framework's space of
:mod:`placement.perf.spaces`), its predicted numbers and memory breakdown, its cost per hour, per iteration and
per run of ``--tokens`` (:mod:`placement.perf.plan_run`; the catalogue's USD price by default), and the launch
configuration (the whole ``torchrun`` command running Megatron-LM, a torchtitan TOML and command, or a DeepSpeed
JSON config), checked by the real parsers where installed ("not checked" where not). A GPU count with no layout
gets the nearest counts that have one; ``--compare-gpus`` puts kinds side by side. ``--gpu A100:8,V100:4`` plans
a heterogeneous cluster (:mod:`placement.perf.hetero`). Bad input: one line, exit 2.
"""

from __future__ import annotations

import argparse
import json
import math
from dataclasses import replace
from typing import Any

from ..errors import PlacementError, quote
from .claims import Claim, compare_claim
from .cli import parameters_dict, parameters_text
from .hardware import GB, GIB, Cluster, accelerator, power_note
from .hf_config import model_from_argument
from .launch import (
    check_deepspeed,
    check_megatron,
    check_torchtitan,
    deepspeed_config,
    megatron_command,
    megatron_launch,
    shell_text,
    torchtitan_command,
    torchtitan_toml,
)
from .layout import Layout
from .megatron import parse_megatron_args, parse_megatron_model
from .params import DEFAULT_PARAMS, PerfParams
from .pareto import pareto_front
from .plan_run import (
    CATALOGUE_CURRENCY,
    compare_kinds,
    compare_text,
    money,
    nearest_counts,
    nearest_lines,
    parse_prices,
    price_of,
    price_source,
    run_figures,
    run_lines,
    tokens_text,
)
from .predict import predict
from .profile import load_profile
from .profiled import accelerator_from_profile, profile_params
from .search import Plan, SearchResult, search
from .spaces import SPACES
from .transformer import MODELS, TransformerSpec


def add_plan_parser(commands: Any, count: Any) -> None:
    """Register the ``plan`` subcommand on the CLI's subparsers (``count``: the CLI's integer type)."""
    cmd = commands.add_parser("plan", help="fastest launchable transformer layout (Megatron / torchtitan / DeepSpeed)")
    cmd.add_argument(
        "--model", default=None, help=f"model: a preset ({', '.join(MODELS)}) or a HuggingFace config.json"
    )
    cmd.add_argument("--seq-length", type=count, default=None, help="sequence length (default: the preset's)")
    cmd.add_argument("--gpu", required=True, help="accelerator (A100, H100, ...); KIND:N,KIND:N for a mixed cluster")
    cmd.add_argument("--gpus", type=count, default=None, help="number of GPUs (one kind)")
    cmd.add_argument("--gpus-per-node", type=count, default=8, help="GPUs per node (default 8)")
    cmd.add_argument("--global-batch", type=count, required=True, help="sequences per iteration")
    cmd.add_argument("--framework", default="megatron", help=f"search space: {', '.join(SPACES)} (default megatron)")
    cmd.add_argument(
        "--price",
        default=None,
        help="price per GPU-hour, or KIND=PRICE,... (default: the catalogue's USD price of the kind)",
    )
    cmd.add_argument("--currency", default=None, help="currency of --price (default USD, the catalogue's)")
    cmd.add_argument("--compare-gpus", default=None, help="KIND,KIND,...: each kind's plan on --gpus GPUs side by side")
    cmd.add_argument("--pareto", action="store_true", help="also the Pareto front (time, memory, GPUs[, cost])")
    cmd.add_argument("--tokens", type=float, default=None, help="tokens of a training run: prints its time and cost")
    cmd.add_argument("--nic-gbps", type=float, default=None, help="network GB/s per GPU and direction (what-if)")
    cmd.add_argument("--trace", default=None, help="write the plan's pipeline schedule as Chrome/Perfetto trace JSON")
    cmd.add_argument("--json", action="store_true", help="one JSON object")
    cmd.add_argument(
        "--profile", default=None, help="device profile from calibrate: measured rates, not the spec sheet"
    )
    cmd.add_argument("--band", type=float, default=None, help="relative error of each prediction for the comparison")
    cmd.add_argument(
        "--power-limit",
        type=float,
        default=None,
        help="board power limit in W (40 %% of the TDP to the TDP): dense peaks x (W/TDP)^(1/3), an assumption",
    )
    cmd.add_argument(
        "megatron",
        nargs=argparse.REMAINDER,
        help="-- then Megatron-LM flags: the model's shape, and a layout (parallel sizes) to compare the plan with",
    )


def _model(args: argparse.Namespace) -> tuple[TransformerSpec, list[str]]:
    flags = _flags(args)
    base = None if args.model is None else model_from_argument(args.model)
    if flags:
        model, notes = parse_megatron_model(flags, base)
    elif base is not None:
        model, notes = base, []
    else:
        raise PlacementError("--model PRESET|CONFIG.json or Megatron shape flags after -- are required")
    if args.seq_length is not None:
        if args.seq_length < 1:
            raise PlacementError(f"--seq-length {args.seq_length}: must be a positive integer")
        model = model.with_changes(seq_length=int(args.seq_length))
    return model, notes


def _currency(args: argparse.Namespace) -> str:
    currency = CATALOGUE_CURRENCY if args.currency is None else args.currency.strip()
    if not (1 <= len(currency) <= 12 and currency.isprintable()):
        raise PlacementError(f"--currency {quote(args.currency)}: must be a label of 1 to 12 printable characters")
    return currency


def _cluster(args: argparse.Namespace) -> Cluster:
    if args.gpus is None:
        raise PlacementError("--gpus: required with one GPU kind (or give --gpu KIND:N,KIND:N)")
    acc = accelerator(args.gpu)
    if args.profile is not None:
        acc = accelerator_from_profile(load_profile(args.profile), acc)
    if getattr(args, "power_limit", None) is not None:
        acc = acc.with_power_limit(args.power_limit)
    price, prices = parse_prices(args.price)
    acc = replace(acc, price_per_hour=price_of(acc, price, prices, _currency(args)))
    nic = getattr(args, "nic_gbps", None)
    if nic is not None and not (math.isfinite(nic) and nic > 0):
        raise PlacementError(f"--nic-gbps {nic}: must be a finite number > 0")
    return Cluster(acc, int(args.gpus), int(args.gpus_per_node), nic_bytes_per_s=None if nic is None else nic * GB)


def _write_trace(model: TransformerSpec, result: SearchResult, cluster: Cluster, path: str) -> None:
    from .trace import chrome_trace_json

    if result.plan is None:
        raise PlacementError(f"--trace {path}: no plan to draw ({result.reason})")
    try:
        with open(path, "w", encoding="utf-8") as out:
            out.write(chrome_trace_json(model, result.plan, cluster))
    except OSError as exc:
        raise PlacementError(f"--trace {path}: cannot write ({exc.strerror})") from None


def launch_configs(
    model: TransformerSpec, plan: Plan, framework: str, gpus_per_node: int = 8, check: bool = True
) -> dict[str, Any]:
    """The plan's launch configuration for ``framework`` and the real parsers' verdicts (``check`` False: none,
    ``checks`` empty; importing a framework takes seconds).

    torchtitan: ``torchtitan_toml`` (the job config) and ``torchtitan_command`` (``torchrun`` on
    ``gpus_per_node`` GPUs per node, reading it as ``torchtitan.toml``).
    """
    layout = plan.layout
    out: dict[str, Any] = {}
    try:  # also for the other frameworks, where Megatron-LM can run the layout (it has no flag for ZBV)
        out["megatron_args"] = megatron_command(model, layout)
        out["megatron_launch"] = megatron_launch(model, layout, gpus_per_node)
    except PlacementError:
        if framework.startswith("megatron"):
            raise
    checks = []
    if framework.startswith("megatron"):
        if check:
            checks.append(check_megatron(model, layout))
    elif framework == "torchtitan":
        out["torchtitan_toml"] = torchtitan_toml(model, layout)
        out["torchtitan_command"] = torchtitan_command(layout, gpus_per_node)
        if check:
            checks.append(check_torchtitan(out["torchtitan_toml"], model.layers))
    elif framework == "deepspeed":
        out["deepspeed_config"] = deepspeed_config(model, layout)
        if check:
            checks.append(check_deepspeed(out["deepspeed_config"], layout.data * layout.context))
    out["checks"] = [
        {"parser": c.parser, "ok": c.ok, "checked": c.checked, "message": c.message, "line": c.line()} for c in checks
    ]
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
    if lay.replicate > 1:
        parts.append(f"HSDP {lay.replicate} replicas of {lay.fsdp_shard}")
    if lay.offload_optimizer:
        parts.append("offload optimizer" + (" and weights" if lay.offload_params else "") + " to CPU")
    if lay.kernels.value != "fused":  # torchtitan's kernels (Megatron-LM's fused ones go unsaid)
        parts.append(f"torchtitan {lay.kernels} kernels")
    return ", ".join(parts)


def _text(
    model: TransformerSpec,
    result: SearchResult,
    configs: dict[str, Any],
    front: list[Plan] | None,
    money_lines: list[str],
    tokens: float | None = None,
    currency: str = CATALOGUE_CURRENCY,
) -> str:
    lines = [f"model {model.name}: {parameters_text(model)}", f"space: {result.space_title}"]
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
    error = pred.error
    lines.append(
        f"iteration {pred.iteration_seconds:.4g} s ({error.headline}), {pred.tokens_per_second:,.0f} tokens/s, "
        f"{pred.tflops_per_gpu:.1f} TFLOP/s per GPU, MFU {pred.mfu:.1%}"
    )
    mem = pred.memory.as_dict()
    lines.append(
        "memory per GPU: "
        + ", ".join(f"{k} {v / GIB:.2f} GiB" for k, v in mem.items())
        + f" of {pred.memory_capacity / GIB:.1f} GiB"
    )
    lines += error.lines()
    lines += money_lines
    if "megatron_launch" in configs:
        what = "Megatron-LM launch command" + ("" if result.space.startswith("megatron") else " (same layout)")
        lines += [f"{what} (on every node, from a Megatron-LM checkout):", shell_text(configs["megatron_launch"])]
    if "torchtitan_toml" in configs:
        lines += ["torchtitan job config (torchtitan.toml):", configs["torchtitan_toml"]]
        lines += ["torchtitan launch command (on every node):", shell_text(configs["torchtitan_command"])]
    if "deepspeed_config" in configs:
        lines += ["deepspeed config:", json.dumps(configs["deepspeed_config"], indent=2)]
    lines += [check["line"] for check in configs["checks"]]
    if front is not None:
        lines += _front_lines(model, result, front, tokens, currency)
    return "\n".join(lines)


def _front_lines(
    model: TransformerSpec, result: SearchResult, front: list[Plan], tokens: float | None, currency: str
) -> list[str]:
    free = result.space in SPACES and SPACES[result.space].free_layouts
    scope = "; even, first/last and free per-rank splits" if free else ""
    priced = any(p.price_per_hour is not None for p in front)
    cols = ["seconds", "GiB per GPU", "GPUs"]
    if tokens is not None:
        cols.append(f"days per {tokens_text(tokens)}-token run")
    if priced:
        cols.append(f"{currency} per run" if tokens is not None else f"{currency} per iteration")
    lines = [f"Pareto front ({len(front)} plans{scope}): {', '.join(cols)}, layout"]
    for p in front:
        fig = run_figures(p, model, tokens)
        row = [f"{p.iteration_seconds:.4g}", f"{p.memory_bytes / GIB:.2f}", str(p.gpus)]
        if tokens is not None and fig.days is not None:
            row.append(f"{fig.days:,.2f}")
        if priced:
            row.append(money(fig.cost if tokens is not None else fig.cost_per_iteration, currency).split(" ")[0])
        lines.append("  " + "  ".join(row) + "  " + describe_layout(p))
    return lines


def _checked_tokens(args: argparse.Namespace) -> float | None:
    tokens = args.tokens
    if tokens is not None and not (math.isfinite(tokens) and 0 < tokens <= 1e18):
        raise PlacementError(f"--tokens {tokens}: must be a finite number from 1 to 1e18")
    return tokens


def _compare(args: argparse.Namespace, model: TransformerSpec, notes: list[str]) -> int:
    """``--compare-gpus``: each kind's plan on the same GPU count, side by side."""
    if args.pareto:
        raise PlacementError("--compare-gpus and --pareto: give one of them")
    if args.profile is not None:
        raise PlacementError("--profile measures one GPU kind: give --gpu, not --compare-gpus")
    kinds = [k for k in args.compare_gpus.split(",") if k.strip()]
    if not 1 <= len(kinds) <= 16:
        raise PlacementError(f"--compare-gpus {quote(args.compare_gpus)}: give 1 to 16 kinds, comma-separated")
    cluster, currency, tokens = _cluster(args), _currency(args), _checked_tokens(args)
    rows = compare_kinds(
        model, cluster, kinds, int(args.global_batch), args.framework, tokens, parse_prices(args.price), currency
    )
    if args.json:
        out = {
            "model": model.name, "parameters": parameters_dict(model), "gpus": cluster.gpus, "tokens": tokens,
            "currency": currency, "notes": notes, "compare": [r.as_dict() for r in rows],
        }  # fmt: skip
        print(json.dumps(out, indent=1, allow_nan=False))
    else:
        head = [f"model {model.name}: {parameters_text(model)}", *[f"note: {n}" for n in notes]]
        print("\n".join(head + compare_text(rows, tokens, currency)))
    return 0


def run_plan(args: argparse.Namespace) -> int:
    """The ``plan`` subcommand; prints text or JSON, returns the exit status."""
    if args.framework not in SPACES:
        raise PlacementError(f"--framework {args.framework!r}: must be one of {', '.join(SPACES)}")
    model, notes = _model(args)
    if args.power_limit is not None and (":" in args.gpu or args.compare_gpus is not None):
        raise PlacementError("--power-limit applies to one --gpu kind (not KIND:N,KIND:N nor --compare-gpus)")
    if ":" in args.gpu:
        if args.profile is not None or _layout_given(_flags(args)):
            raise PlacementError("--profile and a layout to compare apply to one GPU kind, not KIND:N,KIND:N")
        from .hetero import hetero_text, parse_kinds, search_hetero

        hetero = search_hetero(model, parse_kinds(args.gpu, int(args.gpus_per_node)), int(args.global_batch))
        print(json.dumps(hetero.as_dict(), indent=1, allow_nan=False) if args.json else hetero_text(hetero))
        return 0
    if args.compare_gpus is not None:
        return _compare(args, model, notes)
    cluster, currency, tokens = _cluster(args), _currency(args), _checked_tokens(args)
    measured = cluster.accelerator.measured
    params = profile_params(measured) if measured is not None else DEFAULT_PARAMS
    batch = int(args.global_batch)
    result = search(model, cluster, batch, args.framework, params=params)
    if args.trace is not None:
        _write_trace(model, result, cluster, args.trace)
    plan = result.plan
    configs = launch_configs(model, plan, args.framework, args.gpus_per_node) if plan is not None else {}
    nearest = [] if plan is not None else nearest_counts(model, cluster, batch, args.framework, params=params)
    front = pareto_front(model, cluster, batch, args.framework, params=params) if args.pareto else None
    claim = _claim(args, model, cluster, params, result)
    if claim is not None:  # the parallel sizes after -- were read: the layout compared with the plan
        notes = [n for n in notes if not n.startswith("not read (the plan chooses the layout)")]
    if cluster.accelerator.power_limit_watts is not None:
        notes = [*notes, power_note(cluster.accelerator)]
    acc = cluster.accelerator
    source = price_source(acc, acc.price_per_hour, args.price is not None, currency)
    if args.json:
        out: dict[str, Any] = {
            "status": str(result.status),
            "space": result.space,
            "space_title": result.space_title,
            "model": model.name,
            "parameters": parameters_dict(model),
            "gpu": acc.name,
            "gpus": cluster.gpus,
            "price_per_gpu_hour": acc.price_per_hour,
            "currency": currency,
            "price_source": source,
            "seconds": result.seconds,
            "stats": result.stats.__dict__,
            "reason": result.reason,
            "notes": notes,
            "plan": plan_dict(plan) if plan is not None else None,
            "nearest_feasible": [{"gpus": p.gpus, "iteration_seconds": p.iteration_seconds} for p in nearest],
            **configs,
        }
        if plan is not None:
            out["run"] = run_figures(plan, model, tokens).as_dict()
        if front is not None:
            out["pareto"] = [{**plan_dict(p), "run": run_figures(p, model, tokens).as_dict()} for p in front]
        if measured is not None:
            out["profile"] = {"device": measured.name, "date": measured.date}
        if claim is not None:
            out["comparison"] = claim.as_dict()
        print(json.dumps(out, indent=1, allow_nan=False))
    else:
        money_lines = [] if plan is None else run_lines(plan, model, tokens, currency, source)
        text = _text(model, result, configs, front, money_lines, tokens, currency)
        if measured is not None:
            text = f"priced from the profile of {measured.name} measured {measured.date}\n" + text
        if plan is None:
            text += "\n" + "\n".join(nearest_lines(nearest, cluster.gpus))
        if claim is not None:
            text += "\ncompared with your layout: " + claim.text()
        print("\n".join([text, *[f"note: {n}" for n in notes]]))
    return 0


#: Megatron-LM flags that make the flags after ``--`` a layout to compare the plan with (not only a shape).
COMPARE_FLAGS = frozenset(
    ["--tensor-model-parallel-size", "--pipeline-model-parallel-size", "--context-parallel-size",
     "--expert-model-parallel-size"]
)  # fmt: skip


def _flags(args: argparse.Namespace) -> list[str]:
    """The Megatron-LM flags after ``--``."""
    flags = list(getattr(args, "megatron", None) or [])
    return flags[1:] if flags and flags[0] == "--" else flags


def _layout_given(flags: list[str]) -> bool:
    """Whether ``flags`` name a parallel size (a layout to compare the plan with)."""
    return any(flag.partition("=")[0] in COMPARE_FLAGS for flag in flags)


def _claim(
    args: argparse.Namespace, model: TransformerSpec, cluster: Cluster, params: PerfParams, result: SearchResult
) -> Claim | None:
    """The optimum against the layout of the Megatron-LM flags after ``--`` (None when they name no parallel
    size: then they only set the model's shape)."""
    flags = _flags(args)
    if not _layout_given(flags):
        return None
    if result.plan is None:
        raise PlacementError("no optimum to compare your layout with: the plan is infeasible")
    if cluster.accelerator.measured is not None and args.band is None:
        raise PlacementError("with --profile give --band (the error measure found on this device): no table applies")
    _, layout, _ = parse_megatron_args(flags, gpus=cluster.gpus, model=model)
    baseline = predict(model, cluster, layout, params, framework=result.space)
    return compare_claim(baseline, result.plan.prediction, args.band)
