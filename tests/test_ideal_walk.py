"""The compiled enumeration (:mod:`placement.exact.ideal_walk`) gives the plain enumeration's lattice bit for bit.

The reference below is the plain-Python enumeration the package used before (level by level, each
ideal's addable groups by increasing index, Python ints as bit sets): ideal numbering, sizes and cover
edges must be identical, since the DP's first-found splits depend on the order.
"""

from __future__ import annotations

import random

import pytest

from placement import Edge, Graph, Node, TooManyIdealsError, load_problem
from placement.exact import ideal_enum, ideals
from placement.exact.ideals import DEFAULT_MAX_IDEALS, DEFAULT_MAX_LATTICE_BYTES, Groups, contract, reduce_groups

from .apptest_helpers import ROOT
from .randgraphs import random_problem


def _plain(groups: Groups):
    n = groups.count
    pred = [0] * n
    succs: list[list[int]] = [[] for _ in range(n)]
    for a, b in groups.order_edges:
        pred[b] |= 1 << a
        succs[a].append(b)
    index, masks, avail, sizes = {0: 0}, [0], [sum(1 << g for g in range(n) if not pred[g])], [0]
    up_start, up_group, up_target, level = [0], [], [], [0]
    for size in range(n):
        nxt = []
        for i in level:
            for g in range(n):
                if not avail[i] >> g & 1:
                    continue
                new = masks[i] | 1 << g
                j = index.get(new)
                if j is None:
                    j = index[new] = len(masks)
                    add = avail[i] & ~(1 << g)
                    for s in succs[g]:
                        if pred[s] & new == pred[s]:
                            add |= 1 << s
                    masks.append(new)
                    avail.append(add)
                    sizes.append(size + 1)
                    nxt.append(j)
                up_group.append(g)
                up_target.append(j)
            up_start.append(len(up_group))
        level = nxt
    up_start.extend([len(up_group)] * len(level))
    return masks, sizes, up_start, up_group, up_target


def _compiled(groups: Groups, max_ideals: int = DEFAULT_MAX_IDEALS, max_bytes: int = DEFAULT_MAX_LATTICE_BYTES):
    walk = ideal_enum.compiled(
        groups.count, groups.order_edges, max_ideals, max_bytes, ideals._lattice_bytes(groups.count)
    )
    return ideals._lattice(groups, max_ideals, max_bytes, walk)


def _lattice(groups: Groups):
    lattice = _compiled(groups)
    return (
        lattice.masks,
        lattice.sizes.tolist(),
        lattice.up_start.tolist(),
        lattice.up_group.tolist(),
        lattice.up_target.tolist(),
    )


@pytest.mark.parametrize("seed", range(30))
def test_random_graphs_give_the_plain_lattice(seed):
    problem = random_problem(seed, training=seed % 3 == 0, n_forward=4 + seed % 9)
    groups = contract(problem.graph)
    assert _lattice(groups) == _plain(groups)


def _two_chains(length: int) -> Groups:
    """Two chains of ``length`` nodes side by side: ``(length + 1) ** 2`` ideals, width 2."""
    nodes = [Node(k, 1.0, 1.0) for k in range(2 * length)]
    edges = [Edge(k, k + 1, 1.0) for k in range(length - 1)]
    edges += [Edge(k, k + 1, 1.0) for k in range(length, 2 * length - 1)]
    return contract(Graph(nodes, edges))


def test_more_than_64_groups_span_several_words():
    rng = random.Random(7)
    groups = _two_chains(75)  # 150 groups: three 64-bit words
    assert groups.count == 150 and _compiled(groups).count == 76 * 76
    assert _lattice(groups) == _plain(groups)
    shuffled = Groups(groups.members, groups.group_of, tuple(rng.sample(groups.order_edges, len(groups.order_edges))))
    assert _lattice(shuffled) == _plain(shuffled)  # the edges' order changes nothing either


@pytest.mark.parametrize("name", ["throughput/operator/bert_l-3_training", "throughput/layer/gnmt_training"])
def test_sample_graphs_give_the_plain_lattice(name):
    problem = load_problem(ROOT / "sample_graphs" / f"{name}.json")
    groups, _ = reduce_groups(problem.graph, contract(problem.graph))
    assert _lattice(groups) == _plain(groups)


def test_the_caps_stop_the_walk_with_the_plain_message():
    groups = _two_chains(75)  # width 2: no refusal up front, 5,776 ideals
    with pytest.raises(
        TooManyIdealsError, match=r"5,001 ideals after \d+ of 150 levels .* reach the cap of 5,000 ideals"
    ):
        _compiled(groups, max_ideals=5_000)
    with pytest.raises(TooManyIdealsError, match="MiB lattice memory cap"):
        _compiled(groups, max_bytes=100_000)


def test_enumerate_ideals_hands_over_to_the_walk_past_its_plain_share(monkeypatch):
    groups = _two_chains(40)  # 1,681 ideals
    monkeypatch.setattr(ideals, "PLAIN_MAX_IDEALS", 100)
    monkeypatch.setattr(ideal_enum, "walk_loaded", lambda: False)
    calls = []
    real = ideal_enum.compiled
    monkeypatch.setattr(ideal_enum, "compiled", lambda *args: calls.append(args) or real(*args))
    lattice = ideals.enumerate_ideals(groups)
    assert len(calls) == 1 and lattice.count == 41 * 41
    assert (lattice.masks, lattice.up_target.tolist()) == (_plain(groups)[0], _plain(groups)[4])
    calls.clear()
    monkeypatch.setattr(ideals, "PLAIN_MAX_IDEALS", 10_000)
    assert ideals.enumerate_ideals(groups).masks == lattice.masks and not calls  # small: plain Python
    with pytest.raises(TooManyIdealsError, match="reach the cap of 1,000 ideals"):
        ideals.enumerate_ideals(groups, max_ideals=1_000)  # the plain enumeration's own refusal
