"""Pipeline schedules: hand-computed event times for 2 and 3 stages, and the max-load on the shared workloads.

The hand computations are in the comments next to each expected list: a unit starts when
its device is free and the units it depends on (same microbatch) have ended.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from placement import (
    AcceleratorKind,
    Devices,
    DeviceSlot,
    Edge,
    Graph,
    Node,
    Placement,
    PlacementError,
    Problem,
    Stage,
    evaluate,
    load_problem,
    solve_dp,
)
from placement.pipeline.schedule import simulate, stage_work, unit_order

A0, A1, A2 = (DeviceSlot("accelerator", i) for i in range(3))
SAMPLES = Path(__file__).resolve().parent.parent / "sample_graphs"


def two_stage_training() -> tuple[Problem, Placement]:
    """f0 (2) -> f1 (3) -> b1 (4) -> b0 (5); f0 and b0 on device 0, f1 and b1 on device 1.

    Device 0: forward unit = f0 (2) + send f0 (cost 1) = 3; backward = receive b1 (cost 2) + b0 (5) = 7.
    Device 1: forward unit = receive f0 (1) + f1 (3) = 4; backward = b1 (4) + send b1 (2) = 6.
    Loads 10 and 10 (compute 7 + communication 3 each).
    """
    nodes = (
        Node(0, 20.0, 2.0, color_class=0, size=10.0, name="f0"),
        Node(1, 30.0, 3.0, color_class=1, size=20.0, name="f1"),
        Node(2, 40.0, 4.0, is_backward=True, color_class=1, size=2.0, name="b1"),
        Node(3, 50.0, 5.0, is_backward=True, color_class=0, size=1.0, name="b0"),
    )
    edges = (
        Edge(0, 1, 1.0, size=100.0),
        Edge(0, 3, 1.0, size=100.0),
        Edge(1, 2, 0.0, size=50.0),
        Edge(2, 3, 2.0, size=100.0),
    )
    problem = Problem(Graph(nodes, edges), Devices.paper(2, 0))
    return problem, Placement((Stage(A0, (0, 3)), Stage(A1, (1, 2))))


def three_stage_training() -> tuple[Problem, Placement]:
    """f0 (1) -> f1 (2) -> f2 (1) -> b2 (2) -> b1 (4) -> b0 (2), free transfers; one forward/backward pair per device.

    Forward units 1, 2, 1; backward units 2, 4, 2; loads 3, 6, 3.
    """
    nodes = (
        Node(0, 1.0, 1.0, color_class=0, size=5.0),
        Node(1, 2.0, 2.0, color_class=1, size=6.0),
        Node(2, 1.0, 1.0, color_class=2, size=7.0),
        Node(3, 2.0, 2.0, is_backward=True, color_class=2),
        Node(4, 4.0, 4.0, is_backward=True, color_class=1),
        Node(5, 2.0, 2.0, is_backward=True, color_class=0),
    )
    edges = (
        Edge(0, 1, 0.0, size=10.0),
        Edge(1, 2, 0.0, size=20.0),
        Edge(2, 3, 0.0, size=30.0),
        Edge(3, 4, 0.0, size=8.0),
        Edge(4, 5, 0.0, size=8.0),
    )
    problem = Problem(Graph(nodes, edges), Devices.paper(3, 0))
    return problem, Placement((Stage(A0, (0, 5)), Stage(A1, (1, 4)), Stage(A2, (2, 3))))


def units(schedule, phase: str) -> dict[DeviceSlot, list[tuple[int, float, float]]]:
    """(microbatch, start, end) of every forward/backward *unit* (transfers included) per device, by start."""
    spans: dict[tuple[DeviceSlot, int], list[float]] = {}
    for event in schedule.events:
        if event.phase != phase:
            continue
        span = spans.setdefault((event.device, event.microbatch), [math.inf, -math.inf])
        span[0], span[1] = min(span[0], event.start), max(span[1], event.end)
    out: dict[DeviceSlot, list[tuple[int, float, float]]] = {}
    for (device, m), (start, end) in spans.items():
        out.setdefault(device, []).append((m, start, end))
    return {d: sorted(v, key=lambda x: x[1]) for d, v in out.items()}


def events(schedule, device) -> list[tuple[str, int, float, float]]:
    return [(e.kind, e.microbatch, e.start, e.end) for e in schedule.events_of(device)]


# ----------------------------------------------------------------------------- work rule


def test_units_add_up_to_the_evaluator_load():
    for problem, placement in (two_stage_training(), three_stage_training()):
        evaluation = evaluate(problem, placement)
        for work in stage_work(problem, placement):
            assert work.forward + work.backward == pytest.approx(evaluation.load_of(work.device).load)
    problem, placement = two_stage_training()
    w0, w1 = stage_work(problem, placement)
    assert (w0.forward_in, w0.forward_compute, w0.forward_out) == (0, 2, 1)
    assert (w0.backward_in, w0.backward_compute, w0.backward_out) == (2, 5, 0)
    assert (w1.forward_in, w1.forward_compute, w1.forward_out) == (1, 3, 0)
    assert (w1.backward_in, w1.backward_compute, w1.backward_out) == (0, 4, 2)


def test_overlap_scales_units_to_the_load():
    problem, placement = two_stage_training()
    problem = Problem(problem.graph, problem.devices.with_changes(overlap=True))
    evaluation = evaluate(problem, placement)
    for work in stage_work(problem, placement):
        # load = max(7, 3) = 7 per device; units scaled by 7/10.
        assert evaluation.load_of(work.device).load == pytest.approx(7.0)
        assert work.forward + work.backward == pytest.approx(7.0)
    w0 = stage_work(problem, placement)[0]
    assert w0.forward == pytest.approx(3 * 0.7)


def test_1f1b_unit_order():
    assert unit_order("1f1b", 0, 2, 4) == [
        ("F", 0),
        ("F", 1),
        ("B", 0),
        ("F", 2),
        ("B", 1),
        ("F", 3),
        ("B", 2),
        ("B", 3),
    ]
    assert unit_order("1f1b", 1, 2, 4) == [
        ("F", 0),
        ("B", 0),
        ("F", 1),
        ("B", 1),
        ("F", 2),
        ("B", 2),
        ("F", 3),
        ("B", 3),
    ]
    assert unit_order("1f1b", 0, 3, 1) == [("F", 0), ("B", 0)]


# ----------------------------------------------------------------------------- two stages


def test_two_stage_inference_m1_and_m4():
    problem, placement = two_stage_training()
    s = simulate(problem, placement, 1, "inference")
    # d0: forward [0,2], send [2,3]; d1: receive [3,4], forward [4,7].
    assert events(s, A0) == [("forward", 0, 0, 2), ("transfer", 0, 2, 3)]
    assert events(s, A1) == [("transfer", 0, 3, 4), ("forward", 0, 4, 7)]
    assert s.makespan == 7 and s.period == 4
    assert dict(s.idle) == {A0: 4, A1: 3}
    assert s.bubble_fraction == pytest.approx(7 / 14)
    s = simulate(problem, placement, 4, "inference")
    # d0 units [3m, 3m+3]; d1 starts at max(free, 3m+3): [3,7], [7,11], [11,15], [15,19].
    assert units(s, "forward") == {
        A0: [(m, 3 * m, 3 * m + 3) for m in range(4)],
        A1: [(0, 3, 7), (1, 7, 11), (2, 11, 15), (3, 15, 19)],
    }
    assert s.makespan == 19 and s.period == 4
    assert dict(s.idle) == {A0: 7, A1: 3}
    assert s.bubble_fraction == pytest.approx(10 / 38)
    assert s.fill_drain == pytest.approx(19 - 16)


@pytest.mark.parametrize("kind", ["gpipe", "1f1b"])
def test_two_stage_training_m1(kind):
    problem, placement = two_stage_training()
    s = simulate(problem, placement, 1, kind)
    # F0 d0 [0,3]; F0 d1 [3,7]; B0 d1 [7,13]; B0 d0 [13,20].
    assert units(s, "forward") == {A0: [(0, 0, 3)], A1: [(0, 3, 7)]}
    assert units(s, "backward") == {A1: [(0, 7, 13)], A0: [(0, 13, 20)]}
    assert events(s, A0) == [
        ("forward", 0, 0, 2),
        ("transfer", 0, 2, 3),
        ("transfer", 0, 13, 15),
        ("backward", 0, 15, 20),
    ]
    assert events(s, A1) == [
        ("transfer", 0, 3, 4),
        ("forward", 0, 4, 7),
        ("backward", 0, 7, 11),
        ("transfer", 0, 11, 13),
    ]
    assert s.makespan == 20
    assert s.bubble_fraction == pytest.approx(0.5)


def test_two_stage_gpipe_m4():
    problem, placement = two_stage_training()
    s = simulate(problem, placement, 4, "gpipe")
    # Forwards: d0 [3m, 3m+3]; d1 [3,7], [7,11], [11,15], [15,19].
    # Backwards: d1 from 19 every 6: [19,25] .. [37,43]; d0 waits for d1: [25,32], [32,39], [39,46], [46,53].
    assert units(s, "forward") == {
        A0: [(m, 3 * m, 3 * m + 3) for m in range(4)],
        A1: [(0, 3, 7), (1, 7, 11), (2, 11, 15), (3, 15, 19)],
    }
    assert units(s, "backward") == {
        A1: [(m, 19 + 6 * m, 25 + 6 * m) for m in range(4)],
        A0: [(0, 25, 32), (1, 32, 39), (2, 39, 46), (3, 46, 53)],
    }
    assert s.makespan == 53
    assert s.period == 4 + 7  # slowest forward unit + slowest backward unit
    assert dict(s.idle) == {A0: 13, A1: 13}
    assert s.bubble_fraction == pytest.approx(26 / 106)


def test_two_stage_1f1b_m4():
    problem, placement = two_stage_training()
    s = simulate(problem, placement, 4, "1f1b")
    # d0: F0 [0,3] F1 [3,6] B0 [13,20] F2 [20,23] B1 [23,30] F3 [30,33] B2 [33,40] B3 [43,50]
    # d1: F0 [3,7] B0 [7,13] F1 [13,17] B1 [17,23] F2 [23,27] B2 [27,33] F3 [33,37] B3 [37,43]
    assert units(s, "forward") == {
        A0: [(0, 0, 3), (1, 3, 6), (2, 20, 23), (3, 30, 33)],
        A1: [(0, 3, 7), (1, 13, 17), (2, 23, 27), (3, 33, 37)],
    }
    assert units(s, "backward") == {
        A0: [(0, 13, 20), (1, 23, 30), (2, 33, 40), (3, 43, 50)],
        A1: [(0, 7, 13), (1, 17, 23), (2, 27, 33), (3, 37, 43)],
    }
    assert s.makespan == 50 and s.period == 10
    assert dict(s.idle) == {A0: 10, A1: 10}
    assert s.bubble_fraction == pytest.approx(0.2)


# ----------------------------------------------------------------------------- three stages


def test_three_stage_inference():
    problem, placement = three_stage_training()
    s = simulate(problem, placement, 1, "inference")
    assert units(s, "forward") == {A0: [(0, 0, 1)], A1: [(0, 1, 3)], A2: [(0, 3, 4)]}
    assert s.makespan == 4 and s.bubble_fraction == pytest.approx(1 - 4 / 12)
    s = simulate(problem, placement, 4, "inference")
    assert units(s, "forward") == {
        A0: [(m, m, m + 1) for m in range(4)],
        A1: [(m, 1 + 2 * m, 3 + 2 * m) for m in range(4)],
        A2: [(m, 3 + 2 * m, 4 + 2 * m) for m in range(4)],
    }
    assert s.makespan == 10 and s.period == 2
    assert dict(s.idle) == {A0: 6, A1: 2, A2: 6}
    assert s.bubble_fraction == pytest.approx(14 / 30)
    assert units(s, "backward") == {}


@pytest.mark.parametrize("kind", ["gpipe", "1f1b"])
def test_three_stage_training_m1(kind):
    problem, placement = three_stage_training()
    s = simulate(problem, placement, 1, kind)
    assert units(s, "forward") == {A0: [(0, 0, 1)], A1: [(0, 1, 3)], A2: [(0, 3, 4)]}
    assert units(s, "backward") == {A2: [(0, 4, 6)], A1: [(0, 6, 10)], A0: [(0, 10, 12)]}
    assert s.makespan == 12 and s.bubble_fraction == pytest.approx(24 / 36)


def test_three_stage_gpipe_m4():
    problem, placement = three_stage_training()
    s = simulate(problem, placement, 4, "gpipe")
    assert units(s, "forward") == {
        A0: [(m, m, m + 1) for m in range(4)],
        A1: [(m, 1 + 2 * m, 3 + 2 * m) for m in range(4)],
        A2: [(0, 3, 4), (1, 5, 6), (2, 7, 8), (3, 9, 10)],
    }
    assert units(s, "backward") == {
        A2: [(m, 10 + 2 * m, 12 + 2 * m) for m in range(4)],
        A1: [(m, 12 + 4 * m, 16 + 4 * m) for m in range(4)],
        A0: [(0, 16, 18), (1, 20, 22), (2, 24, 26), (3, 28, 30)],
    }
    assert s.makespan == 30 and s.period == 2 + 4
    assert dict(s.idle) == {A0: 18, A1: 6, A2: 18}
    assert s.bubble_fraction == pytest.approx(42 / 90)


def test_three_stage_1f1b_m4():
    problem, placement = three_stage_training()
    s = simulate(problem, placement, 4, "1f1b")
    # d0: F0 F1 F2 | B0 F3 | B1 | B2 B3 ; d1: F0 | F1 B0 | F2 B1 | F3 B2 | B3 ; d2: F B F B ...
    assert units(s, "forward") == {
        A0: [(0, 0, 1), (1, 1, 2), (2, 2, 3), (3, 12, 13)],
        A1: [(0, 1, 3), (1, 3, 5), (2, 10, 12), (3, 16, 18)],
        A2: [(0, 3, 4), (1, 6, 7), (2, 12, 13), (3, 18, 19)],
    }
    assert units(s, "backward") == {
        A0: [(0, 10, 12), (1, 16, 18), (2, 22, 24), (3, 26, 28)],
        A1: [(0, 6, 10), (1, 12, 16), (2, 18, 22), (3, 22, 26)],
        A2: [(0, 4, 6), (1, 7, 9), (2, 13, 15), (3, 19, 21)],
    }
    assert s.makespan == 28 and s.period == 6
    assert dict(s.idle) == {A0: 16, A1: 4, A2: 16}
    assert s.bubble_fraction == pytest.approx(36 / 84)


def test_recompute_adds_the_forward_compute_to_backward():
    problem, placement = two_stage_training()
    s = simulate(problem, placement, 1, "1f1b", recompute=True)
    # B0 on d1: recompute f1 (3) then b1 (4) then send (2): [7,16]; d0: receive (2), recompute f0 (2), b0 (5).
    assert events(s, A1)[2:] == [("recompute", 0, 7, 10), ("backward", 0, 10, 14), ("transfer", 0, 14, 16)]
    assert events(s, A0)[2:] == [("transfer", 0, 16, 18), ("recompute", 0, 18, 20), ("backward", 0, 20, 25)]
    assert s.period == 13  # max(10 + 2, 10 + 3)
    assert s.recompute == (A0, A1)


def test_bad_inputs():
    problem, placement = two_stage_training()
    with pytest.raises(PlacementError):
        simulate(problem, placement, 0, "1f1b")
    with pytest.raises(PlacementError):
        simulate(problem, placement, 4, "pipedream-2bw")
    backwards = Placement(tuple(reversed(placement.stages)))
    with pytest.raises(PlacementError, match="deadlock"):
        simulate(problem, backwards, 2, "1f1b")


def test_cpu_stage_pays_no_communication():
    problem, placement = two_stage_training()
    problem = Problem(problem.graph, Devices(accelerators=(AcceleratorKind("accelerator", 1),), cpus=1))
    placement = Placement((Stage(A0, (0, 3)), Stage(DeviceSlot("cpu", 0), (1, 2))))
    w0, w1 = stage_work(problem, placement)
    assert (w1.forward, w1.backward) == (30, 40)  # cpu latencies, no transfers
    assert w0.forward == 3 and w0.backward == 7


# ----------------------------------------------------------------------------- shared workloads


def _samples(kind: str) -> list[Path]:
    return sorted((SAMPLES / "throughput").glob(f"*/*_{kind}.json"))


@pytest.mark.slow
@pytest.mark.parametrize("path", _samples("training"), ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_training_steady_state_is_the_dp_max_load(path):
    problem = load_problem(path)
    result = solve_dp(problem)
    assert result.status == "optimal"
    # The simulated makespan grows by exactly one max-load per extra microbatch once the pipeline is full.
    a = simulate(problem, result.placement, 64, "1f1b")
    b = simulate(problem, result.placement, 128, "1f1b")
    slope = (b.makespan - a.makespan) / 64
    assert slope == pytest.approx(result.objective, rel=1e-9)
    assert a.period == pytest.approx(result.objective, rel=1e-12)
    # Per-device busy time per sample is the evaluator's load.
    evaluation = evaluate(problem, result.placement)
    for device, idle in b.idle:
        assert (b.makespan - idle) / 128 == pytest.approx(evaluation.load_of(device).load, rel=1e-9)


@pytest.mark.slow
@pytest.mark.parametrize("path", _samples("inference"), ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_inference_steady_state_is_the_dp_max_load(path):
    problem = load_problem(path)
    result = solve_dp(problem)
    a = simulate(problem, result.placement, 32, "inference")
    b = simulate(problem, result.placement, 64, "inference")
    assert (b.makespan - a.makespan) / 32 == pytest.approx(result.objective, rel=1e-9)
    assert a.period == pytest.approx(result.objective, rel=1e-12)


def test_single_sample_inference_makespan_is_the_latency():
    """With one microbatch and one call per accelerator, streaming = the evaluator's single-sample latency."""
    problem = load_problem(SAMPLES / "throughput" / "layer" / "bert24_inference.json")
    problem = Problem(problem.graph, problem.devices.with_changes(cpus=0))
    result = solve_dp(problem)
    s = simulate(problem, result.placement, 1, "inference")
    assert s.makespan == pytest.approx(evaluate(problem, result.placement).latency, rel=1e-9)
