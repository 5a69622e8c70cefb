"""Linked plan views and plan diff (issue 15 item 2): the package's diff, the figures, and the
Plan view page (AppTest). Numbers are recomputed with solve_dp + evaluate, never copied.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import placement
from placement import Problem, evaluate, load_problem, solve_dp, viz
from placement.explore.diff import plan_diff
from ui.navigation import page_file

from .apptest_helpers import goto, metrics, start

ROOT = Path(__file__).resolve().parent.parent
DEFAULT = ROOT / "sample_graphs" / "throughput" / "layer" / "bert24_inference.json"
PAGE = page_file("Plan view")


def with_count(problem: Problem, count: int) -> Problem:
    return Problem(problem.graph, problem.devices.with_kind("accelerator", count=count))


# ----------------------------------------------------------------------------- package
def test_plan_diff_counts_moved_nodes_and_deltas_from_the_evaluator():
    base = load_problem(DEFAULT)
    a, b = with_count(base, 6), with_count(base, 3)
    plan_a, plan_b = solve_dp(a).placement, solve_dp(b).placement
    diff = plan_diff(a, plan_a, b, plan_b)
    where_a, where_b = plan_a.device_of, plan_b.device_of
    assert {n for n, _, _ in diff.moved} == {n.id for n in base.graph.nodes if where_a.get(n.id) != where_b.get(n.id)}
    assert diff.time_a == evaluate(a, plan_a).max_load and diff.time_b == evaluate(b, plan_b).max_load
    for delta in diff.devices:
        entry_a, entry_b = evaluate(a, plan_a).load_of(delta.device), evaluate(b, plan_b).load_of(delta.device)
        assert delta.load_a == (entry_a.load if entry_a else 0.0)
        assert delta.load_b == (entry_b.load if entry_b else 0.0)
        assert delta.memory_delta == (entry_b.memory if entry_b else 0.0) - (entry_a.memory if entry_a else 0.0)
    assert sum(d.nodes_a for d in diff.devices) == len(base.graph.nodes) == sum(d.nodes_b for d in diff.devices)
    same = plan_diff(a, plan_a, a, plan_a)
    assert same.identical and not same.moved and same.time_delta == 0


def test_plan_diff_refuses_plans_of_different_graphs():
    base = load_problem(DEFAULT)
    tiny = load_problem(ROOT / "sample_graphs" / "ours" / "tiny_training.json")
    with pytest.raises(placement.InvalidSplitError, match="different graphs"):
        plan_diff(base, solve_dp(base).placement, tiny, solve_dp(tiny).placement)


def test_figures_for_linked_views():
    base = load_problem(DEFAULT)
    result = solve_dp(base)
    evaluation = evaluate(base, result.placement)
    labels = [str(s) for s in base.devices.slots()]
    device = str(result.placement.stages[1].device)
    graph = viz.highlight_device(viz.graph_figure(base.graph, device_of=result.placement.device_of), device, labels)
    faded = {t.name: t.opacity for t in graph.data if t.name in labels}
    assert faded[device] is None and all(v == 0.2 for k, v in faded.items() if k != device)
    load = viz.highlight_device(viz.load_figure(evaluation, slots=base.devices.slots()), device, labels)
    band = load.layout.shapes[-1]
    assert band.x0 == labels.index(device) - 0.5 and band.x1 == labels.index(device) + 0.5
    curve = viz.count_curve_figure([1, 2, 3], [5.0, None, 2.0], selected=3)
    assert list(curve.data[0].x) == [1, 3] and list(curve.data[1].x) == [2] and curve.data[1].y[0] == 2.0
    diff = plan_diff(base, result.placement, with_count(base, 2), solve_dp(with_count(base, 2)).placement)
    figure = viz.plan_diff_figure(diff)
    assert list(figure.data[0].y) == [d.load_a for d in diff.devices]
    assert len(viz.plan_diff_rows(diff)) == len(diff.devices)


# ----------------------------------------------------------------------------- page
pytestmark_app = pytest.mark.usefixtures("clear_streamlit_caches")


def ms(text: str) -> float:
    """The number of a shown time ("32.2429 ms" -> 32.2429); the unit must be ms (the graphs' unit)."""
    value, unit = text.replace(",", "").split()
    assert unit == "ms"
    return float(value)


def chart(at, key: str) -> dict:
    for element in at.get("plotly_chart"):
        if element.proto.id and key in element.proto.id:
            return json.loads(element.proto.spec)
    raise AssertionError(f"no chart {key!r}")


def legend_devices(spec: dict) -> list[str]:
    return [
        t["name"]
        for t in spec["data"]
        if t.get("name", "").startswith("accelerator") and not t["name"].endswith(" peak")
    ]


@pytestmark_app
def test_a_clicked_curve_point_updates_every_linked_view_and_a_clicked_bar_highlights_a_device():
    at = start(PAGE)
    base = load_problem(DEFAULT)
    assert ms(metrics(at)["Time per sample"]) == pytest.approx(
        evaluate(base, solve_dp(base).placement).max_load, rel=1e-5
    )
    # Click the point for 3 accelerators.
    at.session_state["plan_curve"] = {
        "selection": {"points": [{"x": 3, "y": 0.0, "curve_number": 0, "point_index": 2}]}
    }
    at.run()
    assert not at.exception
    three = with_count(base, 3)
    plan = solve_dp(three).placement
    expected = evaluate(three, plan).max_load
    assert ms(metrics(at)["Time per sample"]) == pytest.approx(expected, rel=1e-5)
    used = sorted(str(s.device) for s in plan.stages)
    assert sorted(legend_devices(chart(at, "plan_graph"))) == used
    gantt_rows = {y for t in chart(at, "plan_gantt")["data"] for y in (t.get("y") or [])}
    assert {row.split(" (")[0] for row in gantt_rows} == set(used)
    assert sorted(legend_devices(chart(at, "plan_memory"))) == used
    load = chart(at, "plan_load")
    assert max(s["y0"] for s in load["layout"]["shapes"] if s.get("y0") is not None) == pytest.approx(expected)

    # Click the second device's bar: every view highlights it.
    device = str(plan.stages[1].device)
    at.session_state["plan_load"] = {"selection": {"points": [{"x": device, "curve_number": 0}]}}
    at.run()
    assert at.selectbox(key="plan_device").value == device
    graph = chart(at, "plan_graph")
    assert all(t.get("opacity") == 0.2 for t in graph["data"] if t.get("name") in used and t["name"] != device)
    bands = chart(at, "plan_gantt")["layout"]["shapes"]
    assert any(s.get("fillcolor", "").startswith("rgba(255, 215, 0") for s in bands)
    assert f"Load of {device}" in metrics(at)

    # The same plan shows on the Placement page.
    goto(at, page_file("Placement"))
    assert ms(metrics(at)["Time per sample"]) == pytest.approx(expected, rel=1e-5)


@pytestmark_app
def test_pin_a_plan_change_devices_and_see_the_difference():
    at = start(PAGE)
    base = load_problem(DEFAULT)
    at.button(key="plan_pin").click().run()
    goto(at, page_file("Devices"))
    at.slider(key="dev_count").set_value(4).run()
    goto(at, PAGE)
    four = with_count(base, 4)
    diff = plan_diff(base, solve_dp(base).placement, four, solve_dp(four).placement)
    shown = metrics(at)
    assert ms(shown["Time per sample A"]) == pytest.approx(diff.time_a, rel=1e-5)
    assert ms(shown["Time per sample B"]) == pytest.approx(diff.time_b, rel=1e-5)
    assert shown["Nodes moved"] == f"{len(diff.moved)} of {len(base.graph.nodes)}"
    table = next(frame.value for frame in at.dataframe if list(frame.value.columns) == ["node", "name", "A", "B"])
    assert sorted(table["node"]) == sorted(n for n, _, _ in diff.moved)
    at.button(key="plan_unpin").click().run()
    assert "Nodes moved" not in metrics(at)
