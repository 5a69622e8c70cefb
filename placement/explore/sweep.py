"""Parameter sweeps, Pareto frontiers and sensitivity of the optimal plan.

Every number here comes from a real solve (:func:`placement.solve.solve`, the exact DP by
default) of a copy of the problem with one device parameter changed:

* :func:`sweep` solves one problem per value of a parameter - the count, memory or speed
  of one accelerator kind, the global bandwidth factor, the number of CPU cores, or any
  picklable ``f(problem, value) -> Problem`` - optionally in parallel through a
  :class:`concurrent.futures.Executor` (a local process pool from :func:`executor_for`,
  or a Dask cluster's executor);
* :func:`pareto_front` keeps the points that no other point beats on both the time per
  sample and a cost axis (devices used, memory provisioned, price per hour);
* :func:`sensitivity` finds, by bracketing and bisection with real solves, the smallest
  increase and decrease of a parameter at which the current optimal plan stops being
  optimal (another plan becomes strictly faster, or the plan no longer fits).

Results are frozen dataclasses of plain values (they pickle, so they can be cached and
sent between processes). The worker function :func:`solve_point` lives here, never in a
Streamlit page, so that process-pool children can import it.
"""

from __future__ import annotations

import itertools
import json
import math
import multiprocessing
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Executor, Future, ProcessPoolExecutor, as_completed
from dataclasses import dataclass, replace
from typing import Any, cast

from ..errors import PlacementError
from ..evaluate import evaluate
from ..model import CPU_KIND, Devices, Placement, Problem, Result, make_result
from ..solve import solve

#: Parameters :func:`sweep` and :func:`sensitivity` understand by name.
PARAMETERS = ("accelerators", "memory", "bandwidth", "speed", "cpus")
#: Cost axes of :func:`pareto_front`, with the :class:`SweepPoint` attribute each reads.
PARETO_AXES = {"devices": "devices_used", "memory": "total_memory", "price": "price_per_hour"}
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
        return make_result(method, "error", seconds=0.0, reason=str(exc))


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
            return f"memory = {_format_parameter('memory', float(self.value))}"
        return f"{self.parameter} = {_format_value(self.value)}"


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


# ----------------------------------------------------------------------------- executors

#: Environment variable in which the operator lists the Dask scheduler addresses sweeps may use
#: (separated by commas or spaces). Empty or unset: Dask is off. A Dask client unpickles what the
#: cluster sends back, so only clusters the operator trusts may ever be named here.
DASK_ALLOW_ENV = "PLACEMENT_DASK_SCHEDULERS"
#: Most values one sweep solves (each is a full solve).
MAX_SWEEP_POINTS = 1000


def allowed_dask_addresses(environ: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """The Dask scheduler addresses the operator allows (:data:`DASK_ALLOW_ENV`), in the order given."""
    raw = (os.environ if environ is None else environ).get(DASK_ALLOW_ENV, "")
    out: list[str] = []
    for item in raw.replace(",", " ").split():
        if item not in out:
            out.append(item)
    return tuple(out)


def result_to_plain(result: Result) -> dict[str, Any]:
    """A result as JSON-ready plain data (what a Dask worker sends back, see :func:`result_from_plain`)."""
    placement = None
    if result.placement is not None:
        placement = [
            {
                "kind": st.device.kind,
                "index": st.device.index,
                "nodes": list(st.nodes),
                "calls": [list(c) for c in st.calls] if st.calls is not None else None,
            }
            for st in result.placement.stages
        ]
    stats = [[str(k), v] for k, v in result.stats if v is None or isinstance(v, (bool, int, float, str))]
    return {
        "status": result.status,
        "method": result.method,
        "objective": result.objective,
        "placement": placement,
        "seconds": result.seconds,
        "objective_kind": result.objective_kind,
        "reason": result.reason,
        "bound": result.bound,
        "gap": result.gap,
        "stats": stats,
    }


def _plain_number(value: Any, what: str, optional: bool = True) -> float | None:
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise PlacementError(f"worker result: {what} must be a number (got {type(value).__name__})")
    return float(value)


def _plain_ids(value: Any, what: str) -> tuple[int, ...]:
    if not isinstance(value, list) or not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        raise PlacementError(f"worker result: {what} must be a list of integers")
    return tuple(value)


def result_from_plain(data: Any) -> Result:
    """Rebuild a :class:`Result` from :func:`result_to_plain` data, checking every field's type.

    Raises
    ------
    PlacementError
        When the data is not exactly such plain data (one line naming the field).
    """
    from ..model import DeviceSlot, Stage

    if not isinstance(data, dict):
        raise PlacementError("worker result: not an object")
    for key in ("status", "method", "objective_kind"):
        if not isinstance(data.get(key), str):
            raise PlacementError(f"worker result: {key} must be a string")
    if data.get("reason") is not None and not isinstance(data["reason"], str):
        raise PlacementError("worker result: reason must be a string")
    placement = None
    if data.get("placement") is not None:
        if not isinstance(data["placement"], list):
            raise PlacementError("worker result: placement must be a list of stages")
        stages = []
        for raw in data["placement"]:
            if (
                not isinstance(raw, dict)
                or not isinstance(raw.get("kind"), str)
                or not isinstance(raw.get("index"), int)
                or isinstance(raw.get("index"), bool)
            ):
                raise PlacementError("worker result: a stage needs a kind (string) and an index (integer)")
            calls = raw.get("calls")
            if calls is not None:
                if not isinstance(calls, list):
                    raise PlacementError("worker result: calls must be a list")
                calls = tuple(_plain_ids(c, "a call") for c in calls)
            stages.append(
                Stage(DeviceSlot(raw["kind"], raw["index"]), _plain_ids(raw.get("nodes"), "stage nodes"), calls)
            )
        placement = Placement(tuple(stages))
    stats = data.get("stats", [])
    if not isinstance(stats, list) or not all(
        isinstance(item, list)
        and len(item) == 2
        and isinstance(item[0], str)
        and (item[1] is None or isinstance(item[1], (bool, int, float, str)))
        for item in stats
    ):
        raise PlacementError("worker result: stats must be a list of [name, plain value] pairs")
    try:
        return make_result(
            data["method"],
            data["status"],
            seconds=cast(float, _plain_number(data.get("seconds"), "seconds", optional=False)),
            objective=_plain_number(data.get("objective"), "objective"),
            placement=placement,
            objective_kind=data["objective_kind"],
            reason=data.get("reason"),
            bound=_plain_number(data.get("bound"), "bound"),
            gap=_plain_number(data.get("gap"), "gap"),
            stats=tuple((k, v) for k, v in stats),
        )
    except ValueError as exc:
        raise PlacementError(f"worker result: {exc}") from None


def _call_plain(fn: Callable[..., Result], *args: Any) -> str:
    """Run ``fn`` on a worker and send its result back as JSON text (plain data only)."""
    return json.dumps(result_to_plain(fn(*args)))


class _DaskExecutor(Executor):
    """A Dask ``Client``'s executor that closes the client when shut down.

    Every call runs through :func:`_call_plain`: the worker sends JSON text, and the future
    handed to the caller resolves to the :class:`Result` rebuilt by :func:`result_from_plain`
    (anything else fails that future).
    """

    def __init__(self, client: Any) -> None:
        self.client = client
        self._executor = client.get_executor()

    def submit(self, fn, /, *args, **kwargs) -> Future:
        if kwargs:
            raise PlacementError("the Dask executor takes positional arguments only")
        inner = self._executor.submit(_call_plain, fn, *args)
        outer: Future = Future()

        def settle(done: Future) -> None:
            try:
                text = done.result()
                if not isinstance(text, str):
                    raise PlacementError(f"worker result: expected JSON text, got {type(text).__name__}")
                outer.set_result(result_from_plain(json.loads(text)))
            except BaseException as exc:  # noqa: BLE001 - handed to the caller through the future
                outer.set_exception(exc)

        inner.add_done_callback(settle)
        return outer

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        self._executor.shutdown(wait=wait)
        self.client.close()


def executor_for(
    address: str | None = None,
    max_workers: int | None = None,
    timeout: float = 10.0,
    allowed: Sequence[str] | None = None,
) -> Executor:
    """An executor for sweeps: a local process pool, or a Dask cluster's when ``address`` is given.

    Parameters
    ----------
    address : str, optional
        A Dask scheduler address (``"tcp://host:8786"``). None or "" gives a local
        :class:`~concurrent.futures.ProcessPoolExecutor` (spawned workers, so that the
        caller's threads and the Streamlit script are never forked or re-run).
    max_workers : int, optional
        Workers of the local pool (default: the number of CPU cores).
    timeout : float
        Seconds to wait for the Dask scheduler.
    allowed : sequence of str, optional
        The addresses that may be used; default :func:`allowed_dask_addresses` (the operator's
        :data:`DASK_ALLOW_ENV`). Any other address is refused before connecting.

    Returns
    -------
    concurrent.futures.Executor
        The caller owns it: call ``shutdown()`` when done (for Dask this closes the client).

    Raises
    ------
    PlacementError
        When the address is not allowed, Dask is missing or the scheduler cannot be reached.
    """
    if not address:
        workers = max_workers or os.cpu_count() or 1
        return ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn"))
    allowed = allowed_dask_addresses() if allowed is None else tuple(allowed)
    if address not in allowed:
        raise PlacementError(
            f"Dask scheduler address {address[:100]!r} is not allowed: the operator lists the "
            f"allowed addresses in the environment variable {DASK_ALLOW_ENV}"
        )
    try:
        from distributed import Client
    except ImportError:  # pragma: no cover - dask is in requirements
        raise PlacementError(
            "a Dask scheduler address was given but the 'distributed' package is not installed"
        ) from None
    try:
        client = Client(address, timeout=timeout, set_as_default=False)
    except (OSError, TimeoutError, ValueError) as exc:
        raise PlacementError(f"cannot reach the Dask scheduler at {address!r} ({exc})") from None
    return _DaskExecutor(client)


# ----------------------------------------------------------------------------- sweeps


def sweep(
    problem: Problem,
    parameter: str | Callable[[Problem, Any], Problem | Devices],
    values: Iterable[Any],
    method: str = "dp",
    executor: Executor | str | None = None,
    progress: Callable[[int, int], None] | None = None,
    kind: str | None = None,
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
            done = 0
            for future in as_completed(futures):
                k = futures[future]
                try:
                    results[k] = future.result()
                except Exception as exc:  # a worker crash must not lose the other points
                    results[k] = make_result(
                        method, "error", seconds=0.0, reason=f"worker failed: {type(exc).__name__}: {exc}"
                    )
                done += 1
                if progress is not None:
                    progress(done, total)
    finally:
        if own:
            cast(Executor, executor).shutdown()  # the pool made above
    return tuple(
        make_point(i, name, value, varied, cast(Result, results[unique[varied]]))  # every job is solved above
        for i, (value, varied) in enumerate(zip(values, problems))
    )


def pareto_front(
    points: Sequence[SweepPoint], x: str = "devices", y: str = "time_per_sample"
) -> tuple[SweepPoint, ...]:
    """The points no other point beats on both axes (smaller is better on both).

    Parameters
    ----------
    points : sequence of SweepPoint
        Points of one or several sweeps; those without a placement are ignored.
    x : str
        ``"devices"`` (devices used), ``"memory"`` (memory provisioned) or ``"price"``
        (price per hour), or any numeric SweepPoint attribute.
    y : str
        A numeric SweepPoint attribute (default the time per sample).

    Returns
    -------
    tuple of SweepPoint
        Sorted by ``x``. A point is dropped when another is at least as good on both axes
        and better on one; among points with equal ``(x, y)`` only the first is kept.
    """
    x_attr = PARETO_AXES.get(x, x)
    y_attr = PARETO_AXES.get(y, y)
    usable = [p for p in points if p.ok]
    for p in usable[:1]:
        for attr in (x_attr, y_attr):
            if not hasattr(p, attr):
                raise PlacementError(f"unknown Pareto axis {attr!r}; choose one of: {', '.join(PARETO_AXES)}")
    coords = [(float(getattr(p, x_attr)), float(getattr(p, y_attr))) for p in usable]
    front = []
    seen: set[tuple[float, float]] = set()
    for k, (px, py) in enumerate(coords):
        if any(qx <= px and qy <= py and (qx < px or qy < py) for qx, qy in coords):
            continue
        if (px, py) in seen:
            continue
        seen.add((px, py))
        front.append((px, py, k))
    front.sort()
    return tuple(usable[k] for _, _, k in front)


# ----------------------------------------------------------------------------- sensitivity


@dataclass(frozen=True)
class Change:
    """Where, moving a parameter one way, the current plan stops being optimal.

    Attributes
    ----------
    value : float
        The first value (within the bisection tolerance) at which it happens.
    objective : float or None
        The new optimum there (None when nothing fits).
    plan_objective : float or None
        The current plan's time per sample there (None when it no longer fits).
    result : Result
        The solve at ``value``.
    reason : str
        ``"faster plan"`` or ``"plan does not fit"``.
    """

    value: float
    objective: float | None
    plan_objective: float | None
    result: Result
    reason: str


@dataclass(frozen=True)
class Sensitivity:
    """How far ``parameter`` can move before the optimal plan changes.

    ``down``/``up`` are None when no change was found within the searched range
    (``low``..``high``). ``sentence`` says it in words for the UI.
    """

    parameter: str
    kind: str | None
    value: float
    objective: float | None
    placement: Placement | None
    down: Change | None
    up: Change | None
    low: float
    high: float
    solves: int
    sentence: str
    tie: float | None = None  # a value where another plan ties with this one (within ``tie_tol``), if seen


def sensitivity(
    problem: Problem,
    parameter: str,
    kind: str | None = None,
    method: str = "dp",
    result: Result | None = None,
    max_factor: float = 1024.0,
    max_count: int = 64,
    rel_tol: float = 1e-3,
    tie_tol: float = 1e-6,
    **options: Any,
) -> Sensitivity:
    """The smallest increase and decrease of ``parameter`` at which the optimal plan changes.

    "Changes" means: at the new value the current plan no longer fits (memory, device
    count) or another plan is faster by more than ``tie_tol`` (relative; found by a real
    solve). Another plan within ``tie_tol`` is a tie, not a change: both are optimal up to
    rounding, and the first value where one was seen is reported as ``tie``. Counts are searched
    by integer bisection up to ``max_count``; continuous parameters (bandwidth factor,
    memory, speed) by doubling/halving until the change happens (at most ``max_factor``),
    then bisection to ``rel_tol``. Decreases of memory and counts are exact without search:
    the plan fits as long as the kind keeps the devices and memory it uses.

    Parameters
    ----------
    problem : Problem
        The problem with the current parameter values.
    parameter : str
        ``"bandwidth"``, ``"memory"``, ``"speed"``, ``"accelerators"`` or ``"cpus"``.
    kind : str, optional
        The accelerator kind for per-kind parameters (default: the first kind).
    method : str
        Solver method (the DP by default).
    result : Result, optional
        The current optimal result (solved here if not given).
    max_factor, max_count, rel_tol : float, int, float
        Search limits.
    tie_tol : float
        Relative difference of time per sample below which two plans tie (default 1e-6:
        far above the rounding of a sum of loads, far below any difference that matters).

    Returns
    -------
    Sensitivity
    """
    if parameter not in PARAMETERS:
        raise PlacementError(f"unknown parameter {parameter!r}; choose one of: {', '.join(PARAMETERS)}")
    if parameter in ("accelerators", "memory", "speed"):
        kind = kind_label(problem.devices, kind)
    else:
        kind = None
    frozen = tuple(sorted(options.items()))
    solves = 0

    def solve_at(value):
        nonlocal solves
        solves += 1
        varied = vary(problem, parameter, value, kind)
        return varied, solve_point(varied, method, frozen)

    if result is None:
        result = solve_point(problem, method, frozen)
        solves += 1
    base = current_value(problem, parameter, kind)
    integer = parameter in ("accelerators", "cpus")
    if not result.ok:
        return Sensitivity(
            parameter,
            kind,
            base,
            None,
            None,
            None,
            None,
            base,
            base,
            solves,
            f"No plan to analyse: {result.reason or result.status}.",
        )
    plan = cast(Placement, result.placement)  # ok: a placement is available

    tie_at: list[float] = []

    def changed(value) -> Change | None:
        varied, found = solve_at(value)
        ev = evaluate(varied, plan)
        plan_value = ev.max_load if ev.feasible else None
        if plan_value is None:
            return Change(float(value), found.objective if found.ok else None, None, found, "plan does not fit")
        if found.ok and found.objective < plan_value * (1 - tie_tol) - 1e-12:
            return Change(float(value), found.objective, plan_value, found, "faster plan")
        if found.ok and found.objective < plan_value and found.placement != plan and not tie_at:
            tie_at.append(float(value))
        return None

    def bisect(good, bad, change):
        """``good``: no change; ``bad``: change. Narrow down to the first bad value."""
        while True:
            if integer:
                if bad - good <= 1:
                    return change
                mid = (good + bad) // 2
            else:
                if abs(bad - good) <= rel_tol * max(abs(good), abs(bad)):
                    return change
                mid = math.sqrt(good * bad) if good > 0 and bad > 0 else (good + bad) / 2
            found = changed(mid)
            if found is None:
                good = mid
            else:
                bad, change = mid, found

    used_kind = [s for s in plan.stages if s.nodes and (s.device.kind == (CPU_KIND if parameter == "cpus" else kind))]
    # ---- decrease
    down = None
    low = base
    if parameter in ("accelerators", "cpus"):
        needed: float = len(used_kind)
        low = 0
        if needed > 0:
            down = changed(needed - 1)
    elif parameter == "memory":
        needed = max((sum(problem.graph.node_by_id[n].size for n in s.nodes) for s in used_kind), default=0.0)
        low = 0.0
        if needed > 0:
            below = math.nextafter(needed, 0.0)
            down = changed(below)
    else:
        low = base / max_factor
        good, value = base, base
        while value > low:
            value = max(value / 2, low)
            found = changed(value)
            if found is not None:
                down = bisect(good, value, found)
                break
            good = value
    # ---- increase
    up = None
    if integer:
        high: float = max_count
        if base < high:
            found = changed(high)
            if found is not None:
                up = bisect(base, high, found)
    else:
        high = base * max_factor if math.isfinite(base) else base
        if parameter == "memory" and math.isfinite(base):
            unlimited = changed(math.inf)
            if unlimited is not None:
                hi = base * max_factor
                if unlimited.result.ok:
                    hi = max(
                        (
                            sum(problem.graph.node_by_id[n].size for n in s.nodes)
                            for s in cast(Placement, unlimited.result.placement).stages
                            if s.device.kind == kind
                        ),
                        default=hi,
                    )
                hi = max(hi, base * (1 + 2 * rel_tol))
                found = changed(hi)
                if found is not None:
                    up = bisect(base, hi, found)
                high = hi
            else:
                high = math.inf
        elif math.isfinite(base):
            good, value = base, base
            while value < high:
                value = min(value * 2, high)
                found = changed(value)
                if found is not None:
                    up = bisect(good, value, found)
                    break
                good = value
    sentence = _sentence(parameter, kind, base, result.objective, down, up, low, high)
    tie = tie_at[0] if tie_at else None
    if tie is not None:
        sentence += (
            f" At {_format_parameter(parameter, tie)} another plan ties with it (within {tie_tol:g} "
            "relative): both are optimal."
        )
    return Sensitivity(
        parameter, kind, float(base), result.objective, plan, down, up, float(low), float(high), solves, sentence, tie
    )


def _format_value(value: Any) -> str:
    if isinstance(value, float):
        if math.isinf(value):
            return "unlimited"
        if value.is_integer() and abs(value) < 1e15:
            return f"{value:,.0f}"
        return f"{value:.4g}"
    return str(value)


def _distinct(a: float, b: float) -> tuple[str, str]:
    """Format two different numbers with enough digits to tell them apart."""
    for digits in range(4, 13):
        left, right = f"{a:.{digits}g}", f"{b:.{digits}g}"
        if left != right:
            return left, right
    return left, right


def _format_parameter(parameter: str, value: float) -> str:
    """A value of ``parameter`` for a sentence (memory in GiB/MiB)."""
    if parameter == "memory" and math.isfinite(value):
        for unit, scale in (("GiB", 2.0**30), ("MiB", 2.0**20), ("KiB", 2.0**10)):
            if abs(value) >= scale:
                return f"{value / scale:,.3g} {unit}"
        return f"{value:,.0f} bytes"
    return _format_value(float(value))


def _what(parameter: str, kind: str | None) -> str:
    prefix = "" if kind in (None, "accelerator") else f"{kind} "
    return {
        "accelerators": f"{prefix}accelerators",
        "memory": f"memory per {prefix}accelerator",
        "speed": f"{prefix}accelerator speed",
        "bandwidth": "the bandwidth factor",
        "cpus": "CPU cores",
    }[parameter]


def _sentence(parameter, kind, base, objective, down, up, low, high) -> str:
    what = _what(parameter, kind)
    parts = [f"With {what} at {_format_parameter(parameter, base)} the plan's time per sample is {objective:.4g}."]
    for change, word in ((down, "below"), (up, "above")):
        if change is None:
            continue
        limit = change.value
        text = (
            f"With {_format_value(limit)}"
            if parameter in ("accelerators", "cpus")
            else f"At {_format_parameter(parameter, limit)}"
        )
        relative = (limit - base) / base * 100 if base and math.isfinite(base) else None
        rel = f" ({relative:+.1f} %)" if relative is not None and math.isfinite(relative) else ""
        if change.reason == "plan does not fit":
            if change.objective is None:
                new = "nothing fits"
            elif math.isclose(change.objective, objective, rel_tol=1e-6):
                new = "another plan with the same time per sample takes over"
            else:
                new = f"the best plan takes {change.objective:.4g}"
            parts.append(f"{text}{rel} the plan no longer fits ({new}).")
        else:
            new, old = _distinct(change.objective, change.plan_objective)
            parts.append(f"{text}{rel} a different plan is faster ({new} vs {old} for this plan).")
    if down is None and up is None:
        parts.append(
            f"The plan stays optimal for every value searched ({_format_parameter(parameter, low)} to "
            f"{_format_parameter(parameter, high)})."
        )
    elif down is None:
        parts.append(f"Lowering it (down to {_format_parameter(parameter, low)}) keeps the plan optimal.")
    elif up is None:
        parts.append(f"Raising it (up to {_format_parameter(parameter, high)}) keeps the plan optimal.")
    return " ".join(parts)
