"""Groups (contracted colour classes) and the lattice of ideals the DP searches.

A **group** is a set of nodes that must share a device: the nodes of one colour class
(a forward node and its backward nodes), merged further where contracting classes
creates a cycle among forward nodes. Nodes without a colour class are groups of their own.

The **order graph** on groups has an edge g -> h when a forward node of g feeds a forward
node of h. Groups with backward nodes only (no forward partner) are ordered by the
backward flow reversed: a backward edge h' -> g' between such a group and another group
gives the order edge g' -> h' (the paper's convention; it reproduces its ideal counts). An **ideal** is a down-closed set of groups of the order graph;
a contiguous split is a chain of ideals, each device running one difference.

The lattice is stored with its cover relation ("up-edges"): for each ideal, the groups
that can be added to it and the index of the ideal that results.
"""

from __future__ import annotations

from dataclasses import dataclass

import networkx as nx
import numpy as np

from .errors import TooManyIdealsError
from .model import Graph

#: Default cap on the number of ideals enumerated before giving up (memory stays ~ 100s of MB).
DEFAULT_MAX_IDEALS = 1_000_000


@dataclass(frozen=True)
class Groups:
    """Contraction of a graph into groups.

    Attributes
    ----------
    members : tuple of tuple of int
        Node ids of each group, groups numbered in a topological order of the order graph.
    group_of : dict
        Node id -> group index.
    order_edges : tuple of (int, int)
        Edges of the (acyclic) order graph between group indices.
    """

    members: tuple[tuple[int, ...], ...]
    group_of: dict
    order_edges: tuple[tuple[int, int], ...]

    @property
    def count(self) -> int:
        return len(self.members)


def contract(graph: Graph) -> Groups:
    """Contract colour classes (and the cycles they create) into groups in topological order."""
    unit_of = {node: k for k, unit in enumerate(graph.colour_units) for node in unit}
    has_forward: dict[int, bool] = {}
    for node in graph.nodes:
        unit = unit_of[node.id]
        has_forward[unit] = has_forward.get(unit, False) or not node.is_backward
    order = nx.DiGraph()
    order.add_nodes_from(range(len(graph.colour_units)))
    node_by_id = graph.node_by_id
    for edge in graph.edges:
        a, b = unit_of[edge.source], unit_of[edge.target]
        if a == b:
            continue
        source_backward, target_backward = node_by_id[edge.source].is_backward, node_by_id[edge.target].is_backward
        if not source_backward and not target_backward:
            order.add_edge(a, b)
        elif source_backward and target_backward and not (has_forward[a] and has_forward[b]):
            # Backward work flows from the last stage to the first: a group of backward nodes
            # only sits before the groups that feed it and after the groups it feeds.
            order.add_edge(b, a)
    # Cycles created by contraction: the classes on a cycle must share a device.
    condensed = nx.condensation(order)
    rank = {c: i for i, c in enumerate(nx.lexicographical_topological_sort(condensed, key=lambda c: min(condensed.nodes[c]["members"])))}
    unit_to_group = {unit: rank[c] for c in condensed.nodes for unit in condensed.nodes[c]["members"]}
    members: list[list[int]] = [[] for _ in rank]
    group_of = {}
    for node in graph.nodes:
        group = unit_to_group[unit_of[node.id]]
        members[group].append(node.id)
        group_of[node.id] = group
    edges = sorted({(rank[a], rank[b]) for a, b in condensed.edges})
    return Groups(tuple(tuple(sorted(m)) for m in members), group_of, tuple(edges))


def _is_free(graph: Graph, nodes) -> bool:
    """True when every node has zero latency everywhere and may run on any device."""
    for node_id in nodes:
        node = graph.node_by_id[node_id]
        if node.cpu_latency or node.accelerator_latency or any(v for _, v in node.kind_latency):
            return False
        if not node.supported_on_accelerator or node.allowed_kinds is not None:
            return False
    return True


def reduce_groups(graph: Graph, groups: Groups) -> tuple[Groups, frozenset]:
    """Merge groups that can be moved onto a neighbour's device without raising any load.

    A *free* group (zero latency on every device, runnable anywhere) is merged

    * into its only order-graph predecessor, or its only successor, when every edge with a
      non-zero cost that touches it connects it to that neighbour (moving it there keeps
      the ideals down-closed and removes crossings only);
    * with the other free sources (free groups without predecessors whose edges all have
      zero cost), and likewise with the other such free sinks.

    Loads never rise, but the merged node's memory moves with it, so the merge is exact
    only for the loads: the returned set lists the nodes whose ``size`` must be ignored
    for the solve over the reduced lattice to be a relaxation (a lower bound); the DP then
    checks memory with the real sizes (see :mod:`placement.dp`).

    Returns
    -------
    (Groups, frozenset)
        The reduced groups (topologically numbered) and the ids of the merged-in nodes.
    """
    members = {g: set(m) for g, m in enumerate(groups.members)}
    order = nx.DiGraph()
    order.add_nodes_from(members)
    order.add_edges_from(groups.order_edges)
    cost = graph.output_cost
    group_of = dict(groups.group_of)
    moved: set[int] = set()

    def costly_neighbours(g: int) -> set[int]:
        """Groups joined to g by an edge of non-zero cost."""
        out = set()
        for node in members[g]:
            for succ in graph.successors[node]:
                if cost[node] and group_of[succ] != g:
                    out.add(group_of[succ])
            for pred in graph.predecessors[node]:
                if cost[pred] and group_of[pred] != g:
                    out.add(group_of[pred])
        return out

    def merge(into: int, g: int) -> None:
        for node in members[g]:
            group_of[node] = into
        moved.update(members[g])
        members[into] |= members.pop(g)
        for p in list(order.predecessors(g)):
            if p != into:
                order.add_edge(p, into)
        for s in list(order.successors(g)):
            if s != into:
                order.add_edge(into, s)
        order.remove_node(g)

    changed = True
    while changed:
        changed = False
        for g in sorted(members):
            if g not in members or not _is_free(graph, members[g]):
                continue
            preds, succs = list(order.predecessors(g)), list(order.successors(g))
            costly = costly_neighbours(g)
            for neighbours in (preds, succs):
                if len(neighbours) == 1 and costly <= {neighbours[0]}:
                    merge(neighbours[0], g)
                    changed = True
                    break
        for side in ("sources", "sinks"):
            free = [g for g in sorted(members)
                    if (order.in_degree(g) if side == "sources" else order.out_degree(g)) == 0
                    and _is_free(graph, members[g]) and not costly_neighbours(g)]
            for g in free[1:]:
                merge(free[0], g)
                changed = True
    # The merges keep the order graph acyclic (each is a move that keeps ideals down-closed).
    rank = {g: i for i, g in enumerate(nx.lexicographical_topological_sort(order, key=lambda g: min(members[g])))}
    new_members = [()] * len(rank)
    new_group_of = {}
    for g, i in rank.items():
        new_members[i] = tuple(sorted(members[g]))
        for node in members[g]:
            new_group_of[node] = i
    edges = tuple(sorted({(rank[a], rank[b]) for a, b in order.edges}))
    return Groups(tuple(new_members), new_group_of, edges), frozenset(moved)


@dataclass(frozen=True)
class IdealLattice:
    """All ideals of the order graph of ``groups``, by increasing size.

    Attributes
    ----------
    masks : list of int
        Ideal i as a bitmask over groups (bit g set = group g in the ideal). ``masks[0]`` is empty.
    sizes : numpy.ndarray
        Number of groups in each ideal (non-decreasing).
    up_start, up_group, up_target : numpy.ndarray
        Cover relation in CSR form: for ideal i, ``up_group[up_start[i]:up_start[i+1]]`` are the
        groups that can be added to it and ``up_target[...]`` the index of the resulting ideal.
    """

    masks: list
    sizes: np.ndarray
    up_start: np.ndarray
    up_group: np.ndarray
    up_target: np.ndarray

    @property
    def count(self) -> int:
        return len(self.masks)

    @property
    def full(self) -> int:
        """Index of the ideal holding every group."""
        return len(self.masks) - 1

    def groups_of(self, index: int) -> list[int]:
        mask = self.masks[index]
        return [g for g in range(mask.bit_length()) if mask >> g & 1]


def enumerate_ideals(groups: Groups, max_ideals: int = DEFAULT_MAX_IDEALS) -> IdealLattice:
    """Enumerate every ideal of the order graph level by level (by number of groups).

    Raises
    ------
    TooManyIdealsError
        When the count exceeds ``max_ideals`` (the message gives the count reached and an estimate).
    """
    n = groups.count
    pred_mask = [0] * n
    succs: list[list[int]] = [[] for _ in range(n)]
    for a, b in groups.order_edges:
        pred_mask[b] |= 1 << a
        succs[a].append(b)
    sources = 0
    for g in range(n):
        if pred_mask[g] == 0:
            sources |= 1 << g
    index: dict[int, int] = {0: 0}
    masks = [0]
    available = [sources]  # groups addable to each ideal, as a bitmask
    level = [0]
    up_start = [0]
    up_group: list[int] = []
    up_target: list[int] = []
    sizes = [0]
    for size in range(n):
        next_level: list[int] = []
        for i in level:
            mask, avail = masks[i], available[i]
            bits = avail
            while bits:
                low = bits & -bits
                g = low.bit_length() - 1
                bits ^= low
                new = mask | low
                j = index.get(new)
                if j is None:
                    j = len(masks)
                    index[new] = j
                    new_avail = avail ^ low
                    for s in succs[g]:
                        if pred_mask[s] & new == pred_mask[s]:
                            new_avail |= 1 << s
                    masks.append(new)
                    available.append(new_avail)
                    sizes.append(size + 1)
                    next_level.append(j)
                    if len(masks) > max_ideals:
                        raise TooManyIdealsError(_too_many_message(max_ideals, size + 1, n, len(next_level)))
                up_group.append(g)
                up_target.append(j)
            up_start.append(len(up_group))
        level = next_level
    up_start.extend([len(up_group)] * len(level))  # the full ideal: nothing to add
    return IdealLattice(
        masks=masks,
        sizes=np.asarray(sizes, dtype=np.int32),
        up_start=np.asarray(up_start, dtype=np.int64),
        up_group=np.asarray(up_group, dtype=np.int32),
        up_target=np.asarray(up_target, dtype=np.int32),
    )


def _too_many_message(limit: int, level: int, n: int, width: int) -> str:
    return (
        f"the graph has more than {limit:,} ideals (reached after {level} of {n} levels, {width:,} ideals on the "
        f"last level), too many for the exact DP: coarsen the graph (merge layers) or use an integer program"
    )


def count_ideals(graph: Graph, max_ideals: int = DEFAULT_MAX_IDEALS) -> int:
    """Number of ideals of ``graph`` after contraction (raises :class:`TooManyIdealsError` past the cap)."""
    return enumerate_ideals(contract(graph), max_ideals).count
