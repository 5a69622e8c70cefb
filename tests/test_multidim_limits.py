"""The multidimensional planner estimates its tables before allocating and refuses past the caps.

One test per entry point (library ``solve_multidim``, the sweep ``device_curve``, the CLI), one per
cap (the refusal comes before any option front is built), the estimate against the tables actually
built, and dense 600-node DAGs and a 600-node chain on ``solve --method multidim`` run in forked
children under ``RLIMIT_AS`` by ``tests/hostile_runner.py`` (refused or solved within 5 CPU seconds and
500 MB over the runner's own footprint).
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from placement.cli import main
from placement.errors import PlacementError, TooManyIdealsError
from placement.multidim import dp, limits
from placement.multidim.io import read_piper
from placement.multidim.model import DeviceKind, MultiProblem, NodeOption, PEdge, PNode
from placement.multidim.sweep import device_curve
from placement.multidim.tables import StageTables

ROOT = Path(__file__).resolve().parent.parent
BERT = ROOT / "sample_graphs" / "piper" / "bert32a100.json"


def _chain(n: int = 6, devices: int = 8, microbatches: int = 8, kinds=None) -> MultiProblem:
    nodes = tuple(
        PNode(
            v,
            f"n{v}",
            (
                (1, (NodeOption("vanilla", 1.0 + v, 1.0, 2.0, 1.0), NodeOption("recomp", 1.5 + v, 1.0, 0.5, 1.5))),
                (2, (NodeOption("vanilla", 0.6 + v / 2, 0.5, 1.0, 0.5),)),
            ),
        )
        for v in range(n)
    )
    edges = tuple(PEdge(v, v + 1, 1.0) for v in range(n - 1))
    kinds = kinds or (DeviceKind("x", devices, 100.0, 10.0),)
    return MultiProblem(nodes, edges, kinds, microbatches)


def _no_fronts(monkeypatch):
    """Make any option-front construction fail the test: a refusal must come before it."""

    def boom(*args, **kwargs):
        raise AssertionError("option fronts were built before the refusal")

    monkeypatch.setattr(dp, "stage_fronts", boom)


def _one_line(exc: BaseException) -> str:
    text = str(exc)
    assert "\n" not in text and text.startswith("multidim planner:")
    return text


def test_library_refuses_a_huge_sum_of_degrees_before_anything(monkeypatch):
    _no_fronts(monkeypatch)
    problem = _chain(devices=10**9, microbatches=10**9)
    with pytest.raises(limits.TooMuchWorkError) as info:
        dp.solve_multidim(problem)
    assert isinstance(info.value, TooManyIdealsError) and isinstance(info.value, PlacementError)
    assert f"{limits.MAX_SUM_DEGREES:,}" in _one_line(info.value)


@pytest.mark.parametrize(
    "cap, words",
    [
        ("MAX_BOUNDARY_WORK", "stages x edges"),
        ("MAX_TABLE_ROWS", "stage-time rows"),
        ("MAX_STATE_CELLS", "decision-DP states"),
        ("MAX_FRONT_CELLS", "per-y front cells"),
    ],
)
def test_each_cap_refuses_before_the_fronts(monkeypatch, cap, words):
    problem = _chain()
    work = limits.estimate_work(problem, 7, 21, 1, 8)  # a 6-node chain: 7 ideals, 21 nested pairs
    size = {
        "MAX_BOUNDARY_WORK": work.boundary_work,
        "MAX_TABLE_ROWS": work.table_rows,
        "MAX_STATE_CELLS": work.state_cells,
        "MAX_FRONT_CELLS": work.front_cells,
    }[cap]
    monkeypatch.setattr(limits, cap, size - 1)
    _no_fronts(monkeypatch)
    with pytest.raises(limits.TooMuchWorkError) as info:
        dp.solve_multidim(problem)
    text = _one_line(info.value)
    assert words in text and cap in text and f"{size:,}" in text


def test_fronts_cap_counts_tensor_degrees(monkeypatch):
    """21 stages at two degrees are 42 fronts: max_stages = 30 admits the stages, not the fronts."""
    _no_fronts(monkeypatch)
    with pytest.raises(limits.TooMuchWorkError) as info:
        dp.solve_multidim(_chain(), max_stages=30)
    assert "42 option fronts" in _one_line(info.value)


def test_dense_tables_of_several_kinds_are_refused_by_estimate(monkeypatch):
    """Two kinds of 100,000 devices: the dense decision tables would hold 7 x 100,001 x 100,001 cells."""
    _no_fronts(monkeypatch)
    kinds = (DeviceKind("a", 100_000, 100.0, 10.0), DeviceKind("b", 100_000, 100.0, 10.0))
    with pytest.raises(limits.TooMuchWorkError) as info:
        dp.solve_multidim(_chain(microbatches=60_000, kinds=kinds))
    assert "decision-DP states" in _one_line(info.value)


def test_sweep_entry_point_refuses(monkeypatch):
    _no_fronts(monkeypatch)
    with pytest.raises(limits.TooMuchWorkError):
        device_curve(_chain(microbatches=10**9), counts=(10**9,))


def test_cli_entry_point_exits_2_with_one_line(capsys):
    code = main(["solve", str(BERT), "--method", "multidim", "--devices", "1000000000", "--microbatches", "1000000000"])
    assert code == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "multidim planner:" in err and "cap" in err


def test_estimate_bounds_the_tables_actually_built():
    """The estimate is an upper bound of what is built: fronts and table rows on a random small case."""
    rng = random.Random(4)
    for _ in range(5):
        problem = _chain(n=rng.randint(2, 7), devices=rng.choice((4, 8, 16)), microbatches=rng.choice((4, 8, 12)))
        lattice = dp.node_lattice(problem, 1000)
        stages = dp.count_stages(lattice, 10**9)
        s_max = min(problem.microbatches, problem.total_devices)
        work = limits.estimate_work(problem, lattice.count, stages, 1, s_max)
        fronts = dp.stage_fronts(problem, lattice, 100.0, s_max)
        tables = StageTables(problem, lattice, s_max, 1, fronts)
        assert 0 < len(fronts) <= work.fronts
        assert 0 < len(tables.j) <= work.table_rows
        assert work.usable_d == len([d for d in range(1, s_max + 1) if problem.microbatches % d == 0])


def test_skipping_the_free_node_merge_keeps_the_optimum(monkeypatch):
    """Past MAX_MERGE_WORK free nodes stay their own groups: more ideals, the same optimum."""
    free = NodeOption("free", 0.0)
    nodes = list(_chain(n=4).nodes)
    nodes.append(PNode(4, "free", ((1, (free,)), (2, (free,)))))
    edges = (*_chain(n=4).edges, PEdge(1, 4, 0.0), PEdge(4, 3, 0.0))
    problem = MultiProblem(tuple(nodes), edges, (DeviceKind("x", 8, 100.0, 10.0),), 8)
    merged = dp.solve_multidim(problem)
    monkeypatch.setattr(limits, "MAX_MERGE_WORK", 0)
    unmerged = dp.solve_multidim(problem)
    assert unmerged.ideals > merged.ideals
    assert unmerged.time_per_sample == merged.time_per_sample


def _paper_graph(n: int, edges) -> dict:
    node = {"supportedOnFpga": 1, "cpuLatency": 1.0, "fpgaLatency": 0.5, "isBackwardNode": 0}
    return {
        "maxFPGAs": 8,
        "maxCPUs": 1,
        "maxSizePerFPGA": 1e9,
        "nodes": [{"id": i, **node} for i in range(n)],
        "edges": [{"sourceId": a, "destId": b, "cost": 0.1} for a, b in edges],
    }


@pytest.mark.slow
def test_dense_600_node_dags_are_refused_or_solved_within_5_s_and_500_mb(tmp_path):
    rng = random.Random(1)
    graphs = {
        "dense p=0.02": [(a, b) for a in range(600) for b in range(a + 1, 600) if rng.random() < 0.02],
        "dense p=0.1": [(a, b) for a in range(600) for b in range(a + 1, 600) if rng.random() < 0.1],
        "chain": [(a, a + 1) for a in range(599)],
    }
    cases = []
    for name, edges in graphs.items():
        path = tmp_path / f"{name.replace(' ', '_').replace('=', '')}.json"
        path.write_text(json.dumps(_paper_graph(600, edges)))
        cases.append({"name": name, "argv": ["solve", str(path), "--method", "multidim"]})
    job = {"cases": cases, "cpu_s": 5, "wall_s": 60, "address_space": 500 << 20, "parallel": 1}
    done = subprocess.run(
        [sys.executable, "-m", "tests.hostile_runner"],
        input=json.dumps(job),
        text=True,
        capture_output=True,
        cwd=ROOT,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout)
    for result in report["results"]:
        assert "Traceback" not in result["stderr"], (result["name"], result["stderr"][-1500:])
        assert result["exit"] in (0, 2), (result["name"], result["exit"], result["stderr"][-500:])
        if result["exit"] == 2:
            assert len(result["stderr"].splitlines()) == 1, result["stderr"]
        assert result["cpu_s"] < 5, result
        assert result["peak_mb"] < report["base_mb"] + 500, (result, report["base_mb"])


def test_piper_workloads_are_within_every_cap():
    """The caps leave room for Piper's workloads at 1,024 devices (estimate only, nothing solved)."""
    for name in ("bert32a100.json", "gnmt.json", "resnet.json"):
        problem = read_piper(ROOT / "sample_graphs" / "piper" / name)
        problem = replace(problem, kinds=(replace(problem.kinds[0], count=1024),))
        lattice = dp.node_lattice(problem, dp.DEFAULT_MAX_IDEALS)
        stages = dp.count_stages(lattice, dp.DEFAULT_MAX_STAGES)
        limits.check_work(limits.estimate_work(problem, lattice.count, stages, 1, 1024), dp.DEFAULT_MAX_STAGES)
