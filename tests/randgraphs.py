"""The one random-problem generator of the property tests, and the brute-force oracle they compare with.

:func:`random_problem` builds small seeded problems (the ``random_problem`` fixture of
``conftest.py`` is this function); :func:`brute_force` is :func:`tests.oracle.brute_force`,
which shares no code with the package under test. Hypothesis-driven tests draw a seed and
call :func:`random_problem` (see :func:`problems`).
"""

from __future__ import annotations

import math
import random

from hypothesis import strategies as st

from placement import AcceleratorKind, Devices, Edge, Graph, Node, Problem

from .oracle import brute_force, contiguous_orders, must_share, pipeline_order, valid_placements

# The names the memory-aware tests import (they are the oracle's).
_units = must_share
_contiguous_order = pipeline_order


def random_problem(
    seed: int,
    training: bool = False,
    n_forward: int | None = None,
    max_accelerators: int = 2,
    kinds: int = 1,
    zero_cost_edges: bool = False,
    *,
    max_forward: int = 5,
    rich: bool = False,
) -> Problem:
    """A small random problem (the one generator of the property tests; seeded, reproducible).

    A DAG of ``n_forward`` nodes (else 3..``max_forward``), an optional backward mirror with
    color classes, tight memory, unsupported nodes, 0-2 CPU cores, zero-latency nodes, and
    with ``kinds`` 2 a second, faster accelerator kind with per-kind latencies. ``rich`` adds,
    from a second stream of random numbers (so that the plain problems of a seed never
    change): a color class of two forward nodes, per-node allowed kinds, latency overrides,
    a third kind (``kinds`` 3), unlimited memory, a bandwidth factor and compute/communication
    overlap.
    """
    rng = random.Random(seed)
    n = n_forward if n_forward is not None else rng.randint(min(3, max_forward), max_forward)
    nodes, edges = [], []
    cost = {}
    for i in range(n):
        zero = rng.random() < 0.2
        supported = rng.random() > 0.15
        latencies = () if kinds == 1 else (("fast", 0.0 if zero else round(rng.uniform(0.2, 3), 2)),)
        nodes.append(
            Node(
                i,
                cpu_latency=0.0 if zero else round(rng.uniform(1, 10), 2),
                accelerator_latency=0.0 if zero else round(rng.uniform(0.5, 5), 2),
                supported_on_accelerator=supported,
                size=float(rng.randint(1, 4)),
                color_class=i if training else None,
                kind_latency=latencies,
            )
        )
        cost[i] = 0.0 if zero_cost_edges and rng.random() < 0.3 else round(rng.uniform(0.1, 2), 2)
    pairs = set()
    for j in range(1, n):
        pairs.add((rng.randrange(j), j))
        for i in range(j):
            if rng.random() < 0.25:
                pairs.add((i, j))
    for i, j in sorted(pairs):
        edges.append(Edge(i, j, cost[i]))
    if training:
        for i in range(n):
            base = nodes[i]
            nodes.append(
                Node(
                    n + i,
                    cpu_latency=round(base.cpu_latency * 1.5, 2),
                    accelerator_latency=round(base.accelerator_latency * 1.5, 2),
                    supported_on_accelerator=base.supported_on_accelerator,
                    is_backward=True,
                    size=0.0,
                    color_class=i,
                    kind_latency=tuple((k, v * 1.5) for k, v in base.kind_latency),
                )
            )
            back_cost = round(rng.uniform(0.1, 2), 2)
            cost[n + i] = back_cost
        for i, j in sorted(pairs):
            edges.append(Edge(n + j, n + i, cost[n + j]))
        last = n - 1
        edges.append(Edge(last, n + last, cost[last]))
    total = sum(node.size for node in nodes)
    memory = float(max(max(node.size for node in nodes), rng.randint(int(total * 0.4), int(total * 0.8) + 1)))
    accelerator_kinds = [AcceleratorKind("accelerator", rng.randint(1, max_accelerators), memory)]
    if kinds > 1:
        accelerator_kinds.append(AcceleratorKind("fast", 1, memory * 0.6, speed=2.0, bandwidth=0.5))
    devices = Devices(accelerators=tuple(accelerator_kinds), cpus=rng.randint(0, 2), overlap=rng.random() < 0.2)
    if rich:
        return _enrich(random.Random(seed * 7919 + 17), nodes, edges, devices, n, kinds, training, seed)
    return Problem(Graph(tuple(nodes), tuple(edges), name=f"random-{seed}"), devices)


def _enrich(
    rng: random.Random, nodes: list, edges: list, devices: Devices, n: int, kinds: int, training: bool, seed: int
) -> Problem:
    """The ``rich`` features of :func:`random_problem` (see there)."""
    from dataclasses import replace

    names = [kind.name for kind in devices.accelerators]
    if kinds >= 3:
        names.append("gamma")
    if n >= 3 and rng.random() < 0.4:  # two forward nodes (and their backward partners) share a device
        a, b = sorted(rng.sample(range(n), 2))
        joined = {a, b} | ({n + a, n + b} if training else set())
        nodes = [replace(node, color_class=a) if node.id in joined else node for node in nodes]
    enriched = []
    for node in nodes:
        if rng.random() < 0.25:
            node = replace(node, allowed_kinds=tuple(rng.sample(names, rng.randint(0, len(names)))))
        if rng.random() < 0.25:
            node = replace(node, kind_latency=((rng.choice(names), float(rng.choice([0, 1, 2, 3, 5]))),))
        enriched.append(node)
    nodes = enriched
    memory = devices.accelerators[0].memory
    kinds_list = list(devices.accelerators)
    if rng.random() < 0.2:
        kinds_list[0] = replace(kinds_list[0], memory=math.inf)
    if kinds >= 3:
        kinds_list.append(
            AcceleratorKind(
                "gamma",
                rng.randint(0, 1),
                memory * rng.choice([0.5, 1.0, 2.0]),
                speed=rng.choice([0.5, 1.0, 2.0]),
                bandwidth=rng.choice([0.5, 1.0, 2.0]),
            )
        )
    devices = replace(
        devices, accelerators=tuple(kinds_list), bandwidth=rng.choice([0.5, 1.0, 1.0, 2.0]), overlap=rng.random() < 0.3
    )
    return Problem(Graph(tuple(nodes), tuple(edges), name=f"random-{seed}-rich"), devices)


def problems(
    training: bool | None = None,
    kinds: tuple[int, ...] = (1,),
    n_forward: int | None = None,
    max_forward: int = 5,
    rich: bool = True,
):
    """A hypothesis strategy of :func:`random_problem` problems.

    The structure is drawn, not only the seed: the number of forward nodes (1..``max_forward`` unless
    ``n_forward`` is given), training or not, the number of kinds, the most accelerators of the first kind
    (1 or 2) and zero-cost edges. Hypothesis shrinks a failure towards one forward node, one accelerator
    and no extras; the seed draws the numbers (latencies, sizes, edges) of that shape.
    """
    return st.builds(
        lambda seed, train, k, n, accelerators, zero_cost: random_problem(
            seed,
            training=train,
            n_forward=n,
            max_accelerators=accelerators,
            kinds=k,
            zero_cost_edges=zero_cost,
            max_forward=max_forward,
            rich=rich,
        ),
        st.integers(0, 2**31 - 1),
        st.booleans() if training is None else st.just(training),
        st.sampled_from(kinds),
        st.integers(1, max_forward) if n_forward is None else st.just(n_forward),
        st.integers(1, 2),
        st.booleans(),
    )


def placements(problem: Problem, contiguous: bool):
    """Every valid placement of the oracle (contiguous ones only if asked), with the evaluator's evaluation."""
    from placement import evaluate

    for placement in valid_placements(problem, contiguous):
        yield placement, evaluate(problem, placement)


__all__ = [
    "brute_force",
    "contiguous_orders",
    "must_share",
    "pipeline_order",
    "placements",
    "problems",
    "random_problem",
]
