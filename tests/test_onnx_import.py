"""ONNX import: FLOPs, bytes, weights, edges against hand computation, latencies from the perf model's kernels
(products and convolutions by shape, the rest streaming); safety checks."""

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from placement import Edge, Graph, InvalidGraphError, Node, PlacementError
from placement.modelling.onnx import coarsen, coarsen_by_prefix, import_onnx, load_onnx, name_prefix
from placement.modelling.pricing import edge_ms
from placement.perf.hardware import ACCELERATORS, Dtype, cpu_core
from placement.perf.kernels import gemm_seconds, streaming_seconds
from placement.perf.params import DEFAULT_PARAMS as P

KINDS = ["H100", "A100"]
H100, A100 = ACCELERATORS["H100"], ACCELERATORS["A100"]


def f32(name, shape):
    return numpy_helper.from_array(np.ones(shape, np.float32), name)


def model_bytes(nodes, inputs, outputs, initializers=(), opset=17, value_info=()):
    graph = helper.make_graph(nodes, "test", inputs, outputs, list(initializers), value_info=list(value_info))
    opsets = [helper.make_opsetid("", opset), helper.make_opsetid("com.example", 1)]
    return helper.make_model(graph, opset_imports=opsets).SerializeToString()


def inp(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def out(name):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, None)


def mlp_bytes(batch=2):
    return model_bytes(
        [
            helper.make_node("MatMul", ["x", "W"], ["y"], name="l0/mm"),
            helper.make_node("Add", ["y", "B"], ["y2"], name="l0/add"),
            helper.make_node("Relu", ["y2"], ["z"], name="l1/relu"),
        ],
        [inp("x", [batch, 4])],
        [out("z")],
        [f32("W", (4, 8)), f32("B", (8,))],
    )


def gemm_ms(m, n, k, acc, batch=1.0):
    """An fp32 product's milliseconds by the perf model's kernel formula."""
    return gemm_seconds(m, n, k, acc, Dtype.FP32, P, batch, 4.0) * 1000


def test_matmul_add_relu_costs():
    graph = import_onnx(mlp_bytes(), "mlp.onnx", kinds=KINDS).graph
    mm, add, relu = graph.nodes
    # MatMul [2,4] @ [4,8]: 2*K*out = 2*4*16 = 128 FLOPs; reads x (32 B) + W (128 B); writes 64 B.
    assert (mm.extra["flops"], mm.extra["bytesRead"], mm.extra["bytesWritten"], mm.size) == (128, 160, 64, 128)
    assert (add.extra["flops"], add.extra["bytesRead"], add.extra["bytesWritten"], add.size) == (16, 96, 64, 32)
    assert (relu.extra["flops"], relu.extra["bytesRead"], relu.extra["bytesWritten"], relu.size) == (16, 64, 64, 0)
    assert [n.name for n in graph.nodes] == ["l0/mm", "l0/add", "l1/relu"]
    # The product is the GEMM (m, n, k) = (2, 8, 4); the rest stream their bytes (read + written).
    assert mm.accelerator_latency == pytest.approx(gemm_ms(2, 8, 4, H100))
    assert dict(mm.kind_latency)["A100"] == pytest.approx(gemm_ms(2, 8, 4, A100))
    assert mm.cpu_latency == pytest.approx(gemm_ms(2, 8, 4, cpu_core()))
    assert relu.accelerator_latency == pytest.approx(streaming_seconds(128, H100, P) * 1000)
    assert relu.cpu_latency == pytest.approx(streaming_seconds(128, cpu_core(), P) * 1000)
    # Edges carry the 64-byte activations over the H100's link.
    assert [(e.source, e.target, e.size) for e in graph.edges] == [(0, 1, 64), (1, 2, 64)]
    assert graph.edges[0].cost == pytest.approx(edge_ms(64, H100))


def test_flops_agree_with_onnx_tool_macs():
    """onnx-tool counts multiply-accumulates: for MatMul and bias-free Conv, FLOPs = 2 x MACs."""
    onnx_tool = pytest.importorskip("onnx_tool")
    data = model_bytes(
        [
            helper.make_node("Conv", ["x", "W"], ["c"], name="conv", pads=[1, 1, 1, 1]),
            helper.make_node("Flatten", ["c"], ["f"], name="flat"),
            helper.make_node("MatMul", ["f", "M"], ["y"], name="mm"),
        ],
        [inp("x", [1, 3, 8, 8])],
        [out("y")],
        [f32("W", (4, 3, 3, 3)), f32("M", (256, 10))],
    )
    graph = import_onnx(data, kinds=KINDS).graph
    ours = {n.name: n.extra["flops"] for n in graph.nodes}
    tool = onnx_tool.Model(onnx.load_model_from_string(data))
    tool.graph.graph_reorder_nodes()
    tool.graph.shape_infer()
    tool.graph.profile()
    macs = {n.name: n.macs[0] for n in tool.graph.nodemap.values()}
    assert ours["conv"] == 2 * macs["conv"] == 2 * 256 * 3 * 9
    assert ours["mm"] == 2 * macs["mm"] == 2 * 256 * 10


def test_conv_flops_with_bias_and_groups():
    data = model_bytes(
        [
            helper.make_node("Conv", ["x", "W", "B"], ["c"], name="conv", pads=[1, 1, 1, 1]),
            helper.make_node("Conv", ["c", "G"], ["g"], name="grouped", group=2, pads=[1, 1, 1, 1]),
        ],
        [inp("x", [1, 3, 8, 8])],
        [out("g")],
        [f32("W", (4, 3, 3, 3)), f32("B", (4,)), f32("G", (6, 2, 3, 3))],
    )
    conv, grouped = import_onnx(data, kinds=KINDS).graph.nodes
    # Y = 1x4x8x8 = 256 elements: 2 * 256 * 3 * 9 + 256 (bias).
    assert conv.extra["flops"] == 2 * 256 * 27 + 256
    assert conv.size == 4 * (4 * 27 + 4)
    # grouped: Y = 1x6x8x8 = 384 elements, each C_in/group = 2 channels x 3x3.
    assert grouped.extra["flops"] == 2 * 384 * 2 * 9
    assert grouped.extra["bytesRead"] == 4 * (256 + 6 * 2 * 9)
    assert grouped.extra["bytesWritten"] == 4 * 384
    # implicit GEMMs: (H W) x (C_out / group) x (C_in / group * 3 x 3), per group
    assert conv.accelerator_latency == pytest.approx(gemm_ms(64, 4, 27, H100))
    assert grouped.accelerator_latency == pytest.approx(gemm_ms(64, 3, 18, H100, 2.0))


def test_layernorm_like_subgraph():
    eps = helper.make_node(
        "Constant", [], ["eps"], name="eps", value=numpy_helper.from_array(np.array(1e-5, np.float32))
    )
    nodes = [
        helper.make_node("ReduceMean", ["x"], ["m"], name="ln/mean", axes=[-1]),
        helper.make_node("Sub", ["x", "m"], ["d"], name="ln/sub"),
        helper.make_node("Mul", ["d", "d"], ["sq"], name="ln/sq"),
        helper.make_node("ReduceMean", ["sq"], ["v"], name="ln/var", axes=[-1]),
        eps,
        helper.make_node("Add", ["v", "eps"], ["ve"], name="ln/addeps"),
        helper.make_node("Sqrt", ["ve"], ["s"], name="ln/sqrt"),
        helper.make_node("Div", ["d", "s"], ["n"], name="ln/div"),
        helper.make_node("Mul", ["n", "gamma"], ["g"], name="ln/scale"),
        helper.make_node("Add", ["g", "beta"], ["y"], name="ln/shift"),
    ]
    data = model_bytes(nodes, [inp("x", [2, 3, 4])], [out("y")], [f32("gamma", (4,)), f32("beta", (4,))])
    report = import_onnx(data, kinds=KINDS)
    graph = report.graph
    flops = {n.name: n.extra["flops"] for n in graph.nodes}
    # 24 elements, 6 rows: reductions read 24; row-wise ops on 6; the others on 24.
    assert flops == {
        "ln/mean": 24,
        "ln/sub": 24,
        "ln/sq": 24,
        "ln/var": 24,
        "ln/addeps": 6,
        "ln/sqrt": 6,
        "ln/div": 24,
        "ln/scale": 24,
        "ln/shift": 24,
    }
    sizes = {n.name: n.size for n in graph.nodes}
    assert sizes["ln/addeps"] == 4  # the folded Constant
    assert sizes["ln/scale"] == 16 and sizes["ln/shift"] == 16
    assert len(graph.nodes) == 9  # the Constant node is not a graph node
    by_name = {n.name: n.id for n in graph.nodes}
    # "d" feeds both the square and the division: two edges leaving ln/sub, 96 bytes each.
    sub_edges = sorted((e.target, e.size) for e in graph.edges if e.source == by_name["ln/sub"])
    assert sub_edges == [(by_name["ln/sq"], 96), (by_name["ln/div"], 96)]
    # Merged into one layer: FLOPs and latencies add up.
    merged = coarsen_by_prefix(graph, 1)
    assert len(merged.nodes) == 1
    assert merged.nodes[0].extra["flops"] == sum(flops.values())
    assert merged.nodes[0].accelerator_latency == pytest.approx(sum(n.accelerator_latency for n in graph.nodes))
    assert merged.nodes[0].size == 36


def test_layernormalization_softmax_gemm():
    data = model_bytes(
        [
            helper.make_node("LayerNormalization", ["x", "s", "b"], ["l"], name="ln", axis=-1),
            helper.make_node("Softmax", ["l"], ["p"], name="softmax", axis=-1),
            helper.make_node("Gemm", ["p", "W", "C"], ["y"], name="gemm", transB=1),
        ],
        [inp("x", [3, 4])],
        [out("y")],
        [f32("s", (4,)), f32("b", (4,)), f32("W", (5, 4)), f32("C", (5,))],
    )
    ln, soft, gemm = import_onnx(data, kinds=KINDS).graph.nodes
    assert ln.extra["flops"] == 8 * 12 and ln.size == 32
    assert soft.extra["flops"] == 5 * 12
    assert gemm.extra["flops"] == 2 * 3 * 5 * 4 + 15
    assert gemm.size == 4 * (20 + 5)


def test_views_move_no_bytes():
    data = model_bytes(
        [
            helper.make_node("Relu", ["x"], ["r"], name="relu"),
            helper.make_node("Reshape", ["r", "shape"], ["y"], name="reshape"),
        ],
        [inp("x", [2, 6])],
        [out("y")],
        [numpy_helper.from_array(np.array([3, 4], np.int64), "shape")],
    )
    relu, reshape = import_onnx(data, kinds=KINDS).graph.nodes
    assert reshape.extra["flops"] == 0 and reshape.extra["bytesRead"] == 0 and reshape.accelerator_latency == 0
    assert relu.extra["bytesRead"] == 48


def test_symbolic_dims_are_bound():
    data = model_bytes(
        [helper.make_node("MatMul", ["x", "W"], ["y"], name="mm")],
        [inp("x", ["batch", 4])],
        [out("y")],
        [f32("W", (4, 8))],
    )
    report = import_onnx(data, dims={"batch": 3}, kinds=KINDS)
    assert report.graph.nodes[0].extra["flops"] == 2 * 4 * 3 * 8
    assert any("batch=3" in note for note in report.notes)
    assert import_onnx(data, kinds=KINDS).graph.nodes[0].extra["flops"] == 2 * 4 * 1 * 8  # default 1


def test_shared_weight_counted_once():
    data = model_bytes(
        [
            helper.make_node("MatMul", ["x", "W"], ["y"], name="a"),
            helper.make_node("MatMul", ["y", "W"], ["z"], name="b"),
        ],
        [inp("x", [1, 4])],
        [out("z")],
        [f32("W", (4, 4))],
    )
    a, b = import_onnx(data, kinds=KINDS).graph.nodes
    assert (a.size, b.size) == (64, 0)
    assert b.extra["bytesRead"] == 16 + 64  # it still reads the weight


def test_unknown_op_is_estimated_and_noted():
    data = model_bytes(
        [
            helper.make_node("Relu", ["x"], ["r"], name="relu"),
            helper.make_node("Frobnicate", ["r"], ["y"], name="custom", domain="com.example"),
        ],
        [inp("x", [2, 8])],
        [out("y")],
        value_info=[inp("y", [2, 8])],
    )
    report = import_onnx(data, kinds=KINDS)
    assert report.graph.nodes[1].extra["flops"] == 16
    assert any("Frobnicate" in note for note in report.notes)


def test_coarsen_depth_reports_ideals():
    report = import_onnx(mlp_bytes(), kinds=KINDS, coarsen_depth=1)
    assert report.nodes_before == 3 and report.ideals_before == 4
    assert [n.name for n in report.graph.nodes] == ["l0", "l1"]
    assert report.ideals_after == 3
    layer0 = report.graph.nodes[0]
    assert layer0.extra["flops"] == 128 + 16 and layer0.size == 160
    assert report.graph.edges[0].size == 64


# ----------------------------------------------------------------------------- safety
def _external(tensor, location):
    tensor.ClearField("raw_data")
    tensor.ClearField("float_data")
    tensor.data_location = TensorProto.EXTERNAL
    entry = tensor.external_data.add()
    entry.key, entry.value = "location", location
    return tensor


def test_external_initializer_is_refused(tmp_path, monkeypatch):
    secret = tmp_path / "weights.bin"
    secret.write_bytes(np.ones((4, 8), np.float32).tobytes())
    data = model_bytes(
        [helper.make_node("MatMul", ["x", "W"], ["y"], name="mm")],
        [inp("x", [2, 4])],
        [out("y")],
        [_external(f32("W", (4, 8)), "../../weights.bin")],
    )
    monkeypatch.chdir(tmp_path)
    with pytest.raises(InvalidGraphError) as info:
        import_onnx(data, "evil.onnx", kinds=KINDS)
    message = str(info.value)
    assert "\n" not in message
    assert "evil.onnx" in message and "'W'" in message and "../../weights.bin" in message
    assert isinstance(info.value, PlacementError)


def test_external_tensor_in_constant_and_subgraph_is_refused():
    const = helper.make_node("Constant", [], ["c"], name="c", value=_external(f32("cval", (2,)), "/etc/passwd"))
    data = model_bytes([const, helper.make_node("Add", ["x", "c"], ["y"], name="add")], [inp("x", [2])], [out("y")])
    with pytest.raises(InvalidGraphError, match="cval.*/etc/passwd"):
        load_onnx(data, "const.onnx")
    body = helper.make_graph(
        [helper.make_node("Identity", ["w"], ["o"])], "body", [], [out("o")], [_external(f32("w", (2,)), "inner.bin")]
    )
    cond = helper.make_node("If", ["flag"], ["y"], name="if", then_branch=body, else_branch=body)
    data = model_bytes([cond], [helper.make_tensor_value_info("flag", TensorProto.BOOL, [])], [out("y")])
    with pytest.raises(InvalidGraphError, match="'w'.*inner.bin"):
        load_onnx(data, "sub.onnx")


def test_import_opens_no_file(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError(f"open{args!r} called during import")

    monkeypatch.setattr("builtins.open", refuse)
    graph = import_onnx(mlp_bytes(), "mlp.onnx", kinds=KINDS).graph
    assert len(graph.nodes) == 3


def test_size_cap_and_garbage():
    with pytest.raises(InvalidGraphError, match="over the 10-byte limit"):
        import_onnx(mlp_bytes(), "big.onnx", max_bytes=10)
    with pytest.raises(InvalidGraphError, match="junk.onnx: not an ONNX model"):
        import_onnx(b"\x00\xff definitely not protobuf \x12\x34", "junk.onnx")
    with pytest.raises(InvalidGraphError, match="expected the model's bytes"):
        import_onnx("mlp.onnx")


def test_constant_only_model_is_refused():
    const = helper.make_node("Constant", [], ["y"], value=f32("c", (3,)))
    data = model_bytes([const], [], [out("y")])
    with pytest.raises(InvalidGraphError, match="no operators left"):
        import_onnx(data, "const.onnx")


def test_shape_inference_failure_is_one_line():
    data = model_bytes(
        [helper.make_node("MatMul", ["x", "W"], ["y"], name="mm")], [inp("x", [2, 3])], [out("y")], [f32("W", (4, 8))]
    )
    with pytest.raises(InvalidGraphError) as info:
        import_onnx(data, "bad.onnx", kinds=KINDS)
    assert "\n" not in str(info.value) and "bad.onnx" in str(info.value)


# ----------------------------------------------------------------------------- coarsening
def test_name_prefix():
    assert name_prefix("/bert/encoder/layer.0/attention/MatMul", 4) == "bert/encoder/layer/0"
    assert name_prefix("/bert/encoder/layer.0/attention/MatMul", 3, "/") == "bert/encoder/layer.0"
    assert name_prefix("relu", 2) == "relu"


def test_coarsen_sums_and_prices_leaving_outputs():
    nodes = (
        Node(0, 1.0, 0.1, name="A/x", size=10, kind_latency=(("k", 0.2),)),
        Node(1, 2.0, 0.2, name="A/y", size=20, kind_latency=(("k", 0.4),)),
        Node(2, 4.0, 0.4, name="B/z", size=40),
    )
    edges = (Edge(0, 1, 0.5, 5), Edge(0, 2, 0.5, 5), Edge(1, 2, 0.25, 2.5))
    merged = coarsen(Graph(nodes, edges), lambda n: n.name.split("/")[0])
    a, b = merged.nodes
    assert (a.name, a.cpu_latency, a.accelerator_latency, a.size) == ("A", 3.0, pytest.approx(0.3), 30)
    assert a.kind_latency == (("k", pytest.approx(0.6)),)
    assert b.kind_latency == ()  # not every member names kind k
    # both A members send their outputs to B: 0.5 + 0.25
    assert merged.edges == (Edge(0, 1, 0.75, 7.5),)


def test_coarsen_merges_groups_that_would_form_a_cycle():
    nodes = (Node(0, 1, 1, name="A/1"), Node(1, 1, 1, name="B/1"), Node(2, 1, 1, name="A/2"), Node(3, 1, 1, name="C/1"))
    edges = (Edge(0, 1, 1), Edge(1, 2, 1), Edge(2, 3, 1))
    merged = coarsen(Graph(nodes, edges), lambda n: n.name.split("/")[0])
    assert [n.name for n in merged.nodes] == ["A + B", "C"]
    assert merged.nodes[0].cpu_latency == 3
    assert merged.edges == (Edge(0, 1, 1.0, 0.0),)


def test_coarsen_refuses_training_graphs():
    graph = Graph(
        (Node(0, 1, 1, name="a", color_class=0), Node(1, 1, 1, name="a'", is_backward=True, color_class=0)),
        (Edge(0, 1, 0),),
    )
    with pytest.raises(InvalidGraphError, match="training"):
        coarsen_by_prefix(graph, 1)
    with pytest.raises(InvalidGraphError, match="at least 1"):
        coarsen_by_prefix(Graph((Node(0, 1, 1),), ()), 0)


LIGHT_RESNET50 = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light" / "light_resnet50.onnx"


@pytest.mark.skipif(not LIGHT_RESNET50.exists(), reason="onnx's test model light_resnet50.onnx not installed")
def test_real_resnet50_from_onnx_test_data():
    """ONNX's ResNet-50 test model: weights, conv FLOPs (vs onnx-tool) and the paper's 241 ideals."""
    onnx_tool = pytest.importorskip("onnx_tool")
    data = LIGHT_RESNET50.read_bytes()
    report = import_onnx(data, LIGHT_RESNET50.name)
    graph = report.graph
    # Weights are generated by ConstantOfShape nodes in this file; folded into their consumers.
    assert any("folded" in note for note in report.notes)
    # 25,557,032 trainable + 53,120 BN running statistics, fp32, plus the 16-byte Reshape shape.
    assert sum(n.size for n in graph.nodes) == 4 * (25_557_032 + 53_120) + 16
    tool = onnx_tool.Model(onnx.load_model_from_string(data))
    tool.graph.graph_reorder_nodes()
    tool.graph.shape_infer()
    tool.graph.profile()
    macs = {n.name: n.macs[0] for n in tool.graph.nodemap.values()}
    convs = [n for n in graph.nodes if n.extra["op"] == "Conv"]
    assert len(convs) == 53
    for node in convs:
        assert node.extra["flops"] == 2 * macs[node.name], node.name
    assert report.ideals_before == 241  # as the paper's operator-level ResNet-50
