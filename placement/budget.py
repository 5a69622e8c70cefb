"""Work estimated before it starts, and a wall-clock deadline for a whole command (issue 27.2).

* :func:`precheck_multidim` reads the *raw* parsed JSON of a graph (paper format or Piper's) and refuses,
  in one line, an order whose lattice is certainly past the multidim planner's caps
  (:func:`placement.multidim.limits.check_order_shape`), before the graph objects, the training graph and
  the options are built (on a dense 600-node DAG those took seconds and hundreds of MB before the planner's
  own estimate could refuse it). Anything malformed is left to the full reader and its one-line errors.
* :func:`deadline` bounds a command's wall clock: past it the code running in the main thread gets a
  :class:`DeadlineError` (one line, exit 2 in the CLI); :func:`remaining` gives what is left, for methods
  that take a time limit (they then return their best feasible result instead).
"""

from __future__ import annotations

import math
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from .errors import PlacementError


class DeadlineError(PlacementError):
    """The command ran past its ``--deadline`` (one line)."""


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if abs(value) < 1e308 else math.inf


def _positive(value: Any) -> bool | None:
    """Whether a raw JSON number is > 0 (None: not a number)."""
    number = _number(value)
    return None if number is None else number > 0


def _paper_shape(data: dict) -> tuple[int, list[tuple[int, int]], list[bool]] | None:
    """Nodes, edges and costly flags of the model nodes (color classes) of a paper-format graph dict."""
    nodes, edges = data.get("nodes"), data.get("edges")
    if not isinstance(nodes, list) or not isinstance(edges, list):
        return None
    label_of: dict[int, int] = {}  # node id -> model node index (its color class, else itself)
    labels: dict[tuple[str, int], int] = {}
    backward: set[int] = set()
    costly: list[bool] = []
    for raw in nodes:
        if not isinstance(raw, dict):
            return None
        node_id, color, is_backward = raw.get("id"), raw.get("colorClass"), raw.get("isBackwardNode", 0)
        if not isinstance(node_id, int) or node_id in label_of or not isinstance(is_backward, (int, bool)):
            return None
        if color is not None and not isinstance(color, int):
            return None
        key = ("class", color) if color is not None else ("node", node_id)
        index = labels.setdefault(key, len(labels))
        if index == len(costly):
            costly.append(False)
        label_of[node_id] = index
        if is_backward:
            backward.add(node_id)
        latency, size = _positive(raw.get("fpgaLatency", 0)), _positive(raw.get("size", 0))
        if latency is None or size is None:
            return None
        costly[index] = costly[index] or latency or size
    pairs = []
    for raw in edges:
        if not isinstance(raw, dict):
            return None
        source, target = raw.get("sourceId"), raw.get("destId")
        if source not in label_of or target not in label_of:
            return None
        if source in backward or target in backward:
            continue
        size = raw.get("size")
        carries = _positive(raw.get("cost", 0)) if size is None else _positive(size)
        if carries is None:
            return None
        u, v = label_of[source], label_of[target]
        if u != v:
            pairs.append((u, v))
            if carries:  # a non-free edge: both ends stay groups of their own
                costly[u] = costly[v] = True
    return len(labels), pairs, costly


def _piper_shape(data: dict) -> tuple[int, list[tuple[int, int]], list[bool]] | None:
    """Nodes, edges and costly flags of a Piper file dict (ids are positions)."""
    nodes, edges = data.get("nodes"), data.get("edges")
    if not isinstance(nodes, list) or not isinstance(edges, list):
        return None
    costly = []
    for raw in nodes:
        tmpcs = raw.get("TMPCs") if isinstance(raw, dict) else None
        if not isinstance(tmpcs, dict):
            return None
        cost = False
        for options in tmpcs.values():
            for option in options if isinstance(options, list) else ():
                if not isinstance(option, dict):
                    return None
                for field in ("timePerSample", "parameterSize", "memoryUsageA", "memoryUsageB"):
                    if _positive(option.get(field, 0)):
                        cost = True
        costly.append(cost)
    pairs = []
    for raw in edges:
        if not isinstance(raw, dict):
            return None
        source, target = raw.get("sourceId"), raw.get("destId")
        if not (isinstance(source, int) and isinstance(target, int) and 0 <= min(source, target)):
            return None
        if max(source, target) >= len(costly):
            return None
        pairs.append((source, target))
        if _positive(raw.get("communicationCost", 0)):
            costly[source] = costly[target] = True
    return len(costly), pairs, costly


def precheck_multidim(data: Any, max_ideals: int | None = None, max_stages: int | None = None) -> None:
    """Refuse (one line) a parsed graph whose multidim lattice is certainly too large; O(nodes + edges).

    ``data`` is the parsed JSON of a Piper file or of a paper-format graph (a builder graph, too).
    Malformed input returns quietly: the full reader names the field and the rule broken.

    Raises
    ------
    placement.multidim.limits.TooMuchWorkError
        When a lower bound on the ideals, stages or stage-boundary sums exceeds its cap.
    """
    from .multidim.dp import DEFAULT_MAX_IDEALS, DEFAULT_MAX_STAGES  # noqa: PLC0415
    from .multidim.io import is_piper_dict  # noqa: PLC0415
    from .multidim.limits import check_order_shape  # noqa: PLC0415

    if not isinstance(data, dict):
        return
    shape = _piper_shape(data) if is_piper_dict(data) else _paper_shape(data)
    if shape is None:
        return
    count, pairs, costly = shape
    check_order_shape(
        count,
        pairs,
        costly,
        DEFAULT_MAX_IDEALS if max_ideals is None else max_ideals,
        DEFAULT_MAX_STAGES if max_stages is None else max_stages,
    )


def process_age() -> float:
    """Wall-clock seconds since this process started (Linux ``/proc``; 0.0 where unknown).

    A command-line ``--deadline`` counts from the process start, so the interpreter's imports count too.
    """
    try:
        with open("/proc/self/stat") as handle:
            started_ticks = int(handle.read().rsplit(")", 1)[1].split()[19])
        with open("/proc/uptime") as handle:
            uptime = float(handle.read().split()[0])
        return max(0.0, uptime - started_ticks / os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError):
        return 0.0


def remaining(deadline_at: float | None) -> float:
    """Seconds left before ``deadline_at`` (a :func:`time.monotonic` value); inf without a deadline."""
    return math.inf if deadline_at is None else max(0.0, deadline_at - time.monotonic())


#: Seconds between two deadline errors once the deadline has passed.
REPEAT_S = 0.25

#: Seconds past a hard deadline before the process is ended (the main thread may be in a long C call).
HARD_GRACE = 1.0


@contextmanager
def deadline(seconds: float | None, what: str = "the command", hard: bool = False) -> Iterator[float | None]:
    """Raise :class:`DeadlineError` in the main thread once ``seconds`` of wall clock have passed.

    Yields the :func:`time.monotonic` value of the deadline (None without one). Uses ``SIGALRM``, so it
    only arms in the main thread (elsewhere it only yields the deadline, for :func:`remaining`); code
    inside a long C call sees the error when the call returns. With ``hard`` (a command-line process
    only: it ends the interpreter), a timer thread writes the line to stderr and exits with status 2
    :data:`HARD_GRACE` seconds past the deadline if the main thread has not stopped by then.
    """
    if seconds is None or not math.isfinite(seconds):  # an infinite deadline is none
        yield None
        return
    at = time.monotonic() + seconds
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "setitimer"):
        yield at
        return

    message = f"{what} ran past its deadline of {seconds:g} s (--deadline) and was stopped"

    def expired(signum: int, frame: Any) -> None:
        raise DeadlineError(message)

    def end_process() -> None:
        sys.stderr.write(f"error: {message}\n")
        sys.stderr.flush()
        os._exit(2)

    timer = threading.Timer(seconds + HARD_GRACE, end_process) if hard else None
    if timer is not None:
        timer.daemon = True
        timer.start()
    previous = signal.signal(signal.SIGALRM, expired)
    # fires again every REPEAT_S past the deadline: code that catches PlacementError (e.g. compare, which
    # records a failed method and goes on) cannot swallow the deadline
    signal.setitimer(signal.ITIMER_REAL, max(seconds, 1e-3), REPEAT_S)
    try:
        yield at
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        if timer is not None:
            timer.cancel()
