"""AppTest of the Timeline page: schedules, the memory chart and the memory-aware plan.

Every number asserted is recomputed here with the engine (solve_dp, simulate, memory_profile,
solve_memory_aware), never copied from the app.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from placement import Problem, evaluate, load_problem, solve_dp
from placement.exact.memory_aware import solve_memory_aware
from placement.pipeline.memory import memory_profile
from placement.pipeline.schedule import simulate

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "sample_graphs"
TRAINING_LABEL = "throughput/layer/bert24_training"
GIB = 2.0**30


from ui.navigation import page_file

from .apptest_helpers import goto, metrics, start

pytestmark = pytest.mark.usefixtures("clear_streamlit_caches")


def charts(at: AppTest) -> dict[str, dict]:
    """Plotly figures on the page by title text."""
    out = {}
    for chart in at.get("plotly_chart"):
        spec = json.loads(chart.proto.spec)
        title = spec.get("layout", {}).get("title", {})
        out[title.get("text", "") if isinstance(title, dict) else str(title)] = spec
    return out


def values(array) -> list[float]:
    """A Plotly array from the figure JSON (plain list or base64 ``{"dtype", "bdata"}``)."""
    if isinstance(array, dict) and "bdata" in array:
        return np.frombuffer(base64.b64decode(array["bdata"]), dtype=np.dtype(array["dtype"])).tolist()
    return list(array)


def load_training(at: AppTest) -> None:
    goto(at, page_file("Graph"))
    at.selectbox(key="graph_sample").set_value(TRAINING_LABEL).run()
    assert not at.exception, at.exception


@pytest.mark.slow  # over 5 s
def test_schedules_and_memory_chart_on_the_default_graph():
    at = goto(start(), page_file("Timeline"))
    problem = load_problem(SAMPLES / "throughput" / "layer" / "bert24_inference.json")
    placement = solve_dp(problem).placement
    assert at.selectbox(key="timeline_schedule").value == "inference"
    at.slider(key="timeline_microbatches").set_value(5).run()
    expected = simulate(problem, placement, 5, "inference")
    shown = metrics(at)
    assert shown["Period (steady state)"] == f"{expected.period:.6g} ms"
    assert shown["Max-load (evaluator)"] == f"{evaluate(problem, placement).max_load:.6g} ms"
    assert shown["Makespan"] == f"{expected.makespan:.6g} ms"
    assert shown["Fill & drain"] == f"{expected.fill_drain:.6g} ms"
    assert shown["Bubble"] == f"{expected.bubble_fraction:.1%}"
    figures = charts(at)
    gantt = next(spec for title, spec in figures.items() if title.startswith("inference schedule"))
    forward = next(t for t in gantt["data"] if t["name"] == "forward")
    assert len(values(forward["base"])) == 5 * len(placement.stages)
    memory = next(spec for title, spec in figures.items() if title.startswith("memory over time"))
    profile = memory_profile(problem, expected)
    line = next(t for t in memory["data"] if t["name"] == str(profile.devices[0].device))
    assert max(values(line["y"])) == pytest.approx(profile.devices[0].peak / GIB)
    # Switch the schedule: GPipe with 5 microbatches.
    at.selectbox(key="timeline_schedule").set_value("gpipe").run()
    assert not at.exception, at.exception
    gpipe = simulate(problem, placement, 5, "gpipe")
    assert metrics(at)["Makespan"] == f"{gpipe.makespan:.6g} ms"
    assert any(title.startswith("gpipe schedule") for title in charts(at))
    assert at.get("download_button")


@pytest.mark.slow  # over 5 s
def test_training_graph_oom_and_memory_aware_plan():
    at = start()
    load_training(at)
    # Devices page: accelerators of 1.5e9 bytes.
    goto(at, page_file("Devices"))
    at.checkbox(key="dev_memory_limited").check().run()
    at.number_input(key="dev_memory_gib").set_value(1.5e9 / GIB).run()
    assert not at.exception, at.exception
    goto(at, page_file("Timeline"))
    assert at.selectbox(key="timeline_schedule").value == "1f1b"
    at.slider(key="timeline_microbatches").set_value(8).run()
    at.number_input(key="timeline_optimizer").set_value(2.0).run()
    assert not at.exception, at.exception

    base = load_problem(SAMPLES / "throughput" / "layer" / "bert24_training.json")
    problem = Problem(base.graph, base.devices.with_kind("accelerator", memory=round(1.5e9 / GIB, 3) * GIB))
    plain = solve_dp(problem)
    schedule = simulate(problem, plain.placement, 8, "1f1b")
    profile = memory_profile(problem, schedule, 2.0)
    shown = metrics(at)
    assert shown["Period (steady state)"] == f"{plain.objective:.6g} ms"
    assert shown["Max-load (evaluator)"] == f"{plain.objective:.6g} ms"
    assert shown["Makespan"] == f"{schedule.makespan:.6g} ms"
    # The size-only plan runs out of memory under 1F1B: the first OOM is reported.
    device, when = profile.first_oom
    errors = [e.value for e in at.error]
    assert any(f"First OOM: {device}" in e and f"t = {when:.6g}" in e for e in errors), errors
    memory = next(spec for title, spec in charts(at).items() if title.startswith("memory over time (1f1b"))
    oom = next(t for t in memory["data"] if t["name"] == "first OOM")
    assert min(values(oom["x"])) == pytest.approx(when)

    # The memory-aware plan fits, at a higher time per sample.
    at.radio(key="timeline_plan").set_value("memory-aware plan").run()
    assert not at.exception, at.exception
    aware = solve_memory_aware(problem, "1f1b", 8, optimizer_multiplier=2.0)
    assert aware.objective > plain.objective
    shown = metrics(at)
    assert shown["Period (steady state)"] == f"{aware.objective:.6g} ms"
    assert not at.error
    aware_profile = memory_profile(problem, simulate(problem, aware.placement, 8, "1f1b"), 2.0)
    assert aware_profile.fits
    top = max(aware_profile.devices, key=lambda d: d.peak)
    assert any("Highest peak" in s.value and str(top.device) in s.value for s in at.success)
    # Leaving and coming back keeps the choices.
    goto(at, page_file("Graph"))
    goto(at, page_file("Timeline"))
    assert at.radio(key="timeline_plan").value == "memory-aware plan"
    assert at.slider(key="timeline_microbatches").value == 8


def test_compare_table_on_demand():
    at = start()
    load_training(at)
    goto(at, page_file("Devices"))
    at.checkbox(key="dev_memory_limited").check().run()
    at.number_input(key="dev_memory_gib").set_value(1.5e9 / GIB).run()
    goto(at, page_file("Timeline"))
    at.slider(key="timeline_microbatches").set_value(8).run()
    before = len(at.dataframe)  # idle, peak, breakdown, schedules tables; the memory-aware comparison on demand
    assert before == 4
    at.toggle(key="timeline_compare").set_value(True).run()
    assert not at.exception, at.exception
    assert len(at.dataframe) == before + 1
    base = load_problem(SAMPLES / "throughput" / "layer" / "bert24_training.json")
    problem = Problem(base.graph, base.devices.with_kind("accelerator", memory=round(1.5e9 / GIB, 3) * GIB))
    aware = solve_memory_aware(problem, "1f1b", 8, optimizer_multiplier=2.0)
    table = at.dataframe[-1].value
    assert list(table["plan"]) == ["current plan", "memory-aware plan"]
    assert list(table["fits this schedule's memory"]) == [False, True]
    assert table["time per sample"].iloc[1] == pytest.approx(aware.objective)
    assert table["time per sample"].iloc[0] == pytest.approx(solve_dp(problem).objective)


def test_time_per_batch_with_fill_and_drain_is_the_timelines_makespan():
    """Devices and Placement show the batch time of the memory model's schedule and M next to the steady state."""
    problem = load_problem(SAMPLES / "throughput" / "layer" / "bert24_training.json")
    placement = solve_dp(problem).placement
    expected = simulate(problem, placement, 8, "1f1b")  # the memory model's defaults: 1F1B, 8 microbatches
    at = start()
    load_training(at)
    for page in (page_file("Devices"), page_file("Placement")):
        shown = metrics(goto(at, page))
        assert shown["Time per batch"] == f"{expected.makespan:.6g} ms"
        assert shown["Time per sample"] == f"{expected.period:.6g} ms"  # steady state = max-load under 1F1B
    shown = metrics(goto(at, page_file("Timeline")))
    assert shown["Makespan"] == f"{expected.makespan:.6g} ms"


def test_interleaving_a_mixed_plan_warns_that_stages_move_to_another_kind():
    from placement import AcceleratorKind, Devices

    graph = load_problem(SAMPLES / "throughput" / "layer" / "bert24_training.json").graph
    memory = 64 * GIB
    devices = Devices((AcceleratorKind("A100", 2, memory, speed=2.0), AcceleratorKind("V100", 2, memory)), cpus=0)
    plan = solve_dp(Problem(graph, devices)).placement
    kinds = [s.device.kind for s in plan.stages]
    at = start()
    load_training(at)
    at.session_state["_ui_devices"] = devices
    goto(at, page_file("Timeline"))
    at.selectbox(key="timeline_schedule").set_value("interleaved").run()
    warned = any("runs" in w.value and "another kind" in w.value for w in at.warning)
    ranks = len(kinds) // 2
    expected = len(kinds) % 2 == 0 and any(kinds[i] != kinds[i % ranks] for i in range(len(kinds)))
    assert warned == expected, (kinds, [w.value for w in at.warning], [e.value for e in at.error])


def test_forward_gradients_are_explained_and_the_textbook_graph_is_one_click_away():
    """Issue 45.5: bert24_training's gradient edges run forward; the page says what that does to 1F1B."""
    at = start()
    load_training(at)
    goto(at, page_file("Timeline"))
    assert at.selectbox(key="timeline_schedule").value == "1f1b"
    notes = [i.value for i in at.info if "gradient edges run from earlier to later stages" in i.value]
    assert len(notes) == 1 and "larger than GPipe's" in notes[0], [i.value for i in at.info]
    at.button(key="timeline_textbook").click().run()
    assert not at.exception, at.exception
    assert at.session_state["_ui_graph_name"].endswith("tiny_training")
    assert not [i.value for i in at.info if "gradient edges run from earlier" in i.value]
