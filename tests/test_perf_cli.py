"""``python -m placement predict``: JSON keys, text output, one-line errors with exit status 2."""

import json

import pytest

from placement.cli import main
from placement.perf.calibration import load_calibration
from placement.perf.megatron import megatron_args

GPT175 = (
    "--num-layers 96 --hidden-size 12288 --num-attention-heads 96 --seq-length 2048 --vocab-size 51200 "
    "--micro-batch-size 1 --global-batch-size 1536 --tensor-model-parallel-size 8 --pipeline-model-parallel-size 8 "
    "--num-layers-per-virtual-pipeline-stage 6 --sequence-parallel --use-distributed-optimizer --bf16 "
    "--recompute-activations"
).split()


def test_json_keys(capsys):
    assert main(["predict", "--gpu", "a100", "--gpus", "1024", "--json", "--", *GPT175]) == 0
    out = json.loads(capsys.readouterr().out)
    for key in ("iteration_seconds", "tokens_per_second", "tflops_per_gpu", "mfu", "memory", "memory_capacity",
                "fits", "model_id", "calibration_band", "time"):  # fmt: skip
        assert key in out
    assert set(out["memory"]) >= {"weights", "gradients", "optimizer_state", "activations", "total"}
    assert out["memory"]["total"] == pytest.approx(sum(v for k, v in out["memory"].items() if k != "total"))
    assert out["fits"] is True and 0 < out["mfu"] < 1
    # bf16 with today's kernels is outside the 2021 calibration runs: no band, an extrapolated error
    assert out["calibration_band"] is None
    assert out["error"]["kind"] == "extrapolated" and out["error"]["value"] is None
    assert "precision bf16 (calibration runs: fp16)" in out["outside_calibration"]
    assert out["iteration_seconds"] == pytest.approx(sum(out["time"].values()))


def test_a_calibration_run_carries_the_band(capsys):
    """A published run's own flags are inside the calibration runs: the band applies, in text and JSON."""
    row = load_calibration()[-1]
    argv = ["predict", "--gpu", "A100", "--gpus", str(row.cluster.gpus), "--", *megatron_args(row.model, row.layout)]
    assert main([*argv[:5], "--json", *argv[5:]]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["calibration_band"]["rows"] == 10 and out["outside_calibration"] == []
    assert out["error"] == {"kind": "calibrated", "value": out["calibration_band"]["max_abs_error"],
                            "source": "10 measured runs (megatron_a100_2021.json)"}  # fmt: skip
    assert main(argv) == 0
    assert f"(calibration band ±{out['calibration_band']['max_abs_error']:.1%})" in capsys.readouterr().out


def test_text_output(capsys):
    assert main(["predict", "--gpu", "H100", "--gpus", "1024", "--", *GPT175]) == 0
    text = capsys.readouterr().out
    assert "iteration" in text and "fits" in text
    # another GPU than the calibration runs': extrapolated, no band on the headline
    assert "(extrapolated: no measured runs of this framework on this GPU)" in text
    assert "calibration band ±" not in text
    # where the band does not reach: each property of the run that no calibration run shares, one per line
    assert "\noutside those runs in " in text and "\n  GPU H100 (calibration runs: A100)" in text


@pytest.mark.parametrize(
    "argv, words",
    [
        (["--gpu", "A100", "--gpus", "0", "--", *GPT175], "--gpus"),
        (["--gpu", "A100", "--gpus", "1024", "--gpus-per-node", "6", "--", *GPT175], "--gpus-per-node 6"),
        (["--gpu", "A100", "--gpus", "1000", "--", *GPT175], "does not divide --gpus 1000"),
        (["--gpu", "Z80", "--gpus", "1024", "--", *GPT175], "unknown accelerator"),
        (["--gpu", "A100", "--gpus", "1024", "--", *GPT175, "--num-attention-heads", "100"], "hidden size"),
        (["--gpu", "A100", "--gpus", "1024", "--", *GPT175, "--num-layers", "100"], "is not a multiple"),
        (["--gpu", "A100", "--gpus", "1024", "--", *GPT175, "--global-batch-size", "100"], "--global-batch-size 100"),
        (["--gpu", "A100", "--gpus", "1024", "--", *GPT175, "--tensor-model-parallel-size", "64"],
         "tensor parallel size 64"),
        (["--gpu", "V100", "--gpus", "1024", "--", *GPT175], "no bf16"),
        (["--gpu", "A100", "--gpus", "1024", "--", *GPT175, "--tp-comm-overlap", "--tensor-model-parallel-size", "1"],
         "--tp-comm-overlap needs"),
    ],
)  # fmt: skip
def test_errors_one_line_exit_2(capsys, argv, words):
    try:
        status = main(["predict", *argv])
    except SystemExit as exc:  # argparse's own errors
        status = exc.code
    assert status == 2
    err = capsys.readouterr().err
    assert words in err, err
    assert err.count("\n") == 1 and "Traceback" not in err


@pytest.mark.parametrize(
    "extra, words",
    [
        (["--num-layers", "99999999999999"], "layers must be an integer from 1"),
        (["--seq-length", "-5"], "seq_length must be an integer"),
        (["--hidden-size", "1e9"], "--hidden-size '1e9'"),
        (["--micro-batch-size"], "--micro-batch-size: expects a value"),
    ],
)
def test_hostile_sizes_one_line(capsys, extra, words):
    assert main(["predict", "--gpu", "A100", "--gpus", "1024", "--", *GPT175, *extra]) == 2
    err = capsys.readouterr().err
    assert words in err and err.count("\n") == 1


def test_closed_pipe_ends_quietly():
    import subprocess
    import sys
    from pathlib import Path

    process = subprocess.Popen(
        [sys.executable, "-m", "placement", "predict", "--gpu", "A100", "--gpus", "1024", "--", *GPT175],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=Path(__file__).resolve().parent.parent,
    )
    process.stdout.read(1)
    process.stdout.close()
    stderr = process.stderr.read().decode()
    process.wait(timeout=120)
    assert "Traceback" not in stderr and process.returncode == 0, stderr
