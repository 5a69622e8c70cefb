"""AppTest of the Parallel plan page (app_pages/7_Parallel_plan.py) and plain tests of its figures.

Every number asserted is recomputed here with the engine and the independent evaluator.
"""

from dataclasses import replace
from pathlib import Path

import pytest

from placement import viz
from placement.multidim.dp import solve_multidim
from placement.multidim.evaluate import evaluate_plan
from placement.multidim.io import read_piper

from .apptest_helpers import start

ROOT = Path(__file__).resolve().parent.parent
BERT = ROOT / "sample_graphs" / "piper" / "bert32a100.json"
PAGE = "app_pages/7_Parallel_plan.py"
GiB = 2**30

pytestmark = pytest.mark.usefixtures("clear_streamlit_caches")


def _bert(count: int):
    p = read_piper(BERT)
    return replace(p, kinds=(replace(p.kinds[0], count=count, memory=8 * GiB, bandwidth=25 * GiB),))


def test_figures_are_plain_functions():
    problem = _bert(64)
    result = solve_multidim(problem)
    ev = evaluate_plan(problem, result.plan)
    rows = viz.multidim_stage_rows(problem, result.plan, ev)
    assert len(rows) == len(result.plan.stages)
    assert [r["d x t"] for r in rows] == [f"{s.d} x {s.t}" for s in result.plan.stages]
    assert max(r["time per sample"] for r in rows) == pytest.approx(result.time_per_sample, rel=1e-9)
    timeline = viz.multidim_timeline_figure(result.plan, ev, microbatches=3)
    assert len(timeline.data) == 3 and list(timeline.data[0].y)[0].startswith("stage 0: ")
    curve = viz.multidim_curve_figure([(8, 0.2), (16, None), (32, 0.05)], selected=32)
    assert list(curve.data[0].x) == [8, 32] and list(curve.data[1].x) == [16]


@pytest.mark.slow
def test_page_bert_512_devices_shows_stage_table_and_curve():
    at = start(PAGE, timeout=600)
    assert at.selectbox(key="md_sample").value == "bert32a100.json"
    at.number_input(key="md_devices").set_value(512)
    at.number_input(key="md_memory").set_value(8.0)
    at.number_input(key="md_bandwidth").set_value(25.0)
    at.run()
    assert not at.exception, at.exception
    problem = _bert(512)
    result = solve_multidim(problem)
    ev = evaluate_plan(problem, result.plan)
    shown = {m.label: m.value for m in at.metric}
    assert shown["time per sample"] == f"{ev.time_per_sample:.6g} s"
    assert ev.time_per_sample <= 0.00256 * 1.001  # Piper's published figure, about 0.00256 s
    assert shown["stages"] == str(len(result.plan.stages))
    table = at.dataframe[0].value
    assert list(table["d x t"]) == [f"{s.d} x {s.t}" for s in result.plan.stages]
    charts = [c for c in at.get("plotly_chart") if not c.key.startswith("lp_")]  # lp_: the launchable-layout section
    assert len(charts) == 2  # timeline and curve
    import json

    curve = json.loads(charts[1].proto.spec)
    xs = curve["data"][0]["x"]
    assert xs == [8, 16, 32, 64, 128, 256, 512, 1024] or isinstance(xs, dict)


@pytest.mark.slow  # over 5 s
def test_page_bad_upload_gives_one_line_error():
    at = start(PAGE, timeout=600)
    at.toggle(key="md_curve_on").set_value(False).run()
    at.file_uploader(key="md_upload").set_value(("bad.json", b'{"maxDevices": 2}', "application/json")).run()
    assert not at.exception, at.exception
    assert len(at.error) == 1
    message = at.error[0].value
    assert message.startswith("bad.json: ") and "missing field 'maxMemoryPerDevice'" in message and "\n" not in message


@pytest.mark.slow  # over 5 s
def test_page_plans_the_graph_loaded_in_the_app():
    """Source "the graph loaded in the app": a GPT builder graph, options generated, plan = engine's plan."""
    from placement.modelling.builders import TransformerConfig, build_transformer
    from placement.multidim.convert import options_from_graph

    built = build_transformer(TransformerConfig(layers=2, hidden=256, heads=4, seq_len=128, vocab=1000))
    at = start(PAGE, timeout=300)
    at.session_state["_ui_base_problem"] = built
    at.session_state["_ui_graph_name"] = "GPT 2x256"
    at.session_state["_ui_devices"] = built.devices
    at.radio(key="md_source").set_value("the graph loaded in the app")
    at.toggle(key="md_curve_on").set_value(False)
    at.run()
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    # defaults: the builder's 4 A100s, 80 GiB, the 300 GB/s link its edges were priced with
    assert at.number_input(key="md_devices_graph").value == 4
    at.number_input(key="md_devices_graph").set_value(8)
    at.number_input(key="md_memory_graph").set_value(1.0)
    at.run()
    assert not at.exception, at.exception
    bandwidth = at.number_input(key="md_bandwidth_graph").value
    problem = options_from_graph(built, devices=8, memory=1.0 * GiB, bandwidth=bandwidth * GiB, microbatches=512)
    result = solve_multidim(problem)
    ev = evaluate_plan(problem, result.plan)
    assert ev.feasible
    shown = {m.label: m.value for m in at.metric}
    assert shown["time per sample"] == f"{ev.time_per_sample:.6g} s"
    assert shown["stages"] == str(len(result.plan.stages))
    rows = at.dataframe[0].value
    assert list(rows["d x t"]) == [f"{s.d} x {s.t}" for s in result.plan.stages]
    # the Piper source keeps its own settings
    at.radio(key="md_source").set_value("a Piper workload")
    at.run()
    assert not at.exception, at.exception
    assert at.selectbox(key="md_sample").value == "bert32a100.json"
