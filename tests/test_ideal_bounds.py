"""Width and ideal-count bounds (issue 16.1): checked against brute force on small random orders."""

from __future__ import annotations

import itertools
import random

import pytest

from placement import Edge, Graph, Node, TooManyIdealsError
from placement.exact.ideals import Groups, contract, enumerate_ideals, ideal_bounds


def _random_groups(seed: int) -> Groups:
    rng = random.Random(seed)
    n = rng.randint(1, 9)
    density = rng.choice((0.0, 0.15, 0.35, 0.7))
    edges = tuple(sorted((a, b) for a in range(n) for b in range(a + 1, n) if rng.random() < density))
    return Groups(tuple((g,) for g in range(n)), {g: g for g in range(n)}, edges)


def _reach(groups: Groups) -> list[set[int]]:
    """Strict up-sets by a plain fixed point (no shared code with the library)."""
    above = [set() for _ in range(groups.count)]
    changed = True
    while changed:
        changed = False
        for a, b in groups.order_edges:
            new = {b} | above[b]
            if not new <= above[a]:
                above[a] |= new
                changed = True
    return above


def _brute(groups: Groups) -> tuple[int, int]:
    """(number of ideals, width) by enumerating every subset."""
    n = groups.count
    above = _reach(groups)
    ideals = 0
    width = 0
    for bits in range(1 << n):
        chosen = {g for g in range(n) if bits >> g & 1}
        if all(a in chosen for b in chosen for a in range(n) if b in above[a]):  # down-closed
            ideals += 1
        if all(b not in above[a] for a, b in itertools.permutations(chosen, 2)):
            width = max(width, len(chosen))
    return ideals, width


@pytest.mark.parametrize("seed", range(60))
def test_bounds_bracket_the_brute_force_count(seed):
    groups = _random_groups(seed)
    count, width = _brute(groups)
    bounds = ideal_bounds(groups)
    assert bounds.width_exact and bounds.width_low == width
    assert bounds.lower <= count <= bounds.upper
    assert enumerate_ideals(groups).count == count
    above = _reach(groups)
    assert len(bounds.antichain) <= width
    assert all(b not in above[a] for a, b in itertools.permutations(bounds.antichain, 2))


def test_chain_and_antichain_bounds_are_exact():
    chain = Groups(tuple((g,) for g in range(30)), {g: g for g in range(30)}, tuple((g, g + 1) for g in range(29)))
    bounds = ideal_bounds(chain)
    assert (bounds.width_low, bounds.width_high, bounds.lower, bounds.upper) == (1, 1, 31, 31)
    anti = Groups(tuple((g,) for g in range(12)), {g: g for g in range(12)}, ())
    bounds = ideal_bounds(anti)
    assert (bounds.width_low, bounds.lower, bounds.upper) == (12, 2**12, 2**12)


def test_large_antichain_refused_before_enumerating():
    graph = Graph(tuple(Node(i, 1, 1) for i in range(5000)), ())
    with pytest.raises(TooManyIdealsError) as info:
        enumerate_ideals(contract(graph))
    message = str(info.value)
    assert "antichain of 5,000" in message and "2^5,000" in message and "cap of 1,000,000" in message
    assert "coarsen" in message and "--method ip" in message
    assert "\n" not in message


def test_star_refused_up_front():
    nodes = tuple(Node(i, 1, 1) for i in range(2001))
    graph = Graph(nodes, tuple(Edge(0, i, 1) for i in range(1, 2001)))
    with pytest.raises(TooManyIdealsError, match="antichain of 2,000"):
        enumerate_ideals(contract(graph))


def test_long_chain_refused_by_its_length():
    groups = Groups(tuple((g,) for g in range(50)), {g: g for g in range(50)}, tuple((g, g + 1) for g in range(49)))
    with pytest.raises(TooManyIdealsError, match="at least 51 ideals"):
        enumerate_ideals(groups, max_ideals=40)


def test_memory_cap_is_enforced_while_enumerating():
    # 16 independent groups (65,536 ideals) under the count cap, over a 1 MiB memory cap.
    groups = Groups(tuple((g,) for g in range(16)), {g: g for g in range(16)}, ())
    assert enumerate_ideals(groups).count == 2**16
    with pytest.raises(TooManyIdealsError, match="MiB lattice memory cap"):
        enumerate_ideals(groups, max_bytes=1 << 20)
