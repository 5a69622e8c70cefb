"""Graph pricing on catalogue kinds: kernels by the perf model's formulas, CPU from the catalogue's core."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from placement import load_problem
from placement.errors import InvalidDevicesError, InvalidGraphError
from placement.io import graph_to_dict, parse_problem
from placement.model import Graph, Node
from placement.modelling.pricing import (
    PROFILED_SOURCE,
    cost_source,
    devices_for,
    edge_ms,
    price_graph,
    work_edge,
    work_extra,
)
from placement.modelling.training import training_graph
from placement.perf.hardware import ACCELERATORS, Dtype, cpu_core
from placement.perf.kernels import Work, gemm_seconds, hbm_bytes_per_s, streaming_seconds, training_gemm_seconds
from placement.perf.params import DEFAULT_PARAMS

P = DEFAULT_PARAMS


def _graph(works: list[list[Work]], dtype: str = "bf16") -> Graph:
    nodes = tuple(
        Node(id=i, name=f"n{i}", cpu_latency=0.0, accelerator_latency=0.0, extra=work_extra(w, dtype, 1e6))
        for i, w in enumerate(works)
    )
    edges = tuple(work_edge(i, i + 1, 1e6) for i in range(len(works) - 1))
    return Graph(nodes, edges, name="t")


@settings(max_examples=40, deadline=None)
@given(
    m=st.integers(1, 20000),
    n=st.integers(1, 20000),
    k=st.integers(1, 20000),
    kind=st.sampled_from(["A100", "H100", "MI300X", "L4"]),
)
def test_gemm_node_equals_kernels_gemm_seconds(m: int, n: int, k: int, kind: str) -> None:
    graph = price_graph(_graph([[Work("gemm", m, n, k)]]), [kind])
    acc = ACCELERATORS[kind]
    expected = gemm_seconds(m, n, k, acc, Dtype.BF16, P) * 1000
    assert graph.nodes[0].accelerator_latency == pytest.approx(expected, rel=1e-12)
    cpu = gemm_seconds(m, n, k, cpu_core(), Dtype.BF16, P) * 1000
    assert graph.nodes[0].cpu_latency == pytest.approx(cpu, rel=1e-12)


@settings(max_examples=40, deadline=None)
@given(nbytes=st.floats(1.0, 1e12), kind=st.sampled_from(list(ACCELERATORS)))
def test_streaming_node_equals_bytes_over_bandwidth(nbytes: float, kind: str) -> None:
    graph = price_graph(_graph([[Work("stream", nbytes=nbytes, launches=1)]]), [kind])
    acc = ACCELERATORS[kind]
    expected = (nbytes / hbm_bytes_per_s(acc, P) + P.kernel_launch_s) * 1000
    assert graph.nodes[0].accelerator_latency == pytest.approx(expected, rel=1e-12)
    assert hbm_bytes_per_s(acc, P) == pytest.approx(acc.hbm_bytes_per_s * acc.copy_fraction * P.streaming_fraction)


def test_cpu_priced_from_the_catalogue_cpu_entry() -> None:
    cpu = cpu_core()
    assert cpu.name == "cpu" and cpu.usd_per_hour > 0
    graph = price_graph(_graph([[Work("stream", nbytes=1e9, launches=1)]]), ["H100"])
    assert graph.nodes[0].cpu_latency == pytest.approx(streaming_seconds(1e9, cpu, P) * 1000)
    # one core's memory bandwidth from the catalogue (12 GB/s) bounds it: about 1e9 / 12e9 s
    assert 80 < graph.nodes[0].cpu_latency < 200


def test_other_kinds_and_edges() -> None:
    graph = price_graph(_graph([[Work("gemm", 8192, 8192, 8192)], [Work("stream", nbytes=1e8)]]), ["H100", "A100"])
    kinds = dict(graph.nodes[0].kind_latency)
    assert set(kinds) == {"A100"}
    assert kinds["A100"] > graph.nodes[0].accelerator_latency  # an A100 is slower
    assert graph.edges[0].cost == pytest.approx(edge_ms(1e6, ACCELERATORS["H100"]))
    assert graph.extra["pricedKinds"] == ["H100", "A100"]
    again = price_graph(graph, ["A100"], reference="A100")
    assert again.nodes[0].accelerator_latency == pytest.approx(kinds["A100"])


def test_backward_node_priced_by_backward_kernels() -> None:
    graph = price_graph(training_graph(_graph([[Work("gemm", 4096, 1024, 2048)]])), ["H100"])
    fwd, bwd = training_gemm_seconds(4096, 1024, 2048, ACCELERATORS["H100"], Dtype.BF16, P)
    by_name = {n.is_backward: n for n in graph.nodes}
    assert by_name[False].accelerator_latency == pytest.approx(fwd * 1000)
    assert by_name[True].accelerator_latency == pytest.approx(bwd * 1000)


def test_fp32_graph_uses_fp32_peak() -> None:
    g32 = price_graph(_graph([[Work("gemm", 8192, 8192, 8192, element_bytes=4)]], "fp32"), ["H100"])
    g16 = price_graph(_graph([[Work("gemm", 8192, 8192, 8192)]], "bf16"), ["H100"])
    assert g32.nodes[0].accelerator_latency > 10 * g16.nodes[0].accelerator_latency


def test_priced_graph_survives_the_file_format() -> None:
    graph = price_graph(
        _graph([[Work("gemm", 64, 64, 64)], [Work("attention", 128, 128, 64, 8, causal=True)]]), ["H100", "A100"]
    )
    back = parse_problem(json.dumps(graph_to_dict(graph)).encode(), "x.json").graph
    assert cost_source(back) == cost_source(graph)
    assert cost_source(back).startswith("perf model (kernel physics") and "on H100" in cost_source(back)
    repriced = price_graph(back, ["A100"])
    assert repriced.nodes[1].accelerator_latency == pytest.approx(dict(graph.nodes[1].kind_latency)["A100"])


@pytest.mark.parametrize("path", ["sample_graphs/throughput/layer/bert24_inference.json"])
def test_paper_graphs_untouched_and_labelled_profiled(path: str) -> None:
    graph = load_problem(path).graph
    assert price_graph(graph, ["H100", "A100"]) is graph
    assert cost_source(graph) == PROFILED_SOURCE
    assert "profiled" in cost_source(graph)


def test_bad_work_in_a_file_is_one_line() -> None:
    node = Node(
        id=0, name="x", cpu_latency=1.0, accelerator_latency=1.0, extra={"work": [{"kind": "gemm", "m": "big"}]}
    )
    with pytest.raises(InvalidGraphError, match="node 0: work gemm: m must be"):
        price_graph(Graph((node,), ()), ["H100"])
    node = Node(id=0, name="x", cpu_latency=1.0, accelerator_latency=1.0, extra={"work": [{"kind": "fft"}]})
    with pytest.raises(InvalidGraphError, match="node 0: work kind 'fft'"):
        price_graph(Graph((node,), ()), ["H100"])


def test_devices_for_prefills_from_the_catalogue() -> None:
    devices = devices_for({"H100": 8, "a100-sxm": 4}, cpus=32)
    h100, a100 = devices.accelerators
    assert (h100.name, h100.count, h100.memory, h100.speed) == ("H100", 8, ACCELERATORS["H100"].memory_bytes, 1.0)
    assert a100.name == "A100" and a100.price_per_hour == ACCELERATORS["A100"].usd_per_hour > 0
    assert a100.bandwidth == pytest.approx(300 / 450)
    assert devices.cpus == 32 and devices.cpu_price_per_hour == cpu_core().usd_per_hour
    with pytest.raises(InvalidDevicesError, match="unknown accelerator"):
        devices_for({"TPU9": 1})
