"""The non-contiguous throughput IP's compute-only relaxation and its symmetry order, against brute force.

The relaxation (:func:`placement.ip.throughput.compute_bound`) drops every transfer: on a small
random problem its bound must equal (within its stopping gap) the brute-force optimum of the
same problem with every edge cost set to 0, and never exceed the optimum of the real problem.
The IP that uses it as a cut ``L >= bound`` (and ranks groups by compute for its symmetry rows)
must still find the brute-force optimum, with and without a warm start, and report a bound no
higher than it. An invalid cut (a bound that counted transfers, a symmetry order that differs
between devices) fails these.
"""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from placement import Graph, Problem, evaluate, load_problem
from placement.ip import color_groups, solve_ip_noncontiguous
from placement.ip.throughput import COMPUTE_BOUND_GAP, _symmetry_ranks, compute_bound

from .randgraphs import brute_force, random_problem

REL = 1e-6


def _without_transfers(problem: Problem) -> Problem:
    edges = tuple(replace(edge, cost=0.0) for edge in problem.graph.edges)
    graph = Graph(problem.graph.nodes, edges, name=problem.graph.name)
    return Problem(graph, problem.devices)


def _bound(problem: Problem, upper: float, seconds: float = 20.0) -> tuple[float | None, object]:
    groups = color_groups(problem.graph)
    slots = problem.devices.slots()
    kinds = {kind.name: kind for kind in problem.devices.accelerators}
    memory = [sum(problem.graph.node_by_id[n].size for n in members) for members in groups]
    rank = _symmetry_ranks(problem, groups, slots, kinds)
    return compute_bound(problem, groups, slots, memory, rank, upper, "highs", seconds)


def _problem(seed: int) -> Problem:
    # Training color classes, 1-3 accelerator kinds, 0-2 CPU cores, tight memory, overlap (rich).
    return random_problem(
        seed, training=seed % 2 == 1, kinds=1 + seed % 3, max_accelerators=3, max_forward=4, rich=seed % 4 >= 2
    )


@pytest.mark.parametrize("seed", range(16))
def test_compute_bound_is_the_optimum_without_transfers(seed):
    problem = _problem(seed)
    free, _ = brute_force(_without_transfers(problem), contiguous=False)
    full, _ = brute_force(problem, contiguous=False)
    lower, placement = _bound(problem, math.inf)
    if math.isinf(free):
        assert lower is None and placement is None
        return
    if free == 0:  # nothing to bound (all zero compute): no bound is reported
        assert lower is None
        return
    assert lower is not None
    assert free * (1 - COMPUTE_BOUND_GAP) - 1e-9 <= lower <= free * (1 + REL) + 1e-9, (lower, free)
    assert lower <= full * (1 + REL) + 1e-9
    # Under the cut L <= the true optimum the bound stays valid.
    capped, _ = _bound(problem, full * (1 + 1e-9) + 1e-12)
    assert capped is not None and capped <= full * (1 + REL) + 1e-9


@pytest.mark.parametrize("seed", range(16))
@pytest.mark.parametrize("warm_start", [False, True])
def test_noncontiguous_ip_with_the_cut_equals_brute_force(seed, warm_start):
    problem = _problem(seed)
    expected, _ = brute_force(problem, contiguous=False)
    result = solve_ip_noncontiguous(problem, time_limit=30, warm_start=warm_start)
    if math.isinf(expected):
        assert result.status == "infeasible"
        return
    assert result.status == "optimal", (seed, result.reason)
    assert abs(result.objective - expected) <= REL * max(1.0, expected), (result.objective, expected)
    assert result.bound is not None and result.bound <= expected * (1 + REL) + 1e-9
    lower = result.stat("compute_bound")
    assert lower is None or lower <= expected * (1 + REL) + 1e-9


@pytest.mark.slow
def test_compute_bound_proves_the_gnmt_partition(samples_dir):
    """GNMT inference layers: loads are almost all compute (transfers sum to 0.43 of 182.6 ms), so the
    full model's LP bound stalls near 30.12 (total / 6 devices, a 5 % gap); the compute-only relaxation, with
    the largest group on the first device, proves the partition optimum 31.669 (24.782 + 6.887 on one device).
    """
    problem = load_problem(samples_dir / "throughput/layer/gnmt_inference.json")
    lower, placement = _bound(problem, math.inf, seconds=120.0)
    assert lower is not None and abs(lower - 31.669) <= 31.669 * COMPUTE_BOUND_GAP + 1e-9
    assert placement is not None
    evaluation = evaluate(problem, placement)
    assert evaluation.feasible and lower <= evaluation.max_load
