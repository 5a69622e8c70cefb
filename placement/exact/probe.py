"""The chain probe: is the chain's value (the max-load pass's first bound) beaten by another topological order?

The max-load pass (:func:`placement.exact.dp._max_load_pass`) starts from the value of the
chain of the groups' numbering (:func:`placement.exact.inputs.chain_lattice`), a split that is
achieved. Its first run bets that this value is optimal: a feasibility run just below it, cheap
when the bet wins (it proves the value) and wasted when it loses (it only finds a better split,
and a second run must then find the optimum). When a few other topological orders are tried and
one of them gives a smaller value, the bet is known to lose before it is made, and the pass
starts with its second kind of run instead.

The probe decides only which run comes first: every run of the pass is exact above its clamp,
and the probe's values are never used as a bound. So a wrong answer here could cost time,
never the optimum.

Measured (``scripts/bench_dp.py`` and in process, 2026-11-26): on the Inception-v3 training graph
7 of the first 16 orders beat the numbering's chain (best 6.952 against 7.013; the optimum is
6.880), the first of them the 2nd, so the probe stops after its first batch; skipping the bet
searches 13.6 M pairs in one run instead of 8.3 M + 13.8 M in two (median of 5 side by side:
1.73 against 3.01 s, CPU 3.05 against 5.22 s). On its inference graph the chain is optimal and no
order beats it: the probe then costs its 8 chain runs (each a feasibility run just below the
chain's value: about 23,000 pairs, 4-6 ms of CPU), two at a time.
"""

from __future__ import annotations

import math
import random
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from .inputs import KernelInputs, chain_lattice
from .kernel import run
from .pairs import no_targets

#: Random topological orders the probe tries (at most: it stops at the first batch with one that beats the chain).
#: Each costs a chain's feasibility run (4-6 ms on Inception-v3), paid in full where the chain is optimal.
PROBE_ORDERS = 8

#: The probe runs only on lattices of at least this many ideals (below, a wasted bet is cheap).
PROBE_MIN_IDEALS = 10_000

#: The seed of the probe's orders: the same problem always makes the same decision.
PROBE_SEED = 20261126


def random_orders(n_groups: int, order_edges, count: int, seed: int = PROBE_SEED) -> list[list[int]]:
    """``count`` topological orders of the groups, each picking uniformly among the ready groups.

    ``order_edges``: (a, b) pairs, group ``a`` before group ``b``. Deterministic for a seed.
    """
    successors: list[list[int]] = [[] for _ in range(n_groups)]
    indegree = [0] * n_groups
    for a, b in order_edges:
        successors[a].append(b)
        indegree[b] += 1
    rng = random.Random(seed)  # (numpy's generator costs ~4 us a draw here: 0.02 s for 16 orders of 309 groups)
    orders = []
    for _ in range(count):
        waiting = list(indegree)
        ready = [g for g in range(n_groups) if waiting[g] == 0]
        order = []
        while ready:
            k = rng.randrange(len(ready))
            ready[k], ready[-1] = ready[-1], ready[k]
            g = ready.pop()
            order.append(g)
            for h in successors[g]:
                waiting[h] -= 1
                if waiting[h] == 0:
                    ready.append(h)
        orders.append(order)
    return orders


def chain_beaten(
    inputs: KernelInputs, n_groups: int, order_edges, overlap: bool, achieved: float, workers: int = 2
) -> bool:
    """Whether the chain of some of :data:`PROBE_ORDERS` random topological orders has a max-load below ``achieved``.

    Each chain runs the lattice kernel (one thread each, ``workers`` at a time, cut at
    ``achieved``: only a split within it matters here); the probe stops at the first batch
    with an order that beats ``achieved``.
    """
    last = inputs.n_states - 1
    # Cells are final once at or below the clamp just under ``achieved``: each chain's run is a feasibility
    # test (a row stops at its first stage that fits), and its root is below ``achieved`` exactly when
    # the chain has a split below it (the max-load pass's clamp, placement.exact.dp._max_load_pass).
    clamp = np.full((n_groups + 1, inputs.n_states), math.nextafter(achieved, -math.inf))

    def value(order) -> float:
        best, *_ = run(
            inputs, chain_lattice(n_groups, order), overlap, achieved, floor=clamp, targets=no_targets(), workers=1
        )
        return float(best[0, last])

    orders = random_orders(n_groups, order_edges, PROBE_ORDERS)
    batch = max(1, workers)
    with ThreadPoolExecutor(max_workers=batch) as pool:
        for first in range(0, len(orders), batch):  # a batch per thread count: stop at the first order that beats
            if any(v < achieved for v in pool.map(value, orders[first : first + batch])):
                return True
    return False
