"""The exact DP against the brute force, as one matrix of the settings that change its code path.

Axes: accelerator kinds (1, 2, 3) x inference / training x plain / mixed magnitudes (terms
from 1e-9 to 1e16, where the float intervals cannot decide and the exact sums are rebuilt) x
search (the cover-edge walk; the walk with reach, :mod:`placement.exact.reach`, forced on every
run; or pair mode forced on every max-load and tie-break pass) x
threads (one, or two with every lattice level shared out in one-row pieces). Each case solves
with :func:`placement.solve_dp` (tie-break on) and must equal the contiguous brute force of
:mod:`tests.oracle` bit for bit, with a split the evaluator agrees with. A spy records the
target lists and the threads the kernel got, so each case proves it ran the mode it names.
"""

from __future__ import annotations

import itertools
import math
import random
import threading
from dataclasses import replace
from unittest import mock

import pytest

import placement.exact.dp as dp_module
from placement import Edge, Problem, evaluate, solve_dp
from placement.exact import kernel, pairs

from .oracle import brute_force
from .randgraphs import random_problem

KINDS = (1, 2, 3)
TRAINING = (False, True)
MAGNITUDES = ("plain", "mixed")
SEARCH = ("walk", "reach", "pair")
THREADS = (1, 2)
SEEDS = (0, 1)

FORCED = {
    "walk": {"PAIR_MAX_TARGETS": 0},
    "reach": {"PAIR_MAX_TARGETS": 0},
    "pair": {"PAIR_MIN_IDEALS": 0, "PAIR_MAX_TARGETS": 10**9, "PAIR_MAX_FRACTION": 1.0},
}


def _magnitude(rng: random.Random) -> float:
    return 0.0 if rng.random() < 0.1 else rng.uniform(1, 10) * 10.0 ** rng.randint(-9, 16)


def matrix_problem(kinds: int, training: bool, magnitudes: str, seed: int) -> Problem:
    """A rich random problem of the case (several kinds, colour classes, CPU cores, tight memory)."""
    number = 1000 * kinds + 100 * training + seed
    problem = random_problem(
        number, training=training, kinds=kinds, max_forward=4 if training else 5, max_accelerators=3, rich=True
    )
    if magnitudes == "plain":
        return problem
    rng = random.Random(50_000 + number)
    graph = problem.graph
    nodes = tuple(
        replace(
            n,
            accelerator_latency=_magnitude(rng),
            cpu_latency=_magnitude(rng),
            kind_latency=tuple((name, _magnitude(rng)) for name, _ in n.kind_latency),
        )
        for n in graph.nodes
    )
    cost = {n.id: _magnitude(rng) for n in graph.nodes}
    edges = tuple(Edge(e.source, e.target, cost[e.source]) for e in graph.edges)
    return Problem(replace(graph, nodes=nodes, edges=edges), problem.devices)


@pytest.mark.parametrize(
    ("kinds", "training", "magnitudes", "search", "threads", "seed"),
    list(itertools.product(KINDS, TRAINING, MAGNITUDES, SEARCH, THREADS, SEEDS)),
)
def test_dp_equals_brute_force(kinds, training, magnitudes, search, threads, seed):
    problem = matrix_problem(kinds, training, magnitudes, seed)
    target_lists: list[bool] = []
    kernel_threads: set[int] = set()
    real_targets, real_run, real_dp, real_reach = (
        kernel.target_pairs,
        kernel.run,
        kernel.lattice_dp,
        kernel.reach_inputs,
    )
    reach_runs: list[int] = []

    def reach_inputs(*args, **kwargs):
        reach_runs.append(1)
        return real_reach(*args, **kwargs)

    def targets(*args, **kwargs):
        found = real_targets(*args, **kwargs)
        target_lists.append(found is not None and found[0].shape[0] > 0)  # the kernel's pair-mode switch
        return found

    def run(*args, **kwargs):
        return real_run(*args, **dict(kwargs, workers=threads))

    def lattice_dp(*args):
        kernel_threads.add(threading.get_ident())
        return real_dp(*args)

    with (
        mock.patch.multiple(
            kernel,
            target_pairs=targets,
            lattice_dp=lattice_dp,
            reach_inputs=reach_inputs,
            THREAD_MIN_ROWS=1,
            REACH_MIN_IDEALS=0 if search == "reach" else 10**9,
            REACH_TRAINING=True,
        ),
        mock.patch.multiple(pairs, **FORCED[search]),
        mock.patch.object(dp_module, "run", run),
    ):
        result = solve_dp(problem)
    expected, _ = brute_force(problem, contiguous=True)
    if math.isinf(expected):
        assert result.status == "infeasible", result
        return
    assert result.status == "optimal", result
    assert result.objective == expected  # exact: no tolerance
    evaluation = evaluate(problem, result.placement)
    assert evaluation.feasible, evaluation.violations
    assert evaluation.max_load == result.objective
    # The case ran the mode it names.
    assert target_lists and all(target_lists) if search == "pair" else not any(target_lists)
    assert bool(reach_runs) == (search == "reach")
    if threads == 2 and problem.graph.nodes and result.stat("ideals") >= 3:
        assert len(kernel_threads) >= 2  # the calling thread and a pool thread (a new pool per pass)
