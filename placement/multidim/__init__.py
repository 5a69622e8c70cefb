"""Multidimensional plans: data, tensor and pipeline parallelism with per-node options.

The model is the one of Piper (Tarnawski et al., NeurIPS 2021), described exactly in
``sample_graphs/piper/README.md``:

* :mod:`.model` -- options (TMPCs), nodes, device kinds, problems, stages and plans;
* :mod:`.io` -- reading Piper's JSON (one-line errors);
* :mod:`.evaluate` -- the independent evaluator (time per sample and memory of each stage);
* :mod:`.options` -- the exact per-stage option choice under the memory cap (Pareto fronts);
* :mod:`.dp` -- the exact planner (DP over ideals x sum of data-parallel degrees x devices);
* :mod:`.convert` -- options for the package's own graphs (paper format, builders, ONNX).
"""

from .convert import inventory_kinds, options_from_graph
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

__all__ = [
    "DeviceKind",
    "MultiProblem",
    "NodeOption",
    "PEdge",
    "PNode",
    "Plan",
    "PlanEvaluation",
    "PlanStage",
    "StageCost",
    "inventory_kinds",
    "options_from_graph",
]
