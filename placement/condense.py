"""Merging nodes into groups: the quotient graph of a labelling, with the labels on a cycle merged.

One helper for the places that contract a graph (color classes, coarsening by name): it builds
the quotient over the labels (``networkx``), condenses its strongly connected components
(``nx.condensation``: labels on a cycle must share a device) and numbers the groups in the
topological order that takes the group with the smallest ``rank`` first
(``nx.lexicographical_topological_sort``).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
from typing import TypeVar

L = TypeVar("L", bound=Hashable)


def condense(
    labels: Iterable[L], edges: Iterable[tuple[L, L]], rank: Callable[[L], int]
) -> tuple[dict[L, int], list[tuple[int, int]]]:
    """Groups of ``labels`` joined by ``edges``: each label's group, and the edges between groups.

    Parameters
    ----------
    labels : iterable of hashable
        Every label (a label without edges is a group of its own).
    edges : iterable of (label, label)
        Edges between labels; self loops are ignored.
    rank : callable
        Ties of the topological order: the group whose smallest member rank is least comes first.

    Returns
    -------
    (dict, list)
        Label -> group number (0.. in topological order; labels on a cycle share a group) and the
        sorted edges between different groups.

    >>> group, between = condense("abc", [("a", "b"), ("b", "a"), ("c", "a")], "abc".index)
    >>> sorted(group.items()), between
    ([('a', 1), ('b', 1), ('c', 0)], [(0, 1)])
    """
    import networkx as nx  # noqa: PLC0415 - deferred: the multidim CLI path never needs networkx

    quotient = nx.DiGraph()
    quotient.add_nodes_from(labels)
    quotient.add_edges_from((a, b) for a, b in edges if a != b)
    condensed = nx.condensation(quotient)
    least = {c: min(rank(m) for m in condensed.nodes[c]["members"]) for c in condensed.nodes}
    number = {c: i for i, c in enumerate(nx.lexicographical_topological_sort(condensed, key=least.__getitem__))}
    group_of = {label: number[condensed.graph["mapping"][label]] for label in quotient}  # in the order given
    return group_of, sorted((number[a], number[b]) for a, b in condensed.edges)


def longest_path_levels(count: int, pairs: Iterable[tuple[int, int]]) -> list[int] | None:
    """Each node's level, the longest path to it from a source, over nodes ``0..count-1``; None on a cycle.

    ``pairs``: the edges, each listed once (Kahn's algorithm, O(nodes + edges), no networkx).
    """
    succ: list[list[int]] = [[] for _ in range(count)]
    indegree = [0] * count
    for u, v in pairs:
        succ[u].append(v)
        indegree[v] += 1
    level = [0] * count
    ready = [v for v in range(count) if indegree[v] == 0]
    done = 0
    while ready:
        u = ready.pop()
        done += 1
        above = level[u] + 1
        for v in succ[u]:
            if level[v] < above:
                level[v] = above
            indegree[v] -= 1
            if indegree[v] == 0:
                ready.append(v)
    return level if done == count else None
