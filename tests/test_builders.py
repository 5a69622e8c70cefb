"""Model builders: the transformer's nodes are the perf model's kernels (sums equal predict), the CNN's
implicit GEMMs against published sizes and FLOPs, and the exact DP on a 12-layer transformer."""

import math
import time

import pytest

from placement import InvalidGraphError, count_ideals, evaluate, solve_dp
from placement.modelling.builders import CnnConfig, build_cnn, build_transformer, cnn_graph, transformer_graph
from placement.perf import ACCELERATORS, MODELS, Cluster, Layout, TransformerSpec, predict
from placement.perf.kernels import gemm_seconds
from placement.perf.layout import Attention
from placement.perf.params import DEFAULT_PARAMS

RESNET50_PARAMS = 25_557_032  # torchvision resnet50 (with batch-norm weights and biases)
RESNET50_BN_CHANNELS = 26_560  # channels of its batch norms (53,120 BN weights + biases)
RESNET50_CONV_MACS = 4_087_136_256  # onnx-tool's MAC count of the ONNX test model light_resnet50 (convs)
SMALL = TransformerSpec(layers=3, hidden=64, heads=4, seq_length=32, vocab=100, name="small")


def flops_of(graph, op):
    return sum(n.extra["flops"] for n in graph.nodes if n.extra.get("op") == op)


@pytest.mark.parametrize("name", ["gpt3-175b", "llama3-8b", "mixtral-8x7b"])
def test_layer_weights_equal_the_spec(name):
    model = MODELS[name].with_changes(layers=2, seq_length=128)
    graph = transformer_graph(model, granularity="layer")
    layer = next(n for n in graph.nodes if n.name == "layer0")
    assert layer.size == 2 * model.layer_parameters()  # bf16 weights
    assert graph.nodes[0].size == 2 * model.embedding_parameters(model.padded_vocab())


@pytest.mark.parametrize("attention", ["flash", "unfused"])
@pytest.mark.parametrize("name", ["gpt3-175b", "llama3-8b", "mixtral-8x7b"])
def test_nodes_sum_to_predicts_compute(name, attention):
    model = MODELS[name].with_changes(layers=3, seq_length=1024)
    graph = transformer_graph(
        model, ["A100"], micro_batch=2, training=True, granularity="operator", attention=attention
    )
    layout = Layout(micro_batch=2, global_batch=2, attention=Attention(attention))
    pred = predict(model, Cluster(ACCELERATORS["A100"], 1), layout, with_band=False)
    total = sum(n.accelerator_latency for n in graph.nodes)
    assert total == pytest.approx(pred.time.compute * 1000, rel=1e-9)


def test_transformer_matmul_flops_and_one_gemm_node():
    graph = transformer_graph(SMALL, granularity="operator")
    s, h, V = 32, 64, SMALL.padded_vocab()
    # Per layer: 24 s h^2 for QKV, projection and a 4h FFN, plus the output layer 2 s h V.
    assert flops_of(graph, "MatMul") == SMALL.layers * 24 * s * h * h + 2 * s * h * V
    qkv = next(n for n in graph.nodes if n.name == "layer0/qkv")
    expected = gemm_seconds(s, 3 * h, h, ACCELERATORS["H100"], "bf16", DEFAULT_PARAMS) * 1000
    assert qkv.accelerator_latency == pytest.approx(expected)


def test_transformer_layer_granularity_sums_operators():
    ops = transformer_graph(SMALL, ["H100", "A100"], granularity="operator")
    layers = transformer_graph(SMALL, ["H100", "A100"], granularity="layer")
    assert [n.name for n in layers.nodes] == ["embedding"] + [f"layer{i}" for i in range(3)] + ["head"]
    for attr in ("accelerator_latency", "cpu_latency", "size"):
        assert sum(getattr(n, attr) for n in layers.nodes) == pytest.approx(sum(getattr(n, attr) for n in ops.nodes))
    a100 = sum(dict(n.kind_latency)["A100"] for n in layers.nodes)
    assert a100 == pytest.approx(sum(dict(n.kind_latency)["A100"] for n in ops.nodes))
    # A chain: each layer sends s*h bf16 activations (2 bytes) to the next.
    assert [(e.source, e.target) for e in layers.edges] == [(i, i + 1) for i in range(4)]
    assert layers.edges[1].size == 32 * 64 * 2


def test_resnet50_parameters_and_flops():
    graph = cnn_graph(CnnConfig(dtype="fp32"), granularity="operator")
    # Batch norm folded into the convolutions: one bias per channel instead of a weight and a bias.
    assert sum(n.size for n in graph.nodes) == 4 * (RESNET50_PARAMS - RESNET50_BN_CHANNELS)
    convs = [n for n in graph.nodes if n.extra["op"] == "Conv"]
    assert sum(n.extra["flops"] for n in convs) == 2 * RESNET50_CONV_MACS
    assert len(convs) == 53
    # a convolution is its implicit GEMM: (b H W) x c_out x (c_in k^2)
    stem = graph.nodes[0]
    expected = gemm_seconds(112 * 112, 64, 3 * 49, ACCELERATORS["H100"], "fp32", DEFAULT_PARAMS, 1.0, 4.0)
    assert stem.accelerator_latency == pytest.approx(expected * 1000)


def test_cnn_layer_granularity():
    graph = cnn_graph(CnnConfig(blocks=(2, 2), width=16, image=64), granularity="layer")
    assert [n.name for n in graph.nodes] == ["stem", "stage1.block1", "stage1.block2", "stage2.block1",
                                             "stage2.block2", "head"]  # fmt: skip


@pytest.mark.parametrize("changes", [{"blocks": ()}, {"blocks": (3, 0)}, {"image": 8}, {"dtype": "fp13"}])
def test_cnn_config_errors(changes):
    with pytest.raises(InvalidGraphError):
        CnnConfig(**changes)


@pytest.mark.parametrize(
    "kwargs, message",
    [({"granularity": "block"}, "granularity"), ({"dtype": "fp13"}, "dtype"), ({"micro_batch": 0}, "micro_batch")],
)
def test_transformer_graph_errors(kwargs, message):
    with pytest.raises(InvalidGraphError, match=message):
        transformer_graph(SMALL, **kwargs)


@pytest.mark.parametrize("training", [False, True])
def test_a_transformer_graph_knows_its_tokens_per_sample(training):
    graph = transformer_graph(SMALL, ["H100"], micro_batch=3, training=training)
    assert graph.extra["tokensPerSample"] == 3 * SMALL.seq_length


def test_training_problem_from_builder():
    problem = build_cnn(CnnConfig(blocks=(1, 1), width=8, image=32), {"A100": 2}, cpus=1, training=True)
    graph = problem.graph
    assert graph.is_training and len(graph.nodes) == 2 * 4
    kind = problem.devices.accelerators[0]
    assert (kind.name, kind.count, kind.price_per_hour) == ("A100", 2, ACCELERATORS["A100"].usd_per_hour)
    assert problem.devices.cpus == 1
    assert solve_dp(problem).status == "optimal"


@pytest.mark.parametrize("granularity", ["operator", "layer"])
@pytest.mark.parametrize("training", [False, True])
def test_twelve_layer_transformer_solves_exactly_within_5s(granularity, training):
    gpt2 = TransformerSpec(layers=12, hidden=768, heads=12, seq_length=1024, vocab=50257)
    problem = build_transformer(gpt2, {"H100": 4}, cpus=1, granularity=granularity, training=training)
    solve_dp(build_transformer(gpt2.with_changes(layers=1), {"H100": 1}, cpus=0))  # compile the kernel
    started = time.perf_counter()
    result = solve_dp(problem)
    seconds = time.perf_counter() - started
    assert result.status == "optimal"
    assert seconds < 5.0
    assert result.stat("ideals") <= count_ideals(problem.graph)
    evaluation = evaluate(problem, result.placement)
    assert evaluation.feasible and evaluation.max_load == pytest.approx(result.objective)
    total = sum(n.accelerator_latency for n in problem.graph.nodes)
    assert total / 5 - 1e-12 <= result.objective <= total + 1e-12
    assert math.isfinite(result.objective)


def test_inventory_speed_applies_to_per_kind_latencies():
    """Issue 26: a builder graph's A100 at speed 0.5 runs its nodes twice as long as modelled."""
    from dataclasses import replace as _replace

    from placement.model import AcceleratorKind

    graph = transformer_graph(SMALL, ["H100", "A100"])
    node = graph.nodes[1]
    kind_name, modelled = node.kind_latency[0]
    kind = AcceleratorKind(kind_name, 1, 1e12)
    assert node.latency_on(kind) == modelled
    assert node.latency_on(_replace(kind, speed=0.5)) == 2 * modelled
