"""The exact DP's pruning (open cells, floors, per-row incumbents) never cuts an optimal split.

Random small problems from the one generator (:func:`tests.randgraphs.random_problem`, rich:
training graphs with colour classes, several accelerator kinds, allowed kinds, CPU cores,
tight memory, zero-cost nodes), checked against the independent brute force of
:mod:`tests.oracle`:

* every lower bound behind the floors (:func:`placement.exact.kernel.cell_floors`, the empty
  ideal with the devices of any state) is at most the brute-force optimum with those devices;
* ``solve_dp`` equals the brute force bit for bit, and its tie-break split is the brute
  force's least sum of stage durations among the optimal splits;
* ``SolvedTable.query`` answers every smaller device count exactly or with None.
"""

from __future__ import annotations

import math
from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings

from placement import Problem, evaluate, solve_dp
from placement.exact.dp import solve_dp_table
from placement.exact.ideals import contract, enumerate_ideals
from placement.exact.kernel import build_inputs, cell_floors, lattice_tuple, traceback_split
from placement.model import CPU_KIND

from .oracle import _crossing_terms, _latency_on, brute_force, valid_placements
from .randgraphs import problems, random_problem

SETTINGS = settings(
    max_examples=200,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def _with_counts(problem: Problem, counts: list[int], cpus: int) -> Problem:
    kinds = tuple(replace(kind, count=c) for kind, c in zip(problem.devices.accelerators, counts))
    return Problem(problem.graph, replace(problem.devices, accelerators=kinds, cpus=cpus))


def _state_counts(problem: Problem, state: int) -> tuple[list[int], int]:
    digits = []
    for count in [kind.count for kind in problem.devices.accelerators] + [problem.devices.cpus]:
        digits.append(state % (count + 1))
        state //= count + 1
    return digits[:-1], digits[-1]


def _durations(problem: Problem, placement) -> tuple[float, int]:
    """(sum of stage durations, stages): the tie-break key, computed by the oracle's own rules."""
    by_id = {node.id: node for node in problem.graph.nodes}
    kinds = {kind.name: kind for kind in problem.devices.accelerators}
    total = []
    for stage in placement.stages:
        members = set(stage.nodes)
        if stage.device.kind == CPU_KIND:
            total.append(math.fsum(by_id[n].cpu_latency for n in members))
            continue
        kind = kinds[stage.device.kind]
        compute = [_latency_on(by_id[n], kind) for n in members]
        scale = 1.0 / (problem.devices.bandwidth * kind.bandwidth)
        total.append(math.fsum(compute + _crossing_terms(problem, members, scale)))
    return math.fsum(total), len(placement.stages)


@SETTINGS
@given(problems(kinds=(1, 2, 3), max_forward=4))
def test_floors_are_lower_bounds(problem):
    groups = contract(problem.graph)
    lattice = enumerate_ideals(groups)
    inputs = build_inputs(problem, groups)
    floors = cell_floors(inputs, lattice_tuple(lattice), math.inf, clamp=False)
    for state in range(1, inputs.n_states):
        counts, cpus = _state_counts(problem, state)
        expected, _ = brute_force(_with_counts(problem, counts, cpus), contiguous=True)
        assert floors[0, state] <= expected, (state, floors[0, state], expected)


@SETTINGS
@given(problems(kinds=(1, 2, 3), max_forward=4))
def test_pruned_dp_equals_brute_force_with_its_tie_break(problem):
    expected, _ = brute_force(problem, contiguous=True)
    result = solve_dp(problem)
    if math.isinf(expected):
        assert result.status == "infeasible", result
        return
    assert result.status == "optimal", result
    assert result.objective == expected
    assert evaluate(problem, result.placement).max_load == expected
    keys = [
        _durations(problem, p)
        for p in valid_placements(problem, contiguous=True)
        if evaluate(problem, p).max_load <= expected
    ]
    best_sum = min(key[0] for key in keys)
    got_sum, got_stages = _durations(problem, result.placement)
    # The kernel adds the stage durations one by one (last stage first): equal up to that rounding.
    assert math.isclose(got_sum, best_sum, rel_tol=1e-12, abs_tol=1e-12), (got_sum, best_sum)
    ties = [stages for total, stages in keys if math.isclose(total, got_sum, rel_tol=1e-12, abs_tol=1e-12)]
    assert got_stages <= min(ties)


@pytest.mark.parametrize("seed", range(24))
def test_table_query_is_exact_or_none(seed):
    problem = random_problem(seed, training=seed % 2 == 1, kinds=1 + seed % 3, max_forward=4, max_accelerators=3)
    table = solve_dp_table(problem)
    if table is None:
        assert math.isinf(brute_force(problem, contiguous=True)[0])
        return
    answered = 0
    for state in range(1, table.inputs.n_states):
        counts, cpus = _state_counts(problem, state)
        answer = table.query(counts, cpus)
        if answer is None:
            continue
        answered += 1
        smaller = _with_counts(problem, counts, cpus)
        value, placement = answer
        assert value == brute_force(smaller, contiguous=True)[0], (counts, cpus)
        assert evaluate(smaller, placement).max_load == value
    full = table.query([kind.count for kind in problem.devices.accelerators], problem.devices.cpus)
    if full is None:
        assert query_may_refuse(table), "query() returned None for the counts the table was solved for"
        return
    assert full[0] == solve_dp(problem).objective
    assert answered >= 1


def query_may_refuse(table) -> bool:
    """Whether ``table.query`` may answer None for the full counts it was solved for.

    The table was searched with those counts' own chain bound, so only the merged nodes'
    memory (relaxed in the table, see ``solve_dp_table``) may make its split not fit.
    """
    state = table.inputs.n_states - 1
    if not math.isfinite(table.best[0, state]):
        return True
    placement, _ = traceback_split(
        table.problem,
        table.groups,
        table.lattice.groups_of,
        table.parent_ideal,
        table.parent_type,
        state,
        table.lattice.full,
        table.inputs,
    )
    return not evaluate(table.problem, placement).feasible
