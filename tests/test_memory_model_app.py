"""One memory model for every page and the CLI (issue 10.4), and honest status text in the app (10.5).

The CLI runs as a subprocess; the app through AppTest. Every number the app shows is compared
with the CLI's or the engine's, never with a copied constant.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from placement import MemoryModel, load_problem, solve
from placement.viz import format_bytes
from ui.navigation import page_file

from .apptest_helpers import goto, metrics, start
from .cli_helper import cli

ROOT = Path(__file__).resolve().parent.parent
TRAINING = ROOT / "sample_graphs" / "throughput" / "layer" / "bert24_training.json"
MEMORY = 1.5e9

pytestmark = pytest.mark.usefixtures("clear_streamlit_caches")


def cli_json(*args: str) -> dict:
    out = cli(*args)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def shown_ms(text: str) -> float:
    """The number of a shown time ("50.0978 ms" -> 50.0978); the unit must be ms (the graphs' unit)."""
    value, unit = text.replace(",", "").split()
    assert unit == "ms"
    return float(value)


def load_training_graph(at, memory_gib: float):
    goto(at, page_file("Graph"))
    label = next(o for o in at.selectbox(key="graph_sample").options if "throughput/layer/bert24_training" in o)
    at.selectbox(key="graph_sample").set_value(label).run()
    goto(at, page_file("Devices"))
    at.number_input(key="dev_memory_gib").set_value(memory_gib).run()
    assert not at.exception


@pytest.mark.slow
def test_cli_and_every_page_agree_under_the_training_memory_model():
    """`solve --method memory-aware` (defaults) = Devices = Placement = Timeline: same plan, same peak."""
    data = cli_json("solve", str(TRAINING), "--method", "memory-aware", "--memory", str(MEMORY), "--json")
    # The same defaults as the memory-aware IP (one constant): the plan that fits, not the one that runs out.
    assert data["status"] == "optimal" and data["objective"] == pytest.approx(50.0978125, rel=1e-9)
    assert all(
        entry["cap"] is None or entry["bytes"] <= entry["cap"] for entry in data["peak_memory"]
    )  # None: a CPU core
    cli_peak = max(entry["bytes"] for entry in data["peak_memory"])

    at = start()
    load_training_graph(at, MEMORY / 2**30)
    at.radio(key="dev_mm_kind").set_value("training").run()
    assert not at.exception
    headline = " ".join(m.value for m in at.markdown)
    assert "memory model: training" in headline and "1F1B, 8 microbatches" in headline
    assert shown_ms(metrics(at)["Time per sample"]) == pytest.approx(data["objective"], rel=1e-6)

    goto(at, page_file("Placement"))
    shown = metrics(at)
    assert shown_ms(shown["Time per sample"]) == pytest.approx(data["objective"], rel=1e-6)
    assert shown["Status"] == "optimal"
    assert shown["Peak memory (memory model)"] == format_bytes(cli_peak)
    peaks = at.dataframe[-1].value  # the peak table comes last
    assert list(peaks["peak bytes"]) == pytest.approx(
        [e["bytes"] for e in data["peak_memory"] if e["device"] in set(peaks["device"])]
    )
    assert all(peaks["fits"])

    goto(at, page_file("Timeline"))
    assert at.selectbox(key="timeline_schedule").value == "1f1b"
    assert at.slider(key="timeline_microbatches").value == 8
    assert at.number_input(key="timeline_optimizer").value is None  # mixed-precision Adam: x2 on fp32 weights
    assert any("Every device fits" in s.value for s in at.success), [e.value for e in at.error]

    # Weights only again: the paper's plan, which runs out of memory under 1F1B - and the pages say so.
    goto(at, page_file("Devices"))
    at.radio(key="dev_mm_kind").set_value("weights").run()
    goto(at, page_file("Timeline"))
    assert any("First OOM" in e.value for e in at.error)


def test_weights_only_plan_picked_elsewhere_is_flagged_out_of_memory():
    """A plan that fits its weights but not 1F1B's activations is never shown as fitting under the training model."""
    problem = load_problem(TRAINING)
    problem = type(problem)(problem.graph, problem.devices.with_kind("accelerator", memory=MEMORY))
    model = MemoryModel(training=True)
    plain = solve(problem, "dp")
    assert plain.status == "optimal" and model.violations(problem, plain.placement)
    aware = solve(problem, *[model.method_for("dp")[0]], **model.method_for("dp")[1])
    assert not model.violations(problem, aware.placement)


# ----------------------------------------------------------------------------- honest status text in the app
@pytest.mark.slow  # over 5 s
def test_time_limit_is_enabled_only_for_methods_that_have_one():
    from placement import METHODS

    at = start(page_file("Placement"))
    at.selectbox(key="pl_method").set_value("ip").run()
    at.number_input(key="pl_time_limit").set_value(1.0).run()
    from ui.state import method_name

    options = at.selectbox(key="pl_method").options  # display names (registry titles)
    assert {method_name(m) for m in ("dp", "pipedream", "local-search", "ip")} <= set(options)
    for method in ("dp", "pipedream", "one-accelerator", "local-search", "ip"):
        at.selectbox(key="pl_method").set_value(method).run()
        assert not at.exception
        assert at.number_input(key="pl_time_limit").disabled == (not METHODS[method].has_time_limit), method


def test_a_dp_plan_opened_from_compare_does_not_claim_a_limit():
    at = start()
    goto(at, page_file("Graph"))
    label = next(o for o in at.selectbox(key="graph_sample").options if "latency/layer/bert24" in o)
    at.selectbox(key="graph_sample").set_value(label).run()
    goto(at, page_file("Compare"))
    at.radio(key="cmp_objective").set_value("latency").run()
    at.multiselect(key="cmp_methods").set_value(["dp"]).run()
    at.button(key="cmp_run").click().run()
    assert not at.exception
    at.selectbox(key="cmp_pick").set_value("dp").run()
    at.button(key="cmp_show").click().run()
    goto(at, page_file("Placement"))
    warnings = " ".join(w.value for w in at.warning)
    assert "Not proven optimal" in warnings and "optimises throughput" in warnings
    assert "limit" not in warnings


def test_training_graph_latency_is_explained_on_the_placement_page():
    at = start()
    goto(at, page_file("Graph"))
    label = next(o for o in at.selectbox(key="graph_sample").options if "ours/tiny_training" in o)
    at.selectbox(key="graph_sample").set_value(label).run()
    goto(at, page_file("Placement"))
    latency = next(m for m in at.metric if m.label == "Latency (one sample)")
    assert latency.value != "inf"
    if latency.value == "n/a":
        assert "inference graphs only" in latency.proto.help


def test_tradeoffs_and_compare_solve_with_the_training_memory_model():
    at = start()
    goto(at, page_file("Graph"))
    label = next(o for o in at.selectbox(key="graph_sample").options if "ours/tiny_training" in o)
    at.selectbox(key="graph_sample").set_value(label).run()
    goto(at, page_file("Devices"))
    at.radio(key="dev_mm_kind").set_value("training").run()
    at.selectbox(key="dev_mm_schedule").set_value("gpipe").run()
    goto(at, page_file("Tradeoffs"))
    assert any("memory model: training" in m.value and "GPipe" in m.value for m in at.markdown)
    assert any("memory-aware" in c.value for c in at.caption)
    goto(at, page_file("Compare"))
    at.multiselect(key="cmp_methods").set_value(["dp", "pipedream"]).run()
    at.button(key="cmp_run").click().run()
    assert not at.exception
    from ui.state import method_name

    methods = list(at.dataframe[0].value["method"])  # display names: dp ran as the memory-aware DP
    assert methods == [method_name("memory-aware"), method_name("pipedream")]
