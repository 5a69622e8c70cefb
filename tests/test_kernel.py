"""The kernel agrees with its readable reference, :func:`placement.explore.teaching.trace_dp`.

``trace_dp`` runs the DP's recurrence in plain Python (every pair of ideals, no pruning, no
merging, prefix orientation: ``best[J][s]`` for the groups inside ``J``); the kernel runs it
over suffixes (``best[I, s]`` for the groups outside ``I``) with "at most these devices"
semantics. Both must give the same optimal max-load for every device-count state of the
whole graph: the kernel's row of the empty ideal equals the reference's row of the full one.
"""

from __future__ import annotations

import math

import pytest

from placement import evaluate, solve_dp
from placement.exact.ideals import contract, enumerate_ideals
from placement.exact.kernel import (
    INHERIT,
    MODE_PLAIN,
    MODE_RECOMPUTE,
    build_inputs,
    decode_parent,
    lattice_tuple,
    parent_code,
    run,
)
from placement.explore.teaching import trace_dp
from placement.model import CPU_KIND

from .randgraphs import random_problem


def kernel_row(problem):
    """The kernel's values ``best[empty, s]`` on the unreduced lattice, no floors, no bound, one thread."""
    groups = contract(problem.graph)
    lattice = enumerate_ideals(groups)
    inputs = build_inputs(problem, groups)
    best, *_ = run(inputs, lattice_tuple(lattice), problem.devices.overlap, math.inf, workers=1)
    return best[0], inputs


@pytest.mark.parametrize("seed", range(30))
def test_kernel_equals_the_teaching_trace_on_every_device_count(seed):
    problem = random_problem(
        seed, training=seed % 2 == 1, kinds=1 + seed % 3, max_forward=4, max_accelerators=3, rich=seed % 3 == 0
    )
    trace = trace_dp(problem)
    row, inputs = kernel_row(problem)
    kinds = [kind.name for kind in problem.devices.accelerators]
    for k, state in enumerate(trace.states):
        index = 0
        for name, count in zip(trace.types, state):
            d = len(kinds) if name == CPU_KIND else kinds.index(name)
            index += count * int(inputs.strides[d])
        assert row[index] == trace.best[trace.full][k], (state, row[index], trace.best[trace.full][k])
    result = solve_dp(problem, tie_break=False)
    if math.isinf(trace.answer):
        assert result.status != "optimal"
    else:
        assert result.objective == trace.answer
        assert evaluate(problem, trace.placement).max_load == trace.answer


def test_parent_codes_round_trip_below_inherit():
    for n_types in (1, 2, 4):
        for device_type in range(n_types):
            for mode in (MODE_PLAIN, MODE_RECOMPUTE):
                code = parent_code(device_type, mode, n_types)
                assert code < INHERIT
                assert decode_parent(code, n_types) == (device_type, mode)


def test_compiled_entry_is_resolved_once_per_argument_types_and_keeps_no_arrays():
    """The entry point is found again by the arguments' type fingerprints; the cache's key lets the arrays go."""
    import gc
    import weakref

    import numpy as np
    from numba import njit

    from placement.exact import kernel

    @njit(nogil=True)
    def total(values, scale):
        return values.sum() * scale

    typed = []
    typeof = total.typeof_pyval
    total.typeof_pyval = lambda value: (typed.append(value), typeof(value))[1]
    first = np.arange(5.0)
    entry = kernel.compiled_entry(total, first, 2.0)
    assert entry(first, 2.0) == 20.0 and len(typed) == 2
    again = kernel.compiled_entry(total, np.ones(3), 1.0)
    assert again is entry and len(typed) == 2  # same types: the cached entry, nothing typed in Python
    other = kernel.compiled_entry(total, np.arange(3), 1.0)  # int64 values: another entry
    assert other is not entry and other(np.arange(3), 1.0) == 3.0
    watched = weakref.ref(first)
    del first
    typed.clear()
    gc.collect()
    assert watched() is None  # the cache does not hold the first call's array
    assert kernel.compiled_entry(abs, -1) is abs  # a plain function as it is
