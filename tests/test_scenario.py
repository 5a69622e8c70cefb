"""Scenarios (issue 15 item 3, issue 17 "a reload loses all settings"): the package's encoding and
the app's URL / scenario-card round trips (AppTest).

A view restored from a link or a card is checked against the engine: the time per sample shown
must be solve_dp's for the devices the scenario names, computed here independently.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

import placement
from placement import AcceleratorKind, Problem, evaluate, load_problem, solve_dp
from placement.io import devices_to_dict
from placement.model import MAX_DEVICE_COUNT
from placement.scenario import (
    MAX_DEVICES,
    Scenario,
    parse_scenario,
    scenario_from_query,
    scenario_to_json,
    scenario_to_query,
)
from placement.scenario_devices import read_devices
from ui.navigation import page_file

from .apptest_helpers import goto, metrics, start

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "sample_graphs"
OTHER = "throughput/layer/gnmt_inference"


def dp_time(problem: Problem) -> float:
    result = solve_dp(problem)
    assert result.status == "optimal"
    return evaluate(problem, result.placement).max_load


def shown_time(at) -> float:
    """The shown time per sample in ms ("65.1817 ms" -> 65.1817); the unit must be ms."""
    value, unit = metrics(at)["Time per sample"].replace(",", "").split()
    assert unit == "ms"
    return float(value)


def two_kinds(devices):
    return devices.with_changes(
        accelerators=(
            AcceleratorKind("accelerator", 2, 8 * 2**30, price_per_hour=3.0),
            AcceleratorKind("fast", 1, math.inf, speed=2.5, bandwidth=2.0, price_per_hour=4.5),
        ),
        cpus=3,
        overlap=True,
    )


# ----------------------------------------------------------------------------- package
def test_query_and_card_round_trip_exactly():
    problem = load_problem(SAMPLES / f"{OTHER}.json")
    scenario = Scenario(
        f"sample:{OTHER}",
        two_kinds(problem.devices),
        method="dp",
        objective="latency",
        time_limit=12.5,
        latency_rules=(("lstm", 0.5), ("attention", 2.0)),
        settings={"timeline_schedule": "gpipe", "timeline_microbatches": 8},
        graph_name=OTHER,
    )
    query = scenario_to_query(scenario)
    assert all(isinstance(v, str) for v in query.values())
    back = scenario_from_query(query)
    assert back.devices == scenario.devices and back.latency_rules == scenario.latency_rules
    assert back.settings == scenario.settings and back.time_limit == 12.5 and back.objective == "latency"
    assert parse_scenario(scenario_to_json(scenario).encode()) == scenario
    assert read_devices(devices_to_dict(problem.devices), "devices") == problem.devices


def test_a_card_carries_an_uploaded_graph_inline():
    problem = load_problem(SAMPLES / "ours" / "tiny_training.json")
    scenario = Scenario(
        f"upload:{problem.graph.digest}", problem.devices, inline_graph=problem.graph, graph_name="tiny.json"
    )
    back = parse_scenario(scenario_to_json(scenario))
    assert back.inline_graph.digest == problem.graph.digest
    assert dp_time(Problem(back.inline_graph, back.devices)) == dp_time(problem)


@pytest.mark.parametrize(
    "params, needle",
    [
        ({"devices": "{}"}, "missing parameter 'graph'"),
        ({"graph": "sample:a"}, "missing parameter 'devices'"),
        ({"graph": "sample:../../etc/passwd", "devices": "{}"}, "parameter 'graph'"),
        ({"graph": "file:/etc/passwd", "devices": "{}"}, "parameter 'graph'"),
        ({"graph": "sample:a", "devices": "{"}, "parameter 'devices' is not valid JSON"),
        ({"graph": "sample:a", "devices": '{"cpus": -1}'}, "cpus must be a non-negative integer"),
        ({"graph": "sample:a", "devices": '{"nope": 1}'}, "unknown field 'nope'"),
        (
            {"graph": "sample:a", "devices": json.dumps({"accelerators": [{"name": "a", "count": 10**9}]})},
            f"count must be at most {MAX_DEVICE_COUNT}",
        ),
        (
            {
                "graph": "sample:a",
                "devices": json.dumps(
                    {
                        "accelerators": [
                            {"name": f"k{i}", "count": MAX_DEVICE_COUNT}
                            for i in range(MAX_DEVICES // MAX_DEVICE_COUNT + 1)
                        ]
                    }
                ),
            },
            f"at most {MAX_DEVICES} accelerators",
        ),
        ({"graph": "sample:a", "devices": "{}", "limit": "nan"}, "parameter 'limit'"),
        ({"graph": "sample:a", "devices": "{}", "objective": "speed"}, "parameter 'objective'"),
        ({"graph": "sample:a", "devices": "{}", "rules": "[[1, 2]]"}, "parameter 'rules'"),
        ({"graph": "sample:a", "devices": "{}", "settings": '{"A B": 1}'}, "setting name"),
    ],
)
def test_bad_links_give_one_line_errors(params, needle):
    with pytest.raises(placement.InvalidScenarioError) as info:
        scenario_from_query(params)
    message = str(info.value)
    assert needle in message and "\n" not in message and message.startswith("link: ")


@pytest.mark.parametrize(
    "content, needle",
    [
        (b"not json", "not valid JSON"),
        (b"\xff\xfe", "not UTF-8"),
        (b"[]", "must be a JSON object"),
        (b'{"format": "other"}', "field 'format'"),
        (
            json.dumps(
                {
                    "format": "placement-scenario",
                    "version": 1,
                    "graph": "sample:a",
                    "devices": {},
                    "inlineGraph": {"nodes": [{"id": 0}], "edges": []},
                }
            ).encode(),
            "missing field",
        ),
    ],
)
def test_bad_cards_give_one_line_errors(content, needle):
    with pytest.raises(placement.InvalidScenarioError) as info:
        parse_scenario(content, "card.json")
    assert needle in str(info.value) and "card.json" in str(info.value) and "\n" not in str(info.value)


def test_oversized_card_is_refused(monkeypatch):
    import placement.scenario as module

    monkeypatch.setattr(module, "MAX_FILE_BYTES", 100)
    with pytest.raises(placement.InvalidScenarioError, match="over the 100-byte limit"):
        parse_scenario(b" " * 200, "big.json")


# ----------------------------------------------------------------------------- app
pytestmark_app = pytest.mark.usefixtures("clear_streamlit_caches")


def fresh(query: dict[str, str] | None = None, page: str | None = None):
    """A new session (a new browser tab) opened on ``query``."""
    from streamlit.testing.v1 import AppTest

    from .apptest_helpers import ROOT as APP_ROOT

    at = AppTest.from_file(str(APP_ROOT / "app.py"), default_timeout=90)
    for key, value in (query or {}).items():
        at.query_params[key] = value
    at.run()
    assert not at.exception, at.exception
    if page:
        goto(at, page)
    return at


@pytestmark_app
def test_the_url_follows_the_state_and_a_link_reproduces_the_view():
    at = start(page_file("Graph"))
    at.selectbox(key="graph_sample").set_value(OTHER).run()
    goto(at, page_file("Devices"))
    at.slider(key="dev_count").set_value(3).run()
    at.slider(key="dev_cpus").set_value(2).run()
    at.text_input(key="lat_pattern").set_value("lstm")
    at.number_input(key="lat_factor").set_value(0.5)
    at.button(key="lat_add").click().run()
    assert not at.exception and not at.error
    query = dict(at.query_params)
    scenario = scenario_from_query(query)
    assert scenario.graph == f"sample:{OTHER}" and scenario.latency_rules == (("lstm", 0.5),)
    problem = load_problem(SAMPLES / f"{OTHER}.json")
    devices = problem.devices.with_kind("accelerator", count=3).with_changes(cpus=2)
    assert scenario.devices == devices
    expected = dp_time(Problem(problem.graph.with_latency_scale("lstm", 0.5), devices))
    assert shown_time(at) == pytest.approx(expected, rel=1e-5)

    other = fresh(query, page_file("Devices"))
    assert other.slider(key="dev_count").value == 3 and other.slider(key="dev_cpus").value == 2
    assert shown_time(other) == pytest.approx(expected, rel=1e-5)
    assert any(OTHER in m.value for m in other.markdown)


@pytestmark_app
def test_a_bad_link_says_why_and_opens_the_default_view():
    at = fresh({"graph": "sample:no/such/graph", "devices": "{}"})
    errors = [e.value for e in at.error]
    assert len(errors) == 1 and "no sample graph named 'no/such/graph'" in errors[0]
    assert "bert24_inference" in " ".join(m.value for m in at.markdown)
    at = fresh({"graph": "upload:0123456789abcdef", "devices": "{}"})
    assert "not on this server" in at.error[0].value


@pytestmark_app
def test_an_uploaded_graph_is_shared_by_digest_and_by_card():
    path = SAMPLES / "latency" / "layer" / "bert24_inference.json"
    problem = load_problem(path)
    at = start(page_file("Graph"))
    at.file_uploader(key="graph_upload").set_value(("mine.json", path.read_bytes(), "application/json")).run()
    query = dict(at.query_params)
    assert query["graph"] == f"upload:{problem.graph.digest}"
    assert at.get("download_button")  # the card download is offered
    other = fresh(query, page_file("Placement"))  # same server: the digest finds the graph
    assert shown_time(other) == pytest.approx(dp_time(problem), rel=1e-5)

    # A card carries the graph inline: it opens even where the server does not know the digest.
    devices = two_kinds(problem.devices)
    card = scenario_to_json(
        Scenario(f"upload:{'f' * 16}", devices, inline_graph=problem.graph, graph_name="carried.json")
    )
    at = fresh(None, page_file("Graph"))
    at.file_uploader(key="scenario_upload").set_value(("card.json", card.encode(), "application/json")).run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert at.subheader[0].value == "carried.json"
    goto(at, page_file("Placement"))
    assert shown_time(at) == pytest.approx(dp_time(Problem(problem.graph, devices)), rel=1e-5)


@pytestmark_app
def test_a_bad_card_is_refused_with_one_line_and_the_view_stays():
    at = start(page_file("Graph"))
    before = metrics(at)["Nodes"]
    at.file_uploader(key="scenario_upload").set_value(("card.json", b'{"format": 1}', "application/json")).run()
    errors = [e.value for e in at.error]
    assert len(errors) == 1 and "card.json: field 'format'" in errors[0]
    assert metrics(at)["Nodes"] == before


@pytestmark_app
def test_the_link_carries_the_timeline_settings():
    at = start(page_file("Timeline"))
    at.selectbox(key="timeline_schedule").set_value("gpipe").run()
    query = dict(at.query_params)
    assert json.loads(query["settings"])["timeline_schedule"] == "gpipe"
    other = fresh(query, page_file("Timeline"))
    assert other.selectbox(key="timeline_schedule").value == "gpipe"


@pytestmark_app
def test_other_query_parameters_stay():
    at = fresh({"utm_source": "slides"})
    query = dict(at.query_params)
    assert query.get("utm_source") == "slides" and query["graph"].startswith("sample:")


@pytestmark_app
def test_the_link_and_the_card_carry_the_memory_model_and_currency():
    """Issue 26: the receiver sees the sender's training memory model (same time, same peak) and currency."""
    at = start(page_file("Graph"))
    label = next(o for o in at.selectbox(key="graph_sample").options if "throughput/layer/bert24_training" in o)
    at.selectbox(key="graph_sample").set_value(label).run()
    goto(at, page_file("Devices"))
    at.checkbox(key="dev_memory_limited").check().run()
    at.number_input(key="dev_memory_gib").set_value(1.5e9 / 2**30).run()
    at.radio(key="dev_mm_kind").set_value("training").run()
    at.selectbox(key="dev_mm_schedule").set_value("gpipe").run()
    at.text_input(key="dev_currency").set_value("EUR").run()
    goto(at, page_file("Placement"))
    sent = metrics(at)
    query = dict(at.query_params)
    other = fresh(query, page_file("Placement"))
    received = metrics(other)
    for label in ("Time per sample", "Peak memory (memory model)", "Time per batch", "Cost per 1M samples"):
        assert received[label] == sent[label], label
    assert "GPipe" in " ".join(c.value for c in other.caption)
    # The card (same settings) applies them too, and says so.
    card = scenario_to_json(scenario_from_query(query))
    at = fresh(None, page_file("Graph"))
    at.file_uploader(key="scenario_upload").set_value(("card.json", card.encode(), "application/json")).run()
    assert any("Scenario card card.json applied" in s.value and "GPipe" in s.value for s in at.success)
    goto(at, page_file("Placement"))
    assert metrics(at)["Time per sample"] == sent["Time per sample"]


def test_catalogue_kinds_prices_and_currency_round_trip_in_query_and_card():
    from placement.modelling.pricing import devices_for

    devices = devices_for({"H100": 8, "A100": 4}, cpus=32).with_kind("A100", price_per_hour=1.23, speed=1.1)
    scenario = Scenario(graph="sample:" + OTHER, devices=devices, settings={"currency": "EUR"})
    for back in (scenario_from_query(scenario_to_query(scenario)), parse_scenario(scenario_to_json(scenario))):
        assert back == scenario
        assert [(k.name, k.count, k.price_per_hour) for k in back.devices.accelerators] == [
            ("H100", 8, devices.kind("H100").price_per_hour),
            ("A100", 4, 1.23),
        ]
        assert back.setting("currency") == "EUR" and back.devices.cpu_price_per_hour == devices.cpu_price_per_hour


@pytestmark_app
def test_a_link_carries_the_catalogue_inventory_prices_and_currency():
    """The sender picks 8 H100 + 4 A100 from the catalogue and EUR; a new tab opened on the link shows the same."""
    at = start(page_file("Devices"))
    at.selectbox(key="dev_cat_kind").set_value("H100")
    at.number_input(key="dev_cat_count").set_value(8)
    at.button(key="dev_cat_only").click().run()
    at.selectbox(key="dev_cat_kind").set_value("A100")
    at.number_input(key="dev_cat_count").set_value(4)
    at.button(key="dev_cat_add").click().run()
    at.text_input(key="dev_currency").set_value("EUR").run()
    assert not at.exception and not at.error
    sent, headline = metrics(at), at.markdown[0].value
    assert "8 x H100" in headline and "4 x A100" in headline and "EUR/h" in headline
    assert sent["Cost per 1M samples"].endswith("EUR")
    other = fresh(dict(at.query_params), page_file("Devices"))
    assert other.markdown[0].value == headline
    assert metrics(other) == sent
    assert other.text_input(key="dev_currency").value == "EUR"
