"""The Teaching page's texts and tables (ui.teaching) as plain functions, without Streamlit."""

import math

import pytest

import placement
from placement import evaluate, load_problem, solve_dp
from placement.explore.teaching import MAX_TEACHING_GROUPS, explain_optimality, trace_dp
from ui import teaching as te

from .conftest import SAMPLES


@pytest.fixture(scope="module")
def taught():
    problem = load_problem(te.SAMPLES[next(iter(te.SAMPLES))])
    return problem, trace_dp(problem)


def test_every_teaching_sample_exists_and_is_small():
    for path in te.SAMPLES.values():
        problem = load_problem(path)
        assert placement.contract(problem.graph).count <= MAX_TEACHING_GROUPS


def test_graph_choices_offer_the_current_graph_only_when_small():
    small = load_problem(te.SAMPLES[next(iter(te.SAMPLES))])
    options, groups = te.graph_choices(small)
    assert options[-1] == te.CURRENT and groups == placement.contract(small.graph).count
    big = load_problem(SAMPLES / "throughput" / "layer" / "bert24_inference.json")
    options, groups = te.graph_choices(big)
    assert te.CURRENT not in options and groups > MAX_TEACHING_GROUPS
    assert te.graph_choices(None) == (list(te.SAMPLES), math.inf)


def test_ms_cell_and_state_label():
    assert te.ms_cell(1.23456) == "1.235 ms"
    assert te.ms_cell(math.inf) == "∞ (none yet)"
    assert te.ms_cell(math.inf, final=True) == "∞ (no feasible split)"
    assert te.state_label((2, 1), ("accelerator", "cpu")) == "2 accelerator + 1 cpu"
    assert te.state_label((), ()) == "no devices"


def test_best_rows_end_on_the_dp_answer(taught):
    problem, trace = taught
    rows = te.best_rows(trace, len(trace.steps) - 1)
    assert len(rows) == len(trace.states)
    full = te.state_label(trace.states[-1], trace.types)
    best = next(row for row in rows if row["devices (at most)"] == full)
    assert best["best[J] so far (ms per sample)"] == te.ms_cell(trace.answer, final=True)
    assert solve_dp(problem).objective == pytest.approx(trace.answer)


def test_stage_text_names_the_stage(taught):
    problem, trace = taught
    names = {node.id: node.name or str(node.id) for node in problem.graph.nodes}
    text = te.stage_text(trace, 0, names)
    assert text.startswith("**Stage J \\ I** = groups g")
    assert all(names[n] in text for n in trace.steps[0].stage_nodes)


def test_why_text_and_broken_rules(taught):
    problem, trace = taught
    optimum = solve_dp(problem)
    why = explain_optimality(problem, optimum.placement)
    text = te.why_text(why, len(trace.masks), len(trace.steps))
    assert f"{len(trace.steps):,} pairs" in text and str(why.bottleneck) in text
    assert te.broken_rules(problem, optimum.placement, evaluate(problem, optimum.placement)) == []


def test_starting_frame_is_a_valid_split(taught):
    problem, trace = taught
    frame = te.starting_frame(problem, trace)
    assert sorted(frame["node"]) == sorted(n.id for n in problem.graph.nodes)
    assert set(frame["device"]) <= {str(slot) for slot in problem.devices.slots()}
