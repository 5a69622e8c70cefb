"""The evaluator against hand-computed loads and latencies, and the paper's expert splits."""

import math

import pytest

from placement import (
    AcceleratorKind,
    Devices,
    DeviceSlot,
    Edge,
    Graph,
    Node,
    Placement,
    Problem,
    Stage,
    evaluate,
    is_contiguous,
    latency,
    load_placement,
    load_problem,
)

from .golden import EXPERT_MAX_LOAD, LATENCY_BASELINES

A0, A1, C0 = DeviceSlot("accelerator", 0), DeviceSlot("accelerator", 1), DeviceSlot("cpu", 0)


def diamond() -> Problem:
    """a -> b, a -> c, b -> d, c -> d; costs a:1, b:2, c:3 (d has no out-edges)."""
    nodes = (
        Node(1, cpu_latency=10, accelerator_latency=1, size=5, name="a"),
        Node(2, cpu_latency=20, accelerator_latency=2, size=5, name="b"),
        Node(3, cpu_latency=30, accelerator_latency=3, size=5, name="c"),
        Node(4, cpu_latency=40, accelerator_latency=4, size=5, name="d"),
    )
    edges = (Edge(1, 2, 1.0), Edge(1, 3, 1.0), Edge(2, 4, 2.0), Edge(3, 4, 3.0))
    return Problem(Graph(nodes, edges), Devices.paper(2, 1, 10.0))


def test_loads_count_each_crossing_node_once_per_device():
    problem = diamond()
    placement = Placement((Stage(A0, (1, 2)), Stage(A1, (3, 4))))
    evaluation = evaluate(problem, placement)
    first, second = evaluation.devices
    # A0 = {a, b}: compute 3; a crosses (a->c), b crosses (b->d): comm 1 + 2.
    assert (first.compute, first.communication, first.load) == (3, 3, 6)
    # A1 = {c, d}: compute 7; incoming a (1) and b (2); c->d internal: comm 3.
    assert (second.compute, second.communication, second.load) == (7, 3, 10)
    assert evaluation.max_load == 10 and evaluation.feasible
    # Latency: one call per accelerator: A0 lasts 0 in + 3 + 3 out = 6; A1 starts at 6, lasts 3 + 7 + 0.
    assert evaluation.latency == 16


def test_cpu_pays_no_communication_and_latency_runs_cpu_nodes_in_parallel():
    problem = diamond()
    placement = Placement((Stage(A0, (1,)), Stage(C0, (2, 3)), Stage(A1, (4,))))
    evaluation = evaluate(problem, placement)
    cpu = evaluation.load_of(C0)
    assert cpu.communication == 0 and cpu.load == 50
    # A0: 1 + out 1 = 2; b ends 2+20 = 22, c ends 2+30 = 32; A1 starts 32: in 2+3, compute 4.
    assert latency(problem, placement) == 32 + 5 + 4


def test_overlap_bandwidth_speed_and_kinds():
    problem = diamond()
    devices = Devices((AcceleratorKind("fast", 1, 100, speed=2.0, bandwidth=0.5),), cpus=1, bandwidth=2.0, overlap=True)
    fast = DeviceSlot("fast", 0)
    placement = Placement((Stage(fast, (1, 2)), Stage(C0, (3, 4))))
    entry = evaluate(Problem(problem.graph, devices), placement).load_of(fast)
    assert entry.compute == 1.5  # (1 + 2) / speed 2
    # Crossing: a (a->c) and b (b->d): 3, scaled by 1 / (2.0 * 0.5) = 1.
    assert entry.communication == 3.0
    assert entry.load == 3.0  # overlap: max(1.5, 3)


def test_violations_are_listed_not_raised():
    problem = diamond()
    nodes = tuple(
        Node(
            n.id,
            n.cpu_latency,
            n.accelerator_latency,
            supported_on_accelerator=n.id != 4,
            size=n.size,
            color_class=7 if n.id in (2, 3) else None,
        )
        for n in problem.graph.nodes
    )
    problem = Problem(Graph(nodes, problem.graph.edges), problem.devices)
    placement = Placement((Stage(A0, (1, 2, 4)), Stage(A1, (3,)), Stage(DeviceSlot("accelerator", 5), ())))
    evaluation = evaluate(problem, placement)
    assert not evaluation.feasible
    text = " | ".join(evaluation.violations)
    assert "cannot run on accelerator 0" in text
    assert "needs 15 bytes, holds 10" in text
    assert "color class 7 is split" in text
    assert "only 2 device(s)" in text


def test_cyclic_calls_have_infinite_latency_and_are_not_contiguous():
    problem = diamond()
    placement = Placement((Stage(A0, (1, 4)), Stage(A1, (2, 3))))
    assert math.isinf(latency(problem, placement))
    assert not is_contiguous(problem, placement)


def test_calls_split_an_accelerator_into_sequential_subgraphs():
    problem = diamond()
    placement = Placement((Stage(A0, (1, 4), calls=((1,), (4,))), Stage(C0, (2, 3))))
    # call 1: a, out 1 -> ends 2; b, c on CPU end 22 and 32; call 2: d at 32, in 2+3, compute 4.
    assert latency(problem, placement) == 41


@pytest.mark.parametrize("graph,split", sorted(EXPERT_MAX_LOAD))
def test_expert_splits_evaluate_to_the_papers_figures(samples_dir, graph, split):
    problem = load_problem(samples_dir / graph)
    placement = load_placement(samples_dir / split, problem.graph, problem.devices)
    evaluation = evaluate(problem, placement)
    assert evaluation.feasible, evaluation.violations
    assert evaluation.max_load == pytest.approx(EXPERT_MAX_LOAD[(graph, split)], rel=5e-5)


def test_latency_of_the_dp_split_matches_the_paper_on_bert24(samples_dir):
    from placement import solve_dp

    name = "latency/layer/bert24_inference.json"
    problem = load_problem(samples_dir / name)
    result = solve_dp(problem)
    assert evaluate(problem, result.placement).latency == pytest.approx(LATENCY_BASELINES[name]["dp_split"], rel=1e-5)
