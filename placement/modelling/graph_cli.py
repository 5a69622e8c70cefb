"""``python -m placement graph``: a transformer's graph priced by the performance model, in the paper's format.

``python -m placement graph --model PRESET|CONFIG.json --gpu KIND[:N,KIND:N...] [--seq-length S]
[--micro-batch B] [--training] [--granularity layer|operator] [--dtype bf16] [--cpus L] [--profile PROFILE.json]
-o graph.json`` writes the graph (latencies in ms for the first kind, ``latencies`` per kind for the others, the CPU
core's latency, edge costs over the first kind's link, the kernels of every node for re-pricing) with the inventory
(``deviceKinds`` from the catalogue: memory, link bandwidth relative to the first kind, USD per hour), ready
for ``solve``, ``compare`` and the app's upload. A kind without ``:N`` counts one device. ``--profile`` (written by
``calibrate``) prices the kind its device matches from the measured rates: that kind becomes
``"KIND (measured DATE)"`` with the profile's memory, and the file's cost source names the profile.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from ..errors import InvalidDevicesError, PlacementError
from ..io import graph_to_dict
from ..perf.hardware import ACCELERATORS, Accelerator, accelerator
from ..perf.hf_config import model_from_argument
from ..perf.profile import load_profile
from ..perf.profiled import catalogue_match, measured_kind
from ..perf.transformer import MAX_SIZE, TransformerSpec
from .builders import GRANULARITIES, transformer_graph
from .pricing import KindLike, cost_source, devices_for

HELP = "a transformer's graph priced by the performance model, in the paper's JSON format"

#: Largest device count per kind on the command line.
MAX_COUNT = 1_000_000


def parse_gpus(text: str) -> dict[str, int]:
    """``"H100:8,A100:4"`` as ``{"H100": 8, "A100": 4}`` (catalogue names; a kind without ``:N`` counts 1).

    Raises
    ------
    InvalidDevicesError
        One line naming the entry and the rule broken.
    """
    out: dict[str, int] = {}
    for part in str(text).split(","):
        part = part.strip()
        if not part:
            raise InvalidDevicesError(f"--gpu {text!r}: empty entry (write KIND[:N,KIND:N...])")
        name, _, count_text = part.partition(":")
        kind = accelerator(name).name
        try:
            count = int(count_text) if count_text else 1
        except ValueError:
            raise InvalidDevicesError(f"--gpu {part!r}: the count after ':' must be an integer") from None
        if not 0 <= count <= MAX_COUNT:
            raise InvalidDevicesError(f"--gpu {part!r}: the count must be from 0 to {MAX_COUNT:,}")
        if kind in out:
            raise InvalidDevicesError(f"--gpu {text!r}: {kind} is named twice")
        out[kind] = count
    return out


def resolve_model(text: str) -> TransformerSpec:
    """A preset name or a HuggingFace ``config.json`` (:func:`placement.perf.hf_config.model_from_argument`)."""
    return model_from_argument(text)


def _integer_in(text: str, low: int, high: int, shown: str) -> int:
    """``text`` as an integer in ``[low, high]`` (``shown``: ``high`` as the message prints it), else an argparse error."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if not low <= value <= high:
        raise argparse.ArgumentTypeError(f"must be an integer from {low} to {shown}: {text!r}")
    return value


def _positive(text: str) -> int:
    return _integer_in(text, 1, MAX_SIZE, str(MAX_SIZE))


def _count(text: str) -> int:
    return _integer_in(text, 0, MAX_COUNT, f"{MAX_COUNT:,}")


def register(commands: Any) -> None:
    """Add the ``graph`` subcommand to an ``argparse`` subparsers object."""
    cmd = commands.add_parser("graph", help=HELP, description=__doc__.split("\n\n")[1] if __doc__ else HELP)
    cmd.add_argument("--model", required=True, help="preset (e.g. llama3-8b, gpt3-175b) or a config.json")
    cmd.add_argument(
        "--gpu", required=True, help=f"KIND[:N,KIND:N...], kinds of the catalogue: {', '.join(ACCELERATORS)}"
    )
    cmd.add_argument("--seq-length", type=_positive, default=None, help="sequence length (default: the model's)")
    cmd.add_argument("--micro-batch", type=_positive, default=1, help="sequences per sample (default 1)")
    cmd.add_argument("--training", action="store_true", help="add backward nodes (colour classes)")
    cmd.add_argument("--granularity", choices=GRANULARITIES, default="layer", help="nodes per layer or operator")
    cmd.add_argument("--dtype", choices=("bf16", "fp16", "fp32", "fp8"), default="bf16", help="product type")
    cmd.add_argument("--cpus", type=_count, default=0, help="CPU cores in the inventory (default 0)")
    cmd.add_argument(
        "--profile",
        default=None,
        metavar="PROFILE.json",
        help="device profile from calibrate: the --gpu kind its device matches is priced from the measured rates",
    )
    cmd.add_argument("-o", dest="output", metavar="FILE", required=True, help="graph file to write ('-' for stdout)")


def with_profile(kinds: dict[str, int], path: str | None) -> dict[KindLike, int]:
    """``kinds`` with the kind the profile at ``path`` matches replaced by the measured device (same count).

    Raises
    ------
    InvalidDevicesError
        One line when the profile is unreadable or its device matches no kind of ``kinds``.
    """
    if path is None:
        return {name: count for name, count in kinds.items()}
    profile = load_profile(path)
    base = catalogue_match(profile.name)
    if base is None or base.name not in kinds:
        matched = f"matches the catalogue's {base.name}" if base is not None else "matches no catalogue kind"
        raise InvalidDevicesError(
            f"--profile {path}: its device {profile.name!r} {matched}, not a kind named in --gpu ({', '.join(kinds)})"
        )
    measured = measured_kind(profile)
    return {measured if name == base.name else name: count for name, count in kinds.items()}


def _kind_name(kind: KindLike) -> str:
    return kind.name if isinstance(kind, Accelerator) else kind


def cmd_graph(args: argparse.Namespace) -> int:
    """Run ``graph``; :class:`~placement.errors.PlacementError` propagates to the CLI's one-line handler."""
    kinds = with_profile(parse_gpus(args.gpu), args.profile)
    model = resolve_model(args.model)
    if args.seq_length is not None:
        model = model.with_changes(seq_length=args.seq_length)
    graph = transformer_graph(
        model,
        list(kinds),
        micro_batch=args.micro_batch,
        dtype=args.dtype,
        granularity=args.granularity,
        training=args.training,
    )
    devices = devices_for(kinds, args.cpus)
    text = json.dumps(graph_to_dict(graph, devices), indent=1, allow_nan=False) + "\n"
    if args.output == "-":
        sys.stdout.write(text)
        return 0
    try:
        Path(args.output).write_text(text, encoding="utf-8")
    except OSError as exc:
        raise PlacementError(f"{args.output}: cannot write ({exc.strerror or type(exc).__name__})") from None
    total = sum(n.accelerator_latency for n in graph.nodes)
    sys.stdout.write(
        f"{args.output}: {len(graph.nodes)} nodes, {total:,.4g} ms on one {_kind_name(next(iter(kinds)))}; "
        f"costs: {cost_source(graph)}\n"
    )
    return 0
