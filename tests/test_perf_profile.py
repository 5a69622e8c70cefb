"""Device profiles: validation of hostile files, interpolation by shape, the kernels priced from measured rates."""

from __future__ import annotations

import copy
import json
import math

import pytest

from placement.errors import InvalidDevicesError
from placement.perf.hardware import ACCELERATORS, Dtype
from placement.perf.kernels import flash_attention_seconds, gemm_seconds, streaming_seconds
from placement.perf.params import DEFAULT_PARAMS
from placement.perf.profile import MAX_PROFILE_BYTES, PROFILE_FORMAT, load_profile, profile_from_dict, save_profile
from placement.perf.profiled import accelerator_from_profile, catalogue_match, profile_params

SIZES = (128, 1024)


def _rate(m: int, n: int, k: int) -> float:
    return 1e12 * (m / (m + 256)) * (n / (n + 256)) * (k / (k + 256))


def _data() -> dict:
    return {
        "format": PROFILE_FORMAT,
        "device": {"name": "NVIDIA H100 80GB HBM3", "kind": "cuda", "memory_bytes": 80e9},
        "versions": {"torch": "2.13.0", "cuda": "12.8"},
        "date": "2026-12-04T18:00:00Z",
        "launch_seconds": 5e-6,
        "gemm": [
            {"dtype": "bf16", "m": m, "n": n, "k": k, "flops_per_s": _rate(m, n, k)}
            for m in SIZES
            for n in SIZES
            for k in SIZES
        ],
        "attention": [
            {"dtype": "bf16", "head_dim": d, "seq": s, "fwd_flops_per_s": 4e11 * s / 4096, "bwd_flops_per_s": 3e11}
            for d in (64, 128)
            for s in (1024, 4096)
        ],
        "streaming": {"copy": 3e12, "norm": 2e12, "elementwise": 2.4e12},
    }


def test_round_trip_and_rates_at_grid_nodes(tmp_path):
    profile = profile_from_dict(_data())
    path = tmp_path / "p.json"
    save_profile(profile, path)
    assert load_profile(path) == profile
    assert profile.peak_flops("bf16") == pytest.approx(_rate(1024, 1024, 1024))
    for m in SIZES:
        assert profile.gemm_rate("bf16", m, 1024, 128) == pytest.approx(_rate(m, 1024, 128))
    assert profile.attention_rates("bf16", 128, 4096) == pytest.approx((4e11, 3e11))


def test_interpolation_between_beyond_and_below_the_grid():
    profile = profile_from_dict(_data())
    mid = profile.gemm_rate("bf16", 362, 1024, 1024)  # about the geometric middle of 128 and 1024
    assert _rate(128, 1024, 1024) < mid < _rate(1024, 1024, 1024)
    # log-linear: the geometric mean of the neighbours at the log-midpoint
    at = math.sqrt(128 * 1024)
    assert profile.gemm_rate("bf16", at, 1024, 1024) == pytest.approx(
        math.sqrt(_rate(128, 1024, 1024) * _rate(1024, 1024, 1024))
    )
    assert profile.gemm_rate("bf16", 8192, 8192, 8192) == pytest.approx(_rate(1024, 1024, 1024))  # saturates
    # below the smallest measured dimension a product runs in a fixed time: the rate falls in proportion
    assert profile.gemm_rate("bf16", 32, 1024, 1024) == pytest.approx(_rate(128, 1024, 1024) / 4)
    with pytest.raises(InvalidDevicesError, match="no fp32 GEMM measurements.*--dtypes fp32"):
        profile.gemm_rate("fp32", 1024, 1024, 1024)


def test_kernels_price_from_the_measured_rates():
    profile = profile_from_dict(_data())
    acc = accelerator_from_profile(profile, catalogue_match(profile.name))
    params = profile_params(profile)
    assert acc.nvlink_bytes_per_s == ACCELERATORS["H100"].nvlink_bytes_per_s  # links from the catalogue GPU
    assert params.kernel_launch_s == 5e-6
    m = n = k = 1024
    expected = 2.0 * m * n * k / _rate(m, n, k) + 5e-6
    assert gemm_seconds(m, n, k, acc, Dtype.BF16, params) == pytest.approx(expected)
    fwd, bwd = flash_attention_seconds(32, 4096, 4096, 128, True, acc, Dtype.BF16, params)
    flops = 2.0 * 32 * 4096 * 4096 * 128
    assert fwd == pytest.approx(flops / 4e11 + 5e-6)
    assert bwd == pytest.approx(2.5 * flops / 3e11 + 5e-6)
    assert streaming_seconds(2.2e12, acc, params, kernels=0) == pytest.approx(1.0)
    # the catalogue GPU (no profile) keeps the spec-sheet path
    spec = ACCELERATORS["H100"]
    assert spec.measured is None
    assert gemm_seconds(m, n, k, spec, Dtype.BF16, DEFAULT_PARAMS) != pytest.approx(expected)


def test_catalogue_match_names():
    assert catalogue_match("NVIDIA H200").name == "H200"
    assert catalogue_match("NVIDIA H100 PCIe").name == "H100-PCIe"
    assert catalogue_match("NVIDIA A100-SXM4-40GB").name == "A100-40GB"
    assert catalogue_match("AMD EPYC 7763") is None


def _broken(change) -> dict:
    data = copy.deepcopy(_data())
    change(data)
    return data


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d.update(format="x"), "format: must be 'placement-device-profile/1'"),
        (lambda d: d["gemm"][0].update(flops_per_s="fast"), r"gemm\[0\].flops_per_s: must be a number, got str"),
        (lambda d: d["gemm"][0].update(flops_per_s=1e308), r"gemm\[0\].flops_per_s: 1e\+308 is outside"),
        (lambda d: d["gemm"][0].update(flops_per_s=-1.0), r"gemm\[0\].flops_per_s: -1.0 is outside"),
        (lambda d: d["gemm"][0].update(m=True), r"gemm\[0\].m: must be an integer"),
        (lambda d: d["gemm"].pop(), "bf16 shapes must form a full grid"),
        (lambda d: d["gemm"].append(dict(d["gemm"][0])), "bf16 shape is given twice"),
        (lambda d: d["attention"].pop(), "full grid of head_dim and seq"),
        (lambda d: d["streaming"].pop("norm"), "streaming.norm: must be a number, got NoneType"),
        (lambda d: d["device"].update(kind="tpu"), "device.kind: 'tpu' is not one of cuda, cpu"),
        (lambda d: d.update(launch_seconds=float("inf")), "launch_seconds: inf is outside"),
        (lambda d: d.update(gemm={}), "gemm: must be a list, got dict"),
        (lambda d: d.update(gemm=[]), "gemm: no measurements"),
        (lambda d: d["device"].update(name="x" * 500), "device.name: must be a string of at most 200"),
    ],
)
def test_bad_profiles_are_one_line(change, message):
    with pytest.raises(InvalidDevicesError, match=message) as info:
        profile_from_dict(_broken(change), "p.json")
    assert "\n" not in str(info.value) and str(info.value).startswith("p.json: ")


def test_hostile_files(tmp_path):
    nan = tmp_path / "nan.json"
    nan.write_text(json.dumps(_data()).replace('"launch_seconds": 5e-06', '"launch_seconds": NaN'))
    with pytest.raises(InvalidDevicesError, match="nan.json: not valid JSON.*NaN"):
        load_profile(nan)
    big = tmp_path / "big.json"
    with big.open("wb") as handle:
        handle.truncate(100 * 1024 * 1024)
    with pytest.raises(InvalidDevicesError, match="big.json: file is .* bytes, over the"):
        load_profile(big)
    near = tmp_path / "near.json"
    near.write_text(" " * (MAX_PROFILE_BYTES + 1))
    with pytest.raises(InvalidDevicesError, match=f"over the {MAX_PROFILE_BYTES:,}-byte limit"):
        load_profile(near)
    with pytest.raises(InvalidDevicesError, match="no such file"):
        load_profile(tmp_path / "missing.json")
    code = tmp_path / "code.json"
    code.write_text("__import__('os').system('true')")
    with pytest.raises(InvalidDevicesError, match="code.json: not valid JSON"):
        load_profile(code)
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100000 + "]" * 100000)
    with pytest.raises(InvalidDevicesError, match="deep.json: not valid JSON"):
        load_profile(deep)
