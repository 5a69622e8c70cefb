"""AppTest checks of ui.model_import.render_model_import: ONNX upload, builders, cost edits, and the Graph page.

Expected graphs and placements are recomputed here with the engine (import_onnx, the builders,
solve_dp, evaluate), never copied from the app.
"""

from pathlib import Path

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper
from streamlit.testing.v1 import AppTest

from placement import Problem, evaluate, solve_dp
from placement.modelling.builders import transformer_graph
from placement.modelling.onnx import import_onnx
from placement.modelling.pricing import devices_for
from placement.perf.transformer import TransformerSpec
from ui.model_import import ACCELERATOR_KINDS
from ui.navigation import page_file

ROOT = Path(__file__).resolve().parent.parent


def kinds_for(kind: str) -> list[str]:
    """The kinds the section prices: the chosen one first, then every other catalogue kind."""
    return [kind, *(k for k in ACCELERATOR_KINDS if k != kind)]


pytestmark = pytest.mark.usefixtures("clear_streamlit_caches")


def section_script():
    """The section alone, plus the current problem and its DP result for the test to read."""
    import streamlit as st  # AppTest.from_function runs this body on its own: imports go inside

    from ui import startup, state
    from ui.model_import import render_model_import

    startup.ensure_default_graph()
    render_model_import()
    st.session_state["_test_problem"] = state.current_problem()
    st.session_state["_test_source"] = state.current_graph_source()
    if state.current_graph_source().startswith("model:"):
        st.session_state["_test_result"] = state.solve_cached(state.current_problem(), "dp")


def tiny_onnx(external: bool = False) -> bytes:
    weight = numpy_helper.from_array(np.arange(32, dtype=np.float32).reshape(4, 8), "W")
    if external:
        weight.ClearField("raw_data")
        weight.data_location = TensorProto.EXTERNAL
        entry = weight.external_data.add()
        entry.key, entry.value = "location", "../outside/weights.bin"
    bias = numpy_helper.from_array(np.ones(8, np.float32), "B")
    graph = helper.make_graph(
        [
            helper.make_node("MatMul", ["x", "W"], ["y"], name="layer0/mm"),
            helper.make_node("Add", ["y", "B"], ["y2"], name="layer0/add"),
            helper.make_node("Relu", ["y2"], ["z"], name="layer1/relu"),
        ],
        "tiny",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])],
        [helper.make_tensor_value_info("z", TensorProto.FLOAT, None)],
        [weight, bias],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()


def start() -> AppTest:
    at = AppTest.from_function(section_script, default_timeout=60)
    at.run()
    assert not at.exception, at.exception
    return at


def upload(at: AppTest, data: bytes, name: str = "tiny.onnx") -> AppTest:
    at.file_uploader(key="mi_onnx_upload").set_value((name, data, "application/octet-stream"))
    at.run()
    at.button(key="mi_onnx_import").click().run()
    assert not at.exception, at.exception
    return at


def test_every_widget_has_a_key():
    at = start()
    for kind in ("selectbox", "number_input", "button", "radio", "checkbox", "text_input", "file_uploader"):
        for widget in at.get(kind):
            assert widget.key and widget.key.startswith("mi_"), (kind, widget.label)


def test_upload_onnx_and_plan():
    at = start()
    at.number_input(key="mi_onnx_dim").set_value(3)
    upload(at, tiny_onnx())
    problem = at.session_state["_test_problem"]
    assert at.session_state["_test_source"] == "model:tiny.onnx"
    expected = import_onnx(tiny_onnx(), "tiny.onnx", kinds=kinds_for("H100"), default_dim=3).graph
    assert [n.name for n in problem.graph.nodes] == ["layer0/mm", "layer0/add", "layer1/relu"]
    for got, want in zip(problem.graph.nodes, expected.nodes):
        assert got.accelerator_latency == pytest.approx(want.accelerator_latency)
        assert got.cpu_latency == pytest.approx(want.cpu_latency)
        assert got.size == want.size
    assert problem.graph.nodes[0].extra["flops"] == 2 * 4 * 3 * 8  # batch bound to 3
    assert problem.devices.accelerators[0].name == "H100" and problem.devices.accelerators[0].count == 4
    assert problem.devices.cpus == 1
    result = at.session_state["_test_result"]
    assert result.status == "optimal"
    assert result.objective == pytest.approx(solve_dp(problem).objective)
    assert any("3 operators, 4 ideals" in c.value for c in at.caption)
    assert len(at.data_editor) == 1


def test_upload_as_training_graph():
    at = start()
    at.checkbox(key="mi_onnx_training").check()
    upload(at, tiny_onnx())
    graph = at.session_state["_test_problem"].graph
    assert graph.is_training and len(graph.nodes) == 6
    assert at.session_state["_test_result"].status == "optimal"


def test_upload_with_coarsening():
    at = start()
    at.number_input(key="mi_onnx_depth").set_value(1)
    upload(at, tiny_onnx())
    problem = at.session_state["_test_problem"]
    assert [n.name for n in problem.graph.nodes] == ["layer0", "layer1"]
    assert any("coarsened (depth 1): 2 nodes, 3 ideals" in c.value for c in at.caption)


def test_external_data_upload_is_refused():
    at = start()
    before = at.session_state["_test_problem"]
    upload(at, tiny_onnx(external=True), "evil.onnx")
    assert at.session_state["_test_problem"] == before
    errors = [e.value for e in at.error]
    assert errors and "evil.onnx" in errors[0] and "'W'" in errors[0] and "external data" in errors[0]


def test_edit_costs_then_apply():
    at = start()
    upload(at, tiny_onnx())
    original = at.session_state["_test_problem"].graph
    key = at.data_editor[0].key
    at.session_state[key] = {
        "edited_rows": {0: {"accelerator ms": 2.0}, 2: {"CPU ms": 7.5}},
        "added_rows": [],
        "deleted_rows": [],
    }
    at.run()
    # Not applied until the button is pressed.
    assert at.session_state["_test_problem"].graph.nodes[0].accelerator_latency == original.nodes[0].accelerator_latency
    at.button(key="mi_apply").click().run()
    assert not at.exception, at.exception
    graph = at.session_state["_test_problem"].graph
    assert graph.nodes[0].accelerator_latency == 2.0
    factor = 2.0 / original.nodes[0].accelerator_latency
    a100 = dict(original.nodes[0].kind_latency)["A100"]
    assert dict(graph.nodes[0].kind_latency)["A100"] == pytest.approx(a100 * factor)
    assert graph.nodes[2].cpu_latency == 7.5
    assert graph.nodes[1] == original.nodes[1]
    result = at.session_state["_test_result"]
    assert result.objective == pytest.approx(solve_dp(at.session_state["_test_problem"]).objective)
    # The table restarts from the applied values (new editor key, no pending edits).
    assert at.data_editor[0].key != key


def test_build_and_plan_transformer():
    at = start()
    at.selectbox(key="mi_kind").set_value("A100").run()
    at.number_input(key="mi_layers").set_value(4)
    at.number_input(key="mi_hidden").set_value(256)
    at.number_input(key="mi_heads").set_value(8)
    at.number_input(key="mi_seq").set_value(128)
    at.number_input(key="mi_accelerators").set_value(3)
    at.number_input(key="mi_cpus").set_value(0)
    at.button(key="mi_build").click().run()
    assert not at.exception, at.exception
    problem = at.session_state["_test_problem"]
    spec = TransformerSpec(layers=4, hidden=256, heads=8, seq_length=128, vocab=50257)
    graph = transformer_graph(spec, kinds_for("A100"), granularity="operator")
    expected = Problem(graph, devices_for({"A100": 3}, 0))
    assert problem.graph.nodes == expected.graph.nodes
    assert problem.devices == expected.devices
    assert problem.graph.extra["costSource"].startswith("perf model (kernel physics) on A100;")
    result = at.session_state["_test_result"]
    assert result.status == "optimal"
    assert evaluate(problem, result.placement).max_load == pytest.approx(solve_dp(expected).objective)


def test_builder_errors_are_shown():
    at = start()
    at.selectbox(key="mi_model").set_value("ResNet-like CNN").run()
    at.text_input(key="mi_cnn_blocks").set_value("3, x").run()
    at.button(key="mi_build").click().run()
    assert any("blocks per stage" in e.value for e in at.error)
    at.selectbox(key="mi_model").set_value("GPT transformer").run()
    at.number_input(key="mi_hidden").set_value(100)
    at.button(key="mi_build").click().run()
    assert any("not divisible by the 12 attention heads" in e.value for e in at.error)


def test_graph_page_builds_and_placement_page_plans():
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    at.run()
    at.switch_page(page_file("Graph"))
    at.run()
    assert not at.exception, at.exception
    at.number_input(key="mi_layers").set_value(12)
    at.radio(key="mi_granularity").set_value("layer")
    at.button(key="mi_build").click().run()
    assert not at.exception, at.exception
    spec = TransformerSpec(layers=12, hidden=768, heads=12, seq_length=1024, vocab=50257, name="GPT 12x768")
    expected = Problem(transformer_graph(spec, kinds_for("H100"), granularity="layer"), devices_for({"H100": 4}, 1))
    assert at.subheader[0].value == expected.graph.name
    assert {m.label: m.value for m in at.metric}["Nodes"] == "14"
    at.switch_page(page_file("Placement"))
    at.run()
    assert not at.exception, at.exception
    shown = float({m.label: m.value for m in at.metric}["Time per sample"].split()[0].replace(",", ""))
    assert shown == pytest.approx(solve_dp(expected).objective, rel=1e-3)


def two_dim_onnx() -> bytes:
    """x: [batch, seq, 4] @ W[4, 8]: MACs = batch x seq x 4 x 8."""
    weight = numpy_helper.from_array(np.arange(32, dtype=np.float32).reshape(4, 8), "W")
    graph = helper.make_graph(
        [
            helper.make_node("MatMul", ["x", "W"], ["y"], name="layer0/mm"),
            helper.make_node("Relu", ["y"], ["z"], name="layer1/relu"),
        ],
        "two_dims",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "seq", 4])],
        [helper.make_tensor_value_info("z", TensorProto.FLOAT, None)],
        [weight],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()


def test_each_symbolic_dimension_gets_its_own_value():
    at = start()
    at.file_uploader(key="mi_onnx_upload").set_value(("two.onnx", two_dim_onnx(), "application/octet-stream"))
    at.run()
    assert not at.exception, at.exception
    labels = {w.key: w.label for w in at.number_input}
    assert labels.get("mi_onnx_dim_0") == "Dimension 'batch'" and labels.get("mi_onnx_dim_1") == "Dimension 'seq'"
    at.number_input(key="mi_onnx_dim_0").set_value(3)
    at.number_input(key="mi_onnx_dim_1").set_value(5)
    at.run()
    at.button(key="mi_onnx_import").click().run()
    assert not at.exception, at.exception
    problem = at.session_state["_test_problem"]
    mm = next(n for n in problem.graph.nodes if n.name == "layer0/mm")
    assert mm.extra["flops"] == 2 * 3 * 5 * 4 * 8  # batch and sequence bound separately (one value gives 3x3 or 5x5)
