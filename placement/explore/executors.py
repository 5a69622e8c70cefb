"""Executors for sweeps: a local process pool, or a Dask cluster the operator allows.

A Dask worker sends its :class:`~placement.model.Result` back as JSON text of plain values
(:func:`result_to_plain`), rebuilt and checked by :func:`result_from_plain`: nothing the cluster
sends is unpickled as a result.
"""

from __future__ import annotations

import json
import multiprocessing
import os
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Executor, Future, ProcessPoolExecutor
from typing import Any, cast

from ..errors import PlacementError
from ..model import Placement, Result, make_result

# ----------------------------------------------------------------------------- executors

#: Environment variable in which the operator lists the Dask scheduler addresses sweeps may use
#: (separated by commas or spaces). Empty or unset: Dask is off. A Dask client unpickles what the
#: cluster sends back, so only clusters the operator trusts may ever be named here.
DASK_ALLOW_ENV = "PLACEMENT_DASK_SCHEDULERS"


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
