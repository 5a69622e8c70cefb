"""The Compare page's table and the plan it hands to Placement, as plain functions (no Streamlit)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import pandas as pd

import placement
from placement.explore.compare import DEFAULT_METHODS, rows_to_records
from placement.model import Status

OBJECTIVES = {"throughput": "Throughput (time per sample)", "latency": "Latency (one sample)"}
COLUMNS = ["method", "objective", "ratio_to_best", "status", "gap", "seconds", "bound", "reason"]


def default_methods(objective: str, methods: Sequence[str]) -> list[str]:
    """The methods first chosen for ``objective`` (the comparison's defaults that are installed, else all)."""
    return [m for m in DEFAULT_METHODS.get(objective, ()) if m in methods] or list(methods)


def _text(values, form: Callable[[Any], str]) -> list[str]:
    """Numbers as text, blanks where there is none (a null number would show as "None")."""
    return ["" if v is None or (isinstance(v, float) and (math.isnan(v) or math.isinf(v))) else form(v) for v in values]


def compare_frame(rows, objective: str, unit: str, name_of: Callable[[str], str]) -> pd.DataFrame:
    """The table shown: method names (``name_of``), empty cells as blanks (never "None"), units in the headers."""
    table = pd.DataFrame(rows_to_records(rows), columns=COLUMNS)
    table["method"] = [name_of(m) for m in table["method"]]
    table["reason"] = table["reason"].fillna("")
    table["objective"] = _text(table["objective"], lambda v: f"{v:.10g}")
    table["bound"] = _text(table["bound"], lambda v: f"{v:.10g}")
    table["ratio_to_best"] = _text(table["ratio_to_best"], lambda v: f"{v:.8g}")
    table["gap"] = _text(table["gap"], lambda v: f"{v:.2%}")
    table["seconds"] = _text(table["seconds"], lambda v: f"{v:.3f}")
    value_column = {"throughput": f"time per sample ({unit})", "latency": f"latency ({unit})"}[objective]
    return table.rename(
        columns={"objective": value_column, "ratio_to_best": "ratio to best", "bound": f"lower bound ({unit})"}
    )


def rows_with_plans(rows) -> list:
    """The rows whose plan can be shown (optimal or feasible, with a placement)."""
    return [row for row in rows if row.placement is not None and row.status in (Status.OPTIMAL, Status.FEASIBLE)]


def row_result(row) -> placement.Result:
    """A compared row as a result for the Placement page; a plan scored on the objective its method does not
    optimise says so in its reason."""
    spec = placement.METHODS[row.method]
    other = spec.objective != row.objective_kind
    reason = (
        f"{row.method} optimises {spec.objective}, this plan is scored on {row.objective_kind}"
        if other and row.status == Status.FEASIBLE
        else row.reason
    )
    return placement.make_result(
        row.method,
        row.status,
        seconds=row.seconds,
        objective=row.objective,
        placement=row.placement,
        objective_kind=row.objective_kind,
        bound=row.bound,
        gap=row.gap,
        reason=reason,
    )
