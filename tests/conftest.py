"""Shared fixtures."""

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "sample_graphs"


@pytest.fixture(scope="session")
def samples_dir() -> Path:
    return SAMPLES


def _random_problem(seed: int, training: bool = False, n_forward: int | None = None, max_accelerators: int = 2,
                    kinds: int = 1, zero_cost_edges: bool = False):
    """A small random problem: DAG, optional backward mirror with colour classes, tight memory,
    unsupported nodes, 0-2 CPU cores, zero-latency nodes (issue 3's property tests)."""
    import random

    from placement import AcceleratorKind, Devices, Edge, Graph, Node, Problem

    rng = random.Random(seed)
    n = n_forward if n_forward is not None else rng.randint(3, 5)
    nodes, edges = [], []
    cost = {}
    for i in range(n):
        zero = rng.random() < 0.2
        supported = rng.random() > 0.15
        latencies = () if kinds == 1 else (("fast", 0.0 if zero else round(rng.uniform(0.2, 3), 2)),)
        nodes.append(Node(i, cpu_latency=0.0 if zero else round(rng.uniform(1, 10), 2),
                          accelerator_latency=0.0 if zero else round(rng.uniform(0.5, 5), 2),
                          supported_on_accelerator=supported, size=float(rng.randint(1, 4)),
                          color_class=i if training else None, kind_latency=latencies))
        cost[i] = 0.0 if zero_cost_edges and rng.random() < 0.3 else round(rng.uniform(0.1, 2), 2)
    pairs = set()
    for j in range(1, n):
        pairs.add((rng.randrange(j), j))
        for i in range(j):
            if rng.random() < 0.25:
                pairs.add((i, j))
    for i, j in sorted(pairs):
        edges.append(Edge(i, j, cost[i]))
    if training:
        for i in range(n):
            base = nodes[i]
            nodes.append(Node(n + i, cpu_latency=round(base.cpu_latency * 1.5, 2),
                              accelerator_latency=round(base.accelerator_latency * 1.5, 2),
                              supported_on_accelerator=base.supported_on_accelerator, is_backward=True,
                              size=0.0, color_class=i, kind_latency=tuple((k, v * 1.5) for k, v in base.kind_latency)))
            back_cost = round(rng.uniform(0.1, 2), 2)
            cost[n + i] = back_cost
        for i, j in sorted(pairs):
            edges.append(Edge(n + j, n + i, cost[n + j]))
        last = n - 1
        edges.append(Edge(last, n + last, cost[last]))
    total = sum(node.size for node in nodes)
    memory = float(max(max(node.size for node in nodes), rng.randint(int(total * 0.4), int(total * 0.8) + 1)))
    accelerator_kinds = [AcceleratorKind("accelerator", rng.randint(1, max_accelerators), memory)]
    if kinds > 1:
        accelerator_kinds.append(AcceleratorKind("fast", 1, memory * 0.6, speed=2.0, bandwidth=0.5))
    devices = Devices(accelerators=tuple(accelerator_kinds), cpus=rng.randint(0, 2),
                      overlap=rng.random() < 0.2)
    return Problem(Graph(tuple(nodes), tuple(edges), name=f"random-{seed}"), devices)


@pytest.fixture(scope="session")
def random_problem():
    """Factory ``random_problem(seed, training=False, ...) -> Problem`` of small random problems."""
    return _random_problem


@pytest.fixture
def clear_streamlit_caches():
    """Streamlit caches are process-global: clear them around each AppTest test."""
    import streamlit as st

    st.cache_data.clear()
    st.cache_resource.clear()
    yield
    st.cache_data.clear()
    st.cache_resource.clear()
