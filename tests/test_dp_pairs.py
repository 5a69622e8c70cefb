"""Pair mode of the shared kernel (rows compared with the target ideals directly) is exact.

Pair mode (:func:`placement.exact.pairs.target_pairs`) is chosen only when few rows of the
table can hold a value, which the small random problems of the brute-force tests rarely
reach; here it is forced on every DP run (the thresholds are raised) and checked with the
same independent oracles as the cover-edge search:

* the brute force of :mod:`tests.oracle`, bit for bit, with the tie-break (least sum of stage
  durations, then fewest stages) - on the rich random problems (training graphs, several
  kinds, CPU cores, tight memory, zero-cost nodes) and on mixed magnitudes (1e-9 .. 1e16,
  where the differences of prefix sums cannot decide and the exact sums are rebuilt);
* ``SolvedTable.query`` answers every smaller device count exactly or with None;
* on the shared workloads the two modes give the same row 0 of the table (every device
  count) and the same objective.
"""

from __future__ import annotations

import math
from contextlib import contextmanager
from unittest import mock

import numpy as np
import pytest

from placement import load_problem, solve_dp
from placement.exact import kernel, pairs
from placement.exact.dp import solve_dp_table

from . import test_dp_exact, test_dp_prune


@contextmanager
def pair_mode(forced: bool | None = True):
    """Force pair mode on (or off; None: the default choice) for every DP run inside; yields whether each run used it."""
    used: list[bool] = []
    real = kernel.target_pairs

    def spy(*args, **kwargs):
        targets = real(*args, **kwargs)
        # The kernel searches in pair mode exactly when the target list it gets is not empty.
        used.append(targets is not None and targets[0].shape[0] > 0)
        return targets

    limits: dict = {"PAIR_MIN_IDEALS": pairs.PAIR_MIN_IDEALS}  # None: the default limits, left as they are
    if forced is not None:
        limits = {"PAIR_MIN_IDEALS": 0, "PAIR_MAX_TARGETS": 10**9, "PAIR_MAX_FRACTION": 1.0}
        if not forced:
            limits = {"PAIR_MAX_TARGETS": 0}
    with mock.patch.multiple(kernel, target_pairs=spy), mock.patch.multiple(pairs, **limits):
        yield used


@pytest.mark.slow  # over 5 s
def test_forced_pair_mode_equals_brute_force_with_its_tie_break():
    with pair_mode() as used:
        test_dp_prune.test_pruned_dp_equals_brute_force_with_its_tie_break()
    assert used and all(used)  # every pass ran in pair mode


@pytest.mark.parametrize("seed", range(40))
def test_forced_pair_mode_is_exact_on_mixed_magnitudes(seed):
    with pair_mode() as used:
        test_dp_exact._check(test_dp_exact.mixed_problem(seed, training=seed % 2 == 1))
    assert all(used)


@pytest.mark.parametrize("seed", range(24))
def test_forced_pair_mode_table_query_is_exact_or_none(seed):
    with pair_mode():
        test_dp_prune.test_table_query_is_exact_or_none(seed)


def _row0(problem, forced: bool):
    with pair_mode(forced) as used:
        table = solve_dp_table(problem)
        result = solve_dp(problem)
    assert table is not None
    assert all(used) if forced else not any(used)
    row = np.where(table.best[0] <= table.upper_bound, table.best[0], np.inf)  # exact there (SolvedTable)
    return row, result


@pytest.mark.parametrize(
    "name",
    [
        "throughput/layer/gnmt_training.json",
        "throughput/operator/bert_l-3_inference.json",
        "throughput/layer/resnet50_training.json",
        pytest.param("throughput/operator/bert_l-3_training.json", marks=pytest.mark.slow),  # over 5 s
    ],
)
def test_both_modes_give_the_same_table_row_and_optimum(samples_dir, name):
    problem = load_problem(samples_dir / name)
    pairs_row, pairs_result = _row0(problem, forced=True)
    search_row, search_result = _row0(problem, forced=False)
    np.testing.assert_array_equal(pairs_row, search_row)
    assert pairs_result.objective == search_result.objective
    assert pairs_result.status == search_result.status == "optimal"


def test_forced_pair_mode_searches_other_pairs_than_the_walk(samples_dir):
    # Pair mode counts the (row, target) pairs it evaluated, the walk every superset it visited:
    # a forced run that silently walked would count the walk's pairs.
    problem = load_problem(samples_dir / "throughput/operator/bert_l-3_inference.json")
    with pair_mode(forced=True) as used:
        paired = solve_dp(problem, tie_break=False)
    with pair_mode(forced=False) as walked:
        walk = solve_dp(problem, tie_break=False)
    assert used and all(used) and not any(walked)
    assert paired.objective == walk.objective
    assert paired.stat("pairs") < walk.stat("pairs")


@pytest.mark.slow
def test_the_inception_like_graph_runs_in_pair_mode_with_the_searchs_optimum(samples_dir):
    problem = load_problem(samples_dir / "ours/inception_wide_inference.json")
    with pair_mode(forced=False) as search:
        expected = solve_dp(problem)
    with pair_mode(forced=None) as chosen:
        result = solve_dp(problem)
    assert not any(search) and chosen and all(chosen)  # the default thresholds choose pair mode here
    assert result.status == expected.status == "optimal"
    assert result.objective == expected.objective
    assert math.isfinite(result.objective)
