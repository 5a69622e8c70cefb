"""Teaching mode (issue 15 item 4): the step-by-step trace of the DP's recurrence must end on
solve_dp's answer (random small graphs), its read-back split must score that answer in the
evaluator, the lower bound must hold, and the page's controls (AppTest) must work.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

import placement
from placement import evaluate, load_problem, solve_dp, viz
from placement.evaluate import check
from placement.explore.teaching import explain_optimality, lower_bound, pipeline_order, starting_split, trace_dp
from placement.model import DeviceSlot, Placement, Stage
from placement.viz.teaching import node_parts, teaching_graph_figure
from ui.navigation import page_file

from .apptest_helpers import metrics, start
from .randgraphs import brute_force, random_problem

ROOT = Path(__file__).resolve().parent.parent
TINY = ROOT / "sample_graphs" / "ours" / "tiny_training.json"
RESIDUAL = ROOT / "sample_graphs" / "ours" / "teach_residual_inference.json"
BRANCHED = [
    RESIDUAL,
    ROOT / "sample_graphs" / "ours" / "teach_inception_mini_inference.json",
    ROOT / "sample_graphs" / "ours" / "teach_two_branch_training.json",
]
PAGE = page_file("Teaching")


@pytest.mark.parametrize("seed", range(40))
def test_the_trace_ends_on_solve_dps_answer(seed):
    problem = random_problem(seed, training=seed % 2 == 0, max_forward=6)
    trace = trace_dp(problem)
    result = solve_dp(problem)
    if result.status == "infeasible":
        assert trace.answer == math.inf and trace.placement is None
        return
    assert result.status == "optimal"
    assert trace.answer == pytest.approx(result.objective, rel=1e-12, abs=1e-12)
    assert not check(problem, trace.placement)
    assert evaluate(problem, trace.placement).max_load == pytest.approx(trace.answer, rel=1e-12, abs=1e-12)
    assert lower_bound(problem)[0] <= trace.answer + 1e-9


@pytest.mark.parametrize("seed", range(8))
def test_the_lower_bound_never_exceeds_the_brute_force_optimum(seed):
    problem = random_problem(100 + seed, max_forward=5)
    best, _ = brute_force(problem, contiguous=False)  # any split at all, contiguous or not
    bound, reason = lower_bound(problem)
    assert reason
    if best is not None and math.isfinite(best):
        assert bound <= best + 1e-9


def test_replaying_the_steps_gives_the_final_table():
    problem = load_problem(TINY)
    trace = trace_dp(problem)
    table = trace.best_after(len(trace.steps) - 1)
    for ideal, row in enumerate(trace.best):
        for k, state in enumerate(trace.states):
            assert table.get(ideal, {}).get(state, math.inf) == row[k]
    # Steps visit ideals by size, each J with proper subsets I only.
    sizes = [bin(trace.masks[s.ideal]).count("1") for s in trace.steps]
    assert sizes == sorted(sizes)
    assert all(trace.masks[s.previous] & ~trace.masks[s.ideal] == 0 and s.previous != s.ideal for s in trace.steps)


def _as_placement(split):
    used: dict[str, int] = {}
    stages = []
    for kind, nodes in split:
        stages.append(Stage(DeviceSlot(kind, used.get(kind, 0)), nodes))
        used[kind] = used.get(kind, 0) + 1
    return Placement(tuple(stages))


@pytest.mark.parametrize("seed", range(12))
def test_split_for_every_state_scores_its_table_value(seed):
    problem = random_problem(200 + seed, training=seed % 2 == 0, max_forward=5)
    trace = trace_dp(problem)
    for k, state in enumerate(trace.states):
        value = trace.best[trace.full][k]
        split = trace.split_for(state)
        if not math.isfinite(value):
            assert split is None
            continue
        plan = _as_placement(split)
        assert not check(problem, plan)
        for kind, count in zip(trace.types, state):
            assert sum(1 for stage in plan.stages if stage.device.kind == kind) <= count
        assert evaluate(problem, plan).max_load == pytest.approx(value, rel=1e-12, abs=1e-12)
    start = starting_split(trace)
    assert (start is None) == (trace.answer == math.inf)
    if start is not None:
        assert not check(problem, start)


@pytest.mark.parametrize("path", BRANCHED, ids=lambda p: p.stem)
def test_the_teaching_samples_are_branched_and_solved_exactly(path):
    problem = load_problem(path)
    trace = trace_dp(problem)
    sizes = [bin(mask).count("1") for mask in trace.masks]
    assert max(sizes.count(size) for size in set(sizes)) > 1  # the lattice is not a line
    assert trace.answer == pytest.approx(solve_dp(problem).objective, rel=1e-12)
    start = starting_split(trace)
    assert not check(problem, start)  # "beat the solver" starts on a correct split...
    assert evaluate(problem, start).max_load > trace.answer  # ... that can be beaten


@pytest.mark.parametrize("seed", range(12))
def test_pipeline_order_finds_a_contiguous_order_exactly_when_one_exists(seed):
    import itertools
    import random

    problem = random_problem(300 + seed, training=seed % 2 == 0, max_forward=5)
    rng = random.Random(seed)
    slots = problem.devices.slots()[:3]
    assignment = {n.id: rng.choice(slots) for n in problem.graph.nodes}
    order = pipeline_order(problem, assignment)
    used = sorted(set(assignment.values()))
    exists = any(
        placement.is_contiguous(problem, Placement.from_assignment(assignment, order=perm))
        for perm in itertools.permutations(used)
    )
    assert (order is not None) == exists
    if order is not None:
        assert sorted(order) == used
        assert placement.is_contiguous(problem, Placement.from_assignment(assignment, order=order))


def test_not_allowed_says_why():
    trace = trace_dp(load_problem(RESIDUAL))
    reasons = {reason for step in trace.steps for load, reason in zip(step.loads, step.reasons) if load == math.inf}
    assert "input/decode cannot run on accelerator" in reasons
    assert any(r.startswith("memory ") and "61.04 MiB cap of accelerator" in r for r in reasons), reasons
    # Allowed loads have no reason, and every infinite load has one.
    for step in trace.steps:
        for load, reason in zip(step.loads, step.reasons):
            assert (load == math.inf) == bool(reason)


def test_the_graph_figure_highlights_i_and_the_stage():
    problem = load_problem(RESIDUAL)
    trace = trace_dp(problem)
    step = len(trace.steps) // 2
    item = trace.steps[step]
    parts = node_parts(trace, step)
    group_of = {n: g for g, members in enumerate(trace.groups) for n in members}
    for node, part in parts.items():
        g = group_of[node]
        expected = (
            "in I (already split)"
            if trace.masks[item.previous] >> g & 1
            else "stage J \\ I"
            if trace.masks[item.ideal] >> g & 1
            else "outside J"
        )
        assert part == expected
    figure = teaching_graph_figure(problem.graph, trace, step)
    drawn = {n: t.name for t in figure.data[1:] for n in t.customdata}
    assert drawn == parts
    labels = [text for t in figure.data[1:] for text in t.text]
    assert any("input/decode" in text for text in labels)


def test_large_graphs_are_refused_with_one_line():
    problem = load_problem(ROOT / "sample_graphs" / "throughput" / "layer" / "gnmt_inference.json")
    with pytest.raises(placement.InvalidGraphError, match="teaching mode"):
        trace_dp(problem)


def test_explanation_names_the_bottleneck_and_the_search_space():
    problem = load_problem(ROOT / "sample_graphs" / "throughput" / "layer" / "bert24_inference.json")
    plan = solve_dp(problem).placement
    why = explain_optimality(problem, plan)
    evaluation = evaluate(problem, plan)
    assert why.time_per_sample == evaluation.max_load
    assert evaluation.load_of(why.bottleneck).load == evaluation.max_load
    assert (why.ideals, why.pairs) == placement.count_pairs(problem, reduce=False)
    assert 0 < why.lower_bound <= why.time_per_sample


def test_lattice_figure_marks_j_and_i():
    trace = trace_dp(load_problem(TINY))
    figure = viz.lattice_figure(trace, 3)
    drawn = sum(len(t.x) for t in figure.data[1:])
    assert drawn == len(trace.masks)
    names = {t.name: t for t in figure.data[1:]}
    step = trace.steps[3]
    assert names["J (being finished)"].hovertext[0].startswith(f"ideal {step.ideal}:")
    assert names["I (tried)"].hovertext[0].startswith(f"ideal {step.previous}:")


# ----------------------------------------------------------------------------- page
pytestmark_app = pytest.mark.usefixtures("clear_streamlit_caches")


@pytestmark_app
def test_step_forward_and_back_to_the_answer():
    at = start(PAGE)
    trace = trace_dp(load_problem(RESIDUAL))  # the default: a branched sample
    assert at.slider(key="teach_step").value == 1
    assert at.slider(key="teach_step").max == len(trace.steps)
    assert any(f"Step 1 of {len(trace.steps)}" in m.value for m in at.markdown)
    at.button(key="teach_forward").click().run()
    at.button(key="teach_forward").click().run()
    assert at.slider(key="teach_step").value == 3
    at.button(key="teach_back").click().run()
    assert at.slider(key="teach_step").value == 2
    at.slider(key="teach_step").set_value(len(trace.steps)).run()
    assert not at.exception
    expected = solve_dp(load_problem(RESIDUAL)).objective
    assert any(f"{expected:.6g} ms" in s.value and "solve_dp" in s.value for s in at.success)
    # The final row: without the CPU, the CPU-only input leaves no feasible split; with it, the optimum.
    final = {
        row["devices (at most)"]: row["best[J] so far (ms per sample)"] for _, row in at.dataframe[0].value.iterrows()
    }
    assert final["2 accelerator + 0 cpu"] == "∞ (no feasible split)"
    assert final["2 accelerator + 1 cpu"] == f"{expected:.4g} ms"
    assert at.button(key="teach_forward").disabled
    # Some step is not allowed on some device type, and the page says why.
    blocked = next(k for k, step in enumerate(trace.steps) if math.inf in step.loads)
    at.slider(key="teach_step").set_value(blocked + 1).run()
    reason = next(r for r in trace.steps[blocked].reasons if r)
    assert any(reason in m.value for m in at.markdown), reason
    # The presentation mode keeps the page working.
    at.toggle(key="teach_present").set_value(True).run()
    assert not at.exception


@pytestmark_app
def test_why_is_this_optimal_and_beat_the_solver():
    at = start(PAGE)
    at.radio(key="teach_graph").set_value("4-layer chain, training (8 nodes)").run()
    tiny = load_problem(TINY)
    trace = trace_dp(tiny)
    shown = metrics(at)
    # "Why" explains the graph being taught, with the same pair count as the steps.
    why = explain_optimality(tiny, solve_dp(tiny).placement)
    assert shown["Lower bound"] == f"{why.lower_bound:.4g} ms"
    assert shown["Bottleneck device"] == str(why.bottleneck)
    assert shown["Ideals · pairs searched"] == f"{len(trace.masks)} · {len(trace.steps)}"
    # Beat the solver starts on a correct split (no rule broken).
    assert not [w for w in at.warning if "Rules broken" in w.value]

    # Enter the optimal split by hand: gap 0 and no rule broken.
    optimal = solve_dp(tiny).placement
    rows = {i: node.id for i, node in enumerate(tiny.graph.nodes)}
    edits = {i: {"device": str(optimal.device_of[node])} for i, node in rows.items()}
    at.session_state["teach_beat_0"] = {"edited_rows": edits, "added_rows": [], "deleted_rows": []}
    at.run()
    assert not at.exception
    shown = metrics(at)
    assert float(shown["Your time per sample"].removesuffix(" ms")) == pytest.approx(
        evaluate(tiny, optimal).max_load, rel=1e-5
    )
    assert shown["Gap to the optimum"] == "0.0%"
    assert any("matched the optimum" in s.value for s in at.success)

    # Split a color class over two devices: the rule is named.
    node = tiny.graph.nodes[0]
    partner = next(n for n in tiny.graph.nodes if n.id != node.id and n.color_class == node.color_class)
    other = next(str(s) for s in tiny.devices.slots() if s != optimal.device_of[node.id])
    edits = {i: {"device": str(optimal.device_of[n])} for i, n in rows.items()}
    edits[0] = {"device": other}
    at.session_state["teach_beat_0"] = {"edited_rows": edits, "added_rows": [], "deleted_rows": []}
    at.run()
    assert any("color class" in w.value for w in at.warning), [w.value for w in at.warning]
    assert partner.id != node.id


def test_the_textbook_training_graph_is_one_click_from_teaching():
    """Issue 45.5: one button loads the textbook training graph and opens the Timeline on it."""
    at = start(PAGE)
    at.button(key="teach_timeline_textbook").click().run()
    assert not at.exception, at.exception
    assert at.session_state["_ui_graph_name"].endswith("tiny_training")
    assert at.title[0].value == "Timeline"
