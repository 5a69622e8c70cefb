"""Acceptance: on every published run of the calibration table the Megatron-space optimum is predicted at
least as fast as the published layout, with the same GPUs, global batch and precision (fp16)."""

from __future__ import annotations

import pytest

from placement.perf.calibration import load_calibration
from placement.perf.predict import predict
from placement.perf.search import search

ROWS = load_calibration()


def _check(space: str) -> list[float]:
    speedups = []
    for row in ROWS:
        published = predict(row.model, row.cluster, row.layout)
        result = search(row.model, row.cluster, row.layout.global_batch, space, dtype=row.layout.dtype)
        assert result.plan is not None, row.label
        assert result.plan.prediction.fits
        assert result.plan.iteration_seconds <= published.iteration_seconds, row.label
        assert result.plan.layout.gpus == row.layout.gpus == row.cluster.gpus
        speedups.append(published.iteration_seconds / result.plan.iteration_seconds)
    return speedups


def test_2021_space_contains_and_never_loses_to_the_published_layouts():
    """With 2021's features only (unfused attention, no SP, no distributed optimizer, no overlap) the space
    holds every published layout, so its optimum cannot be slower; on the 1T row it is the published one."""
    speedups = _check("megatron-2021")
    assert len(speedups) == 10 and speedups[-1] == pytest.approx(1.0)


@pytest.mark.slow
def test_megatron_space_optimum_is_at_least_as_fast_on_every_row():
    speedups = _check("megatron")
    assert min(speedups) >= 1.0
