"""The torch-eager physics against the shipped H200 runs (measured with ``measure``), and its kernel list
against what torch itself dispatches."""

from __future__ import annotations

import importlib.util
import json

import pytest

from placement.errors import InvalidDevicesError
from placement.perf import kernels
from placement.perf.device_runs import RUN_FILES, RUNS_DIR, device_run_rows
from placement.perf.eager import HOST_OP_TRIVIAL_OPS, _Pricer, _replay, layer_ops
from placement.perf.eager_memory import EagerMemory
from placement.perf.hardware import Dtype
from placement.perf.megatron import parse_megatron_args
from placement.perf.profile import load_profile
from placement.perf.profiled import accelerator_from_profile, profile_params

RUNS = RUNS_DIR / RUN_FILES[0]
#: The band reached on the held-out runs (dense: within 15 %; the MoE's per-expert loop: within 25 %).
DENSE_BAND, MOE_BAND, MEAN_BAND = 0.15, 0.25, 0.10


def _held_out():
    return [r for r in device_run_rows(RUNS) if r.held_out]


def test_held_out_runs_stay_within_the_reached_band():
    rows = _held_out()
    assert len(rows) == 8
    for row in rows:
        limit = MOE_BAND if row.name.startswith("moe") else DENSE_BAND
        assert abs(row.ratio - 1.0) <= limit, f"{row.name}: ratio {row.ratio:.3f}"
        assert 0.9 <= row.memory_ratio <= 1.3, f"{row.name}: memory ratio {row.memory_ratio:.2f}"
    assert sum(abs(r.ratio - 1.0) for r in rows) / len(rows) <= MEAN_BAND


def test_calibration_runs_within_ten_percent():
    rows = [r for r in device_run_rows(RUNS) if not r.held_out]
    assert len(rows) == 3 and all(abs(r.ratio - 1.0) <= 0.10 for r in rows)


def test_halving_the_gemms_fails_the_band(monkeypatch):
    real = kernels.gemm_seconds
    monkeypatch.setattr(kernels, "gemm_seconds", lambda *a, **kw: 0.5 * real(*a, **kw))
    rows = _held_out()
    assert any(abs(r.ratio - 1.0) > DENSE_BAND for r in rows if not r.name.startswith("moe"))


def test_small_micro_batches_are_host_bound():
    profile = load_profile(RUNS.parent / "h200_profile.json")
    acc, params = accelerator_from_profile(profile), profile_params(profile)
    runs = {r["name"]: r for r in json.loads(RUNS.read_text())["runs"]}
    model, layout, _ = parse_megatron_args(runs["llama-350m-s2048-b1"]["flags"])
    fwd, bwd = layer_ops(_Pricer(acc, params, Dtype.BF16), model, 1)
    finish, busy, host = _replay(fwd + bwd, params.kernel_launch_s * HOST_OP_TRIVIAL_OPS)
    assert host > busy and finish >= host
    model, layout, _ = parse_megatron_args(runs["llama-1.1b-s2048-b8"]["flags"])
    fwd, bwd = layer_ops(_Pricer(acc, params, Dtype.BF16), model, 8)
    finish, busy, host = _replay(fwd + bwd, params.kernel_launch_s * HOST_OP_TRIVIAL_OPS)
    assert busy > 2 * host and finish == pytest.approx(busy, rel=0.05)


def test_a_broken_runs_file_is_one_line(tmp_path):
    bad = tmp_path / "runs.json"
    bad.write_text('{"runs": []}')
    with pytest.raises(InvalidDevicesError, match="runs.json"):
        device_run_rows(bad)


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="torch (the export extra) not installed")
def test_kernel_list_matches_what_torch_dispatches():
    """Aten operations of one layer's forward and backward under autocast, counted by torch, against the list."""
    import collections

    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    from placement.perf.torch_model import build

    class Count(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.n = collections.Counter()

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.n[func] += 1
            return func(*args, **(kwargs or {}))

    profile = load_profile(RUNS.parent / "h200_profile.json")
    acc, params = accelerator_from_profile(profile), profile_params(profile)
    runs = json.loads(RUNS.read_text())["runs"]
    for run in (runs[0], runs[-1]):
        model, _, _ = parse_megatron_args(run["flags"])
        counts = []
        for layers in (1, 2):
            small = model.with_changes(layers=layers, seq_length=16, vocab=128, max_position_embeddings=16)
            net = build(small, "cpu")
            tokens = torch.randint(0, 128, (1, 17))
            with Count() as count:
                with torch.autocast("cpu", dtype=torch.bfloat16):
                    loss = net(tokens[:, :-1], tokens[:, 1:])
                loss.backward()
            counts.append(sum(count.n.values()))
        fwd, bwd = layer_ops(_Pricer(acc, params, Dtype.BF16), model, 1)
        listed = sum(op.ops for op in fwd + bwd)
        assert abs(listed / (counts[1] - counts[0]) - 1.0) <= 0.15, (run["name"], listed, counts)


def test_predict_torch_eager_reaches_the_shipped_run(capsys):
    from placement.cli import main

    run = json.loads(RUNS.read_text())["runs"][6]
    profile = str(RUNS.parent / "h200_profile.json")
    argv = ["predict", "--framework", "torch-eager", "--profile", profile, "--gpus", "1", "--json", "--", *run["flags"]]
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["framework"] == "torch-eager" and out["fits"]
    row = next(r for r in device_run_rows(RUNS) if r.name == run["name"])
    assert out["iteration_seconds"] == pytest.approx(row.predicted_seconds)
    assert out["host_seconds"] > out["gpu_busy_seconds"]  # micro-batch 1: host-bound
    assert "held-out" in out["band"]
    parts = EagerMemory(**out["memory_parts"])  # the peak is the parts' (one micro-batch here: before the gradients)
    assert out["memory"] == pytest.approx(parts.peak(1)) and parts.peak(1) < parts.total
    assert out["memory"] == pytest.approx(row.predicted_memory)
    assert main(argv[: -len(run["flags"]) - 2] + ["--", *run["flags"]]) == 0
    text = capsys.readouterr().out
    assert "by part: weights" in text and "saved activations" in text and "the gradients come after the loss" in text


def test_predict_torch_eager_refuses_parallel_layouts(capsys):
    from placement.cli import main

    run = json.loads(RUNS.read_text())["runs"][0]
    argv = ["predict", "--framework", "torch-eager", "--gpu", "H200", "--gpus", "2", "--", *run["flags"]]
    assert main(argv) != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "one device" in err[0] and "Traceback" not in err[0]
