"""The calibrate -> measure loop on the CPU: a short calibration prices a small transformer within 20 % of its
measured training iteration, and the check fails when one kernel's physics is halved.

A CPU is not the target hardware: what this proves is the loop (profile -> model -> measured run) and the
physics per operation (each kernel priced from what the calibration measured of it). Both sides are timed by
the process's CPU time on one thread (``calibrate --cpu-time``), so that other processes on the host do not
count.
"""

from __future__ import annotations

import pytest

from placement.perf import kernels
from placement.perf.calibrate import calibrate
from placement.perf.measure import Measurement, device_prediction, measure
from placement.perf.megatron import parse_megatron_args
from placement.perf.profile import DeviceProfile
from placement.perf.profiled import accelerator_from_profile

TOLERANCE = 0.20
#: 4 layers, hidden 512, sequence 512, micro-batch 4, SwiGLU (Llama-style: RMSNorm, RoPE, no bias, no dropout).
FLAGS = (
    "--num-layers 4 --hidden-size 512 --num-attention-heads 8 --seq-length 512 --max-position-embeddings 512 "
    "--micro-batch-size 4 --global-batch-size 4 --vocab-size 8192 --swiglu --normalization RMSNorm "
    "--position-embedding-type rope --disable-bias-linear --hidden-dropout 0 --attention-dropout 0 --use-flash-attn"
).split()


def within(predicted: float, measured: float, tolerance: float = TOLERANCE) -> bool:
    """Whether a prediction is within ``tolerance`` of the measured time."""
    return abs(predicted / measured - 1.0) <= tolerance


@pytest.fixture(scope="module")
def loop() -> tuple[DeviceProfile, Measurement]:
    # CPU time on one thread: the CI host's (or a developer's shared machine's) other load does not count
    profile = calibrate("cpu", ["fp32"], quick=True, budget_s=20.0, cpu_time=True)
    return profile, measure(FLAGS, "cpu", profile, steps=2, warmup=1)


def test_prediction_from_the_cpu_profile_is_within_20_percent(loop):
    profile, result = loop
    assert profile.kind == "cpu" and profile.dtypes() == ("fp32",)
    assert result.parameters > 0 and result.measured_memory > 0
    assert within(result.predicted_seconds, result.measured_seconds), (
        f"predicted {result.predicted_seconds:.3f} s, measured {result.measured_seconds:.3f} s "
        f"(steps {result.step_seconds})"
    )


def test_halving_a_kernels_physics_fails_the_check(loop, monkeypatch):
    profile, result = loop
    model, layout, _ = parse_megatron_args(FLAGS, gpus=1)
    acc = accelerator_from_profile(profile)
    assert device_prediction(model, layout, acc, profile).iteration_seconds == pytest.approx(result.predicted_seconds)
    real = kernels.gemm_seconds
    monkeypatch.setattr(kernels, "gemm_seconds", lambda *args, **kw: 0.5 * real(*args, **kw))
    halved = device_prediction(model, layout, acc, profile).iteration_seconds
    assert halved < 0.8 * result.predicted_seconds  # the GEMMs are most of the step
    assert not within(halved, result.measured_seconds)
