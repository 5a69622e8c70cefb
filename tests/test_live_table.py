"""A lowered device count answered from the last DP table (issue 12, item 3), and solve progress.

* :mod:`ui.live` on its own: an answer from the table equals a fresh :func:`solve_dp` (status,
  time per sample; the split is re-checked with the evaluator and is optimal by the brute-force
  oracle), on random problems with several accelerator kinds and CPU cores.
* The app (AppTest): lowering the accelerator count on the Devices page calls neither the DP nor
  the table build again and shows the caption; the Placement page shows the same answer and can
  solve afresh; a raised count or another changed setting solves again.
* Progress: the app's bar appears only when a solve runs past :data:`ui.live.PROGRESS_AFTER`;
  the CLI writes its progress to stderr and keeps ``--json`` clean.
"""

from __future__ import annotations

import itertools
import json
import math
from concurrent.futures import wait
from dataclasses import replace

import pytest

import placement.exact.dp as dp_module
from placement import Problem, evaluate, load_problem, solve_dp
from ui import live
from ui.navigation import page_file

from .apptest_helpers import ROOT, goto, metrics, start
from .oracle import brute_force
from .randgraphs import random_problem

DEFAULT = ROOT / "sample_graphs" / "throughput" / "layer" / "bert24_inference.json"


@pytest.fixture
def no_table():
    live.forget()
    yield
    live.forget()


def lowered(problem: Problem, accelerators: tuple[int, ...], cpus: int) -> Problem:
    kinds = tuple(replace(kind, count=n) for kind, n in zip(problem.devices.accelerators, accelerators))
    return Problem(problem.graph, problem.devices.with_changes(accelerators=kinds, cpus=cpus))


def every_lower_count(problem: Problem):
    counts, cpus = live.counts_of(problem.devices)
    ranges = [range(n + 1) for n in counts] + [range(cpus + 1)]
    for combo in itertools.product(*ranges):
        yield tuple(combo[:-1]), combo[-1]


# ----------------------------------------------------------------------------- ui.live on its own
@pytest.mark.parametrize("seed", range(12))
def test_answers_from_the_table_equal_a_fresh_solve_and_the_oracle(seed, no_table):
    problem = random_problem(seed, kinds=1 + seed % 3, max_accelerators=3, rich=seed % 2 == 0)
    optimum = solve_dp(problem).objective or math.inf  # infeasible: no cut
    live.keep(problem, {}, optimum)
    answered = 0
    for accelerators, cpus in every_lower_count(problem):
        smaller = lowered(problem, accelerators, cpus)
        result = live.answer(smaller, {})
        if (accelerators, cpus) == live.counts_of(problem.devices):
            assert result is None  # the full solve (tie-broken, cached) answers the solved counts
            continue
        fresh = solve_dp(smaller)
        if result is None:
            continue  # the table could not prove it (memory of merged nodes, over the bound): solved afresh
        answered += 1
        assert result.status == fresh.status == "optimal"
        assert result.objective == fresh.objective
        assert live.from_table(result) and result.method == "dp"
        checked = evaluate(smaller, result.placement)
        assert checked.feasible and checked.max_load == fresh.objective
        best, _ = brute_force(smaller, contiguous=True)
        assert math.isclose(checked.max_load, best, rel_tol=1e-9, abs_tol=1e-12)


@pytest.mark.parametrize("name", ["layer/bert24_inference", "operator/resnet50_inference"])
def test_every_lower_count_with_a_split_is_answered(name, no_table):
    """Not a test that passes by answering nothing: every lower count with an optimum within the cut is answered."""
    problem = load_problem(ROOT / "sample_graphs" / "throughput" / f"{name}.json")
    optimum = solve_dp(problem).objective
    live.keep(problem, {}, optimum)
    answered = 0
    for accelerators, cpus in every_lower_count(problem):
        if (accelerators, cpus) == live.counts_of(problem.devices):
            continue
        smaller = lowered(problem, accelerators, cpus)
        result, fresh = live.answer(smaller, {}), solve_dp(smaller)
        if fresh.status != "optimal" or fresh.objective > live.TABLE_BOUND * optimum:
            assert result is None  # no split, or beyond the table's cut: solved afresh
            continue
        assert result is not None, (accelerators, cpus)
        assert result.objective == fresh.objective
        answered += 1
    assert answered >= 5


def test_a_lattice_past_the_cap_keeps_no_table_and_says_why(no_table, monkeypatch):
    """The build's pure-Python setup shares the GIL with the server: past LIVE_MAX_IDEALS nothing is built."""
    problem = load_problem(DEFAULT)
    fresh = solve_dp(problem)
    ideals = fresh.stat("ideals")
    assert live.note(fresh) is None  # under the cap: no caption, and a table is kept
    live.keep(problem, {}, fresh.objective, ideals=ideals)
    assert live.st.session_state["_ui_live_table"] is not None
    live.forget()
    monkeypatch.setattr(live, "LIVE_MAX_IDEALS", ideals - 1)
    live.keep(problem, {}, fresh.objective, ideals=ideals)
    assert live.st.session_state["_ui_live_table"] is None
    (count,), cpus = live.counts_of(problem.devices)
    assert live.answer(lowered(problem, (count - 1,), cpus), {}) is None  # solved afresh
    caption = live.note(fresh)
    assert caption is not None and f"{ideals:,} ideals" in caption and "\n" not in caption


def test_no_answer_for_a_raised_count_or_other_settings(no_table):
    problem = load_problem(DEFAULT)
    optimum = solve_dp(problem).objective
    live.keep(problem, {}, optimum)
    (count,), cpus = live.counts_of(problem.devices)
    assert live.answer(lowered(problem, (count - 1,), cpus), {}) is not None
    assert live.answer(lowered(problem, (count + 1,), cpus), {}) is None
    assert live.answer(lowered(problem, (count - 1,), cpus + 1), {}) is None
    other = Problem(problem.graph, problem.devices.with_changes(bandwidth=2.0))
    assert live.answer(lowered(other, (count - 1,), cpus), {}) is None
    assert live.answer(lowered(problem, (count - 1,), cpus), {"tie_break": False}) is None
    scaled = Problem(problem.graph.with_latency_scale("*", 2.0), problem.devices)
    assert live.answer(lowered(scaled, (count - 1,), cpus), {}) is None


# ----------------------------------------------------------------------------- the app
class Calls:
    """Counts the DP's solves and table builds (both still run)."""

    def __init__(self, monkeypatch):
        self.solves = 0
        self.tables = 0
        solve, table = dp_module.solve_dp, live.solve_dp_table

        def counted_solve(*args, **kwargs):
            self.solves += 1
            return solve(*args, **kwargs)

        def counted_table(*args, **kwargs):
            self.tables += 1
            return table(*args, **kwargs)

        monkeypatch.setattr(dp_module, "solve_dp", counted_solve)  # placement.solve looks it up by name
        monkeypatch.setattr(live, "solve_dp_table", counted_table)

    def reset(self):
        self.solves = self.tables = 0


def shown_time(at) -> float:
    return float(metrics(at)["Time per sample"].split()[0])


def engine_time(problem: Problem) -> float:
    result = solve_dp(problem)
    assert result.status == "optimal"
    return evaluate(problem, result.placement).max_load


def captions(at) -> str:
    return " ".join(c.value for c in at.caption)


def built(at) -> None:
    """Wait until the table kept by the app's session (built in a background thread) is ready."""
    kept = at.session_state["_ui_live_table"] if "_ui_live_table" in at.session_state else None
    if kept is not None:
        wait([kept.table])


def run(widget) -> None:
    """Run the page after a widget change; wait for a table build it started."""
    at = widget.run()
    assert not at.exception, at.exception
    built(at)


@pytest.fixture
def devices_page(monkeypatch, clear_streamlit_caches):
    calls = Calls(monkeypatch)
    at = start(page_file("Devices"))
    built(at)
    assert calls.solves == 1 and calls.tables == 1  # the first solve keeps its table
    calls.reset()
    return at, calls


def test_a_lowered_count_is_answered_from_the_table_without_the_dp(devices_page):
    at, calls = devices_page
    problem = load_problem(DEFAULT)
    run(at.slider(key="dev_count").set_value(4))
    assert not at.exception
    assert calls.solves == 0 and calls.tables == 0
    assert "Answered from the last table" in captions(at)
    assert "6 x accelerator, 1 CPU core" in captions(at)
    smaller = lowered(problem, (4,), 1)
    assert shown_time(at) == pytest.approx(engine_time(smaller), rel=1e-5)
    assert metrics(at)["Solve status"] == "optimal"
    run(at.slider(key="dev_cpus").set_value(0))  # both counts down
    assert calls.solves == 0 and calls.tables == 0
    assert shown_time(at) == pytest.approx(engine_time(lowered(problem, (4,), 0)), rel=1e-5)

    # The Placement page shows the same answer, from the table too, and says so.
    goto(at, page_file("Placement"))
    assert calls.solves == 0 and calls.tables == 0
    assert "Answered from the last table" in captions(at)
    assert shown_time(at) == pytest.approx(engine_time(lowered(problem, (4,), 0)), rel=1e-5)
    assert metrics(at)["Status"] == "optimal"
    # "Solve afresh" runs the full DP (tie-break) for these counts: same time per sample, no caption.
    run(at.button(key="pl_solve_afresh").click())
    assert not at.exception
    assert calls.solves == 1 and calls.tables == 0  # the kept table (6 accelerators) still covers these counts
    assert "Answered from the last table" not in captions(at)
    assert shown_time(at) == pytest.approx(engine_time(lowered(problem, (4,), 0)), rel=1e-5)


def test_the_solved_counts_again_use_the_full_solve(devices_page):
    at, calls = devices_page
    run(at.slider(key="dev_count").set_value(3))
    assert "Answered from the last table" in captions(at)
    run(at.slider(key="dev_count").set_value(6))  # back to the solved counts: the cached full solve
    assert calls.solves == 0 and calls.tables == 0
    assert "Answered from the last table" not in captions(at)


def test_a_raised_count_solves_again(devices_page):
    at, calls = devices_page
    problem = load_problem(DEFAULT)
    run(at.slider(key="dev_count").set_value(8))
    assert not at.exception
    assert calls.solves == 1 and calls.tables == 1  # solved, and the new table kept
    assert "Answered from the last table" not in captions(at)
    assert shown_time(at) == pytest.approx(engine_time(lowered(problem, (8,), 1)), rel=1e-5)
    calls.reset()
    run(at.slider(key="dev_count").set_value(7))  # lower than 8: from the new table
    assert calls.solves == 0 and "Answered from the last table" in captions(at)
    assert "8 x accelerator" in captions(at)


def test_another_changed_setting_solves_again(devices_page):
    at, calls = devices_page
    problem = load_problem(DEFAULT)
    run(at.slider(key="dev_bandwidth").set_value(0.5))
    assert calls.solves == 1 and calls.tables == 1
    calls.reset()
    run(at.slider(key="dev_count").set_value(4))  # lower than the new table's counts: answered
    assert calls.solves == 0
    assert "Answered from the last table" in captions(at)
    devices = problem.devices.with_kind("accelerator", count=4).with_changes(bandwidth=0.5)
    assert shown_time(at) == pytest.approx(engine_time(Problem(problem.graph, devices)), rel=1e-5)
    calls.reset()
    run(at.toggle(key="dev_overlap").set_value(True))  # another setting: solved afresh, not from the table
    assert calls.solves == 1
    assert "Answered from the last table" not in captions(at)


def test_the_training_memory_model_never_uses_the_table(devices_page):
    at, calls = devices_page
    run(at.radio(key="dev_mm_kind").set_value("training"))
    run(at.slider(key="dev_count").set_value(4))
    assert not at.exception
    assert "Answered from the last table" not in captions(at)
    assert calls.tables == 0  # the memory-aware DP keeps no table


# ----------------------------------------------------------------------------- progress
def progress_texts(at) -> list[str]:
    return [element.proto.text for element in at.get("progress")]


def test_the_app_shows_progress_only_for_a_solve_past_the_threshold(monkeypatch, clear_streamlit_caches):
    shown: list[tuple[int, int]] = []
    update = live.SolveProgress.__call__

    def record(self, done, total):
        update(self, done, total)
        if self.bar is not None:
            shown.append((done, total))

    monkeypatch.setattr(live.SolveProgress, "__call__", record)
    at = start(page_file("Devices"))  # BERT-24: a few ms, under the 1 s threshold
    assert not at.exception and shown == []
    monkeypatch.setattr(live, "PROGRESS_AFTER", 0.0)
    run(at.slider(key="dev_count").set_value(9))  # a raised count: a fresh solve, now past the threshold
    assert not at.exception
    assert shown, "no progress bar although the threshold is 0 s"
    assert all(0 <= done <= total for done, total in shown)
    assert progress_texts(at) == []  # removed when the solve ended


def test_a_shown_bar_is_redrawn_at_most_every_interval_and_always_at_the_end(monkeypatch):
    drawn: list[str] = []

    class Bar:
        def progress(self, fraction, text):
            drawn.append(text)

    progress = live.SolveProgress("Exact DP")
    progress.bar = Bar()  # shown already
    progress(1, 10)
    progress(2, 10)  # within PROGRESS_EVERY_S of the last: not drawn (each draw re-renders the browser's page)
    progress(10, 10)  # the last report: drawn
    assert drawn == ["Exact DP: 1 of 10 ideals", "Exact DP: 10 of 10 ideals"]
    monkeypatch.setattr(live, "PROGRESS_EVERY_S", 0.0)
    progress(3, 10)
    assert drawn[-1] == "Exact DP: 3 of 10 ideals"


def test_cli_progress_goes_to_stderr_and_json_stays_clean(monkeypatch, capsys):
    from placement import cli

    graph = ROOT / "sample_graphs" / "throughput" / "layer" / "resnet50_inference.json"
    assert cli.main(["solve", str(graph), "--json"]) == 0
    quiet = capsys.readouterr()
    assert quiet.err == ""  # a quick solve reports no progress
    monkeypatch.setattr(cli, "PROGRESS_AFTER", -1.0)  # report from the first callback on
    assert cli.main(["solve", str(graph), "--json"]) == 0
    forced = capsys.readouterr()
    data = json.loads(forced.out)  # stdout is exactly the JSON document
    assert data["status"] == "optimal"
    assert data["objective"] == json.loads(quiet.out)["objective"]
    lines = [part for part in forced.err.replace("\r", "\n").splitlines() if part]
    assert lines and all(line.startswith("dp: ") and line.endswith("%)") and " ideals (" in line for line in lines)
    done, total = (int(x.replace(",", "")) for x in lines[-1].removeprefix("dp: ").split(" ideals")[0].split(" / "))
    assert 0 < done <= total
    assert forced.err.endswith("\n")


def test_waiting_for_a_table_build_shows_its_ideals(monkeypatch, no_table):
    """A lowered count that arrives while the table is still being built waits with the build's counts shown."""
    import threading
    from concurrent.futures import Future

    seen: list[tuple[int, int]] = []
    monkeypatch.setattr(live.SolveProgress, "__call__", lambda self, done, total: seen.append((done, total)))
    problem = load_problem(DEFAULT)
    table = dp_module.solve_dp_table(problem, bound=math.inf)
    searched = live._Searched()
    searched(5, 10)  # what the build's thread reported so far
    pending: Future = Future()
    kept = live._Kept(live.rest_key(problem, {}), live.counts_of(problem.devices), pending, searched)
    threading.Timer(0.3, pending.set_result, [table]).start()
    assert live._table(kept) is table
    assert seen and set(seen) == {(5, 10)}


@pytest.mark.slow  # over 5 s
def test_a_build_slower_than_the_fresh_solve_is_stopped_not_waited_for(no_table):
    """On a wide graph the table takes far longer than a solve: a lowered count waits at most the solve's time."""
    import time

    problem = load_problem(ROOT / "sample_graphs" / "ours" / "inception_wide_inference.json")
    fresh = solve_dp(problem)
    live.keep(problem, {}, fresh.objective, fresh_seconds=0.2)
    kept = live.st.session_state["_ui_live_table"]
    (count,), cpus = live.counts_of(problem.devices)
    started = time.perf_counter()
    assert live.answer(lowered(problem, (count - 1,), cpus), {}) is None  # the caller solves afresh
    assert time.perf_counter() - started < 5.0  # not the table's tens of seconds
    assert live.st.session_state["_ui_live_table"] is None  # the stopped table is dropped
    done, _ = wait([kept.table], timeout=60)  # the build ends at its next progress report
    assert done and isinstance(kept.table.exception(), live._Stopped)
