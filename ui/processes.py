"""What both worker pools share (:mod:`ui.worker`, :mod:`ui.solve_pool`): the one-line error, a bare ``__main__``."""

from __future__ import annotations

import sys
import types
from collections.abc import Iterator
from contextlib import contextmanager

from placement.errors import PlacementError


class WorkerError(PlacementError):
    """A worker process ended without an answer (one line)."""


@contextmanager
def plain_main() -> Iterator[None]:
    """A bare ``__main__`` while worker processes start.

    ``spawn`` re-runs the parent's ``__main__`` file in each child; in a Streamlit server ``__main__`` is
    the page script being run, which a worker must never execute. The swap lasts while ``submit`` or the
    manager starts a process (the page scripts of other sessions do not read ``sys.modules``).
    """
    saved = sys.modules.get("__main__")
    sys.modules["__main__"] = types.ModuleType("__main__")
    try:
        yield
    finally:
        if saved is not None:
            sys.modules["__main__"] = saved
