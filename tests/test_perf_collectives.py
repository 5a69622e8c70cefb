"""Collective costs against hand-computed alpha-beta values, and Megatron's group placement."""

import pytest

from placement.perf import (
    ACCELERATORS,
    Cluster,
    Group,
    GroupKind,
    Links,
    PerfParams,
    allgather_seconds,
    allreduce_seconds,
    alltoall_seconds,
    megatron_group,
    p2p_seconds,
    reduce_scatter_seconds,
)

# 100 GB/s inside a node, 10 GB/s per GPU across nodes, 1 us and 10 us latency.
LINKS = Links(100e9, 10e9, 1e-6, 10e-6)
N = 1e9


def test_ring_allreduce_inside_a_node():
    # 8 ranks: 2 * 7/8 * 1 GB / 100 GB/s + 2 * 7 * 1 us = 17.5 ms + 14 us
    assert allreduce_seconds(N, Group(8, 8), LINKS) == pytest.approx(0.0175 + 14e-6)


def test_ring_allreduce_one_rank_per_node():
    # 4 nodes, one rank each: 2 * 3/4 * 1 GB / 10 GB/s + 2 * 3 * 10 us (ring); the tree is slower here
    ring = 0.15 + 60e-6
    assert allreduce_seconds(N, Group(4, 1), LINKS, "ring") == pytest.approx(ring)
    tree = 2 * 0.1 + 2 * 2 * 10e-6
    assert allreduce_seconds(N, Group(4, 1), LINKS, "tree") == pytest.approx(tree)
    assert allreduce_seconds(N, Group(4, 1), LINKS) == pytest.approx(min(ring, tree))


def test_hierarchical_allreduce_across_nodes():
    # 32 ranks, 8 per node on 4 nodes: reduce-scatter in node, all-reduce of N/8 across, all-gather in node
    inside = 7 / 8 * N / 100e9 + 7 * 1e-6
    across = 2 * 3 / 4 * (N / 8) / 10e9 + 2 * 3 * 10e-6
    assert allreduce_seconds(N, Group(32, 8), LINKS, "ring") == pytest.approx(2 * inside + across)


def test_reduce_scatter_and_allgather():
    inside = 7 / 8 * N / 100e9 + 7e-6
    assert reduce_scatter_seconds(N, Group(8, 8), LINKS) == pytest.approx(inside)
    assert allgather_seconds(N, Group(8, 8), LINKS) == pytest.approx(inside)
    across = 3 / 4 * (N / 8) / 10e9 + 3 * 10e-6
    assert allgather_seconds(N, Group(32, 8), LINKS) == pytest.approx(inside + across)


def test_alltoall_and_p2p():
    # 16 ranks on 2 nodes: 7/16 of the buffer over NVLink, 8/16 over the NIC, at once
    want = max(7 / 16 * N / 100e9, 8 / 16 * N / 10e9) + 15 * 10e-6
    assert alltoall_seconds(N, Group(16, 8), LINKS) == pytest.approx(want)
    assert alltoall_seconds(N, Group(8, 8), LINKS) == pytest.approx(7 / 8 * N / 100e9 + 7e-6)
    assert p2p_seconds(N, True, LINKS) == pytest.approx(0.01 + 1e-6)
    assert p2p_seconds(N, False, LINKS) == pytest.approx(0.1 + 10e-6)
    assert allreduce_seconds(N, Group(1, 1), LINKS) == 0.0


def test_links_apply_nccl_fractions():
    cluster = Cluster(ACCELERATORS["A100"], 16, nvlink_bytes_per_s=200e9)
    links = Links.of(cluster, PerfParams(nvlink_fraction=0.5, nic_fraction=1.0))
    assert links.intra_bytes_per_s == 100e9 and links.inter_bytes_per_s == 25e9


def test_megatron_group_placement():
    cluster = Cluster(ACCELERATORS["A100"], 64)  # 8 nodes of 8
    # t=2, cp=2, d=4, p=4: tensor in-node pairs; context stride 2; data x context stride 2 (8 ranks, 4 per node)
    assert megatron_group(GroupKind.TENSOR, cluster, 2, 2, 4, 4) == Group(2, 2)
    assert megatron_group(GroupKind.CONTEXT, cluster, 2, 2, 4, 4) == Group(2, 2)
    data = megatron_group(GroupKind.DATA, cluster, 2, 2, 4, 4)
    assert (data.size, data.per_node, data.nodes) == (8, 4, 2)
    pipe = megatron_group(GroupKind.PIPELINE, cluster, 2, 2, 4, 4)
    assert (pipe.size, pipe.per_node) == (4, 1)  # stride 16 > 8 GPUs per node
    # t=8 fills a node: data-parallel peers are one per node
    assert megatron_group(GroupKind.DATA, cluster, 8, 1, 8, 1) == Group(8, 1)
