"""AppTest (streamlit.testing.v1) checks of the Home, Graph, Devices, Placement and Compare pages.

Every number asserted is recomputed here with the engine (solve_dp, evaluate, count_ideals),
never copied from the app.
"""

import json
import math
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

import placement
from placement import AcceleratorKind, Devices, Problem, evaluate, load_problem, solve_dp

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "sample_graphs"
DEFAULT = SAMPLES / "throughput" / "layer" / "bert24_inference.json"
GIB = 2.0**30


from ui.navigation import page_file

from .apptest_helpers import goto, metrics, start

pytestmark = pytest.mark.usefixtures("clear_streamlit_caches")


def number(text: str) -> float:
    """The number of a shown value, without its unit ("12.5 ms" -> 12.5)."""
    return float(text.split()[0].replace(",", ""))


def time_per_sample(at: AppTest) -> float:
    return number(metrics(at)["Time per sample"])


def dp_time(problem: Problem) -> float:
    result = solve_dp(problem)
    assert result.status == "optimal"
    return evaluate(problem, result.placement).max_load


def chart(at: AppTest, key: str) -> dict:
    for element in at.get("plotly_chart"):
        spec = json.loads(element.proto.spec)
        if element.proto.id and key in element.proto.id:
            return spec
    raise AssertionError(f"no chart with key {key!r}")


# ----------------------------------------------------------------------------- home
def test_home_describes_the_tool_the_graph_and_the_devices():
    at = start()
    text = " ".join(m.value for m in at.markdown)
    assert "Tarnawski" in text
    problem = load_problem(DEFAULT)
    assert f"{len(problem.graph.nodes)} nodes, {len(problem.graph.edges)} edges" in text
    assert f"{problem.devices.accelerator_count} x accelerator" in text
    links = [link.proto.page for link in at.get("page_link")]
    for page in ("Graph", "Devices", "Placement", "Compare"):
        assert page in links, links


# ----------------------------------------------------------------------------- graph page
@pytest.mark.parametrize(
    "label",
    [
        "throughput/layer/resnet50_training",
        pytest.param("latency/operator/bert_l-3_inference", marks=pytest.mark.slow),  # over 5 s
        pytest.param("throughput/layer/gnmt_inference", marks=pytest.mark.slow),  # over 5 s
    ],
)
def test_graph_page_loads_a_sample_and_shows_its_stats(label):
    at = start(page_file("Graph"))
    options = at.selectbox(key="graph_sample").options
    graphs = [p for p in SAMPLES.rglob("*.json") if not {"expert-splits", "calibration", "piper"} & set(p.parts)]
    assert len(options) == len(graphs)  # graphs only: no split files, device profiles or Piper inputs
    at.selectbox(key="graph_sample").set_value(label).run()
    assert not at.exception
    problem = load_problem(SAMPLES / f"{label}.json")
    shown = metrics(at)
    assert number(shown["Nodes"]) == len(problem.graph.nodes)
    assert number(shown["Edges"]) == len(problem.graph.edges)
    assert number(shown["Color classes"]) == len(problem.graph.color_classes)
    assert number(shown["Total compute"]) == pytest.approx(
        sum(n.accelerator_latency for n in problem.graph.nodes), rel=1e-5
    )
    try:
        ideals = placement.count_ideals(problem.graph, 20_000)
        assert number(shown["Ideals"]) == ideals
    except placement.TooManyIdealsError:
        assert shown["Ideals"].startswith(">")
    spec = chart(at, "graph_dag")
    ids = sorted(i for trace in spec["data"] if trace.get("mode") == "markers" for i in trace["customdata"])
    assert ids == sorted(n.id for n in problem.graph.nodes)
    assert len(at.dataframe[0].value) == len(problem.graph.nodes)
    # The choice survives a page switch.
    goto(at, page_file("Placement"))
    assert time_per_sample(at) == pytest.approx(dp_time(problem), rel=1e-5)
    goto(at, page_file("Graph"))
    assert at.selectbox(key="graph_sample").value == label
    assert number(metrics(at)["Nodes"]) == len(problem.graph.nodes)


@pytest.mark.parametrize(
    "content, needle",
    [
        (b"this is not json", "not valid JSON"),
        (b'{"nodes": [{"id": 0}], "edges": []}', "missing field"),
        (
            json.dumps(
                {
                    "nodes": [
                        {"id": i, "supportedOnFpga": 1, "cpuLatency": 1, "fpgaLatency": 1, "isBackwardNode": 0}
                        for i in range(2)
                    ],
                    "edges": [{"sourceId": 0, "destId": 1, "cost": 1}, {"sourceId": 1, "destId": 0, "cost": 1}],
                }
            ).encode(),
            "cycle",
        ),
        (b"\xff\xfe\x00garbage", "not UTF-8"),
    ],
)
def test_bad_upload_shows_the_engines_message_and_keeps_the_graph(content, needle):
    at = start(page_file("Graph"))
    before = metrics(at)["Nodes"]
    at.file_uploader(key="graph_upload").set_value(("bad.json", content, "application/json")).run()
    assert not at.exception
    errors = [e.value for e in at.error]
    assert len(errors) == 1 and needle in errors[0] and "bad.json" in errors[0], errors
    assert metrics(at)["Nodes"] == before
    goto(at, page_file("Placement"))
    assert time_per_sample(at) == pytest.approx(dp_time(load_problem(DEFAULT)), rel=1e-5)


def test_oversized_upload_is_refused(monkeypatch):
    monkeypatch.setattr(placement, "MAX_FILE_BYTES", 1000)
    at = start(page_file("Graph"))
    at.file_uploader(key="graph_upload").set_value(("big.json", b" " * 2000, "application/json")).run()
    errors = [e.value for e in at.error]
    assert len(errors) == 1 and "over the 1,000-byte limit" in errors[0]
    assert number(metrics(at)["Nodes"]) == len(load_problem(DEFAULT).graph.nodes)


def test_good_upload_replaces_the_graph_and_its_devices():
    path = SAMPLES / "latency" / "layer" / "bert24_inference.json"
    at = start(page_file("Graph"))
    at.file_uploader(key="graph_upload").set_value(("mine.json", path.read_bytes(), "application/json")).run()
    assert not at.exception and not at.error
    problem = load_problem(path)
    assert at.subheader[0].value == "mine.json"
    goto(at, page_file("Devices"))
    assert at.slider(key="dev_count").value == problem.devices.accelerator_count
    assert at.slider(key="dev_cpus").value == problem.devices.cpus
    assert time_per_sample(at) == pytest.approx(dp_time(problem), rel=1e-5)


def test_after_an_upload_the_shown_sample_can_be_loaded_again():
    path = SAMPLES / "latency" / "layer" / "bert24_inference.json"
    at = start(page_file("Graph"))
    shown = at.selectbox(key="graph_sample").value
    at.file_uploader(key="graph_upload").set_value(("mine.json", path.read_bytes(), "application/json")).run()
    assert at.subheader[0].value == "mine.json"
    at.button(key="graph_load_sample").click().run()
    assert not at.exception
    assert at.subheader[0].value != "mine.json"
    assert shown.split("/")[-1].removesuffix(".json") in at.subheader[0].value


# ----------------------------------------------------------------------------- devices page
def test_sliders_resolve_live_and_settings_survive_page_switches():
    at = start(page_file("Devices"))
    base = load_problem(DEFAULT)
    assert time_per_sample(at) == pytest.approx(dp_time(base), rel=1e-5)
    at.slider(key="dev_count").set_value(2).run()
    at.slider(key="dev_cpus").set_value(3).run()
    at.slider(key="dev_bandwidth").set_value(0.5).run()
    at.slider(key="dev_speed").set_value(1.5).run()
    assert not at.exception
    devices = base.devices.with_kind("accelerator", count=2, speed=1.5).with_changes(cpus=3, bandwidth=0.5)
    expected = dp_time(Problem(base.graph, devices))
    assert time_per_sample(at) == pytest.approx(expected, rel=1e-5)
    load = chart(at, "dev_load")
    assert max(s["y0"] for s in load["layout"]["shapes"]) == pytest.approx(expected)
    goto(at, page_file("Placement"))
    assert time_per_sample(at) == pytest.approx(expected, rel=1e-5)
    goto(at, page_file("Home"))
    assert any("2 x accelerator" in m.value and "3 CPU cores" in m.value for m in at.markdown)
    goto(at, page_file("Devices"))
    assert at.slider(key="dev_count").value == 2 and at.slider(key="dev_cpus").value == 3
    assert at.slider(key="dev_bandwidth").value == 0.5


def test_memory_and_overlap_widgets():
    at = start(page_file("Devices"))
    base = load_problem(DEFAULT)
    at.number_input(key="dev_memory_gib").set_value(4.0).run()
    at.toggle(key="dev_overlap").set_value(True).run()
    assert not at.exception
    devices = base.devices.with_kind("accelerator", memory=4 * GIB).with_changes(overlap=True)
    assert time_per_sample(at) == pytest.approx(dp_time(Problem(base.graph, devices)), rel=1e-5)
    at.checkbox(key="dev_memory_limited").set_value(False).run()
    devices = devices.with_kind("accelerator", memory=math.inf)
    assert time_per_sample(at) == pytest.approx(dp_time(Problem(base.graph, devices)), rel=1e-5)


def test_memory_that_moves_work_to_the_cpu_says_so():
    """Issue 45.5: 0.1 GiB accelerators put every node on the CPU; the Placement page says memory forced it."""
    at = start(page_file("Devices"))
    at.number_input(key="dev_memory_gib").set_value(0.1).run()
    goto(at, page_file("Placement"))
    assert not at.exception
    notes = [w.value for w in at.warning if w.value.startswith("Memory forces at least")]
    assert len(notes) == 1 and "to the CPU" in notes[0], [w.value for w in at.warning]


def test_cpu_transfer_widgets():
    at = start(page_file("Devices"))
    base = load_problem(DEFAULT)
    assert at.toggle(key="dev_cpu_pays").value is False and at.number_input(key="dev_cpu_bandwidth").disabled
    at.slider(key="dev_count").set_value(1).run()
    at.slider(key="dev_cpus").set_value(2).run()
    free = base.devices.with_kind("accelerator", count=1).with_changes(cpus=2)
    assert time_per_sample(at) == pytest.approx(dp_time(Problem(base.graph, free)), rel=1e-5)
    at.toggle(key="dev_cpu_pays").set_value(True).run()
    at.number_input(key="dev_cpu_bandwidth").set_value(0.05).run()
    assert not at.exception
    paying = free.with_changes(cpu_bandwidth=0.05)
    assert dp_time(Problem(base.graph, paying)) > dp_time(Problem(base.graph, free))  # the setting matters here
    assert time_per_sample(at) == pytest.approx(dp_time(Problem(base.graph, paying)), rel=1e-5)
    assert "CPU cores pay transfers" in state_summary(paying)
    at.toggle(key="dev_cpu_pays").set_value(False).run()
    assert time_per_sample(at) == pytest.approx(dp_time(Problem(base.graph, free)), rel=1e-5)


def state_summary(devices: Devices) -> str:
    from ui.state import describe_devices

    return describe_devices(devices)


@pytest.mark.parametrize(
    "index, name", [(1, "Paper model"), (2, "2x memory"), (5, "Half bandwidth"), (7, "2x accelerator speed")]
)
def test_presets_apply_and_the_sliders_follow(index, name):
    at = start(page_file("Devices"))
    base = load_problem(DEFAULT)
    at.slider(key="dev_count").set_value(3).run()
    button = at.button(key=f"dev_preset_{index}")
    assert button.label == name
    button.click().run()
    assert not at.exception
    current = base.devices.with_kind("accelerator", count=3)
    expected_devices = {
        "Paper model": Devices.paper(3, base.devices.cpus, base.devices.accelerators[0].memory),
        "2x memory": current.with_kind("accelerator", memory=2 * current.accelerators[0].memory),
        "Half bandwidth": current.with_changes(bandwidth=0.5),
        "2x accelerator speed": current.with_kind("accelerator", speed=2.0),
    }[name]
    assert at.slider(key="dev_bandwidth").value == expected_devices.bandwidth
    assert at.slider(key="dev_speed").value == expected_devices.accelerators[0].speed
    assert at.number_input(key="dev_memory_gib").value == pytest.approx(expected_devices.accelerators[0].memory / GIB)
    assert time_per_sample(at) == pytest.approx(dp_time(Problem(base.graph, expected_devices)), rel=1e-5)
    # Back to the file's own settings.
    at.button(key="dev_preset_0").click().run()
    assert at.slider(key="dev_count").value == base.devices.accelerator_count
    assert time_per_sample(at) == pytest.approx(dp_time(base), rel=1e-5)


def inventory_key(at: AppTest) -> str:
    return f"dev_inventory_{at.session_state['_dev_inventory_source'][0]}"


def test_inventory_editor_adds_a_heterogeneous_kind_and_edits_the_first():
    at = start(page_file("Devices"))
    base = load_problem(DEFAULT)
    at.session_state[inventory_key(at)] = {
        "edited_rows": {0: {"count": 2}},
        "added_rows": [
            {"name": "fast", "count": 1, "memory (GiB)": 8.0, "speed": 3.0, "bandwidth": 2.0, "price/hour": 4.5}
        ],
        "deleted_rows": [],
    }
    at.run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    devices = base.devices.with_changes(
        accelerators=(
            AcceleratorKind("accelerator", 2, base.devices.accelerators[0].memory),
            AcceleratorKind("fast", 1, 8 * GIB, speed=3.0, bandwidth=2.0, price_per_hour=4.5),
        )
    )
    assert time_per_sample(at) == pytest.approx(dp_time(Problem(base.graph, devices)), rel=1e-5)
    assert at.slider(key="dev_count").value == 2  # the slider follows the table's first row
    assert "fast" in at.slider(key="dev_count").label or "accelerator" in at.slider(key="dev_count").label
    # A second, independent edit on the new editor is applied too (no lost edits).
    at.session_state[inventory_key(at)] = {"edited_rows": {1: {"count": 2}}, "added_rows": [], "deleted_rows": []}
    at.run()
    devices = devices.with_kind("fast", count=2)
    assert time_per_sample(at) == pytest.approx(dp_time(Problem(base.graph, devices)), rel=1e-5)
    # A slider move keeps the second kind.
    at.slider(key="dev_count").set_value(1).run()
    devices = devices.with_kind("accelerator", count=1)
    assert time_per_sample(at) == pytest.approx(dp_time(Problem(base.graph, devices)), rel=1e-5)


def test_inventory_editor_rejects_a_bad_row_with_a_message():
    at = start(page_file("Devices"))
    before = time_per_sample(at)
    at.session_state[inventory_key(at)] = {
        "edited_rows": {},
        "added_rows": [{"name": "cpu", "count": 1}],
        "deleted_rows": [],
    }
    at.run()
    assert not at.exception
    assert any("Inventory not applied" in e.value and "cpu" in e.value for e in at.error)
    assert time_per_sample(at) == before


def test_latency_multiplier_rescales_matching_nodes():
    at = start(page_file("Devices"))
    base = load_problem(DEFAULT)
    pattern = "node1[0-9]$"
    assert any(__import__("re").search(pattern, n.name) for n in base.graph.nodes)
    at.text_input(key="lat_pattern").set_value(pattern)
    at.number_input(key="lat_factor").set_value(3.0)
    at.button(key="lat_add").click().run()
    assert not at.exception and not at.error
    graph = base.graph.with_latency_scale(pattern, 3.0)
    assert time_per_sample(at) == pytest.approx(dp_time(Problem(graph, base.devices)), rel=1e-5)
    goto(at, page_file("Placement"))
    assert time_per_sample(at) == pytest.approx(dp_time(Problem(graph, base.devices)), rel=1e-5)
    goto(at, page_file("Devices"))
    at.button(key="lat_clear").click().run()
    assert time_per_sample(at) == pytest.approx(dp_time(base), rel=1e-5)


def test_bad_latency_pattern_is_reported():
    at = start(page_file("Devices"))
    at.text_input(key="lat_pattern").set_value("[unclosed")
    at.button(key="lat_add").click().run()
    assert not at.exception
    assert any("is never closed" in e.value for e in at.error)


def test_infeasible_memory_explains_instead_of_crashing():
    at = start(page_file("Devices"))
    at.slider(key="dev_cpus").set_value(0).run()
    at.number_input(key="dev_memory_gib").set_value(0.01).run()
    assert not at.exception
    base = load_problem(DEFAULT)
    devices = base.devices.with_kind("accelerator", memory=0.01 * GIB).with_changes(cpus=0)
    result = solve_dp(Problem(base.graph, devices))
    assert result.status == "infeasible"
    assert any(result.reason in e.value for e in at.error), [e.value for e in at.error]
    goto(at, page_file("Placement"))
    errors = [e.value for e in at.error]
    assert len(errors) == 1 and "infeasible" in errors[0] and result.reason in errors[0]
    assert "Time per sample" not in metrics(at)


# ----------------------------------------------------------------------------- placement page
def test_placement_page_numbers_come_from_the_engine():
    at = start(page_file("Placement"))
    problem = load_problem(DEFAULT)
    result = solve_dp(problem)
    evaluation = evaluate(problem, result.placement)
    shown = metrics(at)
    assert number(shown["Time per sample"]) == pytest.approx(result.objective, rel=1e-5)
    assert number(shown["Throughput"]) == pytest.approx(1000 / result.objective, rel=1e-5)  # per second
    assert shown["Time per sample"].endswith(" ms")
    assert number(shown["Latency (one sample)"]) == pytest.approx(evaluation.latency, rel=1e-5)
    assert shown["Status"] == "optimal"
    assert at.selectbox(key="pl_method").value == "dp"
    from ui.state import method_name

    assert method_name("dp") in at.selectbox(key="pl_method").options  # display names
    load = chart(at, "pl_load")
    bars = {trace["name"]: trace for trace in load["data"] if trace["type"] == "bar"}
    by_device = {str(d.device): d for d in evaluation.devices}
    for label, compute, communication in zip(bars["compute"]["x"], bars["compute"]["y"], bars["communication"]["y"]):
        if label in by_device:
            assert compute == pytest.approx(by_device[label].compute)
            assert communication == pytest.approx(by_device[label].communication)
        else:
            assert compute == communication == 0
    assert max(s["y0"] for s in load["layout"]["shapes"]) == pytest.approx(result.objective)
    memory = chart(at, "pl_memory")
    used = dict(zip(memory["data"][0]["x"], memory["data"][0]["y"]))
    for label, entry in by_device.items():
        if not label.startswith("cpu"):
            assert used[label] == pytest.approx(entry.memory / GIB)
    graph_spec = chart(at, "pl_graph")
    placed = {
        trace["name"]: sorted(trace["customdata"])
        for trace in graph_spec["data"]
        if "markers" in (trace.get("mode") or "")
    }  # "markers+text" with labels
    assert placed == {str(stage.device): sorted(stage.nodes) for stage in result.placement.stages}
    downloads = {b.proto.label: b for b in at.get("download_button")}
    exports = {label for label in downloads if label.endswith(" config (JSON)")}  # the export section's own buttons
    assert exports <= {"Megatron-LM config (JSON)", "torch / torchtitan config (JSON)", "DeepSpeed config (JSON)"}
    assert set(downloads) - exports == {"Placement (paper JSON)", "Placement (CSV)"}


def test_placement_downloads_round_trip_through_the_engine(monkeypatch):
    from streamlit.runtime.memory_media_file_storage import MemoryMediaFileStorage

    stored: dict[str, bytes] = {}
    original = MemoryMediaFileStorage.load_and_get_id

    def record(self, path_or_data, mimetype, kind, filename=None):
        if filename:
            stored[filename] = path_or_data if isinstance(path_or_data, bytes) else path_or_data.encode()
        return original(self, path_or_data, mimetype, kind, filename)

    monkeypatch.setattr(MemoryMediaFileStorage, "load_and_get_id", record)
    start(page_file("Placement"))
    problem = load_problem(DEFAULT)
    result = solve_dp(problem)
    json_name = [n for n in stored if n.endswith("_split.json")][0]
    csv_name = [n for n in stored if n.endswith("_split.csv")][0]
    # The JSON is a split file in the paper's format: read it back with the engine.
    parsed = placement.parse_placement(stored[json_name], problem.graph, problem.devices)
    assert evaluate(problem, parsed).max_load == pytest.approx(result.objective)
    assert parsed.device_of == result.placement.device_of
    # The CSV lists every node once with its device.
    lines = stored[csv_name].decode().strip().splitlines()
    assert lines[0].split(",")[:5] == ["node", "name", "device kind", "device index", "stage"]
    rows = [line.split(",") for line in lines[1:]]
    assert len(rows) == len(problem.graph.nodes)
    assert {int(r[0]): (r[2], int(r[3])) for r in rows} == {
        n: (d.kind, d.index) for n, d in result.placement.device_of.items()
    }


def test_selected_plan_is_shown_with_a_note_and_a_way_back():
    at = start(page_file("Placement"))
    base = load_problem(DEFAULT)
    other = Problem(base.graph, base.devices.with_kind("accelerator", count=2))
    result = solve_dp(other)
    at.session_state["_ui_selected_plan"] = (other, result, "2 accelerators from Tradeoffs")
    at.run()
    assert not at.exception
    assert any("2 accelerators from Tradeoffs" in i.value for i in at.info)
    assert time_per_sample(at) == pytest.approx(result.objective, rel=1e-5)
    at.button(key="pl_back_live").click().run()
    assert not at.info
    assert time_per_sample(at) == pytest.approx(dp_time(base), rel=1e-5)


def test_latency_objective_without_methods_says_so_or_solves():
    at = start(page_file("Placement"))
    at.radio(key="pl_objective").set_value("latency").run()
    assert not at.exception
    methods = placement.available_methods("latency")
    if not methods:
        assert any("No method for the latency objective" in w.value for w in at.warning)
    else:
        from ui.state import method_name

        assert at.selectbox(key="pl_method").options == [method_name(m) for m in methods]


# ----------------------------------------------------------------------------- compare page
def test_compare_page_runs_the_chosen_methods_and_hands_a_plan_to_placement():
    at = start(page_file("Compare"))
    try:
        import placement.explore.compare  # noqa: F401
    except ImportError:
        assert any("not available yet" in w.value for w in at.warning)
        return
    assert any("Run comparison" in i.value for i in at.info)
    from ui.state import method_name

    shown = at.multiselect(key="cmp_methods").options  # display names
    chosen = [m for m in ("dp", "pipedream", "one-accelerator") if method_name(m) in shown]
    assert "dp" in chosen
    at.multiselect(key="cmp_methods").set_value(chosen).run()
    at.number_input(key="cmp_time_limit").set_value(5.0).run()
    at.button(key="cmp_run").click().run()
    assert not at.exception, at.exception
    table = at.dataframe[0].value
    names = [method_name(m) for m in chosen]
    assert list(table["method"]) == names  # display names, not raw ids
    assert not any(i.value.startswith("Press **Run comparison**") for i in at.info)  # no stale prompt
    assert "None" not in table.astype(str)["reason"].tolist()
    table = table.rename(columns={"time per sample (ms)": "time per sample"})
    problem = load_problem(DEFAULT)
    best = dp_time(problem)
    dp_row = table[table["method"] == method_name("dp")].iloc[0]
    assert float(dp_row["time per sample"]) == pytest.approx(best, rel=1e-9)
    assert dp_row["status"] == "optimal"
    for _, row in table.iterrows():  # the DP is optimal among contiguous splits: nothing valid beats it here
        if row["status"] in ("optimal", "feasible") and row["method"] != method_name("ip-noncontiguous"):
            assert float(row["time per sample"]) >= best * (1 - 1e-9)
            assert float(row["ratio to best"]) == pytest.approx(float(row["time per sample"]) / best)
    spec = chart(at, "cmp_chart")
    assert spec["data"][0]["x"] == names
    # Hand the DP's plan to the Placement page.
    at.selectbox(key="cmp_pick").set_value("dp").run()
    at.button(key="cmp_show").click().run()
    assert not at.exception
    assert any(f"{method_name('dp')} from the Compare page" in i.value for i in at.info)
    assert time_per_sample(at) == pytest.approx(best, rel=1e-5)


def test_integer_program_method_matches_the_dp_and_live_preview_stays_on_the_dp():
    assert "ip" in placement.available_methods("throughput")  # pulp is a dependency: never skipped
    at = start(page_file("Placement"))
    at.selectbox(key="pl_method").set_value("ip").run()
    assert not at.exception
    assert not at.number_input(key="pl_time_limit").disabled
    problem = load_problem(DEFAULT)
    # The contiguous IP is exact too: same optimum as the DP.
    assert time_per_sample(at) == pytest.approx(dp_time(problem), rel=1e-5)
    assert metrics(at)["Status"] == "optimal"
    goto(at, page_file("Devices"))
    assert any("Live numbers use the exact DP" in c.value for c in at.caption)
    at.slider(key="dev_count").set_value(2).run()
    devices = problem.devices.with_kind("accelerator", count=2)
    assert time_per_sample(at) == pytest.approx(dp_time(Problem(problem.graph, devices)), rel=1e-5)
    goto(at, page_file("Placement"))
    assert at.selectbox(key="pl_method").value == "ip"
    assert time_per_sample(at) == pytest.approx(dp_time(Problem(problem.graph, devices)), rel=1e-5)


def test_latency_objective_shows_the_latency_first():
    assert placement.available_methods("latency")  # the latency methods are part of the package
    at = start(page_file("Placement"))
    at.radio(key="pl_objective").set_value("latency").run()
    assert not at.exception
    method = at.selectbox(key="pl_method").value
    problem = load_problem(DEFAULT)
    result = placement.solve(problem, method, **({"time_limit": 30.0} if "ip" in method else {}))
    assert at.metric[0].label == "Latency (one sample)"
    assert number(at.metric[0].value) == pytest.approx(evaluate(problem, result.placement).latency, rel=1e-5)


def test_deleting_every_inventory_row_leaves_cpus_only():
    at = start(page_file("Devices"))
    base = load_problem(DEFAULT)
    at.session_state[inventory_key(at)] = {"edited_rows": {}, "added_rows": [], "deleted_rows": [0]}
    at.run()
    assert not at.exception
    assert at.slider(key="dev_count").value == 0
    at.run()  # stays without accelerators
    devices = Devices(accelerators=(), cpus=base.devices.cpus)
    assert time_per_sample(at) == pytest.approx(dp_time(Problem(base.graph, devices)), rel=1e-5)
    assert at.session_state["_ui_devices"].accelerators == ()


def test_a_new_inventory_row_without_speed_is_refused_not_defaulted():
    at = start(page_file("Devices"))
    before = at.session_state["_ui_devices"]
    at.session_state[inventory_key(at)] = {
        "edited_rows": {},
        "added_rows": [{"name": "new", "count": 2}],
        "deleted_rows": [],
    }
    at.run()
    assert not at.exception, at.exception
    assert any("enter a speed" in e.value for e in at.error)
    assert at.session_state["_ui_devices"] == before  # nothing applied silently
