"""Claims with error bars: a speed-up inside both predictions' bands is a tie; plan and predict read profiles."""

from __future__ import annotations

import json

import pytest

from placement.cli import main
from placement.errors import PlacementError
from placement.perf.calibration import load_calibration
from placement.perf.claims import Claim, compare_claim
from placement.perf.hardware import ACCELERATORS, Cluster
from placement.perf.megatron import parse_megatron_args
from placement.perf.predict import predict
from placement.perf.profile import profile_from_dict, save_profile
from tests.test_perf_profile import _data

GPT3 = (
    "--num-layers 96 --hidden-size 12288 --num-attention-heads 96 --seq-length 2048 --micro-batch-size 1 "
    "--global-batch-size 1536 --fp16 --vocab-size 51200"
)


@pytest.mark.parametrize(
    ("baseline", "band", "verdict"),
    [(1.03, 0.057, "tie"), (1.45, 0.057, "faster"), (1.45, 0.23, "tie"), (0.8, 0.05, "slower"), (1.0, 0.0, "tie")],
)
def test_verdicts(baseline, band, verdict):
    claim = Claim(baseline, 1.0, band, band)
    assert claim.verdict == verdict
    assert claim.low <= claim.speedup <= claim.high
    assert ("a tie" in claim.text()) == (verdict == "tie")


def test_the_range_is_the_worst_case_of_both_bands():
    claim = Claim(1.2, 1.0, 0.1, 0.05)
    assert claim.low == pytest.approx(1.2 * 0.9 / 1.05)
    assert claim.high == pytest.approx(1.2 * 1.1 / 0.95)


def test_compare_claim_uses_each_predictions_band():
    """Inside the calibration runs (a published run's own layout) each prediction carries the calibration band."""
    row = load_calibration()[-1]
    pa = predict(row.model, row.cluster, row.layout)
    pb = predict(row.model, row.cluster, row.layout.with_changes(micro_batch=1))
    assert pa.error.kind == "calibrated"
    claim = compare_claim(pa, pb)
    assert claim.baseline_band == pa.band.max_abs_error and claim.verdict == "tie"
    assert compare_claim(pa, pb, band=0.5).verdict == "tie"
    with pytest.raises(PlacementError, match="--band"):
        compare_claim(pa, pb, band=float("nan"))


def test_an_extrapolated_speed_up_is_not_a_finding():
    """Outside the calibration runs (bf16/fp16 GPT-3 with flash attention, asynchronous TP) no band applies: the
    speed-up is reported with no range and no verdict of faster, unless the user states an error (--band)."""
    cluster = Cluster(ACCELERATORS["A100"], 1024)
    model, a, _ = parse_megatron_args(
        (GPT3 + " --tensor-model-parallel-size 8 --pipeline-model-parallel-size 8").split(), 1024
    )
    _, b, _ = parse_megatron_args(
        (GPT3 + " --tensor-model-parallel-size 8 --pipeline-model-parallel-size 16").split(), 1024
    )
    pa, pb = predict(model, cluster, a), predict(model, cluster, b)
    assert pa.error.kind == "extrapolated" and pa.error.value is None
    claim = compare_claim(pa, pb)
    assert claim.extrapolated and claim.low is None and claim.high is None
    assert claim.verdict == "not a finding (extrapolated)" and "not a finding" in claim.text()
    assert claim.as_dict()["speedup_low"] is None
    assert Claim(3.0, 1.0, None, 0.05).verdict == "not a finding (extrapolated)"
    assert compare_claim(pa, pb, band=0.05).verdict in ("faster", "slower", "tie")


def test_plan_reports_a_layout_inside_the_band_as_a_tie(capsys):
    # today's Megatron-LM plan (bf16, flash attention, overlaps) is outside the 2021 calibration runs: its
    # speed-up over any layout is not a finding; with an error stated (--band) the optimum itself is a tie
    argv = ["plan", "--model", "gpt3-175b", "--gpu", "A100", "--gpus", "1024", "--global-batch", "1536", "--json"]
    assert main(argv) == 0
    plan = json.loads(capsys.readouterr().out)
    assert plan["plan"]["prediction"]["calibration_band"] is None
    assert plan["plan"]["prediction"]["error"]["kind"] == "extrapolated"
    flags = plan["megatron_args"]  # the optimum itself as the user's layout: speed-up 1
    assert main([*argv, "--", *flags]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["comparison"]["verdict"] == "not a finding (extrapolated)"
    assert out["comparison"]["speedup"] == pytest.approx(1.0)
    assert main([*argv, "--band", "0.057", "--", *flags]) == 0
    assert json.loads(capsys.readouterr().out)["comparison"]["verdict"] == "tie"
    assert main([*argv[:-1], "--band", "0.057", "--", *flags]) == 0
    assert "compared with your layout: a tie" in capsys.readouterr().out
    # shape flags alone change the model (48 layers on top of the preset) and compare nothing
    assert main([*argv, "--", "--num-layers", "48"]) == 0
    half = json.loads(capsys.readouterr().out)
    assert "comparison" not in half and half["parameters"]["total"] < 0.6 * plan["parameters"]["total"]
    # a parallel size makes them a layout, priced on the same model as the plan
    layout = ["--tensor-model-parallel-size", "8", "--pipeline-model-parallel-size", "16"]
    assert main([*argv, "--", *layout]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["comparison"]["speedup"] >= 1.0 and out["parameters"] == plan["parameters"]
    assert not any(n.startswith("not read") for n in out["notes"])


def test_predict_and_plan_read_a_profile(capsys, tmp_path):
    path = tmp_path / "h100.json"
    save_profile(profile_from_dict(_data()), path)
    flags = "--num-layers 4 --hidden-size 1024 --num-attention-heads 8 --seq-length 1024 --micro-batch-size 1 " \
        "--global-batch-size 8 --bf16 --use-flash-attn --vocab-size 32000"  # fmt: skip
    assert main(["predict", "--gpus", "8", "--json", "--", *flags.split()]) == 2
    assert "give --gpu" in capsys.readouterr().err
    assert main(["predict", "--gpu", "H100", "--gpus", "8", "--json", "--", *flags.split()]) == 0
    spec = json.loads(capsys.readouterr().out)
    assert main(["predict", "--profile", str(path), "--gpus", "8", "--json", "--", *flags.split()]) == 0
    measured = json.loads(capsys.readouterr().out)
    assert measured["iteration_seconds"] != pytest.approx(spec["iteration_seconds"])
    assert measured["calibration_band"] is None and any("profile of" in n for n in measured["notes"])
    argv = ["plan", "--model", "llama3-8b", "--gpu", "H100", "--gpus", "8", "--global-batch", "64", "--json"]
    assert main([*argv, "--profile", str(path)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["profile"]["device"] == "NVIDIA H100 80GB HBM3" and out["plan"] is not None
    assert main([*argv, "--profile", str(path), "--", *out["megatron_args"]]) == 2
    assert "give --band" in capsys.readouterr().err
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    assert main([*argv, "--profile", str(bad)]) == 2
    assert "bad.json: not valid JSON" in capsys.readouterr().err
