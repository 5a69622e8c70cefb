"""Exact device placement of DNN operator graphs (Tarnawski et al., NeurIPS 2020, and beyond).

Public API: the data model (:mod:`placement.model`), reading/writing files
(:mod:`placement.io`), the exact DP (:mod:`placement.dp`), the independent evaluator
(:mod:`placement.evaluate`) and one entry point for every method (:func:`solve`).
This package never imports Streamlit.
"""

from .dp import count_pairs, solve_dp
from .errors import (
    InvalidDevicesError,
    InvalidGraphError,
    InvalidSplitError,
    PlacementError,
    SolverError,
    TooManyIdealsError,
)
from .evaluate import DeviceLoad, Evaluation, evaluate, is_contiguous, latency
from .ideals import contract, count_ideals, enumerate_ideals
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
    DeviceSlot,
    Devices,
    Edge,
    Graph,
    Node,
    Placement,
    Problem,
    Result,
    Stage,
)
from .solve import METHODS, available_methods, solve

__all__ = [
    "AcceleratorKind", "CPU_KIND", "DeviceLoad", "DeviceSlot", "Devices", "Edge", "Evaluation", "Graph",
    "InvalidDevicesError", "InvalidGraphError", "InvalidSplitError", "MAX_FILE_BYTES", "METHODS", "Node",
    "Placement", "PlacementError", "Problem", "Result", "SolverError", "Stage", "TooManyIdealsError",
    "available_methods", "contract", "count_ideals", "count_pairs", "enumerate_ideals", "evaluate",
    "graph_to_dict", "is_contiguous", "latency", "load_placement", "load_problem", "parse_placement",
    "parse_problem", "placement_to_dict", "problem_to_json", "solve", "solve_dp",
]
