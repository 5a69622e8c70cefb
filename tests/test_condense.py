"""placement.condense: groups are the strongly connected labels, numbered in a topological order."""

from __future__ import annotations

import itertools
import random

import networkx as nx
import pytest

from placement.condense import condense, longest_path_levels


def reachable(edges: set[tuple[int, int]], n: int) -> set[tuple[int, int]]:
    """Transitive closure by Floyd-Warshall (independent of networkx)."""
    reach = set(edges) | {(i, i) for i in range(n)}
    for k, i, j in itertools.product(range(n), repeat=3):
        if (i, k) in reach and (k, j) in reach:
            reach.add((i, j))
    return reach


@pytest.mark.parametrize("seed", range(40))
def test_groups_are_mutually_reachable_labels_in_topological_order(seed):
    rng = random.Random(seed)
    n = rng.randint(1, 7)
    edges = {(a, b) for a in range(n) for b in range(n) if a != b and rng.random() < 0.25}
    rank = rng.sample(range(100), n)
    group, between = condense(range(n), edges, rank.__getitem__)
    reach = reachable(edges, n)
    for a, b in itertools.product(range(n), repeat=2):
        assert (group[a] == group[b]) == ((a, b) in reach and (b, a) in reach)
    assert sorted(set(group.values())) == list(range(len(set(group.values()))))
    assert between == sorted({(group[a], group[b]) for a, b in edges if group[a] != group[b]})
    assert all(x < y for x, y in between)  # topological numbering
    # Ties: at each step the ready group with the least member rank comes first.
    least = {g: min(rank[a] for a in range(n) if group[a] == g) for g in set(group.values())}
    done: set[int] = set()
    for g in range(len(least)):
        ready = [h for h in least if h not in done and all(x in done for x, y in between if y == h)]
        assert least[g] == min(least[h] for h in ready)
        done.add(g)


@pytest.mark.parametrize("seed", range(10))
def test_longest_path_levels_match_networkx_and_see_cycles(seed):
    rng = random.Random(seed)
    count = rng.randint(1, 30)
    pairs = {(u, v) for u in range(count) for v in range(u + 1, count) if rng.random() < 0.15}
    graph = nx.DiGraph(pairs)
    graph.add_nodes_from(range(count))
    expected = [0] * count
    for v in nx.topological_sort(graph):
        for u in graph.predecessors(v):
            expected[v] = max(expected[v], expected[u] + 1)
    assert longest_path_levels(count, pairs) == expected
    if pairs:
        u, v = next(iter(pairs))
        assert longest_path_levels(count, pairs | {(v, u)}) is None
