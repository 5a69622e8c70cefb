"""Options for our own graphs (placement.multidim.convert): hand-computed options, brute force, errors."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from placement import multidim
from placement.errors import InvalidDevicesError, InvalidGraphError, PlacementError
from placement.io import load_problem
from placement.model import Edge, Graph, Node, Recompute
from placement.modelling.builders import CnnConfig, build_cnn, build_transformer
from placement.modelling.training import training_graph
from placement.multidim.convert import options_from_graph
from placement.multidim.dp import solve_multidim
from placement.multidim.evaluate import evaluate_plan
from placement.perf.transformer import TransformerSpec

from .test_multidim import assert_equals_brute_force

ROOT = Path(__file__).resolve().parent.parent
TINY = ROOT / "sample_graphs" / "ours" / "tiny_training.json"


def _options(problem, node):
    """{t: {option name: (p, w, a, b)}} of one model node."""
    return {
        t: {o.name: (o.time, o.parameters, o.memory_a, o.memory_b) for o in opts}
        for t, opts in problem.nodes[node].options
    }


def _mlp() -> Graph:
    """A 2-layer MLP, forward only, with operator data: fc1 (MatMul) -> relu -> fc2 (MatMul)."""

    def node(i, name, op, ms, size, written):
        return Node(i, 10 * ms, ms, size=size, name=name, extra={"op": op, "flops": 1.0, "bytesWritten": written})

    nodes = (
        node(0, "fc1", "MatMul", 2.0, 400.0, 80.0),
        node(1, "relu", "Relu", 1.0, 0.0, 80.0),
        node(2, "fc2", "MatMul", 4.0, 400.0, 40.0),
    )
    edges = (Edge(0, 1, 0.08, 80.0), Edge(1, 2, 0.08, 80.0))
    return Graph(nodes, edges, name="mlp")


def test_mlp_options_hand_computed():
    # bandwidth 1000 B/s; backward = 2 x forward, so p = 3 x forward (ms); gradients = weights.
    # No optimizer state here (the hand computation below predates issue 26's mixed-precision Adam default).
    mp = options_from_graph(
        _mlp(), devices=4, memory=1e6, bandwidth=1000.0, microbatches=4, degrees=(1, 2), optimizer_multiplier=0.0
    )
    assert [n.name for n in mp.nodes] == ["fc1", "relu", "fc2"]
    assert [(e.source, e.target, e.cost) for e in mp.edges] == [(0, 1, 80.0), (1, 2, 80.0)]
    assert mp.kinds[0].count == 4 and mp.kinds[0].bandwidth == 1000.0 and mp.microbatches == 4
    fc1 = _options(mp, 0)
    # t = 1: p = 2 + 4 = 6 ms, w = 400, a = bytesWritten 80, b = 400 + 400 (gradient)
    assert fc1[1]["vanilla"] == pytest.approx((6.0, 400, 80, 800))
    # fc1 has no input: its checkpoint is 0 bytes; p + forward 2 ms, b + 80 (one recomputation's activations)
    assert fc1[1]["activation recomp"] == pytest.approx((8.0, 400, 0, 880))
    # t = 2: all-reduce of the 80-byte output: 2 (2-1)/2 * 80 / 1000 = 0.08 s = 80 ms, twice (forward, backward)
    assert fc1[2]["vanilla"] == pytest.approx((3.0 + 160.0, 200, 40, 400))
    assert fc1[2]["activation recomp"] == pytest.approx((163.0 + 1.0 + 80.0, 200, 0, 440))
    relu = _options(mp, 1)
    # not split: replicated with full time and memory at t = 2; its checkpoint (80 B input) saves nothing
    assert relu[1] == relu[2] == {"vanilla": pytest.approx((3.0, 0, 80, 0))}
    fc2 = _options(mp, 2)
    # fc2 is a sink: no output leaves it, so no all-reduce; its checkpoint is its 80-byte input (> 40 / 2)
    assert fc2[1]["vanilla"] == pytest.approx((12.0, 400, 40, 800))
    assert "activation recomp" not in fc2[1] and "activation recomp" not in fc2[2]
    assert fc2[2]["vanilla"] == pytest.approx((6.0, 200, 20, 400))


@pytest.mark.parametrize(
    "recompute, offered",
    [(Recompute.PER_STAGE, True), ("per-stage", True), (True, True), ("none", False), (False, False)],
)
def test_recompute_is_offered_per_node_or_not_at_all(recompute, offered):
    mp = options_from_graph(_mlp(), devices=4, memory=1e6, bandwidth=1000.0, degrees=(1,), recompute=recompute)
    assert ("activation recomp" in _options(mp, 0)[1]) is offered


@pytest.mark.parametrize("recompute", ["always", "never", None])
def test_recompute_other_than_per_node_or_none_is_refused(recompute):
    with pytest.raises(PlacementError, match="recompute must be"):
        options_from_graph(_mlp(), devices=4, memory=1e6, bandwidth=1000.0, recompute=recompute)


def test_paper_graph_has_one_option_per_node():
    problem = load_problem(TINY)
    mp = options_from_graph(problem, microbatches=4, optimizer_multiplier=0.0)
    # devices and memory from the file; bandwidth implied by the edges: 4e6 B in 0.2 ms = 2e10 B/s
    assert (mp.kinds[0].count, mp.kinds[0].memory, mp.kinds[0].bandwidth) == (2, 64e6, pytest.approx(2e10))
    assert [n.name for n in mp.nodes] == ["embed/fwd", "layer1/fwd", "layer2/fwd", "head/fwd"]
    assert [(e.source, e.target, e.cost) for e in mp.edges] == [(0, 1, 4e6), (1, 2, 4e6), (2, 3, 4e6)]
    # forward + backward latency (ms), weights = forward size, a = output bytes, b = all sizes
    expected = [(3.0, 3e7, 4e6, 3e7), (9.0, 2e7, 4e6, 2e7), (9.0, 2e7, 4e6, 2e7), (4.5, 1e7, 0, 1e7)]
    for v, values in enumerate(expected):
        assert _options(mp, v) == {1: {"vanilla": pytest.approx(values)}}
    # The default adds the app's optimizer state: fp32 weights (no dtype in the file) -> Adam's 2 x w.
    default = options_from_graph(problem, microbatches=4)
    for v, (p, w, a, b) in enumerate(expected):
        assert _options(default, v) == {1: {"vanilla": pytest.approx((p, w, a, b + 2 * w))}}


def test_paper_plan_hand_computed():
    # 2 devices, 64 MB each, N = 2; p = 3, 9, 9, 4.5 ms; b = 30, 20, 20, 10 MB; a = 4, 4, 4, 0 MB per microbatch.
    # One stage (any d) holds b = 80 MB: too much. Two stages of d = 1: the first has y = 2, so {0, 1} needs
    # 50 + 2 x 8 = 66 MB > 64: only {0} | {1, 2, 3} fits (38 MB and 50 + 8 = 58 MB). Times: 3 ms + 2 x 4 MB / 20 GB/s
    # = 3.4 ms and 22.5 ms + 0.4 ms = 22.9 ms.
    mp = options_from_graph(load_problem(TINY), microbatches=2, optimizer_multiplier=0.0)  # no optimizer state
    result = solve_multidim(mp)
    ev = evaluate_plan(mp, result.plan)
    assert result.status == "optimal" and ev.feasible
    assert [s.nodes for s in result.plan.stages] == [(0,), (1, 2, 3)]
    assert result.time_per_sample == pytest.approx(22.9)
    assert ev.time_per_sample == pytest.approx(result.time_per_sample)


def test_builder_transformer_and_cnn():
    problem = build_transformer(TransformerSpec(layers=1, hidden=64, heads=4, seq_length=16, vocab=100))
    mp = options_from_graph(problem, microbatches=8)
    assert [n.name for n in mp.nodes] == ["embedding", "layer0", "head"]
    assert [t for t, _ in mp.nodes[1].options] == [1, 2, 4, 8]
    layer = problem.graph.nodes[1]
    bandwidth = mp.kinds[0].bandwidth
    assert bandwidth == pytest.approx(450e9 * 0.8)  # the H100 link the builder priced edges with (NCCL's 80 %)
    out = 2 * 16 * 64  # bsh bf16 bytes leave the layer
    # forward + backward ms: the backward node's kernels (dgrad + wgrad products, attention backward...)
    grad = next(n for n in training_graph(problem.graph).nodes if n.name == "layer0 (grad)")
    p1 = layer.accelerator_latency + grad.accelerator_latency
    assert grad.accelerator_latency > layer.accelerator_latency  # (a tiny layer: launches dominate, not 2x)
    layer_opts = _options(mp, 1)
    # b = weights + fp16 gradients + mixed-precision Adam (fp32 master + two moments = 6 x the fp16 weights)
    assert layer_opts[1]["vanilla"] == pytest.approx((p1, layer.size, layer.extra["bytesWritten"], 8 * layer.size))
    assert layer_opts[4]["vanilla"][0] == pytest.approx(
        p1 / 4 + 1000 * 2 * 2 * 3 / 4 * out / bandwidth
    )  # all-reduce in ms
    assert layer_opts[4]["activation recomp"][2] == out  # keeps its input (the embedding output) only
    # a CNN has no matrix product in its blocks but its classifier: blocks are replicated at t > 1
    cnn = options_from_graph(build_cnn(CnnConfig(blocks=(1,), width=8, image=32)), microbatches=4)
    assert dict(cnn.nodes[1].options)[2] == dict(cnn.nodes[1].options)[1]
    # the builder's training graph (backward nodes tied by color classes) gives the same model
    trained = build_transformer(TransformerSpec(layers=1, hidden=64, heads=4, seq_length=16, vocab=100), training=True)
    assert options_from_graph(trained, microbatches=8) == mp
    # a paper-format graph (no operator data) gets t = 1 only
    assert all(n.degrees == (1,) for n in options_from_graph(load_problem(TINY)).nodes)


def _random_graph(rng: random.Random) -> Graph:
    n = rng.randint(2, 4)
    nodes, edges = [], []
    for i in range(n):
        ms = rng.choice([0.5, 1.0, 2.0, 4.0])
        nodes.append(
            Node(
                i,
                ms,
                ms,
                size=rng.choice([0.0, 100.0, 300.0]),
                name=f"n{i}",
                extra={
                    "op": rng.choice(["MatMul", "Relu"]),
                    "flops": 1.0,
                    "bytesWritten": rng.choice([20.0, 60.0, 200.0]),
                },
            )
        )
    for j in range(1, n):
        for i in range(j):
            if rng.random() < 0.5:
                edges.append(Edge(i, j, 0.01 * (i + 1), 10.0 * (i + 1)))
    return Graph(tuple(nodes), tuple(edges))


@pytest.mark.parametrize("seed", range(16))
def test_planner_on_generated_options_equals_brute_force(seed):
    rng = random.Random(seed)
    mp = options_from_graph(
        _random_graph(rng),
        devices=rng.choice([2, 3, 4]),
        memory=rng.choice([300.0, 500.0, 800.0, 3000.0]),
        bandwidth=rng.choice([100.0, 1000.0]),
        microbatches=rng.choice([2, 4]),
        degrees=(1, 2),
    )
    assert_equals_brute_force(mp)


def test_color_classes_fold_and_cycles_merge():
    # training graph: a -> b forward, a and c share a color class and b -> c: the classes {a, c} and {b} form
    # a cycle, so they merge into one model node.
    nodes = (
        Node(0, 1, 1, name="a", color_class=0),
        Node(1, 1, 2, name="b"),
        Node(2, 1, 3, name="c", color_class=0),
    )
    graph = Graph(nodes, (Edge(0, 1, 1.0), Edge(1, 2, 1.0)))
    mp = options_from_graph(graph, devices=2, bandwidth=1000.0, microbatches=2)
    assert len(mp.nodes) == 1 and mp.nodes[0].name == "a + b + c" and mp.edges == ()
    assert mp.nodes[0].options_for(1)[0].time == pytest.approx(3 * 6)  # ms


def test_public_export_and_bad_arguments():
    assert multidim.options_from_graph is options_from_graph
    graph = _mlp()
    with pytest.raises(InvalidDevicesError, match="bandwidth must be a positive"):
        options_from_graph(graph, bandwidth=0.0)
    with pytest.raises(InvalidDevicesError, match="memory must be a positive"):
        options_from_graph(graph, memory=-1.0)
    with pytest.raises(InvalidGraphError, match="microbatches must be a positive integer"):
        options_from_graph(graph, microbatches=0)
    with pytest.raises(InvalidGraphError, match="degrees must be positive integers"):
        options_from_graph(graph, degrees=(2, 0))
    with pytest.raises(InvalidGraphError, match="expected a Graph or Problem"):
        options_from_graph(json.loads("{}"))  # type: ignore[arg-type]


def test_inventory_kinds_take_counts_memory_bandwidth_and_relative_speed():
    """Every accelerator kind of the inventory with devices, its speed from the graph's own kind latencies."""
    import math as _math

    from placement import AcceleratorKind, Devices, InvalidDevicesError, Problem
    from placement.modelling.builders import build_transformer
    from placement.multidim.convert import UNLIMITED_MEMORY, inventory_kinds

    spec = TransformerSpec(layers=2, hidden=256, heads=4, seq_length=128, vocab=1000)
    built = build_transformer(spec, {"A100": 8, "V100": 4}, dtype="fp16")
    devices = Devices(
        (
            AcceleratorKind("A100", 8, 80 * 2**30, bandwidth=2.0),
            AcceleratorKind("H100", 0),
            AcceleratorKind("V100", 4, _math.inf, speed=0.5),
        ),
        bandwidth=1.5,
    )
    kinds = inventory_kinds(Problem(built.graph, devices), 1e9)
    assert [(k.name, k.count) for k in kinds] == [("A100", 8), ("V100", 4)]
    assert kinds[0].memory == 80 * 2**30 and kinds[1].memory == UNLIMITED_MEMORY
    assert kinds[0].bandwidth == pytest.approx(3e9) and kinds[1].bandwidth == pytest.approx(1.5e9)
    nodes = built.graph.nodes
    reference = sum(n.accelerator_latency for n in nodes)
    v100 = sum(dict(n.kind_latency).get("V100", n.accelerator_latency) for n in nodes) / 0.5
    assert kinds[0].speed == pytest.approx(1.0) and kinds[1].speed == pytest.approx(reference / v100)
    assert kinds[1].speed < 0.5  # the graph's V100 is slower than its A100, and the inventory halves it again
    with pytest.raises(InvalidDevicesError, match="no accelerator"):
        inventory_kinds(Problem(built.graph, Devices((AcceleratorKind("A100", 0),), cpus=2)), 1e9)
    with pytest.raises(InvalidDevicesError, match="bandwidth"):
        inventory_kinds(Problem(built.graph, devices), 0.0)
