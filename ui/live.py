"""Live solving of the current scenario: a lowered device count answered from the last DP table; progress.

A device-count slider moved down asks the exact DP the same question for fewer devices. The
DP's table (:func:`placement.exact.dp.solve_dp_table`) holds the optimum with *at most* every
smaller count, so :meth:`placement.exact.dp.SolvedTable.query` answers it without solving again
(or says None when the table cannot prove the answer: then the page solves normally).

The build's pure-Python part (contraction, ideal enumeration, kernel inputs, floors) holds the GIL,
so in a server it runs in a worker of the solve pool (:mod:`ui.solve_pool`; a stopped build's worker is
killed), waited for by the session's one background thread; a graph past :data:`LIVE_MAX_IDEALS` ideals
keeps no table (lowered counts are solved afresh and :func:`note` says why).

* :func:`answer` - the result for a problem from the kept table, or None;
* :func:`keep` - after a fresh solve of the current scenario, keep its table (one per session);
* :func:`note` - the caption a page shows under a result answered from the table;
* :func:`solve_afresh` - the user asked for a full solve of these counts (tie-break included);
* :class:`SolveProgress` - ``progress(done, total)`` callback that shows a bar only once a
  solve has run for :data:`PROGRESS_AFTER` seconds (a quick solve shows nothing).

The table is built with ``bound`` = :data:`TABLE_BOUND` x the fresh optimum (the default cut,
the chain's value at the full counts, certifies almost no lowered count; ``math.inf`` certifies
all but costs about 3x a full solve on the wide Inception-like graph), so counts down to about
half are answered and a lower one is solved afresh. It is built in the session's one background
thread after each fresh solve, so the fresh result shows at once; an answer waits for what is
left of the build, but never longer than the fresh solve took: past that the build is stopped
and the counts are solved afresh (on the wide Inception-like graph a solve takes under a second
and this table tens of seconds). The kept table lives in ``st.session_state`` under one
private key, so a session holds at most one table. It is keyed on everything that decides the answer except the device counts: the
graph's digest, the devices with every count set to 0 (memory, speed, bandwidths, overlap, ...)
and the method's options. An answer is used only when every count (each accelerator kind, CPU
cores) is at most the table's and at least one is smaller; the evaluator
(:func:`placement.evaluate.evaluate`) re-checks its max-load before it is shown.

The table answers with the first optimal split it finds: the DP's tie-break (among optimal
splits, the least sum of stage durations, then fewest devices) is a second pass that the table
does not keep. The time per sample and the status equal a fresh solve's; the split is optimal
but may be another one, so its single-sample latency and device count may differ. :func:`note`
says so, and :func:`solve_afresh` gives the tie-broken split.
"""

from __future__ import annotations

import math
import time
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, replace
from typing import Any

import streamlit as st

import placement
from placement.exact.dp import SolvedTable, solve_dp_table
from placement.model import Status
from ui import worker
from ui.solve_pool import SolvePool

# Private session-state keys (never widget keys).
_TABLE = "_ui_live_table"  # _Kept or None: the last DP table of the current scenario
_EXECUTOR = "_ui_live_executor"  # the session's one ThreadPoolExecutor that builds tables
_FRESH = "_ui_live_fresh"  # (graph digest, devices repr) the user asked to solve afresh, or None

#: The kept table is searched up to this multiple of the fresh optimum: lower counts whose optimum
#: is within it are answered (about half the devices); measured in scripts/bench_live_table.py.
TABLE_BOUND = 2.0

#: Largest lattice (ideals of the fresh solve) whose table is built: the build's pure-Python setup grows
#: with the ideals (the wide Inception-like sample, 40,339 ideals: 4 s of setup measured on 2 busy cores,
#: 2026-11-25) and shares the GIL with the server; the kernel itself releases it.
LIVE_MAX_IDEALS = 20_000

#: Seconds a solve runs before its progress bar appears (a quicker solve shows none).
PROGRESS_AFTER = 1.0

#: Seconds between two updates of a shown bar (the last report, done == total, is always shown). Each update
#: is a message to the browser and a re-render of the page there: at the solve pool's 0.1 s, Chromium spent
#: 0.19 and 0.28 CPU seconds per second on a page solving the Inception-like sample; at 1 s, 0.17 and 0.19
#: (the rest is Streamlit's running indicator; 2026-11-26, on 2 cores shared with the server).
PROGRESS_EVERY_S = 1.0

Counts = tuple[tuple[int, ...], int]


@dataclass(frozen=True)
class _Kept:
    """The kept table: its key (all but the counts), the counts it was solved for, the table being built."""

    key: tuple
    counts: Counts
    table: Future  # of SolvedTable | None, built in a background thread
    searched: _Searched
    fresh_seconds: float = math.inf  # what the fresh solve took: an answer waits at most this long for the build


class _Stopped(Exception):
    """Raised in a table build's progress callback once nobody waits for the table any more."""


class _Searched:
    """(ideals done, total) of a table build, written by the build's thread, read by the page's.

    Setting ``stop`` ends the build at its next progress report (in a worker process: within
    :data:`ui.solve_pool.POLL_S`, the worker killed by :meth:`check`).
    """

    def __init__(self) -> None:
        self.done = 0
        self.total = 0
        self.stop = False

    def __call__(self, done: int, total: int, *_) -> None:
        if self.stop:
            raise _Stopped
        self.done, self.total = done, total

    def check(self) -> None:
        """Raise :class:`_Stopped` once nobody waits for the table (the solve pool then kills the build's worker)."""
        if self.stop:
            raise _Stopped


def _build(
    problem: placement.Problem, max_ideals: Any, bound: float, searched: _Searched, pool: SolvePool | None = None
) -> SolvedTable | None:
    """The table of ``problem`` searched with the cut ``bound`` (counts whose optimum is within it are answerable).

    In a worker of the solve ``pool`` when given (the build's Python parts and numba's cache loading would
    hold the server's GIL), else in this thread.
    """
    options: dict[str, Any] = {"bound": bound}
    if max_ideals is not None:
        options["max_ideals"] = int(max_ideals)
    try:
        if pool is None:
            return solve_dp_table(problem, progress=searched, **options)
        return pool.call(
            solve_dp_table, (worker.light(problem),), options, progress=searched, yield_check=searched.check
        )
    except placement.PlacementError:
        return None  # only a shortcut: the page has its result already


def _table(kept: _Kept) -> SolvedTable | None:
    """The kept table, waiting for its build if it is still running (a progress bar past a second).

    The wait is at most what the fresh solve took (``kept.fresh_seconds``): a build still running
    then is stopped and dropped, and the caller solves afresh.
    """
    if kept.table.cancelled():
        return None
    if not kept.table.done():
        bar = SolveProgress("Finishing the table of the last solve")
        deadline = time.perf_counter() + kept.fresh_seconds
        while not wait([kept.table], timeout=max(0.0, min(0.1, deadline - time.perf_counter()))).done:
            if time.perf_counter() >= deadline:
                kept.searched.stop = True  # a fresh solve is quicker than the rest of the build
                st.session_state[_TABLE] = None
                bar.close()
                return None
            bar(kept.searched.done, kept.searched.total)
        bar.close()
    try:
        return kept.table.result()
    except Exception:  # noqa: BLE001 - a failed build only means: solve normally
        return None


def wait_for_table() -> None:
    """Block until the kept table is built (tests; the app waits only when it needs the table)."""
    kept = st.session_state.get(_TABLE)
    if kept is not None:
        wait([kept.table])


def counts_of(devices: placement.Devices) -> Counts:
    """(count of each accelerator kind in inventory order, CPU cores)."""
    return tuple(kind.count for kind in devices.accelerators), devices.cpus


def rest_key(problem: placement.Problem, options: dict[str, Any]) -> tuple:
    """Everything that decides the DP's answer except the device counts (hashable)."""
    devices = problem.devices
    zeroed = devices.with_changes(
        accelerators=tuple(replace(kind, count=0) for kind in devices.accelerators),
        cpus=0,
    )
    return problem.graph.digest, repr(zeroed), tuple(sorted(options.items()))


def _covered(wanted: Counts, solved: Counts) -> bool:
    """Whether every count of ``wanted`` is at most the one of ``solved`` (same kinds, by the key)."""
    accelerators, cpus = wanted
    solved_accelerators, solved_cpus = solved
    return (
        len(accelerators) == len(solved_accelerators)
        and all(a <= b for a, b in zip(accelerators, solved_accelerators))
        and cpus <= solved_cpus
    )


def describe_counts(devices: placement.Devices, counts: Counts) -> str:
    """``6 x accelerator, 1 CPU core`` for ``counts`` of the kinds of ``devices``."""
    accelerators, cpus = counts
    parts = [f"{n} x {kind.name}" for n, kind in zip(accelerators, devices.accelerators)]
    parts.append(f"{cpus} CPU core{'s' if cpus != 1 else ''}")
    return ", ".join(parts)


def answer(problem: placement.Problem, options: dict[str, Any]) -> placement.Result | None:
    """The DP's result for ``problem`` from the kept table, or None (solve normally).

    None when no table is kept for this graph and these settings, when a count is above the
    table's or all are equal (the full solve, cached, is the better answer there: tie-broken),
    when the user asked for a fresh solve of these counts, or when the table cannot prove the
    answer (:meth:`SolvedTable.query` returns None). The answer's max-load is re-checked with
    the evaluator; a mismatch falls back to a fresh solve.
    """
    kept = st.session_state.get(_TABLE)
    if kept is None or kept.key != rest_key(problem, options):
        return None
    wanted = counts_of(problem.devices)
    if wanted == kept.counts or not _covered(wanted, kept.counts):
        return None
    if st.session_state.get(_FRESH) == (problem.graph.digest, repr(problem.devices)):
        return None
    table = _table(kept)
    if table is None:
        return None
    started = time.perf_counter()
    answered = table.query(*wanted)
    if answered is None:
        return None
    value, split = answered
    checked = placement.evaluate(problem, split)
    if not checked.feasible or checked.max_load != value:
        return None  # never show what the evaluator does not confirm
    return placement.make_result(
        "dp",
        Status.OPTIMAL,
        started=started,
        objective=value,
        placement=split,
        bound=value,
        gap=0.0,
        stats={
            "from_table": True,
            "table_counts": describe_counts(problem.devices, kept.counts),
            "tie_break": False,
        },
    )


def keep(
    problem: placement.Problem,
    options: dict[str, Any],
    optimum: float,
    fresh_seconds: float = math.inf,
    ideals: int | None = None,
) -> None:
    """Keep the DP table of ``problem`` (just solved afresh, ``optimum`` its max-load) for lower counts.

    Nothing happens when the kept table already covers these counts. The table answers the lower
    counts whose optimum is at most :data:`TABLE_BOUND` x ``optimum``. ``fresh_seconds``: what the
    fresh solve took; an answer waits at most that long for the build (then solves afresh).

    Replaces the session's one table. Nothing is kept when no split fits or the table cannot be
    built (it is only a shortcut: the page has its result already), nor past :data:`LIVE_MAX_IDEALS`
    ``ideals`` (the fresh solve's count; None: not known, built).
    """
    key = rest_key(problem, options)
    wanted = counts_of(problem.devices)
    kept = st.session_state.get(_TABLE)
    if kept is not None and kept.key == key and _covered(wanted, kept.counts):
        return
    if kept is not None:
        kept.table.cancel()  # not started yet (queued behind another build): never run it
        kept.searched.stop = True  # running: stopped (its worker killed), the table is of no use now
    if (not any(wanted[0]) and wanted[1] == 0) or (ideals is not None and ideals > LIVE_MAX_IDEALS):
        st.session_state[_TABLE] = None
        return
    st.session_state[_TABLE] = None  # the old table is of no use now: let it go
    # Built in the session's one background thread (the kernel runs without the GIL): the page
    # shows the fresh result at once, and a count lowered later waits only for what is left of
    # the build. One thread per session: at most one build runs and one waits, however fast the
    # settings change.
    executor = st.session_state.get(_EXECUTOR)
    if executor is None:
        # its thread leaves a CPU to the server (ui.worker.yield_cpu): the kernel runs one thread fewer
        executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="dp-table", initializer=worker.yield_cpu)
        st.session_state[_EXECUTOR] = executor
    searched = _Searched()
    bound = TABLE_BOUND * optimum if math.isfinite(optimum) and optimum > 0 else math.inf
    future = executor.submit(_build, problem, options.get("max_ideals"), bound, searched, worker.solvers())
    st.session_state[_TABLE] = _Kept(key, wanted, future, searched, float(fresh_seconds))


def solve_afresh(problem: placement.Problem) -> None:
    """Answer ``problem``'s counts with a full solve (tie-break included) instead of the table."""
    st.session_state[_FRESH] = (problem.graph.digest, repr(problem.devices))


def forget() -> None:
    """Drop the kept table (tests call this between cases)."""
    st.session_state[_TABLE] = None
    st.session_state[_FRESH] = None


def from_table(result: placement.Result | None) -> bool:
    """Whether ``result`` was answered from the kept table."""
    return result is not None and bool(result.stat("from_table", False))


def skipped(result: placement.Result | None) -> bool:
    """Whether ``result`` is a fresh exact-DP solve whose lattice is too large to keep a table."""
    if result is None or from_table(result) or result.method != "dp":
        return False
    ideals = result.stat("ideals", 0)
    return isinstance(ideals, int) and ideals > LIVE_MAX_IDEALS


def note(result: placement.Result | None) -> str | None:
    """The caption for a result answered from the table, or of one too large to keep a table (else None)."""
    if result is not None and skipped(result):
        return (
            f"A lowered device count is solved afresh: this graph's {result.stat('ideals'):,} ideals are past "
            f"the {LIVE_MAX_IDEALS:,} up to which the app keeps the DP's table for lowered counts (building it "
            "would slow every session's page)."
        )
    if result is None or not from_table(result):
        return None
    milliseconds = max(result.seconds * 1000, 0.0)
    shown = f"{milliseconds:.0f} ms" if milliseconds >= 1 else "under 1 ms"
    return (
        f"Answered from the last table in {shown} (solved for {result.stat('table_counts')}; a count only went "
        "down): the optimal time per sample, exactly as a fresh solve. The split is an optimal one, picked "
        "without the DP's tie-break (least sum of stage durations), so its latency and devices used may differ "
        "from a fresh solve's."
    )


class SolveProgress:
    """A ``progress(done, total)`` callback showing a bar once the solve has run :data:`PROGRESS_AFTER` seconds.

    The bar is created on the first call after that (a quick solve shows nothing), updated at most every
    :data:`PROGRESS_EVERY_S` and removed by :meth:`close`.

    Parameters
    ----------
    title : str
        What is solving, e.g. ``"Exact DP"``.
    unit : str
        What ``done`` and ``total`` count (``"ideals"``).
    """

    def __init__(self, title: str, unit: str = "ideals") -> None:
        self.title = title
        self.unit = unit
        self.started = time.perf_counter()
        self.bar: Any = None
        self.calls = 0
        self.shown = -math.inf  # when the bar was last drawn

    def __call__(self, done: int, total: int) -> None:
        self.calls += 1
        now = time.perf_counter()
        if self.bar is None and now - self.started < PROGRESS_AFTER:
            return
        if self.bar is not None and now - self.shown < PROGRESS_EVERY_S and done < total:
            return
        self.shown = now
        fraction = min(max(done / total, 0.0), 1.0) if total > 0 and math.isfinite(done / total) else 0.0
        text = f"{self.title}: {done:,} of {total:,} {self.unit}"
        if self.bar is None:
            self.bar = st.progress(fraction, text=text)
        else:
            self.bar.progress(fraction, text=text)

    def close(self) -> None:
        """Remove the bar (if it was shown)."""
        if self.bar is not None:
            self.bar.empty()
            self.bar = None
