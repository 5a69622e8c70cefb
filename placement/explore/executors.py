"""Executors for sweeps: a local process pool, or a Dask cluster the operator allows.

A Dask worker sends its :class:`~placement.model.Result` back as JSON text of plain values
(:func:`placement.io.result_to_dict`, the one result serializer), rebuilt and checked by
:func:`placement.io.result_from_dict`: nothing the cluster
sends is unpickled as a result.
"""

from __future__ import annotations

import atexit
import functools
import json
import multiprocessing
import os
import threading
import weakref
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Executor, Future, ProcessPoolExecutor
from typing import Any

from ..errors import PlacementError
from ..io import result_from_dict as result_from_plain
from ..io import result_to_dict as result_to_plain
from ..model import Result

# ----------------------------------------------------------------------------- executors


def stop_executor(executor: Any) -> None:
    """Stop ``executor`` now: drop queued solves and end a local process pool's worker processes.

    ``shutdown(cancel_futures=True)`` alone leaves running exact solves busy until they finish
    (minutes on a large graph); their processes are terminated, and when this returns every future
    of the pool is done. Other executors (Dask) are shut down. Stopping twice is harmless.
    """
    processes = list((getattr(executor, "_processes", None) or {}).values())
    manager = getattr(executor, "_executor_manager_thread", None)  # shutdown forgets it
    executor.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        if process.is_alive():
            process.terminate()
    for process in processes:
        process.join(timeout=5)
    # The pool's own thread settles the futures (cancelled, or failed with the ended workers) and exits:
    # once it has, no future of this pool is pending.
    if manager is not None and manager is not threading.current_thread():
        manager.join(timeout=5)


def _stop_at_exit(pool_ref: weakref.ref) -> None:
    pool = pool_ref()
    if pool is not None:
        stop_executor(pool)


def _stop_with_interpreter(pool: Executor) -> None:
    """End ``pool``'s workers when the interpreter exits (a server stopped with busy solves exits at once).

    The standard library joins a process pool's busy workers at exit (before ``atexit`` hooks run),
    so the hook goes where that join is registered, to run before it (hooks run last-in first-out).
    """
    register = getattr(threading, "_register_atexit", None) or atexit.register
    try:
        register(functools.partial(_stop_at_exit, weakref.ref(pool)))
    except RuntimeError:  # the interpreter is already shutting down: no new pool work will run
        pass


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
        caller's threads and the Streamlit script are never forked or re-run), whose workers are
        ended when the interpreter exits (:func:`stop_executor`), busy or not.
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
        pool = ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn"))
        _stop_with_interpreter(pool)
        return pool
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
