"""Hostile ONNX models (issues 16 and 17): external data inside functions, huge shapes and dimensions."""

from __future__ import annotations

import pytest
from onnx import TensorProto, helper

from placement import InvalidGraphError
from placement.modelling.onnx import MAX_DIM, import_onnx, load_onnx


def _external_constant(name: str, location: str):
    tensor = helper.make_tensor(name, TensorProto.FLOAT, (2,), [1.0, 2.0])
    tensor.ClearField("float_data")
    tensor.data_location = TensorProto.EXTERNAL
    entry = tensor.external_data.add()
    entry.key, entry.value = "location", location
    return tensor


def _model_with_function(function_nodes) -> bytes:
    function = helper.make_function(
        "local", "AddC", ["x"], ["y"], function_nodes, opset_imports=[helper.make_opsetid("", 17)]
    )
    graph = helper.make_graph(
        [helper.make_node("AddC", ["x"], ["y"], name="call", domain="local")],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )
    model = helper.make_model(
        graph, functions=[function], opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("local", 1)]
    )
    return model.SerializeToString()


def test_external_data_in_a_function_is_refused():
    nodes = [
        helper.make_node("Constant", [], ["c"], value=_external_constant("fc", "/etc/shadow")),
        helper.make_node("Add", ["x", "c"], ["y"]),
    ]
    with pytest.raises(InvalidGraphError, match="'fc'.*/etc/shadow") as info:
        load_onnx(_model_with_function(nodes), "func.onnx")
    assert "\n" not in str(info.value)


def test_external_data_in_a_subgraph_of_a_function_is_refused():
    body = helper.make_graph(
        [helper.make_node("Constant", [], ["o"], value=_external_constant("deep", "x.bin"))],
        "body",
        [],
        [helper.make_tensor_value_info("o", TensorProto.FLOAT, None)],
    )
    nodes = [
        helper.make_node("Constant", [], ["flag"], value=helper.make_tensor("f", TensorProto.BOOL, (), [True])),
        helper.make_node("If", ["flag"], ["c"], then_branch=body, else_branch=body),
        helper.make_node("Add", ["x", "c"], ["y"]),
    ]
    with pytest.raises(InvalidGraphError, match="'deep'.*x.bin"):
        load_onnx(_model_with_function(nodes), "deep.onnx")


def _matmul_model(shape_x, shape_w) -> bytes:
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")],
        "g",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, shape_x),
            helper.make_tensor_value_info("w", TensorProto.FLOAT, shape_w),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()


def test_symbolic_dimension_over_the_cap_is_refused():
    with pytest.raises(InvalidGraphError, match=f"from 1 to {MAX_DIM:,}"):
        import_onnx(_matmul_model(["batch", 4], [4, 8]), "m.onnx", default_dim=10**30)


def test_astronomical_static_shapes_are_one_line_errors():
    big = 2**62
    try:
        report = import_onnx(_matmul_model([big, big, big, big, big, big], [big, big]), "huge.onnx")
    except InvalidGraphError as exc:
        assert "\n" not in str(exc)
    else:  # costed without overflow: every number is finite
        assert all(node.accelerator_latency < float("inf") for node in report.graph.nodes)
