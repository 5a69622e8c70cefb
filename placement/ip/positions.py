"""Ordered positions for the contiguous programs: device types, contiguity, crossing indicators.

``D`` positions (``D`` = all devices), each of one device type (binary ``t[p, d]``); the groups
of :func:`placement.exact.ideals.contract` are assigned to positions, and for every order-graph edge
``a -> b`` and position ``p`` the prefix "placed at positions <= p" of ``a`` is at least that of
``b``: the prefixes are a chain of ideals. ``c[u, p, d] >= x[g(u), p, d] - X[g(w), p]`` (and the
reverse) marks a node whose output crosses the boundary of position ``p`` of type ``d``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pulp

from ..model import DeviceSlot, Placement, Problem, Stage
from .common import lp_sum, value


def group_data(problem: Problem, groups: Sequence[Sequence[int]]) -> tuple[dict[int, int], dict[int, list[int]]]:
    """(group of every node, node -> targets in other groups for nodes whose output costs something)."""
    graph = problem.graph
    group_of = {n: g for g, members in enumerate(groups) for n in members}
    crossing: dict[int, list[int]] = {}
    for edge in graph.edges:
        if group_of[edge.source] != group_of[edge.target] and graph.output_cost[edge.source] > 0:
            crossing.setdefault(edge.source, []).append(edge.target)
    return group_of, crossing


def position_types(prob: pulp.LpProblem, types, positions) -> dict:
    """Binary t[p, d]: position p is a device of type d; each position one type, each type its count."""
    t = {}
    for p in positions:
        for d in range(len(types)):
            t[p, d] = prob.add_variable(f"t_{p}_{d}", 0, 1, pulp.LpBinary)
        prob += lp_sum((t[p, d], 1) for d in range(len(types))) == 1
    for d, (_, _, count) in enumerate(types):
        prob += lp_sum((t[p, d], 1) for p in positions) == count
    return t


def contiguity(prob: pulp.LpProblem, order_edges, n_pos: int, at: Callable[[int, int], list]) -> None:
    """Prefixes of positions form a chain of ideals: for an order edge a -> b, b is never before a."""
    for a, b in order_edges:
        for p in range(n_pos - 1):
            terms = [(v, 1) for q in range(p + 1) for v, _ in at(a, q)] + [
                (v, -1) for q in range(p + 1) for v, _ in at(b, q)
            ]
            prob += lp_sum(terms) >= 0


def crossing_vars(prob: pulp.LpProblem, crossing, group_of, x, at, p: int, d: int, c: dict) -> list:
    """c[u, p, d] >= 1 when node u's output crosses the boundary of position p (type d); returns (var, u)."""
    out = []
    for u, targets in crossing.items():
        gu = group_of[u]
        var = prob.add_variable(f"c_{u}_{p}_{d}", 0, 1)
        c[u, p, d] = var
        out.append((var, u))
        for w in targets:
            gw = group_of[w]
            if (gu, p, d) in x:
                prob += lp_sum([(var, 1), (x[gu, p, d], -1)] + at(gw, p)) >= 0
            if (gw, p, d) in x:
                prob += lp_sum([(var, 1), (x[gw, p, d], -1)] + at(gu, p)) >= 0
    return out


def read_contiguous(x: dict, t: dict, groups, types, n_pos: int) -> Placement:
    """The split the solved variables describe (stages in position order, empty positions skipped)."""
    stages = []
    used = [0] * len(types)
    for p in range(n_pos):
        d = max(range(len(types)), key=lambda d: value(t[p, d]))
        nodes = [n for g, members in enumerate(groups) if value(x.get((g, p, d))) > 0.5 for n in members]
        if nodes:
            stages.append(Stage(DeviceSlot(types[d][0], used[d]), tuple(nodes)))
            used[d] += 1
    return Placement(tuple(stages))
