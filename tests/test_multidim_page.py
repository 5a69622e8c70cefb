"""AppTest of the Parallel plan page (``page_file("Parallel plan")``) and plain tests of its figures.

Every number asserted is recomputed here with the engine and the independent evaluator.
"""

from dataclasses import replace
from pathlib import Path

import pytest

from placement import viz
from placement.multidim.dp import solve_multidim
from placement.multidim.evaluate import evaluate_plan
from placement.multidim.io import read_piper
from ui.navigation import page_file

from .apptest_helpers import start

ROOT = Path(__file__).resolve().parent.parent
BERT = ROOT / "sample_graphs" / "piper" / "bert32a100.json"
GiB = 2**30
PAGE = page_file("Parallel plan")

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
    # the model's ms shown as ms (through the page's figure view); compute + communication = the stage time
    assert max(r["time per sample (ms)"] for r in rows) == pytest.approx(result.time_per_sample, rel=1e-9)
    for r, cost in zip(rows, ev.stages):
        assert r["compute (ms)"] + r["communication (ms)"] == pytest.approx(cost.time, rel=1e-9)
    timeline = viz.multidim_timeline_figure(result.plan, ev, microbatches=3)
    assert [t.name for t in timeline.data] == ["compute (ms)", "communication (ms)"]
    compute, communication = timeline.data
    assert list(compute.y)[0] == f"stage 0: {result.plan.stages[0].d} x {result.plan.stages[0].t} device"
    assert list(compute.text)[: len(rows)] == ["sample 0"] * len(rows)
    assert "ms" in compute.hovertemplate and "ms" in timeline.layout.xaxis.title.text
    # the hover shows each part's duration and start (not the bar's end, Plotly's %{x} with a base)
    assert "%{customdata[1]:.4g} ms, from %{customdata[2]:.4g} ms" in compute.hovertemplate
    assert [list(c) for c in compute.customdata[:1]] == [["sample 0", compute.x[0], compute.base[0]]]
    for i, cost in enumerate(ev.stages):  # sample 0 of stage i: its two parts add up to the stage time in ms
        assert compute.x[i] + communication.x[i] == pytest.approx(cost.time, rel=1e-9)
        assert communication.base[i] == pytest.approx(compute.base[i] + compute.x[i])
    curve = viz.multidim_curve_figure([(8, 200.0), (16, None), (32, 50.0)], selected=32)
    assert list(curve.data[0].x) == [8, 32] and list(curve.data[1].x) == [16]
    assert "ms" in curve.layout.yaxis.title.text and " ms" in curve.data[0].hovertemplate


@pytest.mark.slow
def test_page_bert_512_devices_shows_stage_table_and_curve():
    at = start(PAGE, timeout=600)
    at.radio(key="md_source").set_value("a Piper workload").run()
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
    assert shown["time per sample"] == f"{ev.time_per_sample:.6g} ms"
    assert ev.time_per_sample <= 2.56 * 1.001  # Piper's published figure, about 0.00256 s = 2.56 ms
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
    at.toggle(key="md_curve_on").set_value(False)
    at.radio(key="md_source").set_value("a Piper workload").run()
    at.file_uploader(key="md_upload").set_value(("bad.json", b'{"maxDevices": 2}', "application/json")).run()
    assert not at.exception, at.exception
    assert len(at.error) == 1
    message = at.error[0].value
    assert message.startswith("bad.json: ") and "missing field 'maxMemoryPerDevice'" in message and "\n" not in message


@pytest.mark.slow  # over 5 s
def test_page_plans_the_graph_loaded_in_the_app():
    """Source "the graph loaded in the app": a GPT builder graph, options generated, plan = engine's plan."""
    from placement.modelling.builders import build_transformer
    from placement.multidim.convert import options_from_graph
    from placement.perf.transformer import TransformerSpec

    built = build_transformer(TransformerSpec(layers=2, hidden=256, heads=4, seq_length=128, vocab=1000))
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
    assert shown["time per sample"] == f"{ev.time_per_sample:.6g} ms"
    assert shown["stages"] == str(len(result.plan.stages))
    rows = at.dataframe[0].value
    assert list(rows["d x t"]) == [f"{s.d} x {s.t}" for s in result.plan.stages]
    # the Piper source keeps its own settings
    at.radio(key="md_source").set_value("a Piper workload")
    at.run()
    assert not at.exception, at.exception
    assert at.selectbox(key="md_sample").value == "bert32a100.json"


@pytest.mark.slow  # over 5 s
def test_page_defaults_to_the_inventory_kinds_in_ms_with_the_devices_cross_reference():
    """8 A100 + 4 V100 in the session: both kinds planned, times in ms, the Devices page's answer cited."""
    import placement
    from placement import AcceleratorKind, Devices, Problem
    from placement.modelling.builders import build_transformer
    from placement.modelling.pricing import price_graph
    from placement.multidim.convert import inventory_kinds, options_from_graph
    from placement.perf.transformer import TransformerSpec

    built = build_transformer(TransformerSpec(layers=2, hidden=256, heads=4, seq_length=128, vocab=1000))
    inventory = Devices((AcceleratorKind("A100", 8, 80 * GiB), AcceleratorKind("V100", 4, 32 * GiB)), cpus=1)
    at = start(PAGE, timeout=300)
    at.session_state["_ui_base_problem"] = built
    at.session_state["_ui_graph_name"] = "GPT 2x256"
    at.session_state["_ui_devices"] = inventory
    at.toggle(key="md_curve_on").set_value(False)
    at.run()
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    assert at.radio(key="md_source").value == "the graph loaded in the app"  # the session's graph by default
    # one row of inputs per inventory kind, counts and memory from the inventory
    assert at.number_input(key="md_devices_graph").label.startswith("A100 devices")
    assert at.number_input(key="md_devices_graph").value == 8
    assert at.number_input(key="md_devices_graph_1").label.startswith("V100 devices")
    assert at.number_input(key="md_devices_graph_1").value == 4
    assert at.number_input(key="md_memory_graph").value == 80.0
    assert at.number_input(key="md_memory_graph_1").value == 32.0
    # the engine on the same problem, independently built: both kinds, N = 512
    problem = Problem(price_graph(built.graph, ["A100", "V100"]), inventory)  # re-priced for the inventory's kinds
    bandwidth = at.number_input(key="md_bandwidth_graph").value * GiB
    model = options_from_graph(problem, bandwidth=bandwidth)
    kinds = inventory_kinds(problem, bandwidth)
    model = replace(model, kinds=tuple(replace(k, bandwidth=round(k.bandwidth / GiB, 3) * GiB) for k in kinds))
    result = solve_multidim(model)
    ev = evaluate_plan(model, result.plan)
    assert ev.feasible
    shown = {m.label: m.value for m in at.metric}
    assert shown["time per sample"] == f"{ev.time_per_sample:.6g} ms"
    assert shown["devices used"] == str(sum(n for _, n in ev.devices_used))
    table = at.dataframe[0].value
    assert "time per sample (ms)" in table.columns and "time per sample" not in table.columns
    assert set(table["kind"]) <= {"A100", "V100"}
    # the cross-reference: the Devices page's DP answer (one device per stage) and this plan, both in ms
    dp = placement.solve(problem, "dp")
    devices_ms = placement.evaluate(problem, dp.placement).max_load
    line = next(m.value for m in at.markdown if m.value.startswith("Devices page (one device per stage"))
    assert line.startswith(
        "Devices page (one device per stage, no data/tensor parallelism): "
        f"{devices_ms:.4g} ms per sample on {len(dp.placement.stages)} devices; "
        f"this plan: **{ev.time_per_sample:.4g} ms**"
    )
    assert "because" in line and "training step" in line  # the builder graph is forward only
    # the Devices page changes the inventory: the page follows
    at.session_state["_ui_devices"] = Devices((AcceleratorKind("A100", 16, 80 * GiB),), cpus=1)
    at.run()
    assert not at.exception, at.exception
    assert at.number_input(key="md_devices_graph").value == 16
    # a GPT 2x1024 (about 25 M parameters) fits in no 10 MiB device: the same headline row, Devices still cited
    bigger = build_transformer(TransformerSpec(layers=2, hidden=1024, heads=8, seq_length=128, vocab=1000))
    at.session_state["_ui_base_problem"] = bigger
    at.session_state["_ui_graph_name"] = "GPT 2x1024"
    at.run()
    at.number_input(key="md_memory_graph").set_value(0.01)
    at.run()
    assert not at.exception, at.exception
    assert {m.label: m.value for m in at.metric}["time per sample"] == "no plan fits"
    assert any("this plan: none fits, because" in m.value for m in at.markdown)
