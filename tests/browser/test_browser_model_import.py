"""Real-browser test of the Graph page's model import section (ui/model_import.py), issue 7.

1. Builds a tiny ONNX model (MatMul -> Add -> Relu with weights as initializers) with
   ``onnx.helper``, uploads it through the ``.onnx`` file input, imports it and checks that the
   page shows three nodes with the model's node names.
2. Builds a small GPT transformer with the builder form, opens the Placement page and checks that
   the time per sample shown equals ``solve_dp`` + ``evaluate`` on the same built problem, rebuilt
   here with :mod:`placement.modelling.builders` from the form's values.

Screenshots go to test-artifacts/ (``mi_*.png``).
"""

from __future__ import annotations

import re

import pytest

from placement import Problem, evaluate, solve_dp
from placement.modelling.builders import transformer_graph
from placement.modelling.pricing import devices_for
from placement.perf.transformer import TransformerSpec
from ui.model_import import ACCELERATOR_KINDS

from .helpers import go, metric, rerun_after, set_number, upload_file, wait_for_text, wait_idle

pytestmark = pytest.mark.browser

ONNX_NODES = ("mm", "bias_add", "relu")
# The builder form's values used below (everything else stays at the form's defaults).
TRANSFORMER = {"Layers": 2, "Hidden size": 64, "Heads": 4, "Sequence length": 32, "Vocabulary": 1000}


def open_model_import(page) -> None:
    """Open the Graph page and unfold the model import expander."""
    page.goto(page.app_url + "/Graph")
    page.get_by_role("heading", name="Graph").first.wait_for()
    wait_idle(page)
    page.locator("summary", has_text="Import a model: ONNX file or model builder").click()
    page.get_by_role("tab", name="ONNX file").wait_for(state="visible")


def no_exception(page) -> None:
    exceptions = page.locator('[data-testid="stException"]')
    assert not exceptions.count(), exceptions.first.inner_text()


def no_error(page) -> None:
    """No exception and no ``st.error`` (a failed import/build says why and keeps the old graph)."""
    no_exception(page)
    errors = page.locator('[data-testid="stAlertContentError"]')
    assert not errors.count(), errors.first.inner_text()


@pytest.fixture
def app_page(page, app_url):
    page.app_url = app_url
    return page


# ----------------------------------------------------------------------------- the model
def tiny_onnx(path) -> None:
    """y = relu(x @ W + b) with x: [2, 8], W: [8, 4], b: [4] (W and b are initializers)."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    weight = numpy_helper.from_array(np.arange(32, dtype=np.float32).reshape(8, 4) / 32, name="W")
    bias = numpy_helper.from_array(np.ones(4, dtype=np.float32), name="b")
    nodes = [
        helper.make_node("MatMul", ["x", "W"], ["xw"], name=ONNX_NODES[0]),
        helper.make_node("Add", ["xw", "b"], ["xwb"], name=ONNX_NODES[1]),
        helper.make_node("Relu", ["xwb"], ["y"], name=ONNX_NODES[2]),
    ]
    graph = helper.make_graph(
        nodes,
        "tiny_mlp",
        inputs=[helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8])],
        outputs=[helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])],
        initializer=[weight, bias],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    onnx.save(model, str(path))


def form_kinds(kind: str = "H100") -> list[str]:
    """The kinds the section prices (ui/model_import.py::_kinds): the chosen one, then the other catalogue kinds."""
    return [kind, *(k for k in ACCELERATOR_KINDS if k != kind)]


# ----------------------------------------------------------------------------- tests
def test_upload_small_onnx_model_shows_its_graph(app_page, artifacts_dir, tmp_path):
    page = app_page
    model_path = tmp_path / "tiny_mlp.onnx"
    tiny_onnx(model_path)
    open_model_import(page)

    # The upload's rerun, so the click below finds the file on the server.
    upload_file(page, page.locator('[data-testid="stFileUploader"] input[type="file"][accept*=".onnx"]'), model_path)
    page.locator('[data-testid="stFileChipName"]', has_text="tiny_mlp.onnx").wait_for()
    with rerun_after(page):
        page.get_by_role("button", name="Import ONNX model").click()
    no_error(page)

    wait_for_text(metric(page, "Nodes"), str(len(ONNX_NODES)))
    assert metric(page, "Edges").inner_text().strip() == "2"  # a chain of three operators
    page.get_by_role("heading", name="tiny_mlp.onnx", exact=True).wait_for()  # the file name
    # The report line of the import: 3 operators; a chain of 3 has 4 ideals (prefixes, empty one included).
    page.get_by_text(re.compile(r"^3 operators, 4 ideals$")).first.wait_for()
    no_exception(page)
    page.locator('[data-testid="stPlotlyChart"]').first.wait_for()
    page.screenshot(path=artifacts_dir / "mi_01_onnx_import.png", full_page=True)

    # st.dataframe draws its cells on a canvas, so read the node names from the DAG figure's data.
    chart_text = page.locator('[data-testid="stPlotlyChart"]').first.evaluate(
        "el => JSON.stringify((el.querySelector('.js-plotly-plot') || {}).data || [])"
    )
    for name in ONNX_NODES:
        assert name in chart_text, f"node {name!r} not in the graph figure"


def test_build_transformer_then_placement_matches_solve_dp(app_page, artifacts_dir):
    page = app_page
    open_model_import(page)
    page.get_by_role("tab", name="Model builder").click()
    page.get_by_role("button", name="Build model").wait_for(state="visible")

    for label, value in TRANSFORMER.items():
        # Each field's rerun must have ended before the next action: wait_idle alone can return
        # before the server has even started it, and an action then lands in a run in progress.
        set_number(page, label, str(value))
    for label, value in TRANSFORMER.items():
        assert page.get_by_label(label, exact=True).input_value() == str(value), label
    with rerun_after(page):  # the click reached the server and its run (the build) ended
        page.get_by_role("button", name="Build model").click()
    no_error(page)

    spec = TransformerSpec(layers=2, hidden=64, heads=4, seq_length=32, vocab=1000, name="GPT 2x64")
    graph = transformer_graph(spec, form_kinds(), dtype="bf16", granularity="operator")
    problem = Problem(graph, devices_for({"H100": 4}, 1))
    # The build's own visible effect: the built graph's name as the heading, then its node count.
    page.get_by_role("heading", name=problem.graph.name).first.wait_for(timeout=60_000)
    wait_for_text(metric(page, "Nodes"), f"{len(problem.graph.nodes):,}")
    no_exception(page)
    page.screenshot(path=artifacts_dir / "mi_02_built_transformer.png", full_page=True)

    result = solve_dp(problem)
    assert result.status == "optimal"
    expected = f"{evaluate(problem, result.placement).max_load:.6g} ms"
    go(page, "Placement")
    wait_for_text(metric(page, "Time per sample"), expected, timeout=60)
    no_exception(page)
    page.locator('[data-testid="stPlotlyChart"]').nth(2).wait_for(timeout=30_000)  # at least three charts
    page.screenshot(path=artifacts_dir / "mi_03_placement.png", full_page=True)
