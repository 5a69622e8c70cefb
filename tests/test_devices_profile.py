"""The Devices page's profile upload: a measured device re-prices the graph; a bad file is one line, nothing lost."""

from __future__ import annotations

import json

import pytest

from placement import Problem, load_problem, solve_dp
from placement.modelling.pricing import price_graph
from placement.perf.profile import MAX_PROFILE_BYTES, profile_from_dict
from placement.perf.profiled import measured_kind
from tests.test_perf_profile import _data
from ui import devices_form as form
from ui.navigation import page_file
from ui.samples import DEFAULT_SAMPLE, DEFAULT_SAMPLE_ENV

from .apptest_helpers import goto, metrics, start

pytestmark = pytest.mark.usefixtures("clear_streamlit_caches")

MEASURED = "H100 (measured 2026-12-04)"


@pytest.fixture
def shipped_default(monkeypatch):
    """The app as shipped: Llama 3 8B training on 8 H100 + 4 A100, priced by the perf model."""
    monkeypatch.delenv(DEFAULT_SAMPLE_ENV, raising=False)


def _upload(at, name: str, data: bytes) -> None:
    at.file_uploader(key="dev_profile_upload").set_value((name, data, "application/json")).run()
    assert not at.exception, at.exception


def _with_gemm_rate(rate: float) -> bytes:
    data = _data()
    data["gemm"][0]["flops_per_s"] = rate
    return json.dumps(data).encode()


def _captions(at) -> str:
    return "\n".join(c.value for c in at.caption)


def test_a_profile_reprices_the_graph_and_removing_it_returns_to_the_catalogue(shipped_default):
    at = start(page_file("Devices"), timeout=300)
    problem = load_problem(DEFAULT_SAMPLE)
    before = metrics(at)["Time per sample"]
    goto(at, page_file("Placement"))
    placement_before = metrics(at)["Time per sample"]
    goto(at, page_file("Devices"))
    _upload(at, "h100.json", json.dumps(_data()).encode())
    assert not at.error, [e.value for e in at.error]
    kind = measured_kind(profile_from_dict(_data()))
    devices = form.with_measured_kind(problem.devices, kind, 8)
    assert [(k.name, k.count) for k in devices.accelerators] == [(MEASURED, 8), ("A100", 4)]
    expected = solve_dp(Problem(price_graph(problem.graph, [kind, "A100"]), devices))
    shown = metrics(at)["Time per sample"]
    assert shown == f"{expected.objective:.6g} ms" != before
    assert f"8 x {MEASURED}" in at.markdown[0].value
    captions = _captions(at)
    assert f"Node times: perf model (kernel physics) on {MEASURED} priced from the profile of NVIDIA H100" in captions
    assert "calibration band does not apply" in captions and "h100.json" in captions
    goto(at, page_file("Placement"))  # the other pages see it
    assert metrics(at)["Time per sample"] != placement_before
    assert f"on {MEASURED} priced from the profile" in _captions(at)
    goto(at, page_file("Devices"))
    at.button(key="dev_profile_remove").click().run()
    assert not at.exception and not at.error
    assert metrics(at)["Time per sample"] == before
    assert "8 x H100" in at.markdown[0].value and "measured" not in at.markdown[0].value


@pytest.mark.parametrize(
    "name, data, needle",
    [
        ("text.json", b"not json", "not valid JSON"),
        ("nan.json", json.dumps(_data()).replace("5e-06", "NaN").encode(), "NaN"),
        ("huge.json", _with_gemm_rate(1e308), "gemm[0].flops_per_s: 1e+308 is outside"),
        ("types.json", json.dumps(dict(_data(), launch_seconds="fast")).encode(), "launch_seconds: must be a number"),
        ("big.json", b" " * (MAX_PROFILE_BYTES + 1), "over the 2,097,152-byte limit"),
    ],
)
def test_a_bad_profile_is_one_line_and_nothing_is_lost(name, data, needle):
    at = start(page_file("Devices"))
    at.number_input(key="dev_cat_count").set_value(5).run()
    at.text_input(key="lat_pattern").set_value("attention").run()
    before, inventory = metrics(at)["Time per sample"], at.markdown[0].value
    _upload(at, name, data)
    errors = [e.value for e in at.error]
    assert len(errors) == 1 and name in errors[0] and needle in errors[0] and "\n" not in errors[0], errors
    assert metrics(at)["Time per sample"] == before and at.markdown[0].value == inventory
    assert at.number_input(key="dev_cat_count").value == 5 and at.text_input(key="lat_pattern").value == "attention"
    assert "priced from the profile" not in _captions(at)
