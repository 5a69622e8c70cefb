"""Exact device placement of DNN operator graphs (Tarnawski et al., NeurIPS 2020, and beyond).

Public API: the data model (:mod:`placement.model`), reading/writing files
(:mod:`placement.io`), the exact DP (:mod:`placement.exact.dp`), the independent evaluator
(:mod:`placement.evaluate`) and one entry point for every method (:func:`solve`).
This package never imports Streamlit.

Examples
--------
The exact DP on a paper workload, checked by the independent evaluator:

>>> from placement import evaluate, load_problem, solve_dp
>>> problem = load_problem("sample_graphs/throughput/layer/bert24_inference.json")
>>> result = solve_dp(problem)
>>> str(result.status), round(result.objective, 4)
('optimal', 17.7899)
>>> evaluate(problem, result.placement).max_load == result.objective
True
"""

from .errors import (
    InvalidDevicesError,
    InvalidGraphError,
    InvalidScenarioError,
    InvalidSplitError,
    PlacementError,
    SolverError,
    TooManyIdealsError,
)
from .evaluate import DeviceLoad, Evaluation, evaluate, is_contiguous, latency
from .exact.dp import count_pairs, solve_dp
from .exact.ideals import contract, count_ideals, enumerate_ideals
from .explore.compare import CompareRow, rows_to_frame
from .io import (
    MAX_FILE_BYTES,
    graph_to_dict,
    load_placement,
    load_problem,
    parse_placement,
    parse_problem,
    placement_to_dict,
    problem_to_json,
)
from .model import (
    CPU_KIND,
    AcceleratorKind,
    Devices,
    DeviceSlot,
    Edge,
    EventKind,
    Graph,
    Node,
    Objective,
    Placement,
    Problem,
    Recompute,
    Result,
    ScheduleKind,
    Stage,
    Status,
    make_result,
)
from .modelling.builders import CnnConfig, TransformerConfig, build_cnn, build_transformer
from .modelling.onnx import coarsen, coarsen_by_prefix, import_onnx
from .modelling.roofline import PRESETS as DEVICE_PRESETS
from .modelling.roofline import CostModel, DeviceSpec
from .modelling.training import training_graph
from .solve import METHODS, MemoryModel, MethodSpec, Option, available_methods, method_spec, solve

__all__ = [
    "AcceleratorKind",
    "CPU_KIND",
    "CompareRow",
    "rows_to_frame",
    "DeviceLoad",
    "DeviceSlot",
    "Devices",
    "Edge",
    "Evaluation",
    "Graph",
    "InvalidDevicesError",
    "InvalidGraphError",
    "InvalidSplitError",
    "MAX_FILE_BYTES",
    "METHODS",
    "Node",
    "Placement",
    "PlacementError",
    "Problem",
    "Result",
    "SolverError",
    "Stage",
    "TooManyIdealsError",
    "available_methods",
    "contract",
    "count_ideals",
    "count_pairs",
    "enumerate_ideals",
    "evaluate",
    "graph_to_dict",
    "is_contiguous",
    "latency",
    "load_placement",
    "load_problem",
    "parse_placement",
    "parse_problem",
    "placement_to_dict",
    "problem_to_json",
    "solve",
    "solve_dp",
]
__all__ += ["MemoryModel", "MethodSpec", "Objective", "Option", "ScheduleKind", "Status", "make_result", "method_spec"]

__all__ += ["InvalidScenarioError"]
__all__ += ["Recompute", "EventKind"]
__all__ += [
    "CnnConfig",
    "CostModel",
    "DEVICE_PRESETS",
    "DeviceSpec",
    "TransformerConfig",
    "build_cnn",
    "build_transformer",
    "coarsen",
    "coarsen_by_prefix",
    "import_onnx",
    "training_graph",
]

# Pipeline schedules, memory over time, memory-aware planning, trace export.
from .exact.memory_aware import solve_memory_aware
from .pipeline.memory import (
    MemoryBreakdown,
    MemoryProfile,
    default_optimizer_multiplier,
    memory_breakdown,
    memory_profile,
    peak_table,
)
from .pipeline.registry import SCHEDULE_SPECS, ScheduleSpec, schedule_spec
from .pipeline.schedule import SCHEDULES, Event, Schedule, simulate
from .pipeline.trace import chrome_trace, chrome_trace_json

__all__ += [
    "Event",
    "MemoryBreakdown",
    "MemoryProfile",
    "default_optimizer_multiplier",
    "memory_breakdown",
    "SCHEDULES",
    "SCHEDULE_SPECS",
    "Schedule",
    "ScheduleSpec",
    "schedule_spec",
    "chrome_trace",
    "chrome_trace_json",
    "memory_profile",
    "peak_table",
    "simulate",
    "solve_memory_aware",
]

# Sweeps, Pareto frontiers and sensitivity of the optimal plan.
from .explore.sweep import Sensitivity, SweepPoint, executor_for, pareto_front, sensitivity, sweep

__all__ += ["Sensitivity", "SweepPoint", "executor_for", "pareto_front", "sensitivity", "sweep"]

# Transformer training performance and memory model (Megatron-LM layouts).
from .errors import InvalidLayoutError, InvalidModelSpecError

# The perf model's own MemoryBreakdown (one GPU of a layout) and Recompute (Megatron's granularity) are
# exported under these names: placement.MemoryBreakdown and placement.Recompute are the graph pipeline's.
from .perf import (
    ACCELERATORS,
    MODELS,
    Accelerator,
    Cluster,
    Layout,
    PerfParams,
    Prediction,
    TransformerSpec,
    check_layout,
    megatron_args,
    parse_megatron_args,
    predict,
)
from .perf import (
    MemoryBreakdown as GpuMemoryBreakdown,
)
from .perf import (
    Recompute as RecomputeGranularity,
)

__all__ += [
    "ACCELERATORS",
    "Accelerator",
    "Cluster",
    "InvalidLayoutError",
    "InvalidModelSpecError",
    "Layout",
    "MODELS",
    "GpuMemoryBreakdown",
    "PerfParams",
    "Prediction",
    "RecomputeGranularity",
    "TransformerSpec",
    "check_layout",
    "megatron_args",
    "parse_megatron_args",
    "predict",
]
