"""Per-stage recomputation in the memory-aware planner: brute force over splits, orders and recompute sets.

The brute force (tests/test_memory_aware.py) is independent of the planner: it enumerates every
contiguous split, every pipeline order and every subset of stages that recompute, scores a plan
with the evaluator (a recomputing stage adds ``math.fsum`` of its forward latencies to its load)
and checks memory by simulating the schedule, not with the planner's closed form.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from placement import MemoryModel, PlacementError, Problem, evaluate, load_problem, solve
from placement.exact.memory_aware import solve_memory_aware
from placement.pipeline.memory import memory_profile
from placement.pipeline.schedule import simulate
from placement.solve import RECOMPUTE_CHOICES, recomputing_devices
from tests.apptest_helpers import goto, metrics, start
from tests.cli_helper import CliRun, cli
from tests.test_memory_aware import brute_force, forward_compute, random_memory_problem
from ui.navigation import page_file

CASES = [(seed, ("1f1b", "gpipe")[seed % 2], (1, 2, 4, 8)[seed % 4], (0.0, 1.0, 2.0)[seed % 3]) for seed in range(36)]


@pytest.mark.parametrize("seed, schedule, microbatches, optimizer", CASES)
def test_per_stage_recompute_matches_brute_force(seed, schedule, microbatches, optimizer):
    problem = random_memory_problem(seed)
    expected, _ = brute_force(problem, schedule, microbatches, optimizer, "per-stage")
    result = solve_memory_aware(problem, schedule, microbatches, optimizer, recompute="per-stage")
    if math.isinf(expected):
        assert result.status == "infeasible", result
        return
    assert result.status == "optimal", result
    assert result.objective == expected
    stats = dict(result.stats)
    recomputing = [
        s.device
        for s in result.placement.stages
        if f"{s.device.kind}:{s.device.index}" in stats["recompute_devices"].split(",")
    ]
    value = max(
        entry.load + (forward_compute(problem, stage) if stage.device in recomputing else 0.0)
        for entry, stage in zip(evaluate(problem, result.placement).devices, result.placement.stages)
    )
    assert value == result.objective
    timeline = simulate(problem, result.placement, microbatches, schedule, recompute=recomputing)
    assert memory_profile(problem, timeline, optimizer).fits
    # Choosing per stage is never worse than either uniform choice.
    for choice in ("none", "always"):
        other = solve_memory_aware(problem, schedule, microbatches, optimizer, recompute=choice)
        if other.ok:
            assert result.objective <= other.objective


def test_per_stage_recompute_helps_somewhere():
    """On some case the per-stage choice beats both uniform choices (the option is not a no-op)."""
    better = 0
    for seed, schedule, microbatches, optimizer in CASES:
        problem = random_memory_problem(seed)
        per = solve_memory_aware(problem, schedule, microbatches, optimizer, recompute="per-stage")
        uniform = [
            solve_memory_aware(problem, schedule, microbatches, optimizer, recompute=c) for c in ("none", "always")
        ]
        values = [r.objective for r in uniform if r.ok]
        if per.ok and (not values or per.objective < min(values)):
            better += 1
    assert better >= 1


def test_recompute_option_values():
    problem = random_memory_problem(1)
    assert dict(solve_memory_aware(problem, "1f1b", 2, recompute=True).stats)["recompute"] == "always"
    assert dict(solve_memory_aware(problem, "1f1b", 2, recompute=False).stats)["recompute"] == "none"
    assert dict(solve_memory_aware(problem, "inference", 2, recompute="per-stage").stats)["recompute"] == "none"
    with pytest.raises(PlacementError):
        solve_memory_aware(problem, "1f1b", 2, recompute="sometimes")
    for other_spelling in ("never", None):  # one spelling: Recompute's values, True and False
        with pytest.raises(PlacementError, match="recompute must be one of"):
            solve_memory_aware(problem, "1f1b", 2, recompute=other_spelling)


# ----------------------------------------------------------------------------- the registry, the CLI and the app
ROOT = Path(__file__).resolve().parent.parent
TINY = ROOT / "sample_graphs" / "ours" / "tiny_training.json"
#: One accelerator of this size under GPipe, 4 microbatches, no optimizer state: recomputing on the
#: accelerator only beats both recomputing everywhere and nowhere (found by solving; asserted below).
TINY_GIB = 0.052
TINY_SETTINGS = {"schedule": "gpipe", "microbatches": 4, "optimizer_multiplier": 0.0}


def tiny_problem():
    problem = load_problem(TINY)
    kind = problem.devices.accelerators[0].name
    return Problem(problem.graph, problem.devices.with_kind(kind, count=1, memory=TINY_GIB * 2**30))


def tiny_cli(recompute: str, method: str = "memory-aware") -> CliRun:
    return cli(
        "solve",
        str(TINY),
        "--method",
        method,
        "--accelerators",
        "1",
        "--memory",
        repr(TINY_GIB * 2**30),
        "--schedule",
        "gpipe",
        "--microbatches",
        "4",
        "--optimizer-multiplier",
        "0",
        "--recompute",
        recompute,
        "--json",
    )


def test_registry_takes_the_recompute_choices_and_the_old_booleans():
    problem = tiny_problem()
    by_choice = {c: solve(problem, "memory-aware", recompute=c, **TINY_SETTINGS) for c in RECOMPUTE_CHOICES}
    direct = solve_memory_aware(problem, recompute="per-stage", **TINY_SETTINGS)
    assert by_choice["per-stage"].objective == direct.objective
    assert by_choice["per-stage"].objective < min(by_choice["none"].objective, by_choice["always"].objective)
    assert solve(problem, "memory-aware", recompute=True, **TINY_SETTINGS).objective == by_choice["always"].objective
    assert solve(problem, "memory-aware", recompute=False, **TINY_SETTINGS).objective == by_choice["none"].objective
    assert MemoryModel(training=True, recompute=True).recompute == "always"
    assert MemoryModel(training=True, recompute=False).recompute == "none"
    assert MemoryModel(training=True, recompute="per-stage").method_for("dp")[1]["recompute"] == "per-stage"
    with pytest.raises(PlacementError, match="'memory-aware-ip' does not support recompute='per-stage'") as caught:
        solve(problem, "memory-aware-ip", recompute="per-stage", **TINY_SETTINGS)
    assert "\n" not in str(caught.value) and "memory-aware" in str(caught.value).split("supported by:")[1]
    with pytest.raises(PlacementError, match="per-stage"):
        MemoryModel(training=True, recompute="sometimes")
    # The IP takes none / always (and the booleans) and plans like the DP for them.
    ip = solve(problem, "memory-aware-ip", recompute="always", **TINY_SETTINGS)
    assert ip.objective == pytest.approx(by_choice["always"].objective, rel=1e-9)


def test_cli_recompute_flag_takes_the_choices():
    problem = tiny_problem()
    out = tiny_cli("per-stage")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    expected = solve_memory_aware(problem, recompute="per-stage", **TINY_SETTINGS)
    assert data["status"] == "optimal" and data["objective"] == expected.objective
    assert data["stats"]["recompute"] == "per-stage" and data["stats"]["recompute_devices"]
    assert "recomputation per stage" in data["memory_model"]
    # The peaks shown are those of the plan's own recompute choice, and they fit.
    model = MemoryModel(training=True, recompute="per-stage", **TINY_SETTINGS)
    peaks = model.peaks(problem, expected.placement, recomputing_devices(expected))
    assert [e["bytes"] for e in data["peak_memory"]] == [peak for _, peak, _ in peaks]
    assert all(e["cap"] is None or e["bytes"] <= e["cap"] for e in data["peak_memory"])
    for choice in ("none", "always"):
        other = json.loads(tiny_cli(choice).stdout)
        assert other["stats"]["recompute"] == choice and other["objective"] > data["objective"]
    bad = tiny_cli("per-stage", method="memory-aware-ip")
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1
    assert "does not support recompute='per-stage'" in bad.stderr
    assert cli("solve", str(TINY), "--recompute", "sometimes").returncode == 2


@pytest.mark.usefixtures("clear_streamlit_caches")
def test_app_devices_setting_plans_per_stage_like_the_cli():
    data = json.loads(tiny_cli("per-stage").stdout)
    at = start(page_file("Graph"))
    label = next(o for o in at.selectbox(key="graph_sample").options if "ours/tiny_training" in o)
    at.selectbox(key="graph_sample").set_value(label).run()
    goto(at, page_file("Devices"))
    at.slider(key="dev_count").set_value(1).run()
    at.checkbox(key="dev_memory_limited").check().run()
    at.number_input(key="dev_memory_gib").set_value(TINY_GIB).run()
    at.radio(key="dev_mm_kind").set_value("training").run()
    at.selectbox(key="dev_mm_schedule").set_value("gpipe").run()
    at.slider(key="dev_mm_microbatches").set_value(4).run()
    at.number_input(key="dev_mm_optimizer").set_value(0.0).run()
    at.selectbox(key="dev_mm_recompute").set_value("per-stage").run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert "recomputation per stage" in " ".join(m.value for m in at.markdown)
    assert float(metrics(at)["Time per sample"].split()[0]) == pytest.approx(data["max_load"], rel=1e-6)
    goto(at, page_file("Placement"))
    assert metrics(at)["Status"] == "optimal" and not at.error, [e.value for e in at.error]
    peaks = at.dataframe[-1].value  # the peak table comes last
    assert list(peaks["peak bytes"]) == pytest.approx([e["bytes"] for e in data["peak_memory"]])
    assert all(peaks["fits"])
