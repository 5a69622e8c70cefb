"""Groups, reductions and ideal enumeration."""

import pytest

from placement import Edge, Graph, Node, TooManyIdealsError, load_problem
from placement.exact.ideals import contract, enumerate_ideals, reduce_groups

from .golden import PAPER_IDEALS
from .randgraphs import random_problem


def brute_force_ideals(groups) -> int:
    n = groups.count
    count = 0
    for bits in range(1 << n):
        if all(not (bits >> b & 1) or (bits >> a & 1) for a, b in groups.order_edges):
            count += 1
    return count


@pytest.mark.parametrize("seed", range(30))
def test_enumeration_finds_every_down_closed_set(seed):
    problem = random_problem(seed, training=seed % 2 == 1)
    groups = contract(problem.graph)
    lattice = enumerate_ideals(groups)
    assert lattice.count == brute_force_ideals(groups)
    assert len(set(lattice.masks)) == lattice.count
    # Cover edges add exactly one group.
    for i in range(lattice.count):
        for e in range(lattice.up_start[i], lattice.up_start[i + 1]):
            assert lattice.masks[lattice.up_target[e]] == lattice.masks[i] | (1 << int(lattice.up_group[e]))


@pytest.mark.parametrize("name", sorted(PAPER_IDEALS))
def test_ideal_counts_match_the_papers_code(samples_dir, name):
    problem = load_problem(samples_dir / name)
    groups, _ = reduce_groups(problem.graph, contract(problem.graph))
    assert enumerate_ideals(groups).count == PAPER_IDEALS[name]


def test_color_classes_that_close_a_cycle_become_one_group():
    # 1 -> 2 -> 3 with 1 and 3 in one class: 2 must join them.
    nodes = (Node(1, 1, 1, color_class=9), Node(2, 1, 1), Node(3, 1, 1, color_class=9))
    graph = Graph(nodes, (Edge(1, 2, 0), Edge(2, 3, 0)))
    assert contract(graph).members == ((1, 2, 3),)


def test_reduction_merges_only_free_nodes():
    # A zero-latency sink hanging off node 2 merges into it; a costly node does not.
    nodes = (Node(1, 1, 1), Node(2, 1, 1), Node(3, 0, 0, size=4), Node(4, 1, 1))
    graph = Graph(nodes, (Edge(1, 2, 1), Edge(2, 3, 1), Edge(2, 4, 1)))
    groups, moved = reduce_groups(graph, contract(graph))
    assert moved == {3}
    assert (2, 3) in groups.members


def test_too_many_ideals_is_said_up_front():
    # 40 independent nodes: 2^40 ideals.
    graph = Graph(tuple(Node(i, 1, 1) for i in range(40)), ())
    with pytest.raises(
        TooManyIdealsError, match=r"antichain of 40 .* at least 2\^40 .* cap of 1,000;.*integer program"
    ):
        enumerate_ideals(contract(graph), max_ideals=1000)
