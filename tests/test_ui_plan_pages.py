"""Plain parts of the Placement, Plan view and Parallel plan pages (ui.placement_texts, ui.plan_view,
ui.parallel_plan), and of the shared state that need no session (ui.presets, ui.samples, ui.widgets)."""

import math
from types import SimpleNamespace

import pytest

import placement
from placement import AcceleratorKind, Devices, MemoryModel, load_problem, solve_dp
from placement.explore.diff import plan_diff
from placement.model import ScheduleKind, Status
from placement.pipeline.schedule import SCHEDULES
from ui import parallel_plan as pp
from ui import placement_texts as texts
from ui import plan_view as pv
from ui import presets, samples, widgets

from .conftest import SAMPLES

GIB = 2**30


# ----------------------------------------------------------------------------- Placement
def test_memory_forced_cpu_is_a_lower_bound_the_dp_respects():
    """Issue 45.5: at 0.1 GiB per accelerator every node of BERT-24 lands on the CPU; at least 16 must."""
    base = load_problem(SAMPLES / "throughput/layer/bert24_inference.json")
    assert texts.memory_forced_cpu(base) == 0
    assert texts.memory_cpu_note(base, solve_dp(base)) is None
    small = placement.Problem(base.graph, base.devices.with_kind("accelerator", memory=0.1 * GIB))
    big = [n for n in base.graph.nodes if n.size > 0.1 * GIB]
    assert texts.memory_forced_cpu(small) == 16 >= len(big) > 0
    result = solve_dp(small)
    on_cpu = [n for n, slot in result.placement.device_of.items() if slot.is_cpu]
    assert len(on_cpu) >= 16 and {n.id for n in big} <= set(on_cpu)
    note = texts.memory_cpu_note(small, result)
    assert note is not None and note.startswith("Memory forces at least 16 nodes to the CPU")
    assert f"runs {len(on_cpu)} of the graph's 32 nodes on the CPU" in note
    no_cpu = placement.Problem(base.graph, small.devices.with_changes(cpus=0))
    assert texts.memory_forced_cpu(no_cpu) == 0  # then memory makes the split infeasible instead


def test_failure_messages():
    infeasible = placement.make_result("dp", Status.INFEASIBLE, seconds=0.0, reason="too big")
    severe, text = texts.failure(infeasible, 30)
    assert severe is True and text.startswith("**infeasible** (dp): too big") and "more memory" in text
    none = placement.make_result("ip", Status.NO_SOLUTION, seconds=0.0)
    assert texts.failure(none, 12.5) == (
        False,
        "**no solution** (ip): no placement found  \nNo plan within the 12.5 s time limit: raise it or use another method.",
    )


def test_no_method_text_and_file_stem():
    assert "training memory model" in texts.no_method_text("latency", True, ["dp"])
    assert texts.no_method_text("latency", False, []).endswith("(installed methods: none).")
    assert texts.file_stem("throughput/layer/bert24_inference.json") == "throughput_layer_bert24_inference"
    assert texts.file_stem("") == "graph"


def test_memory_model_caption_names_the_variants():
    model = MemoryModel(training=True)
    text = texts.memory_model_caption(model, ["dp", "ip"], lambda m: "memory-aware" if m == "dp" else m)
    assert text.endswith("Methods plan with it: dp runs as memory-aware.")
    problem = load_problem(SAMPLES / "throughput" / "layer" / "resnet50_training.json")
    assert "optimizer state x" in texts.peak_caption(model, problem)
    assert "optimizer state x" not in texts.peak_caption(MemoryModel(), problem)


# ----------------------------------------------------------------------------- Plan view
@pytest.mark.parametrize(("count", "top"), [(0, 8), (3, 8), (6, 12), (20, 24)])
def test_curve_counts(count, top):
    assert pv.curve_counts(count) == list(range(1, top + 1))


def test_clicked_point_and_schedules():
    assert pv.clicked_point(None) is None
    assert pv.clicked_point({"selection": {"points": []}}) is None
    assert pv.clicked_point({"selection": {"points": [{"x": 3}, {"x": 4}]}}) == {"x": 3}
    assert pv.schedules_for(False) == [ScheduleKind.INFERENCE.value]
    assert pv.schedules_for(True) == list(SCHEDULES)
    assert pv.default_schedule(True) == ScheduleKind.ONE_F_ONE_B.value


def test_shown_count_and_moved_rows():
    problem = load_problem(SAMPLES / "throughput" / "layer" / "bert24_inference.json")
    kind = problem.devices.accelerators[0]
    assert pv.shown_count(problem, kind.name) == kind.count
    assert pv.shown_count(problem, "no such kind") is None
    fewer = placement.Problem(problem.graph, problem.devices.with_kind(kind.name, count=2))
    diff = plan_diff(problem, solve_dp(problem).placement, fewer, solve_dp(fewer).placement)
    rows = pv.moved_rows(diff, problem.graph)
    assert [row["node"] for row in rows] == [n for n, _, _ in diff.moved]
    assert all(row["A"] != row["B"] for row in rows)


# ----------------------------------------------------------------------------- Parallel plan
def test_parallel_plan_settings_round_trip():
    kinds = (
        SimpleNamespace(name="device", count=2000, memory=16 * GIB, bandwidth=12.5 * GIB, speed=1.0),
        SimpleNamespace(name="A100", count=4, memory=80 * GIB, bandwidth=300 * GIB, speed=2.0),
    )
    defaults = pp.widget_defaults(kinds, 8, "_graph")
    assert defaults == {
        "md_devices_graph": pp.MAX_DEVICES,
        "md_memory_graph": 16.0,
        "md_bandwidth_graph": 12.5,
        "md_devices_graph_1": 4,
        "md_memory_graph_1": 80.0,
        "md_bandwidth_graph_1": 300.0,
        "md_microbatches_graph": 8,
    }
    assert pp.kind_prefix("device") == "" and pp.kind_prefix("A100") == "A100 "


def test_configured_sets_counts_memory_and_bandwidth():
    from placement.multidim.io import read_piper

    problem = read_piper(SAMPLES / "piper" / "bert32a100.json")
    settings = tuple((8, 40.0, 100.0) for _ in problem.kinds)
    out = pp.configured(problem, settings, 16)
    assert out.microbatches == 16
    assert all(k.count == 8 and k.memory == 40 * GIB and k.bandwidth == 100 * GIB for k in out.kinds)


# ----------------------------------------------------------------------------- presets, samples, widgets
FILE = Devices(accelerators=(AcceleratorKind("V100", 4, memory=16 * GIB, speed=1.5),), cpus=2, bandwidth=2.0)


def test_every_preset():
    current = FILE.with_changes(bandwidth=4.0)
    assert presets.device_preset("File's own settings", current, FILE) == FILE
    assert presets.device_preset("2x memory", current, FILE).accelerators[0].memory == 32 * GIB
    assert presets.device_preset("Half memory", current, FILE).accelerators[0].memory == 8 * GIB
    assert math.isinf(presets.device_preset("Unlimited memory", current, FILE).accelerators[0].memory)
    assert presets.device_preset("Half bandwidth", current, FILE).bandwidth == 2.0
    assert presets.device_preset("2x bandwidth", current, FILE).bandwidth == 8.0
    assert presets.device_preset("2x accelerator speed", current, FILE).accelerators[0].speed == 3.0
    paper = presets.device_preset("Paper model", current, FILE)
    assert paper == Devices.paper(4, 2, 16 * GIB)
    with pytest.raises(ValueError, match="unknown preset"):
        presets.device_preset("nonsense", current, FILE)
    assert len(presets.PRESETS) == 8


def test_samples():
    files = samples.sample_files()
    assert samples.DEFAULT_SAMPLE in files and samples.PAPER_SAMPLE in files
    assert not any("expert-splits" in p.parts for p in files)
    assert samples.sample_label(samples.PAPER_SAMPLE) == "throughput/layer/bert24_inference"
    assert samples.sample_group(samples.PAPER_SAMPLE) == "layer · inference"
    assert samples.sample_label(samples.DEFAULT_SAMPLE) == "models/llama3_8b_training"
    assert samples.sample_group(samples.DEFAULT_SAMPLE) == "layer · training"


@pytest.mark.parametrize(("value", "floor", "top"), [(0, 16, 16), (5, 16, 16), (9, 16, 32), (100, 16, 256), (3, 1, 8)])
def test_stable_maximum(value, floor, top):
    assert widgets.stable_maximum(value, floor) == top


# ----------------------------------------------------------------------------- Plan a purchase
def test_catalogue_round_trip_and_candidate_count():
    from ui import purchase as pu

    devices = Devices(
        accelerators=(AcceleratorKind("V100", 4, price_per_hour=2.5), AcceleratorKind("T4", 0, price_per_hour=0.5)),
        cpus=1,
    )
    frame = pu.catalogue_frame(devices)
    assert list(frame["most to buy"]) == [pu.DEFAULT_MOST_TO_BUY] * 2
    extra, prices = pu.read_catalogue(frame)
    assert extra == {"V100": pu.DEFAULT_MOST_TO_BUY, "T4": pu.DEFAULT_MOST_TO_BUY}
    assert prices == {"V100": 2.5, "T4": 0.5}
    assert pu.candidate_count(devices, {"V100": 1, "T4": 3}) == (4 + 1 + 1) * (0 + 3 + 1)
    assert pu.candidate_count(devices, {}) == 5 * 1
