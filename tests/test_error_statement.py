"""GPU variants, the power-limit model, and the one rule that states a prediction's error (issue 44.3, 44.4)."""

from __future__ import annotations

import json

import pytest

from placement.cli import main
from placement.errors import PlacementError
from placement.perf.calibration import load_calibration
from placement.perf.error_statement import ErrorStatement, error_statement
from placement.perf.hardware import ACCELERATORS, POWER_FLOOR, Cluster, Dtype, accelerator, power_clock_factor
from placement.perf.kernels import gemm_seconds, streaming_seconds
from placement.perf.params import DEFAULT_PARAMS
from placement.perf.predict import predict

VARIANTS = ("H100-PCIe", "H100-NVL", "H200-NVL", "A100-40GB-PCIe", "A100-40GB")


@pytest.mark.parametrize("name", VARIANTS)
def test_the_catalogue_loads_the_variants_with_tdp_and_source(name):
    acc = accelerator(name)
    assert acc.tdp_watts is not None and acc.tdp_watts > 0
    assert "datasheet" in acc.source or "product brief" in acc.source
    assert acc.bf16_tflops > 0 and acc.memory_bytes > 0 and acc.fraction_source


def test_variant_figures_and_aliases():
    nvl, h200nvl = accelerator("h100-nvl"), accelerator("H200-NVL")
    assert (nvl.bf16_tflops, nvl.hbm_bytes_per_s, nvl.memory_bytes, nvl.tdp_watts) == (835.5, 3.9e12, 94e9, 400)
    assert (h200nvl.memory_bytes, h200nvl.hbm_bytes_per_s, h200nvl.tdp_watts) == (141e9, 4.8e12, 600)
    assert "same GH100 die" in nvl.fraction_source and "not measured on this part" in nvl.fraction_source
    assert accelerator("a100-40gb-sxm").name == "A100-40GB" and accelerator("a100-pcie-40gb").tdp_watts == 250
    assert all(a.tdp_watts for a in ACCELERATORS.values())


def test_a_power_limit_at_tdp_changes_nothing():
    h100 = accelerator("H100")
    assert h100.with_power_limit(h100.tdp_watts) is h100
    assert power_clock_factor(700, 700) == 1.0


def test_half_tdp_slows_gemms_by_the_cube_root_and_not_bandwidth():
    h100 = accelerator("H100")
    half = h100.with_power_limit(h100.tdp_watts / 2)
    factor = 0.5 ** (1 / 3)
    assert half.bf16_tflops == pytest.approx(h100.bf16_tflops * factor) and half.power_limit_watts == 350
    big = (8192, 8192, 8192)
    slow, fast = (gemm_seconds(*big, a, Dtype.BF16, DEFAULT_PARAMS) for a in (half, h100))
    assert slow / fast == pytest.approx(1 / factor, rel=1e-3)  # GEMM-bound: about 1 / 0.5^(1/3) = 1.26x
    nbytes = 1e9
    assert streaming_seconds(nbytes, half, DEFAULT_PARAMS) == streaming_seconds(nbytes, h100, DEFAULT_PARAMS)
    assert (half.hbm_bytes_per_s, half.nvlink_bytes_per_s, half.nic_bytes_per_s) == (
        h100.hbm_bytes_per_s, h100.nvlink_bytes_per_s, h100.nic_bytes_per_s)  # fmt: skip


@pytest.mark.parametrize("watts", [100, 701, float("nan"), float("inf")])
def test_a_power_limit_outside_the_floor_and_tdp_is_refused(watts):
    with pytest.raises(PlacementError, match=r"^--power-limit .*: must be from 280 W \(40% of the TDP\)"):
        accelerator("H100").with_power_limit(watts)
    assert POWER_FLOOR == 0.4


def test_predict_and_plan_take_a_power_limit(capsys):
    flags = ["--num-layers", "4", "--hidden-size", "4096", "--num-attention-heads", "32", "--seq-length", "4096",
             "--micro-batch-size", "1", "--global-batch-size", "8", "--bf16"]  # fmt: skip
    base = ["predict", "--gpu", "H100", "--gpus", "8", "--json"]
    assert main([*base, "--", *flags]) == 0
    full = json.loads(capsys.readouterr().out)
    assert main([*base, "--power-limit", "350", "--", *flags]) == 0
    limited = json.loads(capsys.readouterr().out)
    assert limited["iteration_seconds"] > full["iteration_seconds"]
    assert any("not measured on this project's devices" in n for n in limited["notes"])
    assert any(item.startswith("power limit 350 W") for item in limited["outside_calibration"])
    assert limited["error"]["kind"] == "extrapolated"
    assert main([*base, "--power-limit", "100", "--", *flags]) == 2
    assert "--power-limit 100.0: must be from 280 W" in capsys.readouterr().err
    plan = ["plan", "--model", "llama3-8b", "--gpu", "H100", "--gpus", "8", "--global-batch", "16", "--json"]
    assert main([*plan, "--power-limit", "500"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert any("power limit 500 W" in n for n in out["notes"])


def test_inside_the_calibration_runs_the_band_applies():
    row = load_calibration()[0]
    pred = predict(row.model, row.cluster, row.layout)
    error = pred.error
    assert error.kind == "calibrated" and error.value == pred.band.max_abs_error and error.applies
    assert pred.as_dict()["calibration_band"]["rows"] == 10
    assert error.span(10.0) == pytest.approx((10 * (1 - error.value), 10 * (1 + error.value)))
    assert error.lines()[0] == f"error: calibration band ±{error.value:.1%}"


def test_outside_the_calibration_runs_no_band_is_stated():
    row = load_calibration()[0]
    on_a100 = predict(row.model, row.cluster, row.layout.with_changes(dtype=Dtype.BF16))
    assert on_a100.error.kind == "extrapolated" and on_a100.error.value is None
    assert on_a100.error.headline.startswith("extrapolated: outside the calibration runs in 1 property")
    assert on_a100.as_dict()["calibration_band"] is None and on_a100.error.span(1.0) is None
    h100 = predict(row.model, Cluster(accelerator("H100"), row.cluster.gpus), row.layout)
    assert h100.error.headline == "extrapolated: no measured runs of this framework on this GPU"
    titan = predict(row.model, row.cluster, row.layout, framework="torchtitan")
    assert "framework torchtitan (calibration runs: Megatron-LM)" in titan.outside_calibration
    assert titan.error.kind == "extrapolated"


def test_torch_eager_states_the_measured_device_runs_only_on_their_gpu():
    on_h200 = error_statement(framework="torch-eager", accelerator=accelerator("H200"))
    assert on_h200.kind == "measured-device" and 0 < on_h200.value < 1
    assert "held-out runs" in on_h200.headline and on_h200.headline.startswith("extrapolated")
    for other in (accelerator("H100"), accelerator("H200-NVL"), accelerator("H200").with_power_limit(500)):
        statement = error_statement(framework="torch-eager", accelerator=other)
        assert statement.kind == "extrapolated" and statement.value is None


def test_a_statement_is_validated():
    with pytest.raises(PlacementError, match="kind"):
        ErrorStatement("guessed", 0.1, "", "")
    with pytest.raises(PlacementError, match="value"):
        ErrorStatement("calibrated", float("nan"), "", "")
    with pytest.raises(PlacementError, match="needs the measured error"):
        ErrorStatement("measured-device", None, "", "")
