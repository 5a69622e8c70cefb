"""Memory over time: hand-computed peaks (2 and 3 stages, every schedule), the closed form against the sweep."""

from __future__ import annotations

from pathlib import Path

import pytest

from placement import Devices, Edge, Graph, Node, PlacementError, Problem, load_problem, solve_dp
from placement.pipeline.memory import memory_profile, output_bytes, peak_table, stage_memory
from placement.pipeline.schedule import simulate
from tests.test_schedule import A0, A1, A2, three_stage_training, two_stage_training

SAMPLES = Path(__file__).resolve().parent.parent / "sample_graphs"


def peaks(profile):
    return {d.device: (d.peak, d.peak_time) for d in profile.devices}


def test_static_numbers_two_stages():
    problem, placement = two_stage_training()
    s0, s1 = stage_memory(problem, placement, optimizer_multiplier=2.0)
    # W = all sizes; O = 2 x forward sizes; A = output bytes of forward nodes; I = stage input.
    assert (s0.weights, s0.optimizer, s0.activation, s0.stage_input) == (11, 20, 100, 0)
    assert (s1.weights, s1.optimizer, s1.activation, s1.stage_input) == (22, 40, 50, 100)


def test_two_stage_peaks():
    problem, placement = two_stage_training()
    # Inference: W + A while a unit runs (no optimizer): d0 11 + 100 at 0; d1 22 + 50 at 3.
    profile = memory_profile(problem, simulate(problem, placement, 4, "inference"), optimizer_multiplier=2.0)
    assert peaks(profile) == {A0: (111, 0), A1: (72, 3)}
    # GPipe M=4: all four stashed: d0 31 + 400 at F3's start (9); d1 62 + 200 at F3's start (15).
    profile = memory_profile(problem, simulate(problem, placement, 4, "gpipe"), optimizer_multiplier=2.0)
    assert peaks(profile) == {A0: (431, 9), A1: (262, 15)}
    # 1F1B M=4: d0 holds 2 (F0, F1 before B0): 31 + 200 at 3; d1 holds 1: 62 + 50 at 3.
    profile = memory_profile(problem, simulate(problem, placement, 4, "1f1b"), optimizer_multiplier=2.0)
    assert peaks(profile) == {A0: (231, 3), A1: (112, 3)}
    assert [d.in_flight for d in profile.devices] == [2, 1]
    # 1F1B M=1: one microbatch everywhere.
    profile = memory_profile(problem, simulate(problem, placement, 1, "1f1b"), optimizer_multiplier=2.0)
    assert peaks(profile) == {A0: (131, 0), A1: (112, 3)}
    # Recomputation, 1F1B M=4: d0 31 + 2 x 0 + 100 during B0 (which starts when d1 B0 = [7, 16] ends); d1 62 + 1 x 100 + 50 from 7.
    profile = memory_profile(problem, simulate(problem, placement, 4, "1f1b", recompute=True), optimizer_multiplier=2.0)
    assert peaks(profile) == {A0: (131, 16), A1: (212, 7)}


def test_two_stage_memory_steps_and_first_oom():
    problem, placement = two_stage_training()
    capped = Problem(problem.graph, Devices.paper(2, 0, memory=250.0))
    profile = memory_profile(capped, simulate(capped, placement, 4, "gpipe"), optimizer_multiplier=2.0)
    d0 = profile.of(A0)
    # d0: 31, then +100 at 0, 3, 6, 9 (431); frees at the ends of B0..B3 (32, 39, 46, 53).
    assert d0.times == (0, 3, 6, 9, 32, 39, 46, 53)
    assert d0.bytes == (131, 231, 331, 431, 331, 231, 131, 31)
    assert d0.first_oom == 6  # 331 > 250
    assert profile.of(A1).first_oom == 15  # 62 + 200 = 262 > 250 at F3's start
    assert profile.first_oom == (A0, 6)
    assert not profile.fits


def test_three_stage_peaks():
    problem, placement = three_stage_training()
    # W = 5, 6, 7 (backward nodes weigh 0); O = 1 x W; A = 10, 20, 30.
    profile = memory_profile(problem, simulate(problem, placement, 4, "1f1b"), optimizer_multiplier=1.0)
    assert peaks(profile) == {A0: (40, 2), A1: (52, 3), A2: (44, 3)}  # 3, 2, 1 in flight
    profile = memory_profile(problem, simulate(problem, placement, 4, "gpipe"), optimizer_multiplier=1.0)
    assert peaks(profile) == {A0: (50, 3), A1: (92, 7), A2: (134, 9)}
    profile = memory_profile(problem, simulate(problem, placement, 1, "gpipe"), optimizer_multiplier=1.0)
    assert peaks(profile) == {A0: (20, 0), A1: (32, 1), A2: (44, 3)}
    profile = memory_profile(problem, simulate(problem, placement, 4, "inference"), optimizer_multiplier=1.0)
    assert peaks(profile) == {A0: (15, 0), A1: (26, 1), A2: (37, 3)}


def test_output_bytes_estimate_from_costs():
    nodes = (Node(0, 1, 1), Node(1, 1, 1), Node(2, 1, 1), Node(3, 1, 1))
    edges = (Edge(0, 1, 2.0, size=20.0), Edge(1, 2, 4.0), Edge(2, 3, 1.0, size=30.0))
    graph = Graph(nodes, edges)
    # Ratios size/cost: 10 and 30 -> median 20; node 1 has no size: 4 x 20.
    assert output_bytes(graph) == {0: 20.0, 1: 80.0, 2: 30.0, 3: 0.0}
    assert output_bytes(graph, bytes_per_cost=1.0)[1] == 4.0


def test_bad_optimizer_multiplier():
    problem, placement = two_stage_training()
    with pytest.raises(PlacementError):
        stage_memory(problem, placement, optimizer_multiplier=-1.0)


@pytest.mark.parametrize("kind", ["inference", "gpipe", "1f1b"])
@pytest.mark.parametrize("microbatches", [1, 3, 8])
@pytest.mark.parametrize("recompute", [False, True])
def test_closed_form_matches_the_sweep(kind, microbatches, recompute):
    """The memory-aware planner's closed form equals the peak found by sweeping the simulated events."""
    problem = load_problem(SAMPLES / "throughput" / "layer" / "bert24_training.json")
    placement = solve_dp(problem).placement
    schedule = simulate(problem, placement, microbatches, kind, recompute=recompute)
    profile = memory_profile(problem, schedule, optimizer_multiplier=2.0)
    table = peak_table(problem, placement, kind, microbatches, 2.0, schedule.recompute)
    assert [d.device for d in profile.devices] == [row[0] for row in table]
    for entry, (_, peak, cap) in zip(profile.devices, table):
        assert entry.peak == pytest.approx(peak, rel=1e-12)
        assert entry.cap == cap


# ----------------------------------------------------------------------------- issue 26: the realistic default
def _gpt_training():
    from placement.modelling.builders import transformer_graph
    from placement.perf.transformer import TransformerSpec

    return transformer_graph(
        TransformerSpec(layers=3, hidden=2048, heads=16, seq_length=2048, vocab=50257), training=True
    )


def test_activations_are_the_bytes_written_and_adam_is_mixed_precision():
    """A GPT layer keeps its 144 MiB written (every operator's output; fused attention keeps no s x s scores), not
    its 8 MiB output (Korthikanti et al. count 34 s b h bytes = 136 MiB); bf16 Adam = 16 B/param."""
    from placement.model import AcceleratorKind, Placement, Stage
    from placement.pipeline.memory import activation_bytes, default_optimizer_multiplier, memory_breakdown

    graph = _gpt_training()
    layer = next(n for n in graph.nodes if n.name == "layer0")
    assert activation_bytes(graph)[layer.id] == layer.extra["bytesWritten"] == 144 * 2**20
    assert output_bytes(graph)[layer.id] == 2 * 2048 * 2048  # b x s x h bf16: the output only
    assert default_optimizer_multiplier(graph) == 6.0  # 12 bytes (fp32 master + 2 moments) per 2-byte weight
    problem = Problem(graph, Devices(accelerators=(AcceleratorKind("A100", 1, 80 * 2**30),), cpus=0))
    plan = Placement((Stage(problem.devices.slots()[0], tuple(n.id for n in graph.nodes)),))
    (b,) = memory_breakdown(problem, plan, "1f1b", 8, None)
    forward = sum(n.size for n in graph.nodes if not n.is_backward)
    # bytes per parameter: bf16 weight 2 + bf16 gradient 2 + fp32 master 4 + two fp32 moments 8 = 16
    assert (b.weights, b.gradients, b.optimizer) == pytest.approx((forward, forward, 6 * forward))
    written = sum(activation_bytes(graph)[n.id] for n in graph.nodes if not n.is_backward)
    assert b.activations == pytest.approx(written)  # one stage: one microbatch in flight under 1F1B
    assert b.peak == peak_table(problem, plan, "1f1b", 8, None)[0][1]
    assert b.free == pytest.approx(80 * 2**30 - b.peak)


def test_paper_files_keep_fp32_adam_and_the_breakdown_sums_to_every_peak():
    """No dtype in the file: fp32 weights, Adam's two moments (x2, as before issue 26); parts sum to the peak."""
    from placement.pipeline.memory import default_optimizer_multiplier, memory_breakdown

    problem = load_problem(SAMPLES / "throughput" / "layer" / "bert24_training.json")
    assert default_optimizer_multiplier(problem.graph) == 2.0
    plan = solve_dp(problem).placement
    for schedule in ("inference", "gpipe", "1f1b"):
        rows = memory_breakdown(problem, plan, schedule, 4, None)
        table = peak_table(problem, plan, schedule, 4, 2.0)
        assert [r.peak for r in rows] == [peak for _, peak, _ in table]
        for r in rows:
            assert r.weights + r.gradients + r.optimizer + r.activations == pytest.approx(r.peak, rel=1e-12)
