"""The Tradeoffs page's decisions (ui.tradeoffs) as plain functions, without Streamlit."""

import inspect
from types import SimpleNamespace

import pytest

from placement import load_problem
from placement.explore.grids import memory_grid
from placement.explore.sweep import sweep
from placement.model import Status
from ui import tradeoffs as to

from .conftest import SAMPLES


def test_memory_sweep_solves_follows_memory_grid_defaults():
    defaults = inspect.signature(memory_grid).parameters
    expected = 1 + defaults["points"].default + 1 + defaults["rounds"].default * defaults["probes_per_round"].default
    assert to.memory_sweep_solves() == expected == 14  # the number the page used to hard-code


def test_planned_solves_counts_the_memory_sweep_only_with_sizes():
    assert to.planned_solves((1, 2, 3), (0.5, 1), (), has_sizes=False) == 5
    assert to.planned_solves((1, 2, 3), (0.5, 1), ((1, 1),), has_sizes=True) == 6 + to.memory_sweep_solves()


def test_run_modes_offer_dask_only_when_allow_listed():
    assert to.run_modes(()) == ["auto", "process", "sequential"]
    assert to.run_modes(("tcp://10.0.0.1:8786",)) == list(to.RUN_MODES)
    assert to.run_modes((), large=True) == ["auto", "process"]  # Stop could not end a solve in the page's process


@pytest.mark.parametrize(
    ("ideals", "starts"), [(None, False), (0, True), (to.AUTO_RUN_IDEALS, True), (to.AUTO_RUN_IDEALS + 1, False)]
)
def test_sweeps_start_by_themselves_only_on_small_graphs(ideals, starts):
    assert to.starts_by_itself(ideals) is starts


@pytest.mark.parametrize(
    ("mode", "address", "seconds", "solves", "choice"),
    [
        ("sequential", "", 10.0, 100, "here"),
        ("auto", "", 0.001, 10, "here"),  # 10 ms in all: a pool does not pay
        ("auto", "", 1.0, 10, "pool"),
        ("process", "", 0.001, 1, "pool"),
        ("dask", "tcp://h:1", 0.001, 1, "dask"),
        ("dask", "", 0.001, 1, "pool"),
    ],
)
def test_executor_choice(mode, address, seconds, solves, choice):
    assert to.executor_choice(mode, address, seconds, solves) == choice
    assert to.where_text(choice, address) in ("this process", "a local process pool", f"the Dask cluster at {address}")


def _point(status, reason=None):
    return SimpleNamespace(status=status, result=SimpleNamespace(reason=reason))


def test_worker_failed_reads_the_sweep_reason():
    assert not to.worker_failed([_point(Status.OPTIMAL), _point(Status.ERROR, "out of memory")])
    assert to.worker_failed([_point(Status.OPTIMAL), _point(Status.ERROR, "worker failed: BrokenProcessPool: x")])


def test_worker_failed_matches_what_sweep_writes_when_a_worker_crashes():
    class Crashing:
        def submit(self, fn, *args):
            from concurrent.futures import Future

            future = Future()
            future.set_exception(RuntimeError("lost"))
            return future

    problem = load_problem(SAMPLES / "throughput" / "layer" / "bert24_inference.json")
    points = sweep(problem, "accelerators", (1, 2), executor=Crashing())
    assert to.worker_failed(points)


@pytest.mark.parametrize(
    ("event", "index"),
    [
        (None, None),
        ({}, None),
        ({"selection": {"points": []}}, None),
        ({"selection": {"points": [{"customdata": [3, "x"]}]}}, 3),
        ({"selection": {"points": [{"customdata": 2.0}]}}, 2),
        ({"selection": {"points": [{"x": 1}, {"customdata": [5]}]}}, 5),
        ({"selection": None}, None),
    ],
)
def test_picked_index(event, index):
    assert to.picked_index(event) == index


def test_pareto_pool_renumbers_grid_or_counts_then_memory():
    from dataclasses import dataclass

    @dataclass(frozen=True)
    class P:
        index: int
        name: str

    grid, counts, memory = (P(7, "g"),), (P(3, "c1"), P(4, "c2")), (P(0, "m"),)
    assert [(p.index, p.name) for p in to.pareto_pool(grid, counts, memory)] == [(0, "g"), (1, "m")]
    assert [(p.index, p.name) for p in to.pareto_pool((), counts, memory)] == [(0, "c1"), (1, "c2"), (2, "m")]


def test_configurations_text():
    text = to.configurations_text(False, 8, "V100", True, 3, 10)
    assert text == (
        "Configurations: 1 to 8 V100 accelerators and the memory sweep. "
        "3 of 10 are on the frontier (no other is both cheaper and faster)."
    )
    assert to.configurations_text(True, 8, "accelerator", False, 1, 2).startswith(
        "Configurations: every combination of per-kind counts. 1 of 2"
    )


def test_pick_label():
    assert (
        to.pick_label("memory", "memory = 1 GiB", "3 ms") == "Tradeoffs (memory): memory = 1 GiB, time per sample 3 ms"
    )
