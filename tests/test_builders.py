"""Model builders against published model sizes and FLOP formulas, and the exact DP on a 12-layer transformer."""

import math
import time

import pytest

from placement import InvalidGraphError, count_ideals, evaluate, solve_dp
from placement.modelling.builders import (
    CnnConfig,
    TransformerConfig,
    build_cnn,
    build_transformer,
    cnn_graph,
    transformer_graph,
)
from placement.modelling.roofline import CostModel, DeviceSpec

GPT2_SMALL_PARAMS = 124_439_808  # Hugging Face "gpt2" (tied embeddings, position table included)
RESNET50_PARAMS = 25_557_032  # torchvision resnet50 (with batch-norm weights and biases)
RESNET50_BN_CHANNELS = 26_560  # channels of its batch norms (53,120 BN weights + biases)
RESNET50_CONV_MACS = 4_087_136_256  # onnx-tool's MAC count of the ONNX test model light_resnet50 (convs)


def flops_of(graph, op):
    return sum(n.extra["flops"] for n in graph.nodes if n.extra.get("op") == op)


def test_gpt2_small_parameters():
    graph = transformer_graph(TransformerConfig(dtype="fp32"), granularity="operator")
    # Our LM head is untied: GPT-2's count plus one V x h matrix, 4 bytes each.
    assert sum(n.size for n in graph.nodes) == 4 * (GPT2_SMALL_PARAMS + 50257 * 768)


@pytest.mark.parametrize("style", ["gpt", "bert"])
def test_transformer_matmul_flops(style):
    c = TransformerConfig(style=style, layers=3, hidden=64, heads=4, seq_len=32, batch=2, vocab=100)
    graph = transformer_graph(c, granularity="operator")
    b, s, h, V = c.batch, c.seq_len, c.hidden, c.vocab
    # Per layer: 24 b s h^2 + 4 b s^2 h (Narayanan et al. 2021) plus the bias adds (3 + 1 + 4 + 1) b s h.
    expected = c.layers * (24 * b * s * h * h + 4 * b * s * s * h + 9 * b * s * h) + 2 * b * s * h * V
    assert flops_of(graph, "MatMul") == expected
    assert flops_of(graph, "Softmax") == c.layers * 5 * b * c.heads * s * s
    assert flops_of(graph, "LayerNormalization") == (2 * c.layers + (style == "gpt")) * 8 * b * s * h


def test_transformer_layer_granularity_sums_operators():
    c = TransformerConfig(layers=4, hidden=128, heads=4, seq_len=64, vocab=1000)
    ops = transformer_graph(c, granularity="operator")
    layers = transformer_graph(c, granularity="layer")
    assert [n.name for n in layers.nodes] == ["embedding"] + [f"layer{i}" for i in range(4)] + ["head"]
    total = sum(n.accelerator_latency for n in ops.nodes)
    assert sum(n.accelerator_latency for n in layers.nodes) == pytest.approx(total)
    assert sum(n.cpu_latency for n in layers.nodes) == pytest.approx(sum(n.cpu_latency for n in ops.nodes))
    assert sum(n.size for n in layers.nodes) == sum(n.size for n in ops.nodes)
    # A chain: each layer sends b*s*h fp16 activations (2 bytes) to the next.
    assert [(e.source, e.target) for e in layers.edges] == [(i, i + 1) for i in range(5)]
    assert layers.edges[1].size == 64 * 128 * 2


def test_roofline_latency_of_one_operator():
    spec = DeviceSpec("dev", 100e12, 50e12, 1e12, efficiency=0.5)
    c = TransformerConfig(layers=1, hidden=64, heads=4, seq_len=32, vocab=100, dtype="fp16")
    graph = transformer_graph(c, CostModel(spec, DeviceSpec("cpu", 1e11, 1e11, 1e10)), granularity="operator")
    query = next(n for n in graph.nodes if n.name == "layer0/q")
    b, s, h, e = 1, 32, 64, 2
    flops = 2 * b * s * h * h + b * s * h
    moved = (b * s * h + h * h + h + b * s * h) * e
    assert query.accelerator_latency == pytest.approx(max(flops / 100e12, moved / 1e12) / 0.5 * 1000)


def test_resnet50_parameters_and_flops():
    graph = cnn_graph(CnnConfig(dtype="fp32"), granularity="operator")
    # Batch norm folded into the convolutions: one bias per channel instead of a weight and a bias.
    assert sum(n.size for n in graph.nodes) == 4 * (RESNET50_PARAMS - RESNET50_BN_CHANNELS)
    convs = [n for n in graph.nodes if n.extra["op"] == "Conv"]
    bias_adds = sum(n.extra["bytesWritten"] / 4 for n in convs)
    assert sum(n.extra["flops"] for n in convs) - bias_adds == 2 * RESNET50_CONV_MACS
    assert len(convs) == 53


def test_cnn_layer_granularity():
    graph = cnn_graph(CnnConfig(blocks=(2, 2), width=16, image=64), granularity="layer")
    assert [n.name for n in graph.nodes] == [
        "stem",
        "stage1.block1",
        "stage1.block2",
        "stage2.block1",
        "stage2.block2",
        "head",
    ]


@pytest.mark.parametrize(
    "changes", [{"hidden": 100, "heads": 12}, {"style": "t5"}, {"layers": 0}, {"dtype": "fp13"}, {"batch": 1.5}]
)
def test_transformer_config_errors(changes):
    with pytest.raises(InvalidGraphError):
        TransformerConfig(**changes)


@pytest.mark.parametrize("changes", [{"blocks": ()}, {"blocks": (3, 0)}, {"image": 8}])
def test_cnn_config_errors(changes):
    with pytest.raises(InvalidGraphError):
        CnnConfig(**changes)


def test_granularity_error():
    with pytest.raises(InvalidGraphError, match="granularity"):
        transformer_graph(TransformerConfig(layers=1), granularity="block")


def test_training_problem_from_builder():
    problem = build_cnn(CnnConfig(blocks=(1, 1), width=8, image=32), accelerators=2, cpus=1, training=True)
    graph = problem.graph
    assert graph.is_training and len(graph.nodes) == 2 * 4
    assert problem.devices.accelerators[0].name == "A100"
    assert problem.devices.accelerators[0].count == 2 and problem.devices.cpus == 1
    result = solve_dp(problem)
    assert result.status == "optimal"


@pytest.mark.parametrize("granularity", ["operator", "layer"])
@pytest.mark.parametrize("training", [False, True])
def test_twelve_layer_transformer_solves_exactly_within_5s(granularity, training):
    problem = build_transformer(
        TransformerConfig(layers=12), accelerators=4, cpus=1, granularity=granularity, training=training
    )
    solve_dp(build_transformer(TransformerConfig(layers=1), accelerators=1, cpus=0))  # compile the kernel
    started = time.perf_counter()
    result = solve_dp(problem)
    seconds = time.perf_counter() - started
    assert result.status == "optimal"
    assert seconds < 5.0
    assert result.stat("ideals") <= count_ideals(problem.graph)
    # The evaluator agrees; CPU cores are slower than accelerators here, so no split beats total / 5 devices.
    evaluation = evaluate(problem, result.placement)
    assert evaluation.feasible and evaluation.max_load == pytest.approx(result.objective)
    total = sum(n.accelerator_latency for n in problem.graph.nodes)
    assert result.objective >= total / 5 - 1e-12
    assert result.objective <= total + 1e-12
    assert math.isfinite(result.objective)


def test_inventory_speed_applies_to_per_kind_latencies():
    """Issue 26: a builder graph's V100 at speed 0.5 runs its nodes twice as long as modelled."""
    from dataclasses import replace as _replace

    from placement.model import AcceleratorKind

    problem = build_transformer(TransformerConfig(layers=1, hidden=64, heads=4, seq_len=16, vocab=100))
    node = problem.graph.nodes[1]
    kind_name, modelled = node.kind_latency[0]
    kind = AcceleratorKind(kind_name, 1, 1e12)
    assert node.latency_on(kind) == modelled
    assert node.latency_on(_replace(kind, speed=0.5)) == 2 * modelled
