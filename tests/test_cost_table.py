"""The editable cost table of built and imported graphs: rows, edits, errors, the cost source after edits."""

import pytest

from placement import Edge, Graph, InvalidGraphError, Node
from placement.modelling.cost_table import apply_cost_rows, cost_rows
from placement.modelling.pricing import cost_source, price_graph, work_edge, work_extra
from placement.perf.kernels import Work


def _graph():
    nodes = (
        Node(
            0, 0.0, 0.0, name="a", size=5e5, extra=work_extra([Work("gemm", 1000, 500, 2000)], "fp16", 1e6, op="MatMul")
        ),
        Node(1, 0.0, 0.0, name="b", extra=work_extra([Work("stream", nbytes=2e6)], "fp16", 1e6, op="Relu")),
    )
    return price_graph(Graph(nodes, (work_edge(0, 1, 1e6),)), ["H100", "A100"])


def test_cost_rows_show_the_estimates():
    graph = _graph()
    rows = cost_rows(graph)
    assert rows[0]["GFLOP"] == pytest.approx(2.0)
    assert rows[0]["MB moved"] == pytest.approx(2 * (1000 * 2000 + 2000 * 500 + 1000 * 500) / 1e6)
    assert rows[0]["op"] == "MatMul"
    assert rows[1]["accelerator ms"] == graph.nodes[1].accelerator_latency > 0


def test_apply_cost_rows_scales_other_kinds():
    graph = _graph()
    rows = cost_rows(graph)
    twice = 2 * rows[0]["accelerator ms"]
    rows[0]["accelerator ms"] = twice
    rows[0]["CPU ms"] = 1.0
    rows[1]["weights (bytes)"] = 123
    edited = apply_cost_rows(graph, rows)
    a, b = edited.node_by_id[0], edited.node_by_id[1]
    assert a.accelerator_latency == twice and a.cpu_latency == 1.0
    assert dict(a.kind_latency)["A100"] == pytest.approx(2 * dict(graph.nodes[0].kind_latency)["A100"])
    assert b.size == 123
    assert edited.edges == graph.edges
    assert cost_source(edited) == cost_source(graph) + "; edited by hand"
    assert cost_source(apply_cost_rows(edited, rows)) == cost_source(edited)  # said once


@pytest.mark.parametrize(
    "row, message",
    [
        ({"id": 9, "CPU ms": 1}, "no node with id 9"),
        ({"id": 0, "CPU ms": -1}, "CPU ms"),
        ({"id": 0, "accelerator ms": "x"}, "must be a number"),
        ({"name": "a"}, "no valid 'id'"),
    ],
)
def test_apply_cost_rows_errors(row, message):
    with pytest.raises(InvalidGraphError, match=message):
        apply_cost_rows(_graph(), [row])


def test_zero_latency_node_edit_sets_every_kind():
    graph = Graph((Node(0, 0.0, 0.0, kind_latency=(("slow", 0.0),)),), (Edge(0, 0, 0.0),)[:0])
    edited = apply_cost_rows(graph, [{"id": 0, "accelerator ms": 2.0}])
    assert dict(edited.nodes[0].kind_latency) == {"slow": 2.0}
