"""Parameter sweeps: one real solve per value of a device parameter.

:func:`vary` makes the copy of a problem with one parameter changed (the count, memory or speed of
one accelerator kind, the global bandwidth factor, the number of CPU cores, or any picklable
``f(problem, value) -> Problem``); :func:`sweep` solves one copy per value, optionally in parallel
through a :class:`concurrent.futures.Executor` (see :mod:`placement.explore.executors`).
The worker function :func:`solve_point` lives here, never in a Streamlit page, so that
process-pool children can import it. Points are frozen dataclasses of plain values (they pickle).
"""

from __future__ import annotations

import itertools
import math
import os
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import FIRST_COMPLETED, Executor, Future, wait
from dataclasses import dataclass, replace
from typing import Any, cast

from ..errors import PlacementError
from ..model import CPU_KIND, Devices, Placement, Problem, Result, Status, make_result
from ..solve import solve
from .executors import executor_for

#: Parameters :func:`sweep` and :func:`sensitivity` understand by name.
PARAMETERS = ("accelerators", "memory", "bandwidth", "speed", "cpus")
#: Human-readable axis titles (used by the figures and the app).
AXIS_TITLES = {
    "accelerators": "accelerators",
    "memory": "memory per accelerator (bytes)",
    "bandwidth": "bandwidth factor",
    "speed": "accelerator speed",
    "cpus": "CPU cores",
    "devices": "devices used",
    "price": "price per hour",
    "time_per_sample": "time per sample",
}
#: Most values one sweep solves (each is a full solve).
MAX_SWEEP_POINTS = 1000


# ----------------------------------------------------------------------------- problems


def vary(
    problem: Problem, parameter: str | Callable[[Problem, Any], Problem | Devices], value: Any, kind: str | None = None
) -> Problem:
    """A copy of ``problem`` with ``parameter`` set to ``value``.

    Parameters
    ----------
    problem : Problem
        The base problem.
    parameter : str or callable
        ``"accelerators"`` (count of ``kind``), ``"memory"`` (bytes per device of ``kind``),
        ``"speed"`` (of ``kind``), ``"bandwidth"`` (the global factor), ``"cpus"``,
        ``"counts"`` (a tuple with the count of every kind, in inventory order), or a
        function ``f(problem, value)`` returning a Problem or Devices.
    value : Any
        The new value.
    kind : str, optional
        The accelerator kind for per-kind parameters (default: the first kind).

    Raises
    ------
    PlacementError
        For an unknown parameter or kind, or an invalid value.
    """
    devices = problem.devices
    if callable(parameter):
        out = parameter(problem, value)
        if isinstance(out, Devices):
            return replace(problem, devices=out)
        if isinstance(out, Problem):
            return out
        raise PlacementError(
            f"sweep function {getattr(parameter, '__name__', parameter)!r} must return a Problem "
            f"or Devices (got {type(out).__name__})"
        )
    if parameter == "bandwidth":
        return replace(problem, devices=devices.with_changes(bandwidth=float(value)))
    if parameter == "cpus":
        return replace(problem, devices=devices.with_changes(cpus=_as_count(value, "cpus")))
    if parameter == "counts":
        counts = tuple(value)
        if len(counts) != len(devices.accelerators):
            raise PlacementError(
                f"counts: expected one count per accelerator kind ({len(devices.accelerators)}), got {len(counts)}"
            )
        kinds = tuple(replace(k, count=_as_count(c, f"{k.name} count")) for k, c in zip(devices.accelerators, counts))
        return replace(problem, devices=devices.with_changes(accelerators=kinds))
    if parameter in ("accelerators", "memory", "speed"):
        name = kind_label(devices, kind)
        if parameter == "accelerators":
            return replace(problem, devices=devices.with_kind(name, count=_as_count(value, "accelerators")))
        return replace(problem, devices=devices.with_kind(name, **{parameter: float(value)}))
    raise PlacementError(f"unknown sweep parameter {parameter!r}; choose one of: {', '.join(PARAMETERS)}")


def _as_count(value: Any, what: str) -> int:
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise PlacementError(f"{what}: a device count must be a non-negative integer (got {value!r})")
    return value


def kind_label(devices: Devices, kind: str | None) -> str:
    """The display name of accelerator ``kind`` (None: the only or first kind) of ``devices``."""
    if kind is None:
        if not devices.accelerators:
            raise PlacementError("the inventory has no accelerator kind to vary")
        return devices.accelerators[0].name
    return devices.kind(kind).name


def count_grid(devices: Devices, max_points: int = 256) -> tuple[tuple[int, ...], ...]:
    """Every combination of per-kind counts from 0 to the inventory's (for a ``"counts"`` sweep).

    At least one accelerator is kept (the all-zero combination is left out when it is not the
    only one). When the grid has more than ``max_points`` combinations, the counts are
    thinned evenly per kind (0, the maximum and values in between) until it fits.
    """
    maxima = [kind.count for kind in devices.accelerators]
    choices = [list(range(m + 1)) for m in maxima]
    while math.prod(len(c) for c in choices) > max_points and any(len(c) > 2 for c in choices):
        widest = max(range(len(choices)), key=lambda d: len(choices[d]))
        keep = max(2, len(choices[widest]) - 1)
        top = maxima[widest]
        choices[widest] = sorted({round(k * top / (keep - 1)) for k in range(keep)})
    grid = [combo for combo in itertools.product(*choices) if any(combo)]
    return tuple(grid) if grid else (tuple(0 for _ in maxima),)


def current_value(problem: Problem, parameter: str, kind: str | None = None) -> float:
    """The value ``parameter`` has in ``problem`` (see :func:`vary` for the names)."""
    devices = problem.devices
    if parameter == "bandwidth":
        return devices.bandwidth
    if parameter == "cpus":
        return devices.cpus
    if parameter in ("accelerators", "memory", "speed"):
        found = devices.kind(kind_label(devices, kind))
        return {"accelerators": found.count, "memory": found.memory, "speed": found.speed}[parameter]
    raise PlacementError(f"unknown parameter {parameter!r}; choose one of: {', '.join(PARAMETERS)}")


# ----------------------------------------------------------------------------- one point


def solve_point(problem: Problem, method: str = "dp", options: tuple[tuple[str, Any], ...] = ()) -> Result:
    """Solve one problem; a :class:`PlacementError` becomes a Result with status "error".

    This is the worker function sent to executors (it is importable from ``placement``).
    """
    try:
        return solve(problem, method, **dict(options))
    except PlacementError as exc:
        return make_result(method, Status.ERROR, seconds=0.0, reason=str(exc))


@dataclass(frozen=True)
class SweepPoint:
    """One solved point of a sweep.

    Attributes
    ----------
    index : int
        Position in the sweep (identifies the point in figures: their ``customdata``).
    parameter : str
        The parameter swept (a function's name for callables).
    value : Any
        Its value at this point.
    problem : Problem
        The problem solved (the base problem with the value applied).
    result : Result
        The solve's result.
    status : str
        ``result.status``.
    time_per_sample : float or None
        The optimal max-load (None when no placement was found).
    devices_used, accelerators_used, cpus_used : int
        Devices that got work in the plan.
    total_memory : float
        Memory provisioned: the capacity (bytes) of the accelerators that got work
        (``inf`` when a used kind has unlimited memory).
    memory_used : float
        Bytes the plan places on accelerators.
    price_per_hour : float
        Price of the devices that got work (kind ``price_per_hour`` and the inventory's
        ``cpu_price_per_hour``).
    """

    index: int
    parameter: str
    value: Any
    problem: Problem
    result: Result
    status: str
    time_per_sample: float | None
    devices_used: int
    accelerators_used: int
    cpus_used: int
    total_memory: float
    memory_used: float
    price_per_hour: float

    @property
    def ok(self) -> bool:
        """True when the point has a placement."""
        return self.result.ok and self.time_per_sample is not None

    @property
    def label(self) -> str:
        """A short label, e.g. ``"accelerators = 4"``, ``"memory = 672 MiB"`` or ``"2 x V100 + 3 x T4"``."""
        if self.parameter == "counts" and isinstance(self.value, tuple):
            return count_label(self.problem.devices, self.value)
        if self.parameter == "memory" and isinstance(self.value, (int, float)):
            return f"memory = {format_parameter('memory', float(self.value))}"
        return f"{self.parameter} = {format_value(self.value)}"


def count_label(devices: Devices, counts: Sequence[int]) -> str:
    """Per-kind counts with their kind names, e.g. ``"2 x V100 + 3 x T4"`` (``"no accelerators (CPU only)"`` if all 0)."""
    parts = [f"{count} x {kind.name}" for kind, count in zip(devices.accelerators, counts) if count]
    return " + ".join(parts) if parts else "no accelerators (CPU only)"


def make_point(index: int, parameter: str, value: Any, problem: Problem, result: Result) -> SweepPoint:
    """Measure a solved point: devices used, memory, price (from the inventory of ``problem``)."""
    kinds = {kind.name: kind for kind in problem.devices.accelerators}
    accelerators = cpus = 0
    capacity = used_bytes = price = 0.0
    if result.ok:
        for stage in cast(Placement, result.placement).stages:  # ok: a placement is available
            if not stage.nodes:
                continue
            if stage.device.kind == CPU_KIND:
                cpus += 1
                price += problem.devices.cpu_price_per_hour
                continue
            kind = kinds[stage.device.kind]
            accelerators += 1
            capacity += kind.memory
            price += kind.price_per_hour
            used_bytes += sum(problem.graph.node_by_id[n].size for n in stage.nodes)
    return SweepPoint(
        index=index,
        parameter=parameter,
        value=value,
        problem=problem,
        result=result,
        status=result.status,
        time_per_sample=result.objective if result.ok else None,
        devices_used=accelerators + cpus,
        accelerators_used=accelerators,
        cpus_used=cpus,
        total_memory=capacity,
        memory_used=used_bytes,
        price_per_hour=price,
    )


# ----------------------------------------------------------------------------- sweeps


def sweep(
    problem: Problem,
    parameter: str | Callable[[Problem, Any], Problem | Devices],
    values: Iterable[Any],
    method: str = "dp",
    executor: Executor | str | None = None,
    progress: Callable[[int, int], None] | None = None,
    kind: str | None = None,
    heartbeat_s: float | None = None,
    **options: Any,
) -> tuple[SweepPoint, ...]:
    """Solve ``problem`` once per value of ``parameter``.

    Parameters
    ----------
    problem : Problem
        The base problem.
    parameter : str or callable
        See :func:`vary`. A callable must be picklable (module level) to run in a process pool.
    values : iterable
        The values, in the order of the returned points.
    method : str
        Solver method name (:data:`placement.solve.METHODS`), the exact DP by default.
    executor : Executor, "process" or None
        None solves in this process, one point after another; ``"process"`` uses a local
        process pool made for this call (see :func:`executor_for`); an Executor (a reused
        pool, a Dask client's executor) is used as given and left running.
    progress : callable, optional
        Called as ``progress(done, total)`` after each point is solved.
    kind : str, optional
        The accelerator kind for per-kind parameters (default: the first kind).
    heartbeat_s : float, optional
        With an executor: also call ``progress(done, total)`` (unchanged values) every
        ``heartbeat_s`` seconds while no solve finishes, so that a caller can interrupt the wait
        (the app's Stop button acts at its next call). If the wait is interrupted by an exception,
        the solves not yet started are cancelled before it propagates.
    **options
        Passed to the solver (``time_limit`` ...).

    Returns
    -------
    tuple of SweepPoint
        One point per value, in order. Points whose solve failed have status "error".
        Values giving the same device inventory are solved once.

    Raises
    ------
    PlacementError
        For an unknown parameter or kind, or an invalid value (before anything is solved).
    """
    values = list(itertools.islice(values, MAX_SWEEP_POINTS + 1))
    if len(values) > MAX_SWEEP_POINTS:
        raise PlacementError(f"a sweep solves at most {MAX_SWEEP_POINTS:,} values (got more)")
    name = parameter if isinstance(parameter, str) else getattr(parameter, "__name__", "custom")
    problems = [vary(problem, parameter, value, kind) for value in values]
    frozen_options = tuple(sorted(options.items()))
    unique: dict[Problem, int] = {}
    for varied in problems:
        unique.setdefault(varied, len(unique))
    jobs = list(unique)
    results: list[Result | None] = [None] * len(jobs)
    total = len(jobs)
    if progress is not None:
        progress(0, total)
    own = executor == "process"
    if own:
        executor = executor_for(None, max_workers=min(total, os.cpu_count() or 1) or 1)
    try:
        if executor is None:
            for k, job in enumerate(jobs):
                results[k] = solve_point(job, method, frozen_options)
                if progress is not None:
                    progress(k + 1, total)
        else:
            if not isinstance(executor, Executor) and not hasattr(executor, "submit"):
                raise PlacementError(
                    f"executor must be None, 'process' or a concurrent.futures.Executor (got {executor!r})"
                )
            futures = {
                cast(Executor, executor).submit(solve_point, job, method, frozen_options): k
                for k, job in enumerate(jobs)
            }
            _collect(futures, results, method, progress, heartbeat_s)
    finally:
        if own:
            cast(Executor, executor).shutdown()  # the pool made above
    return tuple(
        make_point(i, name, value, varied, cast(Result, results[unique[varied]]))  # every job is solved above
        for i, (value, varied) in enumerate(zip(values, problems))
    )


def _collect(
    futures: dict[Future, int],
    results: list[Result | None],
    method: str,
    progress: Callable[[int, int], None] | None,
    heartbeat_s: float | None,
) -> None:
    """Wait for ``futures`` (future -> job index), filling ``results``; see :func:`sweep` for the heartbeat.

    Invariant: every future is either in ``pending`` or its result is stored; on any exception
    (an interrupted wait) the pending ones are cancelled (those already running finish or are ended
    by whoever owns the executor).
    """
    pending = set(futures)
    total, done = len(futures), 0
    try:
        while pending:
            finished, pending = wait(pending, timeout=heartbeat_s, return_when=FIRST_COMPLETED)
            for future in finished:
                k = futures[future]
                try:
                    results[k] = future.result()
                except Exception as exc:  # a worker crash (or a cancel) must not lose the other points
                    results[k] = make_result(
                        method, Status.ERROR, seconds=0.0, reason=f"worker failed: {type(exc).__name__}: {exc}"
                    )
                done += 1
                if progress is not None:
                    progress(done, total)
            if not finished and progress is not None:
                progress(done, total)  # the heartbeat: nothing finished within heartbeat_s
    except BaseException:
        for future in pending:
            future.cancel()
        raise


def format_value(value: Any) -> str:
    """A swept value for labels and sentences (infinity: "unlimited"; thousands separated)."""
    if isinstance(value, float):
        if math.isinf(value):
            return "unlimited"
        if value.is_integer() and abs(value) < 1e15:
            return f"{value:,.0f}"
        return f"{value:.4g}"
    return str(value)


def format_parameter(parameter: str, value: float) -> str:
    """A value of ``parameter`` for a sentence (memory in GiB/MiB)."""
    if parameter == "memory" and math.isfinite(value):
        for unit, scale in (("GiB", 2.0**30), ("MiB", 2.0**20), ("KiB", 2.0**10)):
            if abs(value) >= scale:
                return f"{value / scale:,.3g} {unit}"
        return f"{value:,.0f} bytes"
    return format_value(float(value))
