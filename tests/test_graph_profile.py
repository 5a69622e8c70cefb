"""``python -m placement graph --profile``: the kind the profile's device matches is priced from the measured rates."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from placement import load_problem
from placement.cli import main
from placement.modelling.pricing import cost_source, node_work, price_graph, product_dtype
from placement.perf.hardware import ACCELERATORS
from placement.perf.profile import profile_from_dict, save_profile
from placement.perf.profiled import accelerator_from_profile, catalogue_match, measured_kind, profile_params
from tests.test_perf_profile import _data

MEASURED = "H100 (measured 2026-12-04)"
ARGV = ["graph", "--model", "llama3-8b", "--seq-length", "1024", "--granularity", "operator", "--training"]


@pytest.fixture
def profile_path(tmp_path: Path) -> Path:
    path = tmp_path / "h100.json"
    save_profile(profile_from_dict(_data()), path)
    return path


def _graph(tmp_path: Path, name: str, *extra: str):
    path = tmp_path / f"{name}.json"
    assert main([*ARGV, *extra, "-o", str(path)]) == 0
    return load_problem(path)


def _kernel_ms(node, acc, params) -> float:
    """The node's time from the perf kernels themselves (seconds per kernel, summed, in ms)."""
    dtype = product_dtype(str(node.extra.get("dtype", "fp32")))
    works = node_work(node) or ()
    return 1000.0 * sum(w.seconds(acc, dtype, params)[1 if node.is_backward else 0] for w in works)


def test_the_matching_kind_is_priced_from_the_profile(tmp_path, profile_path, capsys):
    spec = _graph(tmp_path, "spec", "--gpu", "H100:4,A100:2")
    measured = _graph(tmp_path, "measured", "--gpu", "H100:4,A100:2", "--profile", str(profile_path))
    out = capsys.readouterr().out
    profile = profile_from_dict(_data())
    acc = accelerator_from_profile(profile, catalogue_match(profile.name))
    params = profile_params(profile)
    # the inventory: the measured kind in the H100's place, same count and links, the profile's memory
    kinds = measured.devices.accelerators
    assert [(k.name, k.count) for k in kinds] == [(MEASURED, 4), ("A100", 2)]
    assert kinds[0].memory == profile.memory_bytes and kinds[0].price_per_hour == ACCELERATORS["H100"].usd_per_hour
    assert kinds[1] == spec.devices.accelerators[1]
    # every node's time on the measured kind is its kernels priced on the profiled accelerator
    priced = [(n, b) for n, b in zip(measured.graph.nodes, spec.graph.nodes, strict=True) if b.accelerator_latency > 0]
    assert len(priced) > 100
    for node, before in priced:
        assert node.accelerator_latency == pytest.approx(_kernel_ms(node, acc, params), rel=1e-12)
        assert dict(node.kind_latency)["A100"] == pytest.approx(dict(before.kind_latency)["A100"], rel=1e-12)
        # the spec sheet's H100 prices every node otherwise
        assert node.accelerator_latency != pytest.approx(before.accelerator_latency, rel=1e-3)
    source = cost_source(measured.graph)
    assert f"{MEASURED} priced from the profile of NVIDIA H100 80GB HBM3 measured 2026-12-04T18:00:00Z" in source
    assert "calibration band does not apply" in source and source in out
    assert "profile" not in cost_source(spec.graph)


def test_a_profile_of_another_kind_or_a_bad_file_is_one_line(tmp_path, profile_path, capsys):
    out = tmp_path / "g.json"
    assert main([*ARGV, "--gpu", "A100:2,V100:1", "--profile", str(profile_path), "-o", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "matches the catalogue's H100, not a kind named in --gpu (A100, V100)" in err
    bad = tmp_path / "nan.json"
    bad.write_text(json.dumps(_data()).replace("5e-06", "NaN"), encoding="utf-8")
    assert main([*ARGV, "--gpu", "H100:1", "--profile", str(bad), "-o", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "nan.json" in err and "NaN" in err
    assert not out.exists()


def test_price_graph_takes_a_measured_kind_and_its_launch_cost(tmp_path):
    spec = _graph(tmp_path, "spec", "--gpu", "A100:1")
    kind = measured_kind(profile_from_dict(_data()))
    priced = price_graph(spec.graph, [kind, "A100"])
    node = priced.nodes[3]
    assert priced.extra["pricedKinds"] == [MEASURED, "A100"]
    assert node.accelerator_latency == pytest.approx(_kernel_ms(node, kind, profile_params(kind.measured)))
    assert dict(node.kind_latency)["A100"] == pytest.approx(spec.graph.nodes[3].accelerator_latency, rel=1e-12)
