"""The planner's lattice: groups of nodes (free nodes merged into a neighbour), ideals as node masks.

Used by :func:`placement.multidim.dp.solve_multidim`: :func:`plan_groups` contracts the nodes into
groups, :func:`node_lattice` enumerates the ideals of the groups (:func:`placement.exact.ideals.enumerate_ideals`)
and writes each as a bitmask over node ids, and :func:`count_stages` counts the stages (pairs of nested
ideals) the planner will build, before anything is built.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass

import numpy as np

from ..exact.ideals import Groups, IdealLattice, enumerate_ideals
from . import limits
from .model import MultiProblem


def count_stages(lattice, limit: int) -> int:
    """Number of pairs (j, i) of ideals with I_j a proper subset of I_i, counted up to just past ``limit``.

    Vectorised over the ideals as 64-bit words of their node masks (one pass per lower ideal).
    """
    width = max(1, (max((m.bit_length() for m in lattice.masks), default=0) + 63) // 64)
    words = np.array(
        [[(m >> (64 * w)) & 0xFFFFFFFFFFFFFFFF for w in range(width)] for m in lattice.masks], dtype=np.uint64
    ).reshape(-1, width)
    total = 0
    for j in range(lattice.count):
        total += int(np.all((words & words[j]) == words[j], axis=1).sum()) - 1
        if total > limit:
            break
    return total


@dataclass(frozen=True)
class NodeLattice(IdealLattice):
    """The ideals of the planner, as bitmasks over **node ids** (bit v set = node v in the ideal).

    ``up_group[e]`` is a group index; ``members[g]`` lists the nodes of group g (a node, or a node
    with the free nodes merged into it, see :func:`plan_groups`).
    """

    members: tuple = ()


class _Order:
    """A small directed graph for the free-node merge (networkx is not imported on the planner's path).

    Invariant: ``succ[a]`` and ``pred[b]`` hold the same edges, in insertion order (dicts), so that
    neighbours are listed in the order ``networkx.DiGraph`` lists them.
    """

    def __init__(self, n: int, edges) -> None:
        self.succ: dict[int, dict[int, None]] = {v: {} for v in range(n)}
        self.pred: dict[int, dict[int, None]] = {v: {} for v in range(n)}
        for a, b in edges:
            self.add_edge(a, b)

    def add_edge(self, a: int, b: int) -> None:
        self.succ[a][b] = None
        self.pred[b][a] = None

    def remove_node(self, v: int) -> None:
        for s in self.succ.pop(v):
            del self.pred[s][v]
        for p in self.pred.pop(v):
            del self.succ[p][v]

    def edges(self) -> list[tuple[int, int]]:
        return [(a, b) for a, out in self.succ.items() for b in out]


def _reach(adjacency: dict[int, dict[int, None]], start: int) -> set[int]:
    """Nodes reachable from ``start`` (``start`` itself excluded), as ``networkx.descendants``."""
    seen: set[int] = set()
    stack = [start]
    while stack:
        for w in adjacency[stack.pop()]:
            if w not in seen:
                seen.add(w)
                stack.append(w)
    seen.discard(start)
    return seen


def _smallest_key_order(order: _Order, key) -> list[int]:
    """Topological order taking the ready node of least ``(key, position)`` first: the order of
    ``networkx.lexicographical_topological_sort(order, key=key)`` (same heap entries)."""
    position = {v: k for k, v in enumerate(order.succ)}
    indegree = {v: len(p) for v, p in order.pred.items()}
    ready = [(key(v), position[v], v) for v, d in indegree.items() if d == 0]
    heapq.heapify(ready)
    out = []
    while ready:
        v = heapq.heappop(ready)[2]
        out.append(v)
        for w in order.succ[v]:
            indegree[w] -= 1
            if indegree[w] == 0:
                heapq.heappush(ready, (key(w), position[w], w))
    return out


def _free_edge(problem: MultiProblem, source: int, target: int, cost: float) -> bool:
    """Whether an edge adds no bytes wherever its ends are: zero cost and zero sync bytes in every option."""
    if cost != 0:
        return False
    if any(o.sync_to(target) for _, opts in problem.nodes[source].options for o in opts):
        return False
    return not any(o.sync_from(source) for _, opts in problem.nodes[target].options for o in opts)


def free_nodes(problem: MultiProblem) -> set[int]:
    """Nodes that cost nothing wherever they are placed.

    A node is *free* when every option at every degree has zero time, parameters and memory, it has
    options at every tensor degree of the problem, and every edge touching it is free (zero cost, zero
    sync bytes). Moving a free node to another stage changes no stage's time, memory or bytes.
    """
    degrees = {t for node in problem.nodes for t in node.degrees}
    out = set()
    for node in problem.nodes:
        if set(node.degrees) != degrees:
            continue
        if any(o.time or o.parameters or o.memory_a or o.memory_b for _, opts in node.options for o in opts):
            continue
        out.add(node.id)
    for e in problem.edges:
        if not _free_edge(problem, e.source, e.target, e.cost):
            out.discard(e.source)
            out.discard(e.target)
    return out


def plan_groups(problem: MultiProblem) -> Groups:
    """Groups of the planner's lattice: single nodes, with each free node merged into a neighbour.

    A free node v (:func:`free_nodes`) is merged into a successor group that every other successor
    group of v is reachable from, else into a predecessor group that reaches every other predecessor
    group, else (no neighbour) into group 0. Exact: in any plan, moving v into that group's stage keeps
    every prefix an ideal (the group lies between all of v's predecessors and successors) and changes
    no cost; a stage left empty is dropped, which lowers the sums of d (so every y) and the devices.
    Merging never creates a cycle (v already precedes, or follows, the group it joins). Groups are
    numbered in a topological order (the numbering :mod:`placement.exact.ideals` expects).
    """
    n = len(problem.nodes)
    order = _Order(n, ((e.source, e.target) for e in problem.edges))
    members: dict[int, list[int]] = {v: [v] for v in range(n)}
    # the merge walks descendants per free node: past MAX_MERGE_WORK it is skipped (still exact)
    cheap = n * max(1, len(problem.edges)) <= limits.MAX_MERGE_WORK
    pending = sorted(free_nodes(problem)) if n > 1 and cheap else []
    changed = True
    while changed:  # a merge can make a neighbour's successors comparable: repeat until nothing moves
        changed = False
        for v in list(pending):
            succs, preds = list(order.succ[v]), list(order.pred[v])
            into = None
            for s in succs:
                below = _reach(order.succ, s)
                if all(x == s or x in below for x in succs):
                    into = s
                    break
            if into is None:
                for p in preds:
                    above = _reach(order.pred, p)
                    if all(x == p or x in above for x in preds):
                        into = p
                        break
            if into is None and not succs and not preds:
                into = next((g for g in sorted(members) if g != v), None)  # None: v is all that is left
            if into is None:
                continue
            for p in preds:
                if p != into:
                    order.add_edge(p, into)
            for s in succs:
                if s != into:
                    order.add_edge(into, s)
            order.remove_node(v)
            members[into].extend(members.pop(v))
            pending.remove(v)
            changed = True
    rank = {g: k for k, g in enumerate(_smallest_key_order(order, lambda g: min(members[g])))}
    groups = [tuple(sorted(members[g])) for g in sorted(rank, key=rank.__getitem__)]
    group_of = {v: rank[g] for g, nodes in members.items() for v in nodes}
    edges = tuple(sorted((rank[a], rank[b]) for a, b in order.edges()))
    return Groups(tuple(groups), group_of, edges)


def node_lattice(problem: MultiProblem, max_ideals: int) -> NodeLattice:
    """The ideals of :func:`plan_groups`' groups as node masks (:class:`~placement.errors.TooManyIdealsError`
    past ``max_ideals``)."""
    groups = plan_groups(problem)
    lattice = enumerate_ideals(groups, max_ideals)
    bits = [sum(1 << v for v in nodes) for nodes in groups.members]
    masks = []
    for mask in lattice.masks:
        out = 0
        while mask:
            low = mask & -mask
            out |= bits[low.bit_length() - 1]
            mask ^= low
        masks.append(out)
    return NodeLattice(
        masks, lattice.sizes, lattice.up_start, lattice.up_group, lattice.up_target, tuple(groups.members)
    )
