"""The lattice kernel's inputs built from a problem: graph arrays, device types, device-count states.

:func:`build_inputs` turns a problem contracted into groups into a :class:`KernelInputs`
(the arrays of the contract in :mod:`placement.exact.lattice_search`); :func:`state_arrays`
numbers the device-count states; :func:`chain_lattice` is the lattice of one topological
order (a feasible-split bound). :func:`placement.exact.kernel.run` passes them to the kernel.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


def chain_lattice(n_groups: int, order=None) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """The chain of prefixes of one topological order of the groups, as a lattice (a feasible-split bound).

    ``order``: the groups in a topological order (default: their numbering, which is one). Ideal
    ``k`` of the chain holds the first ``k`` groups of the order; its one cover adds group ``order[k]``.
    """
    up_start = np.arange(n_groups + 2, dtype=np.int64)
    up_start[-1] = n_groups
    up_group = np.arange(n_groups, dtype=np.int32) if order is None else np.asarray(order, dtype=np.int32)
    up_target = np.arange(1, n_groups + 1, dtype=np.int32)
    return up_start, up_group, up_target, n_groups + 1


def state_arrays(counts) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Mixed-radix device-count states for ``counts`` devices per type.

    Returns (strides, next_state, prev_state, digit_sum): state ``s`` has digit
    ``(s // strides[d]) % (counts[d] + 1)`` devices of type ``d``; ``digit_sum[s]`` is its
    number of devices.
    """
    strides = np.cumprod([1] + [c + 1 for c in counts]).astype(np.int64)
    n_states = int(strides[-1])
    next_state = np.full((len(counts), n_states), -1, dtype=np.int64)
    prev_state = np.full((len(counts), n_states), -1, dtype=np.int64)
    digit_sum = np.zeros(n_states, dtype=np.int64)
    for s in range(n_states):
        for d, count in enumerate(counts):
            digit = (s // int(strides[d])) % (count + 1)
            digit_sum[s] += digit
            if digit < count:
                next_state[d, s] = s + strides[d]
            if digit > 0:
                prev_state[d, s] = s - strides[d]
    return strides, next_state, prev_state, digit_sum


@dataclass(frozen=True)
class KernelInputs:
    """The arrays :func:`lattice_dp` reads for one (problem, groups) pair (see the module docstring)."""

    group_start: np.ndarray
    group_nodes: np.ndarray
    pred_start: np.ndarray
    preds: np.ndarray
    out_degree: np.ndarray
    node_fwd: np.ndarray
    node_val: np.ndarray
    cross_val: np.ndarray
    in_val: np.ndarray
    group_blocked: np.ndarray
    type_compute: np.ndarray
    type_fwd: np.ndarray
    type_cross: np.ndarray
    type_cap: np.ndarray
    type_dur_cross: np.ndarray
    mem_w: int
    mem_p: int
    mem_a: int
    strides: np.ndarray
    next_state: np.ndarray
    prev_state: np.ndarray
    digit_sum: np.ndarray

    @property
    def n_states(self) -> int:
        return int(self.strides[-1])

    @property
    def n_types(self) -> int:
        return int(self.type_compute.shape[0])


def graph_arrays(graph, groups) -> tuple[np.ndarray, ...]:
    """The graph in CSR form for the kernel, nodes numbered by their position in ``graph.nodes``.

    Returns (group_start, group_nodes, pred_start, preds, node_cost, out_degree): the nodes of
    group g are ``group_nodes[group_start[g]:group_start[g+1]]``, the predecessors of node k are
    ``preds[pred_start[k]:pred_start[k+1]]``.
    """
    position = {node.id: k for k, node in enumerate(graph.nodes)}
    group_nodes = np.asarray([position[n] for members in groups.members for n in members], dtype=np.int64)
    group_start = np.zeros(groups.count + 1, dtype=np.int64)
    group_start[1:] = np.cumsum([len(m) for m in groups.members])
    pred_lists = [[position[p] for p in graph.predecessors[node.id]] for node in graph.nodes]
    pred_start = np.zeros(len(graph.nodes) + 1, dtype=np.int64)
    pred_start[1:] = np.cumsum([len(p) for p in pred_lists])
    preds = np.asarray([p for plist in pred_lists for p in plist], dtype=np.int64)
    node_cost = np.asarray([graph.output_cost[node.id] for node in graph.nodes], dtype=np.float64)
    out_degree = np.asarray([len(graph.successors[node.id]) for node in graph.nodes], dtype=np.int64)
    return group_start, group_nodes, pred_start, preds, node_cost, out_degree


def build_inputs(
    problem,
    groups,
    ignore: frozenset = frozenset(),
    out_bytes: dict | None = None,
    forward_compute: bool = False,
    kept_bytes: dict | None = None,
) -> KernelInputs:
    """Kernel inputs for ``problem`` contracted into ``groups``.

    Device types are the accelerator kinds in order, then CPU cores (cap ``inf``; communication
    only when ``devices.cpu_bandwidth`` is set). ``ignore``: nodes whose memory (size and
    activation bytes) is left out (a relaxation). ``out_bytes``: activation bytes per node id
    (memory-aware planning; ``None``: weights only); ``kept_bytes``: the activation bytes a
    node keeps for the backward when they differ from its output (default: ``out_bytes``;
    stage inputs always use ``out_bytes``). ``forward_compute``: add the forward
    compute rows that recomputation needs.
    """
    graph, devices = problem.graph, problem.devices
    nodes = graph.nodes
    group_start, group_nodes, pred_start, preds, node_cost, out_degree = graph_arrays(graph, groups)
    kinds = devices.accelerators
    n_kinds = len(kinds)
    rows: list[list[float]] = []
    blocked = np.zeros((n_kinds + 1, groups.count), dtype=np.int64)
    group_of = groups.group_of
    for t, kind in enumerate(kinds):
        rows.append([node.latency_on(kind) if node.runs_on(kind) else 0.0 for node in nodes])
        for node in nodes:
            if not node.runs_on(kind):
                blocked[t, group_of[node.id]] += 1
    rows.append([node.cpu_latency for node in nodes])
    type_compute = list(range(n_kinds + 1))
    type_fwd = [-1] * (n_kinds + 1)
    if forward_compute:
        for t in range(n_kinds + 1):
            type_fwd[t] = len(rows)
            rows.append([0.0 if node.is_backward else value for node, value in zip(nodes, rows[t])])
    mem_w = len(rows)
    rows.append([0.0 if node.id in ignore else node.size for node in nodes])
    mem_p = mem_a = -1
    in_val = np.zeros(len(nodes))
    if out_bytes is not None:
        mem_p = len(rows)
        rows.append([0.0 if node.id in ignore or node.is_backward else node.size for node in nodes])
        mem_a = len(rows)
        ob = [0.0 if node.id in ignore else out_bytes[node.id] for node in nodes]
        kept = out_bytes if kept_bytes is None else kept_bytes
        kb = [0.0 if node.id in ignore else kept[node.id] for node in nodes]
        rows.append([0.0 if node.is_backward else b for node, b in zip(nodes, kb)])
        in_val = np.asarray(ob, dtype=np.float64)
    scales = [devices.transfer_scale(kind) for kind in kinds] + [devices.cpu_transfer_scale]
    classes: list[float] = []
    type_cross = []
    for t, scale in enumerate(scales):
        if scale == 0.0:
            type_cross.append(-1)
            continue
        if scale not in classes:
            classes.append(scale)
        type_cross.append(classes.index(scale))
    # A node's communication term: its cost times the scale, rounded once (as the evaluator does).
    cross_val = np.asarray([[cost * scale for cost in node_cost] for scale in classes], dtype=np.float64)
    cross_val = cross_val.reshape(len(classes), len(nodes))
    strides, next_state, prev_state, digit_sum = state_arrays([kind.count for kind in kinds] + [devices.cpus])
    return KernelInputs(
        group_start,
        group_nodes,
        pred_start,
        preds,
        out_degree,
        np.asarray([not node.is_backward for node in nodes], dtype=np.bool_),
        np.asarray(rows, dtype=np.float64).reshape(len(rows), len(nodes)),
        cross_val,
        in_val,
        blocked,
        np.asarray(type_compute, dtype=np.int64),
        np.asarray(type_fwd, dtype=np.int64),
        np.asarray(type_cross, dtype=np.int64),
        np.asarray([kind.memory for kind in kinds] + [math.inf], dtype=np.float64),
        # Latency durations: accelerators pay their transfers, CPU nodes do not (placement.evaluate.latency).
        np.asarray(type_cross[:n_kinds] + [-1], dtype=np.int64),
        mem_w,
        mem_p,
        mem_a,
        strides,
        next_state,
        prev_state,
        digit_sum,
    )
