"""The Tradeoffs page's decisions, as plain functions (no Streamlit): run modes, when to sweep, where to solve.

The page (``Tradeoffs`` in :data:`ui.navigation.PAGES`) draws widgets and charts; the cached sweeps
are in :mod:`ui.tradeoffs_runs`.
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from placement.explore.grids import memory_grid, use_pool
from placement.model import Status

#: Where the solves run: widget value -> label. "dask" is offered only towards allow-listed clusters.
RUN_MODES = {
    "auto": "Automatic",
    "process": "Process pool",
    "sequential": "This process",
    "dask": "Dask cluster",
}
#: What the run modes mean (the menu's help).
RUN_MODE_HELP = (
    "Automatic: worker processes when the solves take long enough to pay for them, else this process. "
    "Process pool: always worker processes (Stop ends them). This process: one solve after another in the "
    "page's own process."
)
#: The sweeps start by themselves only on graphs with at most this many ideals (each solve then takes
#: milliseconds); larger graphs wait for the Run button (issue 26: Inception-like, 40,339 ideals, took minutes).
AUTO_RUN_IDEALS = 2000
#: Sensitivity analysis runs by default when one solve takes less than this (seconds).
SENSITIVITY_AUTO_S = 0.05
#: Points of the device-count grid (several accelerator kinds) on the Pareto tab.
GRID_POINTS = 120
#: The Pareto tab's cost axes: value -> label.
PARETO_AXES = {"devices": "Devices used", "memory": "Memory provisioned", "price": "Price per hour"}
#: The origin recorded with a plan picked on this page (:func:`ui.plan_state.selected_plan_origin`).
ORIGIN = "tradeoffs"
#: How :func:`placement.explore.sweeps.sweep` words the reason of a point whose worker crashed.
WORKER_FAILED = "worker failed"


def memory_sweep_solves() -> int:
    """The solves :func:`placement.explore.grids.memory_grid` makes with its defaults, the current memory aside.

    One with unlimited memory, ``points`` on the grid, one above the highest breakpoint and
    ``rounds x probes_per_round`` refinements (the current memory adds one when it is finite and low).
    """
    defaults = {name: p.default for name, p in inspect.signature(memory_grid).parameters.items()}
    return 1 + defaults["points"] + 1 + defaults["rounds"] * defaults["probes_per_round"]


def planned_solves(counts: Sequence, bandwidths: Sequence, grid: Sequence, has_sizes: bool) -> int:
    """About how many solves the four sweeps make (the memory sweep only when nodes have memory sizes)."""
    return len(counts) + len(bandwidths) + (memory_sweep_solves() if has_sizes else 0) + len(grid)


def run_modes(dask_addresses: Sequence[str], large: bool = False) -> list[str]:
    """The run modes to offer: Dask only when the operator allow-listed a cluster.

    On a ``large`` graph (the sweeps wait for Run) "sequential" is not offered: an exact solve in
    the page's own process could take minutes, and Stop could not end it (it ends worker processes).
    """
    return [mode for mode in RUN_MODES if (mode != "dask" or dask_addresses) and not (large and mode == "sequential")]


def starts_by_itself(ideals: int | None) -> bool:
    """Whether the sweeps start on opening: only on graphs with few ideals (None: over the DP's cap)."""
    return ideals is not None and ideals <= AUTO_RUN_IDEALS


def executor_choice(run_mode: str, address: str, base_seconds: float, solves: int) -> str:
    """Where the solves run: ``"here"`` (this process), ``"pool"`` (local processes) or ``"dask"``.

    "auto" uses a pool only when the solves together take long enough
    (:func:`placement.explore.grids.use_pool`); "dask" without an address falls back to a pool.
    """
    if run_mode == "sequential" or (run_mode == "auto" and not use_pool(base_seconds, solves)):
        return "here"
    if run_mode == "dask" and address:
        return "dask"
    return "pool"


def where_text(choice: str, address: str) -> str:
    """Where the solves ran, in words."""
    return {"here": "this process", "dask": f"the Dask cluster at {address}"}.get(choice, "a local process pool")


def worker_failed(points: Sequence[Any]) -> bool:
    """Whether a point's worker crashed (a broken pool or a lost cluster: solve again in this process)."""
    return any(p.status == Status.ERROR and (p.result.reason or "").startswith(WORKER_FAILED) for p in points)


def picked_index(event: Any) -> int | None:
    """The ``customdata`` index of the first selected point of a chart event, if any."""
    if not event:
        return None
    try:
        points = event["selection"]["points"]
    except (KeyError, TypeError):
        return None
    for point in points or ():
        data = point.get("customdata") if isinstance(point, dict) else None
        if isinstance(data, (list, tuple)) and data:
            data = data[0]
        if isinstance(data, (int, float)):
            return int(data)
    return None


def pick_label(source: str, label: str, time_text: str) -> str:
    """The note shown with a plan picked on a chart: ``"Tradeoffs (memory): memory = 1 GiB, time per sample 3 ms"``."""
    return f"Tradeoffs ({source}): {label}, time per sample {time_text}"


def pareto_pool(grid_points: Sequence, count_points: Sequence, memory_points: Sequence) -> tuple:
    """The configurations of the Pareto tab, renumbered: the count grid (else the count sweep), then the memory sweep."""
    sources = list(grid_points) if grid_points else list(count_points)
    sources += list(memory_points)
    return tuple(replace(p, index=k) for k, p in enumerate(sources))


def configurations_text(grid: bool, max_count: int, kind_name: str, memory: bool, front: int, pool: int) -> str:
    """The caption under the Pareto tab's axis: which configurations, and how many are on the frontier."""
    what = (
        "every combination of per-kind counts"
        if grid
        else f"1 to {max_count} " + ("" if kind_name == "accelerator" else f"{kind_name} ") + "accelerators"
    )
    return (
        f"Configurations: {what}"
        + (" and the memory sweep" if memory else "")
        + f". {front} of {pool} are on the frontier (no other is both cheaper and faster)."
    )
