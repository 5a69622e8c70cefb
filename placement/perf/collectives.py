"""Alpha-beta costs of collectives on a group of GPUs, and where Megatron puts its groups.

A cluster is nodes of G GPUs: inside a node every GPU reaches every other at the scale-up bandwidth
``B_in`` (NVLink/NVSwitch) with latency ``a_in``; across nodes each GPU has its own NIC of bandwidth
``B_out`` and latency ``a_out``. A group of ``n`` ranks with ``k`` members in each of ``M = n / k`` nodes
moves ``N`` bytes (the full, unsharded buffer) as follows (ring algorithms, NCCL's bus-bandwidth model):

* all-reduce, one node: ``2 (n-1)/n N / B_in + 2 (n-1) a_in``; one member per node: the same with
  ``B_out, a_out``; otherwise hierarchical: reduce-scatter in the node, all-reduce of ``N/k`` across the
  ``M`` nodes (the ``k`` rails in parallel), all-gather in the node.
* reduce-scatter and all-gather: half of the all-reduce (``(n-1)/n N / B + (n-1) a`` per level).
* tree all-reduce across nodes: ``2 (N/k) / B_out + 2 ceil(log2 M) a_out`` (latency-optimal).
* all-to-all (each rank holds ``N`` bytes, ``N/n`` to every rank): the in-node and off-node parts run on
  different links at once: ``max((k-1)/n N / B_in, (n-k)/n N / B_out) + (n-1) a``.
* point-to-point: ``N / B + a`` on the link between the two GPUs.

Bandwidths here are the *achieved* ones (:class:`Links` applies the NCCL fractions of
:class:`~placement.perf.params.PerfParams` to the spec figures). Times in seconds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import Enum

from .hardware import Cluster
from .params import DEFAULT_PARAMS, PerfParams


class GroupKind(str, Enum):
    """Megatron's process groups."""

    TENSOR = "tensor"
    CONTEXT = "context"
    EXPERT = "expert"
    DATA = "data"  #: data x context (gradients are reduced over both)
    PIPELINE = "pipeline"

    def __str__(self) -> str:
        return str(self.value)


@dataclass(frozen=True)
class Group:
    """``size`` ranks, ``per_node`` of them in each node they occupy."""

    size: int
    per_node: int

    def __post_init__(self) -> None:
        if self.size < 1 or not 1 <= self.per_node <= self.size:
            raise ValueError(f"group: need size >= 1 and 1 <= per_node <= size, got {self.size}, {self.per_node}")

    @property
    def nodes(self) -> int:
        """Nodes the group spans."""
        return -(-self.size // self.per_node)


@dataclass(frozen=True)
class Links:
    """Achieved bandwidths (bytes/s, one direction, per GPU) and latencies (s) inside and across nodes."""

    intra_bytes_per_s: float
    inter_bytes_per_s: float
    intra_latency_s: float
    inter_latency_s: float

    @classmethod
    def of(cls, cluster: Cluster, params: PerfParams = DEFAULT_PARAMS) -> Links:
        """The cluster's spec bandwidths times the NCCL fractions of ``params``."""
        return cls(
            cluster.intra_bytes_per_s * params.nvlink_fraction,
            cluster.inter_bytes_per_s * params.nic_fraction,
            cluster.intra_latency_s,
            cluster.inter_latency_s,
        )


def strided_group(size: int, stride: int, gpus_per_node: int) -> Group:
    """A group of ``size`` ranks ``stride`` apart in rank order (nodes hold consecutive ranks)."""
    if stride >= gpus_per_node:
        return Group(size, 1)
    return Group(size, max(1, min(size, gpus_per_node // stride)))


def megatron_group(kind: GroupKind | str, cluster: Cluster, tensor: int, context: int, data: int,
                   pipeline: int, expert: int = 1) -> Group:  # fmt: skip
    """Placement of one of Megatron's groups: tensor innermost, then context, data, pipeline.

    Expert-parallel ranks are consecutive members of the data x context dimension (stride ``tensor``).
    """
    g = cluster.gpus_per_node
    kind = GroupKind(kind)
    if kind is GroupKind.TENSOR:
        return strided_group(tensor, 1, g)
    if kind is GroupKind.CONTEXT:
        return strided_group(context, tensor, g)
    if kind is GroupKind.EXPERT:
        return strided_group(expert, tensor, g)
    if kind is GroupKind.DATA:  # ranks tp + t (cp_rank + cp dp_rank): data x context is one stride-t group
        return strided_group(data * context, tensor, g)
    return strided_group(pipeline, tensor * context * data, g)


def _ring(nbytes: float, n: int, bandwidth: float, latency: float, passes: int) -> float:
    """``passes`` ring phases (1: reduce-scatter or all-gather; 2: all-reduce) over ``n`` ranks."""
    if n <= 1 or nbytes <= 0:
        return 0.0
    return passes * ((n - 1) / n * nbytes / bandwidth + (n - 1) * latency)


def _levels(nbytes: float, group: Group, links: Links, passes: int) -> float:
    k, m = group.per_node, group.nodes
    if m == 1:
        return _ring(nbytes, k, links.intra_bytes_per_s, links.intra_latency_s, passes)
    if k == 1:
        return _ring(nbytes, m, links.inter_bytes_per_s, links.inter_latency_s, passes)
    inside = _ring(nbytes, k, links.intra_bytes_per_s, links.intra_latency_s, 1)
    across = _ring(nbytes / k, m, links.inter_bytes_per_s, links.inter_latency_s, passes)
    return (2 if passes == 2 else 1) * inside + across


def allreduce_seconds(nbytes: float, group: Group, links: Links, algorithm: str = "best") -> float:
    """All-reduce of ``nbytes`` over ``group``: ``"ring"``, ``"tree"`` or the faster (``"best"``)."""
    ring = _levels(nbytes, group, links, 2)
    if algorithm == "ring" or group.nodes == 1 or nbytes <= 0:
        return ring
    k, m = group.per_node, group.nodes
    inside = 2 * _ring(nbytes, k, links.intra_bytes_per_s, links.intra_latency_s, 1)
    tree = inside + 2 * (nbytes / k) / links.inter_bytes_per_s + 2 * math.ceil(math.log2(m)) * links.inter_latency_s
    return tree if algorithm == "tree" else min(ring, tree)


def reduce_scatter_seconds(nbytes: float, group: Group, links: Links) -> float:
    """Reduce-scatter of an ``nbytes`` buffer (each rank keeps ``nbytes / n``)."""
    return _levels(nbytes, group, links, 1)


def allgather_seconds(nbytes: float, group: Group, links: Links) -> float:
    """All-gather into an ``nbytes`` buffer (each rank contributes ``nbytes / n``)."""
    return _levels(nbytes, group, links, 1)


def alltoall_seconds(nbytes: float, group: Group, links: Links) -> float:
    """All-to-all where each rank holds ``nbytes`` and sends ``nbytes / n`` to every rank."""
    n, k = group.size, group.per_node
    if n <= 1 or nbytes <= 0:
        return 0.0
    inside = (k - 1) / n * nbytes / links.intra_bytes_per_s
    outside = (n - k) / n * nbytes / links.inter_bytes_per_s
    latency = links.inter_latency_s if group.nodes > 1 else links.intra_latency_s
    return max(inside, outside) + (n - 1) * latency


def p2p_seconds(nbytes: float, same_node: bool, links: Links) -> float:
    """One point-to-point message of ``nbytes``."""
    if nbytes <= 0:
        return 0.0
    if same_node:
        return nbytes / links.intra_bytes_per_s + links.intra_latency_s
    return nbytes / links.inter_bytes_per_s + links.inter_latency_s
