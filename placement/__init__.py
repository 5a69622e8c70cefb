"""Exact device placement of DNN operator graphs (Tarnawski et al., NeurIPS 2020, and beyond).

Public API: the data model (:mod:`placement.model`), reading/writing files
(:mod:`placement.io`), the exact DP (:mod:`placement.exact.dp`), the independent evaluator
(:mod:`placement.evaluate`) and one entry point for every method (:func:`solve`).
This package never imports Streamlit.

Names are imported on first use (:pep:`562`): ``import placement`` loads only the errors, so that a
command (``python -m placement solve --method multidim``) imports what it needs and no more (numba,
networkx, pandas, plotly... come with the modules that use them).

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

import sys
import types
from typing import TYPE_CHECKING

from .errors import (
    InvalidDevicesError,
    InvalidGraphError,
    InvalidLayoutError,
    InvalidModelSpecError,
    InvalidScenarioError,
    InvalidSplitError,
    PlacementError,
    SolverError,
    TooManyIdealsError,
)

#: Public functions named like their module (``placement.solve`` is the function, as ``from .solve import
#: solve`` made it): importing the module ``placement.solve`` must not rebind the package's attribute to the
#: module (:class:`_Package`), so that they too are imported on first use (the multidim planner's path never
#: imports ``placement.solve``'s schedules and memory models).
_SAME_NAME = frozenset({"evaluate", "solve"})


class _Package(types.ModuleType):
    """This package's module type: the import system's binding of the submodules ``placement.solve`` and
    ``placement.evaluate`` as attributes is skipped (they stay in ``sys.modules``); the names stay the
    functions, imported by :func:`__getattr__` on first use."""

    def __setattr__(self, name: str, value) -> None:
        if name in _SAME_NAME and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package

#: Public name -> (module, attribute), imported by :func:`__getattr__` on first use.
_LAZY: dict[str, tuple[str, str]] = {
    "evaluate": (".evaluate", "evaluate"),
    "solve": (".solve", "solve"),
    "MultiProblem": (".multidim.model", "MultiProblem"),
    "MultiResult": (".multidim.dp", "MultiResult"),
    "read_piper": (".multidim.io", "read_piper"),
    "solve_multidim": (".multidim.dp", "solve_multidim"),
    "DeviceLoad": (".evaluate", "DeviceLoad"),
    "Evaluation": (".evaluate", "Evaluation"),
    "is_contiguous": (".evaluate", "is_contiguous"),
    "latency": (".evaluate", "latency"),
    "count_pairs": (".exact.dp", "count_pairs"),
    "solve_dp": (".exact.dp", "solve_dp"),
    "contract": (".exact.ideals", "contract"),
    "count_ideals": (".exact.ideals", "count_ideals"),
    "enumerate_ideals": (".exact.ideals", "enumerate_ideals"),
    "solve_memory_aware": (".exact.memory_aware", "solve_memory_aware"),
    "CompareRow": (".explore.compare", "CompareRow"),
    "rows_to_frame": (".explore.compare", "rows_to_frame"),
    "Sensitivity": (".explore.sweep", "Sensitivity"),
    "SweepPoint": (".explore.sweep", "SweepPoint"),
    "executor_for": (".explore.sweep", "executor_for"),
    "pareto_front": (".explore.sweep", "pareto_front"),
    "sensitivity": (".explore.sweep", "sensitivity"),
    "sweep": (".explore.sweep", "sweep"),
    "MAX_FILE_BYTES": (".io", "MAX_FILE_BYTES"),
    "graph_to_dict": (".io", "graph_to_dict"),
    "load_placement": (".io", "load_placement"),
    "load_problem": (".io", "load_problem"),
    "parse_placement": (".io", "parse_placement"),
    "parse_problem": (".io", "parse_problem"),
    "placement_to_dict": (".io", "placement_to_dict"),
    "problem_to_json": (".io", "problem_to_json"),
    "AcceleratorKind": (".model", "AcceleratorKind"),
    "CPU_KIND": (".model", "CPU_KIND"),
    "DeviceSlot": (".model", "DeviceSlot"),
    "Devices": (".model", "Devices"),
    "Edge": (".model", "Edge"),
    "EventKind": (".model", "EventKind"),
    "Graph": (".model", "Graph"),
    "Node": (".model", "Node"),
    "Objective": (".model", "Objective"),
    "Placement": (".model", "Placement"),
    "Problem": (".model", "Problem"),
    "Recompute": (".model", "Recompute"),
    "TieBreak": (".model", "TieBreak"),
    "Result": (".model", "Result"),
    "ScheduleKind": (".model", "ScheduleKind"),
    "Stage": (".model", "Stage"),
    "Status": (".model", "Status"),
    "make_result": (".model", "make_result"),
    "CnnConfig": (".modelling.builders", "CnnConfig"),
    "build_cnn": (".modelling.builders", "build_cnn"),
    "build_transformer": (".modelling.builders", "build_transformer"),
    "coarsen": (".modelling.onnx", "coarsen"),
    "coarsen_by_prefix": (".modelling.onnx", "coarsen_by_prefix"),
    "import_onnx": (".modelling.onnx", "import_onnx"),
    "cost_source": (".modelling.pricing", "cost_source"),
    "devices_for": (".modelling.pricing", "devices_for"),
    "price_graph": (".modelling.pricing", "price_graph"),
    "training_graph": (".modelling.training", "training_graph"),
    "ACCELERATORS": (".perf", "ACCELERATORS"),
    "Accelerator": (".perf", "Accelerator"),
    "Cluster": (".perf", "Cluster"),
    "GpuMemoryBreakdown": (".perf", "MemoryBreakdown"),
    "Layout": (".perf", "Layout"),
    "MODELS": (".perf", "MODELS"),
    "PerfParams": (".perf", "PerfParams"),
    "Prediction": (".perf", "Prediction"),
    "RecomputeGranularity": (".perf", "Recompute"),
    "TransformerSpec": (".perf", "TransformerSpec"),
    "check_layout": (".perf", "check_layout"),
    "megatron_args": (".perf", "megatron_args"),
    "parse_megatron_args": (".perf", "parse_megatron_args"),
    "predict": (".perf", "predict"),
    "MemoryBreakdown": (".pipeline.memory", "MemoryBreakdown"),
    "MemoryProfile": (".pipeline.memory", "MemoryProfile"),
    "default_optimizer_multiplier": (".pipeline.memory", "default_optimizer_multiplier"),
    "memory_breakdown": (".pipeline.memory", "memory_breakdown"),
    "memory_profile": (".pipeline.memory", "memory_profile"),
    "peak_table": (".pipeline.memory", "peak_table"),
    "Event": (".pipeline.schedule", "Event"),
    "SCHEDULES": (".pipeline.schedule", "SCHEDULES"),
    "SCHEDULE_SPECS": (".pipeline.registry", "SCHEDULE_SPECS"),
    "ScheduleSpec": (".pipeline.registry", "ScheduleSpec"),
    "schedule_spec": (".pipeline.registry", "schedule_spec"),
    "Schedule": (".pipeline.schedule", "Schedule"),
    "simulate": (".pipeline.schedule", "simulate"),
    "chrome_trace": (".pipeline.trace", "chrome_trace"),
    "chrome_trace_json": (".pipeline.trace", "chrome_trace_json"),
    "METHODS": (".solve", "METHODS"),
    "MemoryModel": (".solve", "MemoryModel"),
    "MethodSpec": (".solve", "MethodSpec"),
    "Option": (".solve", "Option"),
    "available_methods": (".solve", "available_methods"),
    "method_spec": (".solve", "method_spec"),
}

__all__ = [
    "MultiProblem",
    "MultiResult",
    "read_piper",
    "solve_multidim",
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
    "MemoryModel",
    "MethodSpec",
    "Objective",
    "Option",
    "ScheduleKind",
    "Status",
    "make_result",
    "method_spec",
    "InvalidScenarioError",
    "Recompute",
    "TieBreak",
    "EventKind",
    "CnnConfig",
    "cost_source",
    "devices_for",
    "price_graph",
    "build_cnn",
    "build_transformer",
    "coarsen",
    "coarsen_by_prefix",
    "import_onnx",
    "training_graph",
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
    "Sensitivity",
    "SweepPoint",
    "executor_for",
    "pareto_front",
    "sensitivity",
    "sweep",
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


def __getattr__(name: str):
    """Import a public name (or a subpackage, ``placement.exact``) on first use and keep it here."""
    import importlib  # noqa: PLC0415

    if name in _LAZY:
        module, attr = _LAZY[name]
        value = getattr(importlib.import_module(module, __name__), attr)
    else:
        try:
            value = importlib.import_module(f".{name}", __name__)
        except ModuleNotFoundError as exc:
            if exc.name != f"{__name__}.{name}":
                raise
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


if TYPE_CHECKING:
    from .evaluate import DeviceLoad, Evaluation, evaluate, is_contiguous, latency
    from .exact.dp import count_pairs, solve_dp
    from .exact.ideals import contract, count_ideals, enumerate_ideals
    from .exact.memory_aware import solve_memory_aware
    from .explore.compare import CompareRow, rows_to_frame
    from .explore.sweep import Sensitivity, SweepPoint, executor_for, pareto_front, sensitivity, sweep
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
    from .modelling.builders import CnnConfig, build_cnn, build_transformer
    from .modelling.onnx import coarsen, coarsen_by_prefix, import_onnx
    from .modelling.pricing import cost_source, devices_for, price_graph
    from .modelling.training import training_graph
    from .multidim.dp import MultiResult, solve_multidim
    from .multidim.io import read_piper
    from .multidim.model import MultiProblem
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
    from .solve import METHODS, MemoryModel, MethodSpec, Option, available_methods, method_spec, solve
