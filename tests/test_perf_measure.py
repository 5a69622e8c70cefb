"""``calibrate`` and ``measure`` refuse bad input in one line (exit status 2), before allocating anything."""

from __future__ import annotations

import json
import sys

import pytest

from placement.cli import main
from placement.perf.profile import profile_from_dict, save_profile
from tests.test_perf_profile import _data

SMALL = "--num-layers 2 --hidden-size 64 --num-attention-heads 4 --seq-length 32 --micro-batch-size 1 " \
    "--global-batch-size 2 --vocab-size 128 --swiglu --hidden-dropout 0 --attention-dropout 0"  # fmt: skip


@pytest.fixture
def cpu_profile(tmp_path):
    data = _data()
    data["device"] = {"name": "test cpu", "kind": "cpu", "memory_bytes": 8e9}
    for row in data["gemm"] + data["attention"]:
        row["dtype"] = "fp32"
    path = tmp_path / "cpu.json"
    save_profile(profile_from_dict(data), path)
    return str(path)


def _error(capsys, argv: list[str]) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: ")
    return err


def test_no_torch_says_how_to_install(capsys, monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "torch", None)  # import torch raises ImportError
    err = _error(capsys, ["calibrate", "--device", "cpu", "-o", str(tmp_path / "p.json")])
    assert "needs PyTorch" in err and "scripts/setup.sh --export" in err and "pip install torch==2.13.0" in err
    err = _error(capsys, ["measure", "--device", "cpu", "--", *SMALL.split()])
    assert "needs PyTorch" in err


def test_cuda_without_a_gpu(capsys, tmp_path):
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("a GPU is visible")
    err = _error(capsys, ["calibrate", "--device", "cuda", "-o", str(tmp_path / "p.json")])
    assert "--device cuda" in err and "sees no CUDA GPU" in err
    assert not (tmp_path / "p.json").exists()
    assert "sees no CUDA GPU" in _error(capsys, ["measure", "--device", "cuda", "--", *SMALL.split()])


def test_bad_calibrate_options(capsys, tmp_path):
    out = str(tmp_path / "p.json")
    assert "--dtypes 'bf17'" in _error(capsys, ["calibrate", "--device", "cpu", "--dtypes", "bf17", "-o", out])
    assert "--budget" in _error(capsys, ["calibrate", "--device", "cpu", "--budget", "nan", "-o", out])
    assert "fp8: not available" in _error(capsys, ["calibrate", "--device", "cpu", "--dtypes", "fp8", "-o", out])


def test_measure_refusals(capsys, cpu_profile, tmp_path):
    pytest.importorskip("torch")
    flags = SMALL.split()
    assert "needs --profile" in _error(capsys, ["measure", "--device", "cpu", "--", *flags])
    err = _error(capsys, ["measure", "--device", "cpu", "--profile", cpu_profile, "--", *flags,
                          "--tensor-model-parallel-size", "2"])  # fmt: skip
    assert "one device: --tensor-model-parallel-size must be 1" in err
    huge = "--num-layers 96 --hidden-size 12288 --num-attention-heads 96 --seq-length 2048 --micro-batch-size 1 " \
        "--global-batch-size 1"  # fmt: skip
    err = _error(capsys, ["measure", "--device", "cpu", "--profile", cpu_profile, "--", *huge.split()])
    assert "too large to measure here" in err and "GiB (predicted)" in err
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"format": "placement-device-profile/1", "device": []}))
    assert "bad.json: device: must be an object" in _error(
        capsys, ["measure", "--device", "cpu", "--profile", str(bad), "--", *flags]
    )
    assert "after --" in _error(capsys, ["measure", "--device", "cpu", "--profile", cpu_profile])


def test_measure_json_on_a_tiny_model(capsys, cpu_profile):
    pytest.importorskip("torch")
    assert main(["measure", "--device", "cpu", "--profile", cpu_profile, "--steps", "1", "--warmup", "1",
                 "--json", "--", *SMALL.split()]) == 0  # fmt: skip
    out = json.loads(capsys.readouterr().out)
    for key in ("predicted_seconds", "measured_seconds", "predicted_memory", "measured_memory"):
        assert out[key] > 0
    assert out["ratio"] == pytest.approx(out["predicted_seconds"] / out["measured_seconds"])


def test_the_device_path_imports_only_torch_and_numpy():
    """calibrate and measure run where only torch and numpy are installed (a lent GPU machine)."""
    import subprocess  # noqa: PLC0415

    code = (
        "import sys; from placement.cli_args import build_parser; "
        "build_parser('calibrate'); build_parser('measure'); "
        "import placement.cli, placement.perf.calibrate, placement.perf.measure, placement.perf.torch_model; "
        "heavy = {'numba', 'pulp', 'highspy', 'networkx', 'plotly', 'streamlit', 'scipy', 'pandas'}; "
        "print(sorted(heavy & {m.split('.')[0] for m in sys.modules}))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=300)
    assert out.stdout.strip() == "[]"
