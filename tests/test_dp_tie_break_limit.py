"""The DP's tie-break pass under its work limit (:func:`placement.exact.dp.solve_dp`, ``tie_break_max_pairs``).

Past the limit the pass is not made: the result is the max-load pass's optimal split, and its stats
and one line (CLI and the Placement page) say so. The estimate that decides is checked against the
pairs the pass really searches, and the decision against a second solve (deterministic).
"""

from __future__ import annotations

import json
import math

import pytest

import placement.exact.limits as limits
from placement import evaluate, load_problem, solve, solve_dp
from placement.cli import main
from placement.exact.limits import tie_break_note
from placement.model import Status
from placement.solve import METHODS
from ui.navigation import page_file

from .apptest_helpers import ROOT, start
from .randgraphs import random_problem
from .test_dp_prune import _durations

GRAPH = ROOT / "sample_graphs" / "throughput" / "operator" / "bert_l-3_training.json"
SMALL_LIMIT = 1000  # pairs: far below this graph's pass


@pytest.fixture(scope="module")
def problem():
    return load_problem(GRAPH)


@pytest.fixture(scope="module")
def made(problem):
    return solve_dp(problem, tie_break_max_pairs=math.inf)


@pytest.fixture(scope="module")
def skipped(problem):
    return solve_dp(problem, tie_break_max_pairs=SMALL_LIMIT)


def test_a_skipped_pass_keeps_the_optimal_max_load(problem, made, skipped):
    assert made.stat("tie_break") == "made"
    assert skipped.stat("tie_break") == "skipped"
    assert skipped.stat("tie_break_limit") == SMALL_LIMIT
    assert skipped.status == Status.OPTIMAL and made.status == Status.OPTIMAL
    assert skipped.objective == made.objective
    assert evaluate(problem, skipped.placement).max_load == skipped.objective
    # The pass's split is the least (sum of durations, stages) among the optimal ones.
    assert _durations(problem, made.placement) <= _durations(problem, skipped.placement)


def test_the_estimate_is_near_the_pairs_the_pass_searches(problem, made, skipped):
    plain = solve_dp(problem, tie_break=False)
    assert plain.stat("tie_break") == "off"
    searched = made.stat("pairs") - plain.stat("pairs")  # the pass alone
    estimate = skipped.stat("tie_break_pairs")
    assert searched > SMALL_LIMIT
    assert 0.5 * searched <= estimate <= 2.0 * searched, (estimate, searched)
    assert skipped.stat("pairs") == plain.stat("pairs")  # the sample's pairs are not the result's


def test_the_decision_is_deterministic(problem, skipped):
    again = solve_dp(problem, tie_break_max_pairs=SMALL_LIMIT)
    assert again.stat("tie_break_pairs") == skipped.stat("tie_break_pairs")
    assert again.placement == skipped.placement


def test_a_limit_above_the_estimate_makes_the_pass(problem, made, skipped):
    enough = solve_dp(problem, tie_break_max_pairs=skipped.stat("tie_break_pairs"))
    assert enough.stat("tie_break") == "made"
    assert enough.placement == made.placement


@pytest.mark.parametrize("seed", range(12))
def test_small_problems_make_the_pass_without_an_estimate(seed):
    problem = random_problem(seed, training=seed % 2 == 1)
    result = solve_dp(problem)
    if result.ok:
        assert result.stat("tie_break") == "made"
        assert result.stat("tie_break_pairs") == 0
        assert result.placement == solve_dp(problem, tie_break_max_pairs=math.inf).placement


def test_the_note_says_what_was_skipped(made, skipped):
    assert tie_break_note(made) is None
    note = tie_break_note(skipped)
    assert note is not None and "\n" not in note
    assert note.startswith("tie-break skipped") and "M ideal pairs" in note and "0.0 M)" in note


def test_the_limit_is_a_registry_option():
    option = next(o for o in METHODS["dp"].options if o.name == "tie_break_max_pairs")
    assert option.default is None and f"{limits.TIE_BREAK_MAX_PAIRS:,}" in option.help


def test_solve_passes_the_limit_through(problem, skipped):
    assert solve(problem, "dp", tie_break_max_pairs=SMALL_LIMIT).placement == skipped.placement


def test_cli_prints_the_note_and_inf_makes_the_pass(capsys):
    assert main(["solve", str(GRAPH), "--method", "dp", "--tie-break-max-pairs", str(SMALL_LIMIT)]) == 0
    out = capsys.readouterr().out
    assert "note: tie-break skipped" in out and "--tie-break-max-pairs inf" in out
    assert main(["solve", str(GRAPH), "--method", "dp", "--tie-break-max-pairs", "inf", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["stats"]["tie_break"] == "made"


def test_cli_refuses_a_bad_limit(capsys):
    with pytest.raises(SystemExit) as stop:  # argparse's own refusal
        main(["solve", str(GRAPH), "--method", "dp", "--tie-break-max-pairs", "-1"])
    assert stop.value.code == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "tie-break-max-pairs" in err.replace("_", "-")


@pytest.mark.slow
def test_placement_page_says_so_and_its_button_makes_the_pass(monkeypatch, clear_streamlit_caches, made):
    monkeypatch.setattr(limits, "TIE_BREAK_MAX_PAIRS", SMALL_LIMIT)
    at = start(page_file("Graph"))
    at.selectbox(key="graph_sample").set_value("throughput/operator/bert_l-3_training").run()
    at.switch_page(page_file("Placement")).run()
    assert not at.exception, at.exception
    captions = " ".join(c.value for c in at.caption)
    assert "Tie-break skipped" in captions
    at.button(key="pl_tie_break_full").click().run()
    assert not at.exception, at.exception
    assert "Tie-break skipped" not in " ".join(c.value for c in at.caption)
    assert not any(b.key == "pl_tie_break_full" for b in at.button)
