"""Multidimensional plans: data, tensor and pipeline parallelism with per-node options.

The model is the one of Piper (Tarnawski et al., NeurIPS 2021), described exactly in
``sample_graphs/piper/README.md``:

* :mod:`.model` -- options (TMPCs), nodes, device kinds, problems, stages and plans;
* :mod:`.io` -- reading Piper's JSON (one-line errors);
* :mod:`.evaluate` -- the independent evaluator (time per sample and memory of each stage);
* :mod:`.options` -- the exact per-stage option choice under the memory cap (Pareto fronts);
* :mod:`.dp` -- the exact planner's driver (:func:`solve_multidim`, :class:`MultiResult`); its parts are
  :mod:`.lattice`, :mod:`.choice`, :mod:`.front_steps`, :mod:`.stages`, :mod:`.tables`, :mod:`.recurrence`
  and :mod:`.readback`;
* :mod:`.convert` -- options for the package's own graphs (paper format, builders, ONNX).
"""

from typing import TYPE_CHECKING

#: Public name -> its module, imported by :func:`__getattr__` on first use (:pep:`562`): the planner's path
#: (``placement.multidim.dp``) does not import the converter of the package's own graphs.
_LAZY: dict[str, str] = {
    "inventory_kinds": ".convert",
    "options_from_graph": ".convert",
    "MultiResult": ".dp",
    "solve_multidim": ".dp",
    "evaluate_plan": ".evaluate",
    "read_piper": ".io",
    "DeviceKind": ".model",
    "MultiProblem": ".model",
    "NodeOption": ".model",
    "PEdge": ".model",
    "Plan": ".model",
    "PlanEvaluation": ".model",
    "PlanStage": ".model",
    "PNode": ".model",
    "StageCost": ".model",
}

__all__ = [
    "DeviceKind",
    "MultiProblem",
    "MultiResult",
    "NodeOption",
    "PEdge",
    "PNode",
    "Plan",
    "PlanEvaluation",
    "PlanStage",
    "StageCost",
    "evaluate_plan",
    "inventory_kinds",
    "options_from_graph",
    "read_piper",
    "solve_multidim",
]


def __getattr__(name: str):
    """Import a public name on first use and keep it here."""
    import importlib  # noqa: PLC0415

    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(_LAZY[name], __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


if TYPE_CHECKING:
    from .convert import inventory_kinds, options_from_graph
    from .dp import MultiResult, solve_multidim
    from .evaluate import evaluate_plan
    from .io import read_piper
    from .model import (
        DeviceKind,
        MultiProblem,
        NodeOption,
        PEdge,
        Plan,
        PlanEvaluation,
        PlanStage,
        PNode,
        StageCost,
    )
