"""Memory-aware planning: brute force on small training graphs, the plain DP on re-weighted graphs, samples."""

from __future__ import annotations

import dataclasses
import itertools
import math
import random
from pathlib import Path

import pytest

from placement import (
    AcceleratorKind,
    Devices,
    Graph,
    Placement,
    PlacementError,
    Problem,
    Stage,
    evaluate,
    load_problem,
    solve_dp,
)
from placement.exact.memory_aware import solve_memory_aware
from placement.pipeline.memory import memory_profile, output_bytes
from placement.pipeline.schedule import simulate
from tests.randgraphs import _contiguous_order, _units, contiguous_orders, random_problem

SAMPLES = Path(__file__).resolve().parent.parent / "sample_graphs"
TRAINING = sorted((SAMPLES / "throughput").glob("*/*_training.json"))


def random_memory_problem(seed: int) -> Problem:
    """A small random training graph with activation sizes on its edges and caps that often bind."""
    rng = random.Random(1000 + seed)
    base = random_problem(seed, training=True, max_forward=4)
    out_size = {n.id: float(rng.choice([0, 1, 2, 4, 8])) for n in base.graph.nodes}
    edges = tuple(dataclasses.replace(e, size=out_size[e.source]) for e in base.graph.edges)
    graph = Graph(base.graph.nodes, edges, name=base.graph.name)
    cap = rng.choice([math.inf, 8.0, 12.0, 16.0, 24.0, 40.0])
    if seed % 4 == 3:  # two accelerator kinds: a small fast one and a big slow one
        devices = Devices(
            accelerators=(
                AcceleratorKind("small", 1, cap, speed=2.0),
                AcceleratorKind("big", rng.randint(1, 2), 2 * cap, speed=1.0),
            ),
            cpus=rng.randint(0, 1),
        )
    else:
        devices = Devices.paper(rng.randint(1, 3), rng.randint(0, 1), cap)
    if seed % 5 == 2:
        devices = devices.with_changes(overlap=True)
    return Problem(graph, devices)


def forward_compute(problem: Problem, stage: Stage) -> float:
    """``math.fsum`` of the stage's forward latencies on its device (what recomputation adds)."""
    graph = problem.graph
    forward = [graph.node_by_id[n] for n in stage.nodes if not graph.node_by_id[n].is_backward]
    if stage.device.is_cpu:
        return math.fsum(n.cpu_latency for n in forward)
    kind = problem.devices.kind(stage.device.kind)
    return math.fsum(n.latency_on(kind) for n in forward)


def brute_force(problem: Problem, schedule: str, microbatches: int, optimizer: float, recompute):
    """Minimum max-load (+ recomputation) over every contiguous split, pipeline order and set of recomputing
    stages whose *simulated* memory fits every device (independent of the planner's closed form and lattice).

    ``recompute``: False / "none", True / "always", or "per-stage" (every subset of the stages).
    """
    graph, devices = problem.graph, problem.devices
    choice = {False: "none", True: "always"}.get(recompute, recompute)
    if schedule == "inference":
        choice = "none"
    slots = list(devices.slots())
    units = _units(graph)
    best, best_placement = math.inf, None
    for assignment in itertools.product(range(len(slots)), repeat=len(units)):
        stages: dict = {}
        for unit, index in zip(units, assignment):
            stages.setdefault(slots[index], set()).update(unit)
        used: dict[str, list[int]] = {}
        for slot in stages:
            used.setdefault(slot.kind, []).append(slot.index)
        if any(sorted(v) != list(range(len(v))) for v in used.values()):
            continue
        for order in contiguous_orders(graph, stages):
            placement = Placement(tuple(Stage(d, tuple(stages[d])) for d in order))
            evaluation = evaluate(problem, placement)
            if not evaluation.feasible:
                continue
            n = len(placement.stages)
            subsets = {
                "none": [()],
                "always": [tuple(range(n))],
                "per-stage": [c for r in range(n + 1) for c in itertools.combinations(range(n), r)],
            }[choice]
            for subset in subsets:
                value = max(
                    entry.load + (forward_compute(problem, stage) if k in subset else 0.0)
                    for k, (entry, stage) in enumerate(zip(evaluation.devices, placement.stages))
                )
                if value >= best:
                    continue
                recomputing = [placement.stages[k].device for k in subset]
                timeline = simulate(problem, placement, microbatches, schedule, recompute=recomputing)
                if memory_profile(problem, timeline, optimizer).fits:
                    best, best_placement = value, placement
    return best, best_placement


CASES = [
    (seed, ("1f1b", "gpipe", "inference")[seed % 3], 1 + seed % 4, (0.0, 1.0, 2.0)[seed % 3], seed % 7 == 4)
    for seed in range(160)
]


def check_case(seed, schedule, microbatches, optimizer, recompute):
    problem = random_memory_problem(seed)
    expected, _ = brute_force(problem, schedule, microbatches, optimizer, recompute)
    result = solve_memory_aware(problem, schedule, microbatches, optimizer, recompute)
    if math.isinf(expected):
        assert result.status == "infeasible", (seed, result)
        return
    assert result.status == "optimal", (seed, result)
    assert result.objective == pytest.approx(expected, rel=1e-9, abs=1e-9), seed
    # The plan itself: the evaluator agrees on its value and the simulated memory fits.
    evaluation = evaluate(problem, result.placement)
    assert evaluation.feasible
    assert _contiguous_order(problem.graph, {s.device: set(s.nodes) for s in result.placement.stages}) is not None
    value = max(
        entry.load + (forward_compute(problem, stage) if recompute and schedule != "inference" else 0.0)
        for entry, stage in zip(evaluation.devices, result.placement.stages)
    )
    assert value == pytest.approx(result.objective, rel=1e-9, abs=1e-9)
    timeline = simulate(problem, result.placement, microbatches, schedule, recompute=recompute)
    assert memory_profile(problem, timeline, optimizer).fits


@pytest.mark.parametrize("seed, schedule, microbatches, optimizer, recompute", CASES[:60])
def test_brute_force_small(seed, schedule, microbatches, optimizer, recompute):
    check_case(seed, schedule, microbatches, optimizer, recompute)


@pytest.mark.slow
@pytest.mark.parametrize("seed, schedule, microbatches, optimizer, recompute", CASES[60:])
def test_brute_force_more(seed, schedule, microbatches, optimizer, recompute):
    check_case(seed, schedule, microbatches, optimizer, recompute)


def test_unsupported_nodes_do_not_poison_the_search():
    """Regression: a node no accelerator runs used to add inf to the stage compute, and backtracking
    turned inf - inf into NaN, so later stages were never accepted (82.18 instead of 43.36 here)."""
    check_case(191, "gpipe", 4, 2.0, True)


def test_brute_force_cases_bind():
    """The random cases exercise the memory rule: some plans differ from the size-only optimum."""
    differ = 0
    for seed, schedule, microbatches, optimizer, recompute in CASES[:60]:
        problem = random_memory_problem(seed)
        plain = solve_dp(problem)
        aware = solve_memory_aware(problem, schedule, microbatches, optimizer, recompute)
        if plain.ok and (not aware.ok or aware.objective > plain.objective * (1 + 1e-9)):
            differ += 1
    assert differ >= 6


def reweighted(problem: Problem, in_flight: int, optimizer: float) -> Problem:
    """Sizes that make the plain DP's additive memory rule equal to GPipe's peak W + O + M A."""
    out = output_bytes(problem.graph)
    nodes = tuple(
        node
        if node.is_backward
        else dataclasses.replace(node, size=node.size * (1 + optimizer) + in_flight * out[node.id])
        for node in problem.graph.nodes
    )
    return Problem(Graph(nodes, problem.graph.edges, name=problem.graph.name), problem.devices)


@pytest.mark.slow
@pytest.mark.parametrize("path", TRAINING, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_gpipe_equals_the_plain_dp_on_reweighted_sizes(path):
    """Under GPipe every stage holds all M microbatches, so its memory is additive over nodes: the plain DP on
    re-weighted node sizes is an independent exact answer."""
    problem = load_problem(path)
    total = sum(node.size for node in problem.graph.nodes)
    for fraction, microbatches in ((0.5, 4), (0.3, 8), (0.2, 16)):
        devices = problem.devices.with_kind(problem.devices.accelerators[0].name, memory=total * fraction)
        capped = Problem(problem.graph, devices)
        # A small ideal cap keeps the (rare) fallback to the unreduced lattice fast in both.
        aware = solve_memory_aware(capped, "gpipe", microbatches, optimizer_multiplier=1.0, max_ideals=100_000)
        plain = solve_dp(reweighted(capped, microbatches, 1.0), max_ideals=100_000)
        assert aware.status == plain.status
        if plain.ok:
            assert aware.objective == pytest.approx(plain.objective, rel=1e-9)


def bert_training_capped() -> Problem:
    problem = load_problem(SAMPLES / "throughput" / "layer" / "bert24_training.json")
    return Problem(problem.graph, problem.devices.with_kind("accelerator", memory=1.5e9))


def test_shared_workload_memory_aware_plan_differs():
    """BERT-24 training, accelerators of 1.5 GB, 1F1B with 8 microbatches and Adam (2x): the size-only plan
    runs out of memory; the memory-aware plan fits at a higher time per sample."""
    problem = bert_training_capped()
    plain = solve_dp(problem)
    aware = solve_memory_aware(problem, "1f1b", 8, optimizer_multiplier=2.0)
    assert plain.status == aware.status == "optimal"
    assert aware.objective > plain.objective * 1.05
    plain_memory = memory_profile(problem, simulate(problem, plain.placement, 8, "1f1b"), 2.0)
    aware_memory = memory_profile(problem, simulate(problem, aware.placement, 8, "1f1b"), 2.0)
    assert not plain_memory.fits and plain_memory.first_oom is not None
    assert aware_memory.fits
    assert evaluate(problem, aware.placement).max_load == pytest.approx(aware.objective, rel=1e-12)
    # 1F1B keeps fewer microbatches on later stages than GPipe: GPipe needs a slower plan still.
    gpipe = solve_memory_aware(problem, "gpipe", 8, optimizer_multiplier=2.0)
    assert gpipe.objective >= aware.objective


def test_without_memory_pressure_it_is_the_plain_dp():
    problem = load_problem(SAMPLES / "throughput" / "layer" / "bert24_training.json")
    assert solve_memory_aware(problem, "1f1b", 8, 2.0).objective == pytest.approx(solve_dp(problem).objective)


def test_bad_options():
    problem = bert_training_capped()
    with pytest.raises(PlacementError):
        solve_memory_aware(problem, "zero-bubble", 4)
    with pytest.raises(PlacementError):
        solve_memory_aware(problem, "1f1b", 0)
    with pytest.raises(PlacementError):
        solve_memory_aware(problem, "1f1b", 4, optimizer_multiplier=-1)


def test_infeasible_has_a_reason():
    problem = load_problem(SAMPLES / "throughput" / "layer" / "bert24_training.json")
    tiny = Problem(problem.graph, problem.devices.with_kind("accelerator", memory=1e6).with_changes(cpus=0))
    result = solve_memory_aware(tiny, "1f1b", 4)
    assert result.status == "infeasible" and result.reason
