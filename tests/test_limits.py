"""The table-size limit (:mod:`placement.exact.limits`): every DP entry point refuses in one line.

5 accelerator kinds x 30 devices give 31^5 device-count states (about 0.6 GiB per ideal), so
even a 4-node chain is over the 2 GiB limit: each entry point must raise
:class:`TooManyIdealsError` naming the table size, before allocating anything that size
(before the fix, the memory-aware DP died with a numpy MemoryError).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from placement import AcceleratorKind, Devices, Edge, Graph, Node, Problem, solve_dp
from placement.errors import TooManyIdealsError
from placement.exact.dp import solve_dp_table
from placement.exact.ideals import contract, enumerate_ideals
from placement.exact.kernel import build_inputs, chain_lattice, relax_then_verify, run
from placement.exact.limits import CELL_BYTES, MAX_TABLE_BYTES, check_table_size, device_states
from placement.exact.memory_aware import solve_memory_aware

MESSAGE = r"the DP table would need [\d.]+ GiB \([\d,]+ ideals x 28,629,151 device-count states\), over the 2 GiB limit"


def chain(n: int = 4) -> Graph:
    nodes = tuple(Node(k, 1.0, 2.0, size=1.0) for k in range(1, n + 1))
    edges = tuple(Edge(k, k + 1, 1.0) for k in range(1, n))
    return Graph(nodes, edges)


def huge(devices_per_kind: int = 30, kinds: int = 5) -> Problem:
    accelerators = tuple(AcceleratorKind(f"k{d}", devices_per_kind, 100.0) for d in range(kinds))
    return Problem(chain(), Devices(accelerators=accelerators, cpus=0))


def test_the_limit_arithmetic():
    assert device_states(huge().devices) == 31**5
    check_table_size(MAX_TABLE_BYTES // CELL_BYTES, 1)  # exactly at the limit: allowed
    with pytest.raises(TooManyIdealsError, match="over the 2 GiB limit"):
        check_table_size(MAX_TABLE_BYTES // CELL_BYTES + 1, 1)


def test_dp_refuses():
    with pytest.raises(TooManyIdealsError, match=MESSAGE):
        solve_dp(huge())


def test_live_table_refuses():
    with pytest.raises(TooManyIdealsError, match=MESSAGE):
        solve_dp_table(huge())


@pytest.mark.parametrize("schedule", ["inference", "1f1b"])
def test_memory_aware_refuses(schedule):
    with pytest.raises(TooManyIdealsError, match=MESSAGE):
        solve_memory_aware(huge(), schedule=schedule, recompute="none")


def test_memory_aware_with_recomputation_refuses():
    with pytest.raises(TooManyIdealsError, match=MESSAGE):
        solve_memory_aware(huge(), schedule="1f1b", recompute="per-stage")


def test_kernel_run_refuses_before_allocating():
    # A small problem, a lattice claiming more ideals than the limit allows at its state count.
    problem = Problem(chain(), Devices.paper(2, 1))
    groups = contract(problem.graph)
    inputs = build_inputs(problem, groups)
    up_start, up_group, up_target, _ = chain_lattice(groups.count)
    claimed = MAX_TABLE_BYTES // (CELL_BYTES * inputs.n_states) + 1
    with pytest.raises(TooManyIdealsError, match="over the 2 GiB limit"):
        run(inputs, (up_start, up_group, up_target, claimed), False, math.inf)


def test_relax_then_verify_checks_the_unreduced_lattice():
    problem = Problem(chain(), Devices.paper(2, 1))
    groups = contract(problem.graph)
    lattice = enumerate_ideals(groups, 100)
    refused = []

    def solve(groups, lattice, ignore):
        # The relaxed split does not fit and the real memory gives a larger value: the ladder
        # reaches the unreduced lattice, whose size must be checked.
        return (1.0 if ignore else 2.0), object(), 0, None

    def check(ideals):
        refused.append(ideals)
        raise TooManyIdealsError("too large")

    outcome = relax_then_verify(solve, lambda p: False, groups, groups, lattice, frozenset({1}), 100, check)
    assert refused == [lattice.count]
    assert outcome.status == "feasible"


def test_below_the_limit_still_solves():
    result = solve_dp(Problem(chain(), Devices.paper(2, 1)))
    assert result.status == "optimal"
    assert np.isfinite(result.objective)
