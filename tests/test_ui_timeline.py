"""The Timeline page's tables and decisions (ui.timeline) as plain functions, without Streamlit."""

import pytest

import placement
from placement import AcceleratorKind, Devices, Problem, load_problem, solve_dp
from placement.model import ScheduleKind
from placement.pipeline.schedule import ALL_SCHEDULES, simulate
from ui import timeline as tl

from .conftest import SAMPLES

RESNET = SAMPLES / "throughput" / "layer" / "resnet50_training.json"


@pytest.fixture(scope="module")
def solved():
    problem = load_problem(RESNET)
    problem = Problem(problem.graph, problem.devices.with_kind(problem.devices.accelerators[0].name, count=4))
    return problem, solve_dp(problem)


def test_every_schedule_has_a_label():
    assert set(tl.SCHEDULE_LABELS) == set(ALL_SCHEDULES)


def test_default_schedule_and_memory_model_settings():
    assert tl.default_schedule(True) == ScheduleKind.ONE_F_ONE_B.value
    assert tl.default_schedule(False) == ScheduleKind.INFERENCE.value
    model = placement.MemoryModel(training=True, schedule="gpipe", microbatches=4, recompute="always")
    assert tl.memory_model_settings(model) == {
        "timeline_schedule": "gpipe",
        "timeline_microbatches": 4,
        "timeline_optimizer": None,
        "timeline_recompute": True,
    }


def test_idle_rows_add_up_to_the_makespan(solved):
    problem, result = solved
    schedule = simulate(problem, result.placement, 8, "1f1b")
    rows = tl.idle_rows(schedule)
    assert len(rows) == len(schedule.idle)
    for row in rows:
        assert row["busy"] + row["idle"] == pytest.approx(schedule.makespan)
        assert row["idle %"] == pytest.approx(100 * row["idle"] / schedule.makespan)


def test_period_note():
    assert tl.period_note("gpipe", True, False, 2.0, 1.0).startswith("GPipe's steady-state")
    assert tl.period_note("1f1b", True, False, 1.0, 1.0) == "Steady-state time per sample = max-load."
    assert tl.period_note("1f1b", True, False, 1.5, 1.0) == "Steady-state time per sample differs from the max-load."
    assert tl.period_note("1f1b", True, True, 1.5, 1.0) == ""  # recomputation: the loads differ by design
    assert tl.period_note("inference", True, False, 1.5, 1.0) == ""  # forward only of a training graph


def test_moved_stages_finds_stages_on_another_kind(solved):
    problem, _ = solved
    devices = Devices(accelerators=(AcceleratorKind("fast", 2, speed=2.0), AcceleratorKind("slow", 2)), cpus=1)
    mixed = Problem(problem.graph, devices)
    plan = solve_dp(mixed).placement
    kinds = [stage.device.kind for stage in plan.stages]
    moved = tl.moved_stages(plan, 2)
    ranks = max(1, len(plan.stages) // 2)
    assert [i for i, *_ in moved] == [i for i in range(len(kinds)) if kinds[i] != kinds[i % ranks]]
    if moved:
        assert tl.moved_warning(moved).startswith(f"Interleaved 1F1B runs {len(moved)} stage")
    assert tl.moved_stages(plan, 1) == []  # one virtual stage: every stage on its own device


def test_aware_rows(solved):
    problem, result = solved
    rows = tl.aware_rows(result, True, result)
    assert [row["plan"] for row in rows] == list(tl.PLANS)
    assert rows[0]["stages"] == rows[1]["stages"] == len(result.placement.stages)
