"""Reading graph and split files: round trips and one-line errors for every bad input."""

import json

import pytest

from placement import InvalidGraphError, InvalidSplitError, load_placement, load_problem, parse_problem, problem_to_json
from placement.io import MAX_FILE_BYTES, placement_to_dict

GOOD = {
    "maxFPGAs": 2,
    "maxCPUs": 1,
    "maxSizePerFPGA": 100.0,
    "nodes": [
        {"id": 1, "supportedOnFpga": 1, "cpuLatency": 5.0, "fpgaLatency": 1.0, "isBackwardNode": 0, "size": 10},
        {
            "id": 2,
            "supportedOnFpga": True,
            "cpuLatency": 6.0,
            "fpgaLatency": 2.0,
            "isBackwardNode": False,
            "name": "conv",
            "layerId": 7,
        },
        {"id": 3, "supportedOnFpga": 0, "cpuLatency": 1.0, "fpgaLatency": 0.0, "isBackwardNode": 0, "colorClass": 3},
    ],
    "edges": [
        {"sourceId": 1, "destId": 2, "cost": 0.5},
        {"sourceId": 1, "destId": 3, "cost": 0.5},
        {"sourceId": 2, "destId": 3, "cost": 0.25, "size": 64},
    ],
    "comment": "kept",
}


def write(tmp_path, data, name="g.json"):
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return path


def mutate(change):
    data = json.loads(json.dumps(GOOD))
    change(data)
    return data


def test_reads_the_paper_format_and_keeps_other_keys(tmp_path):
    problem = load_problem(write(tmp_path, GOOD))
    assert problem.devices.accelerator_count == 2 and problem.devices.cpus == 1
    assert problem.devices.accelerators[0].memory == 100.0
    node = problem.graph.node_by_id[2]
    assert node.name == "conv" and node.extra == {"layerId": 7} and node.size == 0.0
    assert not problem.graph.node_by_id[3].supported_on_accelerator
    again = parse_problem(problem_to_json(problem), "again.json")
    assert again.graph == problem.graph and again.devices == problem.devices
    assert json.loads(problem_to_json(problem))["comment"] == "kept"


def test_every_shared_workload_round_trips(samples_dir):
    for path in sorted(samples_dir.glob("*/*/*.json")):
        if path.relative_to(samples_dir).parts[0] == "calibration":  # measured runs and device profiles
            continue
        problem = load_problem(path)
        assert parse_problem(problem_to_json(problem), "x").graph == problem.graph


BAD = [
    ("not json", "{", "not valid JSON"),
    ("top level list", [], "top level must be a JSON object"),
    ("missing nodes", {"edges": []}, "missing field 'nodes'"),
    ("missing field", mutate(lambda d: d["nodes"][0].pop("cpuLatency")), "node 1: missing field 'cpuLatency'"),
    (
        "ill-typed field",
        mutate(lambda d: d["nodes"][1].update(fpgaLatency="fast")),
        "node 2: field 'fpgaLatency' must be a number",
    ),
    ("ill-typed id", mutate(lambda d: d["nodes"][1].update(id="two")), "field 'id' must be an integer"),
    ("duplicate id", mutate(lambda d: d["nodes"][1].update(id=1)), "node 1: duplicate id"),
    (
        "unknown node",
        mutate(lambda d: d["edges"].append({"sourceId": 3, "destId": 9, "cost": 0})),
        "edge 3->9: unknown node 9",
    ),
    ("cycle", mutate(lambda d: d["edges"].append({"sourceId": 3, "destId": 1, "cost": 0})), "cycle through nodes"),
    (
        "backward to forward",
        mutate(lambda d: d["nodes"][0].update(isBackwardNode=1)),
        "edge from a backward node to a forward node",
    ),
    (
        "negative",
        mutate(lambda d: d["nodes"][2].update(cpuLatency=-1)),
        "node 3: field 'cpuLatency' must be non-negative",
    ),
    (
        "non-finite",
        '{"maxFPGAs":1,"maxCPUs":0,"maxSizePerFPGA":1,"nodes":[{"id":1,"supportedOnFpga":1,"cpuLatency":NaN,"fpgaLatency":1,"isBackwardNode":0}],"edges":[]}',
        "node 1: field 'cpuLatency' must be finite",
    ),
    ("different costs", mutate(lambda d: d["edges"][1].update(cost=0.75)), "edge 1->3: cost 0.75 differs from 0.5"),
    (
        "negative cost",
        mutate(lambda d: d["edges"][2].update(cost=-0.25)),
        "edge 2->3: field 'cost' must be non-negative",
    ),
    ("bool count", mutate(lambda d: d.update(maxFPGAs=True)), "field 'maxFPGAs' must be an integer"),
]


@pytest.mark.parametrize("label,data,message", BAD, ids=[b[0] for b in BAD])
def test_bad_input_gives_one_line_naming_file_and_rule(tmp_path, label, data, message):
    path = write(tmp_path, data, "bad.json")
    with pytest.raises(InvalidGraphError) as caught:
        load_problem(path)
    text = str(caught.value)
    assert "\n" not in text
    assert text.startswith(str(path) + ":")
    assert message in text


def test_missing_file_and_oversized_upload(tmp_path):
    with pytest.raises(InvalidGraphError, match="no such file"):
        load_problem(tmp_path / "absent.json")
    with pytest.raises(InvalidGraphError, match="over the"):
        parse_problem(b" " * (MAX_FILE_BYTES + 1), "big.json")
    with pytest.raises(InvalidGraphError, match="not UTF-8"):
        parse_problem(b"\xff\xfe\x00", "binary.json")


def test_expert_split_of_a_training_graph_fills_in_backward_nodes(samples_dir):
    problem = load_problem(samples_dir / "throughput/layer/bert24_training.json")
    placement = load_placement(
        samples_dir / "expert-splits/bert24_training_expert.json", problem.graph, problem.devices
    )
    placed = {n for stage in placement.stages for n in stage.nodes}
    assert placed == {node.id for node in problem.graph.nodes}
    for members in problem.graph.color_classes.values():
        assert len({placement.device_of[n] for n in members}) == 1


def test_bad_split_files(tmp_path, samples_dir):
    problem = load_problem(samples_dir / "throughput/layer/bert24_inference.json")
    cases = [
        ({"fpgas": [{"nodes": [1, 999]}]}, "node 999: not in the graph"),
        ({"fpgas": [{"nodes": [1]}, {"nodes": [1]}]}, "node 1: placed on both"),
        ({"fpgas": [{"nodes": [1]}]}, "not placed"),
        ({"fpgas": [{"nodes": "all"}]}, "must be a list of node ids"),
    ]
    for data, message in cases:
        path = write(tmp_path, data, "split.json")
        with pytest.raises(InvalidSplitError, match=message):
            load_placement(path, problem.graph, problem.devices)


def test_placement_round_trips_through_the_split_format(samples_dir):
    from placement import parse_placement, solve_dp

    problem = load_problem(samples_dir / "throughput/layer/resnet50_inference.json")
    placement = solve_dp(problem).placement
    text = json.dumps(placement_to_dict(placement, problem.devices))
    again = parse_placement(text, problem.graph, problem.devices)
    assert again.device_of == placement.device_of


def test_extended_format_with_kinds_round_trips():
    from placement import Problem

    data = {
        "deviceKinds": [
            {"name": "H100", "count": 4, "memory": 80e9, "speed": 2.0, "bandwidth": 1.0, "pricePerHour": 4.0},
            {"name": "V100", "count": 8, "memory": None, "speed": 0.7, "bandwidth": 0.5},
        ],
        "maxCPUs": 2,
        "cpuPricePerHour": 0.1,
        "bandwidthFactor": 1.5,
        "overlap": True,
        "nodes": [
            {
                "id": 7,
                "supportedOnFpga": 1,
                "cpuLatency": 3,
                "fpgaLatency": 1,
                "isBackwardNode": 0,
                "latencies": {"H100": 0.25},
                "kinds": ["H100"],
            },
            {"id": 8, "supportedOnFpga": 1, "cpuLatency": 3, "fpgaLatency": 1, "isBackwardNode": 0},
        ],
        "edges": [{"sourceId": 7, "destId": 8, "cost": 1.0}],
    }
    problem = parse_problem(json.dumps(data), "kinds.json")
    h100, v100 = problem.devices.accelerators
    assert (h100.name, h100.count, h100.memory, h100.speed, h100.price_per_hour) == ("H100", 4, 80e9, 2.0, 4.0)
    assert v100.memory == float("inf") and v100.bandwidth == 0.5
    assert problem.devices.cpus == 2 and problem.devices.bandwidth == 1.5 and problem.devices.overlap
    node = problem.graph.node_by_id[7]
    # Issue 26: the kind's speed divides a node's own latency for it too (0.25 at speed 1, H100 at speed 2).
    assert node.latency_on(h100) == 0.25 / 2.0 and not node.runs_on(v100)
    assert problem.graph.node_by_id[8].latency_on(v100) == pytest.approx(1 / 0.7)
    again = parse_problem(problem_to_json(problem), "again.json")
    assert again == Problem(problem.graph, problem.devices)


def test_bad_device_kind_is_one_line(tmp_path):
    data = mutate(lambda d: d.update(deviceKinds=[{"name": "cpu", "count": 1}]))
    with pytest.raises(InvalidGraphError, match="name must be a non-empty string other than 'cpu'"):
        load_problem(write(tmp_path, data, "kinds.json"))


# ----------------------------------------------------------------------------- one encoding of an unlimited memory
_GRAPH = {
    "nodes": [{"id": 0, "supportedOnFpga": 1, "cpuLatency": 1, "fpgaLatency": 1, "isBackwardNode": 0}],
    "edges": [],
}


@pytest.mark.parametrize("written", ["inf", "Infinity", None, 1e300, 1.5e308])
def test_every_encoding_of_unlimited_memory_reads_as_infinity(written):
    """The paper's key and a device kind's memory: "inf" (written now), null and 1e300 (older writers)."""
    paper = parse_problem(json.dumps({**_GRAPH, "maxFPGAs": 2, "maxSizePerFPGA": written}))
    assert paper.devices.accelerators[0].memory == float("inf")
    kinds = {**_GRAPH, "deviceKinds": [{"name": "A", "count": 1, "memory": written, "speed": 2.0}]}
    assert parse_problem(json.dumps(kinds)).devices.accelerators[0].memory == float("inf")


def test_unlimited_memory_is_written_as_inf_and_finite_memory_as_its_number():
    from placement.io import UNLIMITED, devices_to_dict
    from placement.model import AcceleratorKind, Devices

    paper = devices_to_dict(Devices.paper(2, 1))
    assert paper["maxSizePerFPGA"] == UNLIMITED == "inf"
    kinds = Devices((AcceleratorKind("A", 1, speed=2.0), AcceleratorKind("B", 2, memory=1e9)))
    written = devices_to_dict(kinds)
    assert [k["memory"] for k in written["deviceKinds"]] == ["inf", 1e9]
    assert json.loads(json.dumps(written), parse_constant=pytest.fail) == written  # plain JSON: no Infinity
    for devices in (Devices.paper(2, 1), Devices.paper(2, 1, memory=3e9), kinds):
        problem = parse_problem(json.dumps({**_GRAPH, **devices_to_dict(devices)}))
        assert problem.devices == devices


def test_a_huge_but_finite_memory_below_the_old_sentinel_stays_finite():
    problem = parse_problem(json.dumps({**_GRAPH, "maxFPGAs": 1, "maxSizePerFPGA": 9.9e299}))
    assert problem.devices.accelerators[0].memory == 9.9e299


def test_a_memory_that_is_neither_number_nor_inf_is_one_line():
    with pytest.raises(InvalidGraphError, match="field 'maxSizePerFPGA' must be a number or 'inf'"):
        parse_problem(json.dumps({**_GRAPH, "maxFPGAs": 1, "maxSizePerFPGA": "lots"}))


def test_scenario_cards_and_links_write_io_s_device_format():
    from placement.io import devices_from_dict, devices_to_dict
    from placement.model import AcceleratorKind, Devices
    from placement.scenario import Scenario, scenario_to_dict, scenario_to_query
    from placement.scenario_devices import read_devices

    for devices in (Devices.paper(2, 1), Devices((AcceleratorKind("A", 1, speed=2.0), AcceleratorKind("B", 2, 1e9)))):
        scenario = Scenario("sample:a", devices)
        assert scenario_to_dict(scenario)["devices"] == devices_to_dict(devices)
        assert json.loads(scenario_to_query(scenario)["devices"]) == devices_to_dict(devices)
        assert (
            read_devices(devices_to_dict(devices), "devices") == devices_from_dict(devices_to_dict(devices)) == devices
        )
    assert scenario_to_dict(Scenario("sample:a", Devices.paper(2, 1)))["devices"]["maxSizePerFPGA"] == "inf"


def test_results_have_one_serializer_in_io():
    from placement import solve
    from placement.explore import executors
    from placement.io import result_from_dict, result_to_dict
    from placement.model import Problem

    problem = parse_problem(json.dumps({**_GRAPH, "maxFPGAs": 1}))
    assert isinstance(problem, Problem)
    result = solve(problem, "dp")
    assert result_from_dict(json.loads(json.dumps(result_to_dict(result)))) == result
    assert executors.result_to_plain is result_to_dict and executors.result_from_plain is result_from_dict


def test_every_sample_the_app_lists_is_a_graph():
    """The Graph page's sample list (``ui.samples.sample_files``) holds graphs only: no device profile or run table."""
    from ui.samples import sample_files

    files = sample_files()
    assert files and not any("calibration" in path.parts for path in files)
    for path in files:
        load_problem(path)
