"""Devices in links and cards (issue 24: one device serializer, one encoding of infinity).

Cards and links write :func:`placement.io.devices_to_dict`; links and cards shared before still open. The
``OLD_*`` literals below were written by the previous writer (``devices_to_plain``, before issue 24) and are kept
byte for byte: they must keep reading as the devices they named.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from placement import AcceleratorKind, Devices, InvalidScenarioError, Problem, evaluate, load_problem, solve_dp
from placement.io import devices_from_dict, devices_to_dict
from placement.scenario import Scenario, parse_scenario, scenario_from_query, scenario_to_json, scenario_to_query
from placement.scenario_devices import MAX_KINDS, read_devices
from placement.scenario_plan import plan_result

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = "throughput/layer/bert24_inference"

#: A shared link written before issue 24 (the sample's own devices; a picked plan on 3 of its 6 accelerators).
OLD_LINK = {
    "graph": "sample:throughput/layer/bert24_inference",
    "devices": '{"accelerators":[{"bandwidth":1.0,"count":6,"memory":17185374208.0,"name":"accelerator",'
    '"price_per_hour":0.0,"speed":1.0}],"bandwidth":1.0,"cpu_bandwidth":null,"cpu_price_per_hour":0.0,"cpus":1,'
    '"overlap":false}',
    "method": "dp",
    "objective": "throughput",
    "limit": "30",
    "plan": '{"bound":32.24290625,"devices":{"accelerators":[{"bandwidth":1.0,"count":3,"memory":17185374208.0,'
    '"name":"accelerator","price_per_hour":0.0,"speed":1.0}],"bandwidth":1.0,"cpu_bandwidth":null,'
    '"cpu_price_per_hour":0.0,"cpus":1,"overlap":false},"label":"Tradeoffs (devices): 3 x accelerator",'
    '"method":"dp","objectiveKind":"throughput","stages":[["accelerator",0,[1,2,3,4,5,6,7,8,9,10,11,12]],'
    '["accelerator",1,[13,14,15,16,17,18,19,20,21]],["accelerator",2,[22,23,24,25,26,27,28,29,30,31,32]]],'
    '"status":"optimal"}',
}

#: A scenario card written before issue 24: two kinds (one unlimited, written "inf"), CPU bandwidth, overlap.
OLD_CARD = """{
 "format": "placement-scenario",
 "version": 1,
 "graph": "sample:throughput/layer/bert24_inference",
 "graphName": "",
 "devices": {
  "accelerators": [
   {"name": "accelerator", "count": 2, "memory": 8589934592.0, "speed": 1.0, "bandwidth": 1.0, "price_per_hour": 3.0},
   {"name": "fast", "count": 1, "memory": "inf", "speed": 2.5, "bandwidth": 2.0, "price_per_hour": 4.5}
  ],
  "cpus": 3,
  "bandwidth": 1.0,
  "overlap": true,
  "cpu_price_per_hour": 0.0,
  "cpu_bandwidth": 4.0
 },
 "method": "dp",
 "objective": "throughput",
 "timeLimit": 12.5,
 "latencyRules": [],
 "settings": {"timeline_schedule": "gpipe"}
}"""

OLD_CARD_DEVICES = Devices(
    (
        AcceleratorKind("accelerator", 2, 8 * 2**30, price_per_hour=3.0),
        AcceleratorKind("fast", 1, math.inf, speed=2.5, bandwidth=2.0, price_per_hour=4.5),
    ),
    cpus=3,
    overlap=True,
    cpu_bandwidth=4.0,
)


def sample_devices() -> Devices:
    return load_problem(ROOT / "sample_graphs" / f"{SAMPLE}.json").devices


# ----------------------------------------------------------------------------- the older format still opens
def test_an_old_link_opens_with_its_devices_and_its_plan():
    scenario = scenario_from_query(OLD_LINK)
    assert scenario.devices == sample_devices()
    fewer = sample_devices().with_kind("accelerator", count=3)
    assert scenario.plan is not None and scenario.plan.devices == fewer
    problem = load_problem(ROOT / "sample_graphs" / f"{SAMPLE}.json")
    small = Problem(problem.graph, fewer)
    shown = plan_result(scenario.plan, small)
    assert shown.objective == evaluate(small, shown.placement).max_load
    assert shown.objective == pytest.approx(solve_dp(small).objective)  # the link's plan was dp's optimum
    # Written again, the same view travels in io's format and reads back equal.
    again = scenario_to_query(scenario)
    assert json.loads(again["devices"]) == devices_to_dict(sample_devices())
    assert scenario_from_query(again) == scenario


def test_an_old_card_opens_with_its_devices():
    scenario = parse_scenario(OLD_CARD.encode(), "old.json")
    assert scenario.devices == OLD_CARD_DEVICES
    assert scenario.setting("timeline_schedule") == "gpipe" and scenario.time_limit == 12.5
    written = json.loads(scenario_to_json(scenario))
    assert written["devices"] == devices_to_dict(OLD_CARD_DEVICES)
    assert "accelerators" not in written["devices"] and written["devices"]["deviceKinds"][1]["memory"] == "inf"
    assert parse_scenario(scenario_to_json(scenario)) == scenario


@pytest.mark.parametrize("written", ["inf", "Infinity", None, 1e300, 1.5e308])
def test_every_infinity_encoding_reads_as_unlimited_in_both_formats(written):
    old = {"accelerators": [{"name": "a", "count": 1, "memory": written}], "cpus": 0}
    assert read_devices(old, "devices").accelerators[0].memory == math.inf
    new = {"maxFPGAs": 2, "maxCPUs": 1, "maxSizePerFPGA": written}
    assert read_devices(new, "devices") == Devices.paper(2, 1)
    kinds = {"deviceKinds": [{"name": "a", "count": 1, "memory": written}]}
    assert read_devices(kinds, "devices").accelerators[0].memory == math.inf


# ----------------------------------------------------------------------------- the one format
@pytest.mark.parametrize(
    "devices",
    [
        Devices.paper(6, 1),
        Devices.paper(2, 0, memory=3e9),
        OLD_CARD_DEVICES,
        Devices((), cpus=2),
        Devices(cpus=1, cpu_price_per_hour=0.5, bandwidth=0.25),
    ],
)
def test_cards_and_links_write_io_s_format_and_read_it_back_exactly(devices):
    scenario = Scenario(f"sample:{SAMPLE}", devices)
    assert json.loads(scenario_to_json(scenario))["devices"] == devices_to_dict(devices)
    assert json.loads(scenario_to_query(scenario)["devices"]) == devices_to_dict(devices)
    assert scenario_from_query(scenario_to_query(scenario)).devices == devices
    assert parse_scenario(scenario_to_json(scenario)).devices == devices
    assert read_devices(devices_to_dict(devices), "d") == devices_from_dict(devices_to_dict(devices)) == devices
    text = scenario_to_json(scenario)
    assert "Infinity" not in text and "1e+300" not in text  # one encoding: "inf"


@pytest.mark.parametrize(
    "devices, needle",
    [
        ([], "link: parameter 'devices' must be an object"),
        ({"maxCPUs": "two"}, "link: parameter 'devices': field 'maxCPUs' must be an integer"),
        ({"maxFPGAs": -1}, "link: parameter 'devices': fields 'maxFPGAs' and 'maxCPUs' must be non-negative"),
        ({"maxSizePerFPGA": "lots"}, "link: parameter 'devices': field 'maxSizePerFPGA' must be a number or 'inf'"),
        ({"maxFPGAs": 1, "extra": 1}, "link: parameter 'devices': unknown field 'extra'"),
        ({"deviceKinds": [{"name": "a", "count": 1, "cost": 2}]}, "deviceKinds[0]: unknown field 'cost'"),
        ({"deviceKinds": [{"count": 1}]}, "link: parameter 'devices': deviceKinds[0]: missing field 'name'"),
        ({"deviceKinds": [7]}, "deviceKinds[0]: must be an object"),
        ({"deviceKinds": [{"name": "a", "count": 1, "speed": 0}]}, "accelerator kind 'a': speed must be positive"),
        ({"deviceKinds": [{"name": "a", "count": 1}] * 2}, "duplicate kind name 'a'"),
        ({"deviceKinds": [{"name": f"k{i}", "count": 1} for i in range(MAX_KINDS + 1)]}, "at most 64 kinds"),
        ({"maxFPGAs": 5000}, "count must be at most 256"),
        ({"deviceKinds": [{"name": f"k{i}", "count": 256} for i in range(17)]}, "at most 4096 accelerators"),
        ({"maxCPUs": 1, "cpus": 2}, "unknown field 'maxCPUs'"),  # the older format's rules: no mixing
        ({"accelerators": [{"name": "a", "count": -1}], "cpus": 0}, "count must be a non-negative integer"),
        ({"accelerators": [{"name": "a", "cost": 1}], "cpus": 0}, "accelerators[0]: unknown field 'cost'"),
    ],
)
def test_bad_devices_give_one_line_errors_naming_the_field(devices, needle):
    params = {"graph": f"sample:{SAMPLE}", "devices": json.dumps(devices)}
    with pytest.raises(InvalidScenarioError) as info:
        scenario_from_query(params)
    message = str(info.value)
    assert needle in message and message.startswith("link: ") and "\n" not in message


def test_a_card_s_device_error_names_the_card_and_the_field():
    card = json.loads(OLD_CARD)
    card["devices"] = {"maxFPGAs": 1, "deviceKinds": [{"name": "a", "count": "x"}]}
    with pytest.raises(InvalidScenarioError, match=r"^c\.json: devices: deviceKinds\[0\]: field 'count' must be"):
        parse_scenario(json.dumps(card), "c.json")


# ----------------------------------------------------------------------------- the app opens an old link
@pytest.mark.usefixtures("clear_streamlit_caches")
def test_the_app_opens_an_old_link_on_its_devices():
    from streamlit.testing.v1 import AppTest

    from ui.navigation import page_file

    from .apptest_helpers import ROOT as APP_ROOT
    from .apptest_helpers import goto, metrics

    link = {key: value for key, value in OLD_LINK.items() if key != "plan"}
    link["devices"] = link["devices"].replace('"count":6', '"count":4')
    at = AppTest.from_file(str(APP_ROOT / "app.py"), default_timeout=90)
    for key, value in link.items():
        at.query_params[key] = value
    at.run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    goto(at, page_file("Devices"))
    assert at.slider(key="dev_count").value == 4
    problem = load_problem(ROOT / "sample_graphs" / f"{SAMPLE}.json")
    devices = problem.devices.with_kind("accelerator", count=4)
    expected = evaluate(Problem(problem.graph, devices), solve_dp(Problem(problem.graph, devices)).placement)
    value, unit = metrics(at)["Time per sample"].replace(",", "").split()
    assert unit == "ms" and float(value) == pytest.approx(expected.max_load, rel=1e-5)
    assert json.loads(dict(at.query_params)["devices"]) == devices_to_dict(devices)  # the URL is rewritten new
