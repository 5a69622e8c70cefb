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
