"""CLI: ``solve --method multidim`` on a Piper file (table, JSON, overrides, bad input -> exit 2)."""

import json
from pathlib import Path

import pytest

from placement.cli import main
from placement.multidim.dp import solve_multidim
from placement.multidim.io import read_piper

BERT = Path(__file__).resolve().parent.parent / "sample_graphs" / "piper" / "bert32a100.json"


def test_cli_multidim_json_matches_the_engine(capsys):
    assert (
        main(
            [
                "solve",
                str(BERT),
                "--method",
                "multidim",
                "--devices",
                "16",
                "--memory",
                str(8 * 2**30),
                "--microbatches",
                "960",
                "--json",
            ]
        )
        == 0
    )
    out = json.loads(capsys.readouterr().out)
    problem = read_piper(BERT).with_devices(16)
    from dataclasses import replace

    problem = replace(problem, kinds=(replace(problem.kinds[0], memory=8 * 2**30),), microbatches=960)
    expected = solve_multidim(problem)
    assert out["status"] == "optimal"
    assert out["time_per_sample"] == pytest.approx(expected.time_per_sample, rel=1e-12)
    assert sum(s["d"] * s["t"] for s in out["stages"]) <= 16
    assert all(s["memory"] <= s["memory_cap"] for s in out["stages"])


def test_cli_multidim_table(capsys):
    assert main(["solve", str(BERT), "--method", "multidim", "--devices", "4"]) == 0
    text = capsys.readouterr().out
    assert "status: optimal" in text and "d x t" in text and "time per sample:" in text


def test_cli_multidim_bad_file_exit_2(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text(
        '{"maxDevices": 4, "maxMemoryPerDevice": 1, "bandwidth": 1, "mbsInBatch": 2, "nodes": [{"id": 0}], "edges": []}'
    )
    assert main(["solve", str(bad), "--method", "multidim"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"error: {bad}: node 0: missing field 'TMPCs'"
