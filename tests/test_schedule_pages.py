"""AppTest of the schedule comparison (Timeline page) and the export buttons (Placement page).

Every number asserted is recomputed here with the engine (solve_dp, simulate, memory_profile,
export_plan), never copied from the app.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from placement import load_problem, solve_dp
from placement.pipeline.export import export_json, export_plan
from placement.pipeline.memory import memory_profile
from placement.pipeline.schedule import simulate
from ui.navigation import page_file

from .apptest_helpers import goto, metrics, start

pytestmark = pytest.mark.usefixtures("clear_streamlit_caches")

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "sample_graphs"
GIB = 2.0**30


def test_zbh1_and_every_schedule_side_by_side():
    at = start()
    goto(at, page_file("Graph"))
    at.selectbox(key="graph_sample").set_value("throughput/layer/bert24_training").run()
    goto(at, page_file("Timeline"))
    at.slider(key="timeline_microbatches").set_value(8).run()
    at.selectbox(key="timeline_schedule").set_value("zbh1").run()
    assert not at.exception, at.exception
    problem = load_problem(SAMPLES / "throughput" / "layer" / "bert24_training.json")
    placement = solve_dp(problem).placement
    zb = simulate(problem, placement, 8, "zbh1")
    one = simulate(problem, placement, 8, "1f1b")
    shown = metrics(at)
    assert shown["Makespan"] == f"{zb.makespan:.6g} ms" and shown["Bubble"] == f"{zb.bubble_fraction:.1%}"
    # The action list is printed in torch's notation.
    code = "\n".join(c.value for c in at.code)
    assert f"{zb.devices[0]} | " + " ".join(str(a) for a in zb.actions[0]) in code
    # The comparison table: every schedule, bubble and peak memory from the engine.
    table = next(d.value for d in at.dataframe if "schedule" in d.value.columns)
    assert list(table["schedule"]) == ["streaming inference", "GPipe", "1F1B", "interleaved 1F1B", "zero bubble ZB-H1"]
    rows = dict(zip(table["schedule"], table.to_dict("records")))
    for label, schedule in (("1F1B", one), ("zero bubble ZB-H1", zb)):
        row = rows[label]
        assert row["bubble"] == f"{schedule.bubble_fraction:.1%}"
        assert row["makespan"] == pytest.approx(schedule.makespan)
        peak = max(d.peak for d in memory_profile(problem, schedule, 2.0).devices)
        assert row["peak memory (GiB)"] == pytest.approx(peak / GIB)
    assert zb.bubble_fraction < one.bubble_fraction
    # bert24's gradient edges run from the first stage to the last: interleaving deadlocks and says why.
    assert "deadlocks" in rows["interleaved 1F1B"]["note"] and rows["interleaved 1F1B"]["bubble"] in (None, "")
    chart = next(c for c in at.get("plotly_chart") if "schedules side by side" in c.proto.spec)
    spec = json.loads(chart.proto.spec)
    assert spec["data"][0]["x"] == ["streaming inference", "GPipe", "1F1B", "zero bubble ZB-H1"]
    # Every schedule's Gantt chart on demand.
    before = len(at.get("plotly_chart"))
    at.toggle(key="timeline_compare_gantts").set_value(True).run()
    assert not at.exception, at.exception
    assert len(at.get("plotly_chart")) == before + 4


@pytest.mark.slow  # over 5 s
def test_interleaved_schedule_on_an_operator_graph():
    at = start()
    goto(at, page_file("Graph"))
    at.selectbox(key="graph_sample").set_value("throughput/operator/bert_l-3_training").run()
    goto(at, page_file("Timeline"))
    at.slider(key="timeline_microbatches").set_value(4).run()
    at.selectbox(key="timeline_schedule").set_value("interleaved").run()
    assert not at.exception, at.exception
    problem = load_problem(SAMPLES / "throughput" / "operator" / "bert_l-3_training.json")
    placement = solve_dp(problem).placement
    if len(placement.stages) % 2:
        pytest.skip("the plan has an odd number of stages")
    schedule = simulate(problem, placement, 4, "interleaved", virtual=2)
    assert metrics(at)["Makespan"] == f"{schedule.makespan:.6g} ms"
    idle = next(d.value for d in at.dataframe if "stages" in d.value.columns)
    assert len(idle) == len(placement.stages) // 2 and idle["stages"].iloc[0] == f"0, {len(placement.stages) // 2}"


def test_export_buttons_on_the_placement_page():
    at = goto(start(), page_file("Placement"))
    problem = load_problem(SAMPLES / "throughput" / "layer" / "bert24_inference.json")
    placement = solve_dp(problem).placement
    buttons = {b.proto.label: b for b in at.get("download_button")}
    for target, label in (("torch", "torch / torchtitan config (JSON)"), ("deepspeed", "DeepSpeed config (JSON)")):
        assert label in buttons
        expected = export_json(export_plan(problem, placement, target))
        assert json.loads(expected)["target"] == target
        codes = [c.value for c in at.code]
        assert export_plan(problem, placement, target).text.strip() in [c.strip() for c in codes]
    # The paper's graphs name no transformer layers: Megatron's export is refused with the reason.
    warnings = [w.value for w in at.warning]
    assert any(w.startswith("Cannot export: module node") and "unknown Megatron layer type" in w for w in warnings)
    # Interleaving 6 stages over 3 devices: torch names the interleaved schedule; DeepSpeed refuses.
    at.number_input(key="pl_export_virtual").set_value(2).run()
    assert not at.exception, at.exception
    codes = "\n".join(c.value for c in at.code)
    assert "ScheduleInterleaved1F1B" in codes
    assert any("DeepSpeed's PipelineModule runs one stage per device" in w.value for w in at.warning)
