"""Where a run stands against the calibration runs (placement.perf.coverage)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from placement.perf import Cluster, model_preset, predict, search
from placement.perf.calibration import CALIBRATION_FILE, load_calibration
from placement.perf.coverage import (
    FEATURES,
    calibration_envelope,
    calibration_lines,
    envelope_of,
    outside_calibration,
    properties,
)
from placement.perf.layout import Recompute
from placement.perf.predict import calibration_band

ROWS = load_calibration()


def test_every_calibration_run_is_inside_its_own_envelope():
    assert ROWS
    for row in ROWS:
        assert outside_calibration(row.model, row.cluster, row.layout) == ()
        assert predict(row.model, row.cluster, row.layout).outside_calibration == ()


def test_envelope_is_read_from_the_table():
    env = calibration_envelope()
    assert env is not None and env.runs == len(ROWS) and env.source == CALIBRATION_FILE.name
    assert env.covered("GPU") == ("A100",)
    assert env.covered("GPUs") == (min(r.cluster.gpus for r in ROWS), max(r.cluster.gpus for r in ROWS))
    assert env.covered("tensor parallel") == (1, 8)
    assert [label for label, _ in env.values] == [f.label for f in FEATURES]


def _first() -> tuple:
    row = ROWS[1]  # 3.6B, t=2, d=32
    return row.model, row.cluster, row.layout


@pytest.mark.parametrize(
    ("change", "labels"),
    [
        (  # the H100's links are faster too
            lambda m, c, lay: (m, c.with_changes(accelerator="H100"), lay),
            ["GPU H100", "NVLink GB/s 450", "network GB/s per GPU 50"],
        ),
        (lambda m, c, lay: (m, c, lay.with_changes(zero_stage=1)), ["ZeRO stage (distributed optimizer / FSDP) 1"]),
        (lambda m, c, lay: (m, c, lay.with_changes(recompute=Recompute.SELECTIVE)), ["recomputation selective"]),
        (lambda m, c, lay: (m, c, lay.with_changes(sequence_parallel=True)), ["sequence parallel yes"]),
        (lambda m, c, lay: (m, c.with_changes(nic_bytes_per_s=12.5e9), lay), ["network GB/s per GPU 12.5"]),
    ],
)
def test_changed_properties_are_listed_and_nothing_else(change, labels):
    model, cluster, layout = change(*_first())
    outside = outside_calibration(model, cluster, layout)
    assert [item.split(" (calibration runs: ")[0] for item in outside] == labels


def test_sizes_are_compared_with_the_measured_range():
    model, cluster, layout = _first()
    env = calibration_envelope()
    wide = env.covered("GPUs")[1] * 2
    outside = outside_calibration(model, cluster.with_changes(gpus=wide), layout.with_changes(data=wide // 2))
    assert f"GPUs {wide} (calibration runs: 32 to 3072)" in outside
    assert any(item.startswith("data parallel ") for item in outside)


def test_a_new_table_covers_what_it_measured(tmp_path: Path):
    """Adding an H100 run to the table removes "GPU" from the list: the envelope is data, not code."""
    model, cluster, layout = _first()
    h100 = cluster.with_changes(accelerator="H100")
    env = envelope_of([(r.model, r.cluster, r.layout) for r in ROWS] + [(model, h100, layout)], "x.json")
    assert env.covered("GPU") == ("A100", "H100")
    assert not any(item.startswith("GPU ") for item in outside_calibration(model, h100, layout, env))
    # the installed table's envelope is read from its file
    data = json.loads(CALIBRATION_FILE.read_text())
    data["rows"] = data["rows"][:2]
    small = tmp_path / "two.json"
    small.write_text(json.dumps(data))
    two = calibration_envelope(small)
    assert two is not None and two.runs == 2 and two.covered("GPUs") == (32, 64)


def test_a_modern_plan_says_where_it_extrapolates():
    model, cluster = model_preset("llama3-8b"), Cluster("H100", 64)
    result = search(model, cluster, 512, "torchtitan")
    pred = result.plan.prediction
    assert pred.band is not None
    labels = [item.split(" (calibration runs: ")[0] for item in pred.outside_calibration]
    assert "GPU H100" in labels and "MLP SwiGLU" in labels and "ZeRO stage (distributed optimizer / FSDP) 3" in labels
    assert pred.as_dict()["outside_calibration"] == list(pred.outside_calibration)
    lines = calibration_lines(pred.band, pred.outside_calibration)
    assert lines[0].startswith("calibration: within ±") and f"in {len(labels)} properties" in lines[1]
    assert lines[2:] == [f"  {item}" for item in pred.outside_calibration]


def test_properties_counts_in_words():
    assert [properties(n) for n in (0, 1, 2)] == ["0 properties", "1 property", "2 properties"]


def test_no_band_no_list():
    model, cluster, layout = _first()
    assert predict(model, cluster.with_changes(accelerator="H100"), layout, with_band=False).outside_calibration == ()
    assert calibration_lines(None, ("GPU H100",)) == []
    assert calibration_lines(calibration_band(), ())[1] == "every property compared is within those runs"
    one = calibration_lines(calibration_band(), ("GPU H100 (calibration runs: A100)",))
    assert one[1] == "outside those runs in 1 property (there the model extrapolates):"
