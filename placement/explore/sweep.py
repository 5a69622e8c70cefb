"""Parameter sweeps, Pareto frontiers and sensitivity of the optimal plan (the names in one place).

Every number comes from a real solve (:func:`placement.solve.solve`, the exact DP by default) of a
copy of the problem with one device parameter changed. The code lives in one module per topic;
this module re-exports their names so that ``from placement.explore.sweep import ...`` keeps working:

* :mod:`placement.explore.sweeps`: :func:`vary`, :func:`sweep`, :class:`SweepPoint`, :func:`solve_point`
  (the worker function executors import);
* :mod:`placement.explore.executors`: :func:`executor_for` (a local process pool or an allowed Dask
  cluster) and the plain-data form of results a Dask worker sends back;
* :mod:`placement.explore.pareto`: :func:`pareto_front`;
* :mod:`placement.explore.sensitivity`: :func:`sensitivity` (bracketing and bisection with real solves).
"""

from __future__ import annotations

from .executors import DASK_ALLOW_ENV, allowed_dask_addresses, executor_for, result_from_plain, result_to_plain
from .pareto import PARETO_AXES, pareto_front
from .sensitivity import Change, Sensitivity, sensitivity
from .sweeps import (
    AXIS_TITLES,
    MAX_SWEEP_POINTS,
    PARAMETERS,
    SweepPoint,
    count_grid,
    count_label,
    current_value,
    format_parameter,
    format_value,
    kind_label,
    make_point,
    solve_point,
    sweep,
    vary,
)

__all__ = [
    "AXIS_TITLES",
    "DASK_ALLOW_ENV",
    "MAX_SWEEP_POINTS",
    "PARAMETERS",
    "PARETO_AXES",
    "Change",
    "Sensitivity",
    "SweepPoint",
    "allowed_dask_addresses",
    "count_grid",
    "count_label",
    "current_value",
    "executor_for",
    "format_parameter",
    "format_value",
    "kind_label",
    "make_point",
    "pareto_front",
    "result_from_plain",
    "result_to_plain",
    "sensitivity",
    "solve_point",
    "sweep",
    "vary",
]
