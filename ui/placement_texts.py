"""The Placement page's texts as plain functions (no Streamlit): captions, messages, file names."""

from __future__ import annotations

import placement
from placement.model import Status

OBJECTIVES = {"throughput": "Throughput (time per sample)", "latency": "Latency (one sample)"}
#: Export targets' display names.
EXPORT_LABELS = {"megatron": "Megatron-LM", "torch": "torch / torchtitan", "deepspeed": "DeepSpeed"}


def memory_model_caption(model: placement.MemoryModel, methods: list[str], effective) -> str:
    """Which methods run as another under the training memory model (``effective(method)`` names it)."""
    runs_as = ", ".join(f"{m} runs as {effective(m)}" for m in methods if effective(m) != m)
    return f"Memory model: {model.describe()} (Devices page). Methods plan with it: {runs_as}."


def no_method_text(objective: str, training: bool, installed: list[str]) -> str:
    """Why no method is offered for ``objective``."""
    if training:
        return (
            f"No method plans the {objective} objective under the training memory model: switch the memory "
            "model to weights only on the Devices page, or the objective to throughput."
        )
    return f"No method for the {objective} objective is available yet (installed methods: {', '.join(installed) or 'none'})."


def failure(result: placement.Result, limit: float) -> tuple[bool, str]:
    """``(severe, message)`` for a result without a plan: an error (True) or a warning (False), and what to try."""
    message = f"**{result.status}** ({result.method}): {result.reason or 'no placement found'}"
    if result.status == Status.INFEASIBLE:
        return (
            True,
            message + "  \nTry more accelerators or CPU cores, or more memory per accelerator (Devices page).",
        )
    if result.status == Status.NO_SOLUTION:
        return False, message + f"  \nNo plan within the {limit:g} s time limit: raise it or use another method."
    return True, message


def file_stem(graph_name: str) -> str:
    """The stem of download file names: the graph's name without slashes or ``.json`` ("graph" if empty)."""
    return graph_name.replace("/", "_").removesuffix(".json") or "graph"


def peak_caption(model: placement.MemoryModel, problem: placement.Problem) -> str:
    """The caption over the peak-memory table."""
    extra = (
        f" (optimizer state x{model.optimizer_for(problem):g} forward weights; activations: bytes the "
        "forward nodes keep for the backward, for the microbatches in flight)"
        if model.training
        else ""
    )
    return (
        f"Peak per device under {model.describe()}{extra}: weights, gradients, optimizer state, activations, and "
        "the memory left free on the device."
    )


def memory_forced_cpu(problem: placement.Problem) -> int:
    """Nodes that accelerator memory alone sends to the CPU in every plan: a lower bound, from node sizes.

    A group of nodes that must share a device (a color class) and is larger than every accelerator kind's
    memory runs on the CPU whatever the plan (its nodes count whole); past those, when the rest of the
    accelerator-capable groups are larger together than all the accelerators' memory, at least the fewest
    of them that cover the excess (the largest first, one node each at least) go there too.
    """
    kinds = [kind for kind in problem.devices.accelerators if kind.count > 0]
    if not kinds or problem.devices.cpus == 0:
        return 0
    largest = max(kind.memory for kind in kinds)
    total = sum(kind.memory * kind.count for kind in kinds)
    by_id = problem.graph.node_by_id
    forced, sizes = 0, []
    for group in problem.graph.color_groups:
        if not all(by_id[n].supported_on_accelerator for n in group):
            continue  # on the CPU anyway, not for memory
        size = sum(by_id[n].size for n in group)
        if size > largest:
            forced += len(group)
        else:
            sizes.append(size)
    excess = sum(sizes) - total
    for size in sorted(sizes, reverse=True):
        if excess <= 0:
            break
        forced, excess = forced + 1, excess - size
    return forced


def memory_cpu_note(problem: placement.Problem, result: placement.Result) -> str | None:
    """ "Memory forces N nodes to the CPU" when accelerator memory sends nodes there (None otherwise)."""
    forced = memory_forced_cpu(problem)
    if forced == 0 or result.placement is None:
        return None
    on_cpu = sum(1 for slot in result.placement.device_of.values() if slot.is_cpu)
    return (
        f"Memory forces at least {forced:,} node{'s' if forced != 1 else ''} to the CPU: "
        f"{'they do' if forced != 1 else 'it does'} not fit in the accelerators' memory (node sizes, before any "
        f"training state). This plan runs {on_cpu:,} of the graph's {len(problem.graph.nodes):,} nodes on the CPU; "
        "raise the accelerators' memory or count on the Devices page to move them back."
    )
