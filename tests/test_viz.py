"""Figures and tables of placement.viz, checked against hand-computed values and brute force."""

import itertools
import json
import math

import pytest

from placement import (
    AcceleratorKind,
    Devices,
    Edge,
    Graph,
    Node,
    Placement,
    Problem,
    Stage,
    evaluate,
    load_problem,
    viz,
)
from placement.model import DeviceSlot

from .randgraphs import random_problem

GIB = 2.0**30
A0, A1, A2, C0 = (
    DeviceSlot("accelerator", 0),
    DeviceSlot("accelerator", 1),
    DeviceSlot("accelerator", 2),
    DeviceSlot("cpu", 0),
)


def diamond(memory: float = math.inf) -> Problem:
    """0 -> {1, 2} -> 3 plus 0 -> 3; hand-computed loads in the tests below."""
    nodes = (
        Node(0, cpu_latency=10, accelerator_latency=1, size=1 * GIB, name="embed"),
        Node(1, cpu_latency=20, accelerator_latency=2, size=0.5 * GIB, name="attention"),
        Node(2, cpu_latency=30, accelerator_latency=3, size=2 * GIB, name="mlp", color_class=7),
        Node(3, cpu_latency=40, accelerator_latency=4, size=0.0, name="head", supported_on_accelerator=True),
    )
    edges = (Edge(0, 1, 0.5), Edge(0, 2, 0.5), Edge(0, 3, 0.5), Edge(1, 3, 0.25), Edge(2, 3, 0.75))
    return Problem(Graph(nodes, edges, name="diamond"), Devices.paper(3, 1, memory))


SPLIT = Placement((Stage(A0, (0, 1)), Stage(A1, (2, 3))))


def decode(values):
    """Plotly may store arrays as {"dtype", "bdata"}; our figures use lists (checked here)."""
    assert isinstance(values, (list, tuple)), f"expected a plain list, got {type(values)}"
    return list(values)


# ----------------------------------------------------------------------------- layout
def expected_layers(graph: Graph) -> dict[int, int]:
    """Independently: longest path from the sources (relaxation); sinks keep it, every other node
    goes as late as possible (one left of its earliest consumer), by relaxation to a fixpoint."""
    asap = {node.id: 0 for node in graph.nodes}
    for _ in range(len(graph.nodes)):
        for edge in graph.edges:
            asap[edge.target] = max(asap[edge.target], asap[edge.source] + 1)
    consumers = {node.id: [e.target for e in graph.edges if e.source == node.id] for node in graph.nodes}
    layer = {n: (math.inf if consumers[n] else asap[n]) for n in asap}
    for _ in range(len(graph.nodes)):
        for n, targets in consumers.items():
            if targets:
                layer[n] = min(layer[t] - 1 for t in targets)
    return layer


@pytest.mark.parametrize("seed", range(25))
def test_layout_is_the_longest_path_layering_with_distinct_centred_rows(seed):
    graph = random_problem(seed, training=seed % 2 == 1, max_forward=7).graph
    layout = viz.dag_layout(graph)
    assert set(layout) == {node.id for node in graph.nodes}
    expected = expected_layers(graph)
    assert {n: int(x) for n, (x, _) in layout.items()} == expected
    assert min(expected.values()) == 0
    for edge in graph.edges:  # every edge points right
        assert layout[edge.target][0] > layout[edge.source][0]
    for x in set(expected.values()):
        ys = sorted(y for n, (lx, y) in layout.items() if lx == x)
        assert len(set(ys)) == len(ys)
        assert sum(ys) == pytest.approx(0.0)
        assert all(b - a == pytest.approx(1.0) for a, b in zip(ys, ys[1:]))


def test_barycenter_ordering_removes_an_avoidable_crossing():
    # Layer 1 is [1, 2] in topological order, but 1 feeds the lower node of layer 2 and 2 the upper one:
    # sources 0a, 0b -> targets; a crossing-free order exists and the sweeps must find it.
    nodes = tuple(Node(i, 1, 1) for i in range(6))
    edges = (Edge(0, 2, 1), Edge(1, 3, 1), Edge(2, 5, 1), Edge(3, 4, 1))
    graph = Graph(nodes, edges)
    layout = viz.dag_layout(graph)

    def crossings():
        count = 0
        for e, f in itertools.combinations(graph.edges, 2):
            if layout[e.source][0] == layout[f.source][0] and layout[e.target][0] == layout[f.target][0]:
                if (layout[e.source][1] - layout[f.source][1]) * (layout[e.target][1] - layout[f.target][1]) < 0:
                    count += 1
        return count

    assert crossings() == 0


def test_layout_of_a_large_sample_is_fast_and_complete(samples_dir):
    graph = load_problem(samples_dir / "throughput" / "operator" / "bert_l-3_training.json").graph
    layout = viz.dag_layout(graph)
    assert len(layout) == len(graph.nodes) == 600
    assert all(layout[e.target][0] > layout[e.source][0] for e in graph.edges)


# ----------------------------------------------------------------------------- graph figure
def test_graph_figure_has_every_node_and_edge_with_hover_text():
    problem = diamond()
    figure = viz.graph_figure(problem.graph)
    edges, nodes = figure.data[0], figure.data[1]
    xs = decode(edges.x)
    assert len(xs) == 3 * len(problem.graph.edges) and xs.count(None) == len(problem.graph.edges)
    assert sorted(decode(nodes.customdata)) == [0, 1, 2, 3]
    hover = dict(zip(decode(nodes.customdata), decode(nodes.hovertext)))
    assert "attention" in hover[1] and "accelerator latency: 2" in hover[1] and "CPU latency: 20" in hover[1]
    assert "512.00 MiB" in hover[1]
    assert "color class 7" in hover[2]
    json.loads(figure.to_json())


def test_graph_figure_colors_nodes_by_device_in_pipeline_order():
    problem = diamond()
    figure = viz.graph_figure(problem.graph, device_of=SPLIT.device_of, device_order=[A1, A0])
    traces = [t for t in figure.data if t.mode == "markers"]
    assert [t.name for t in traces] == ["accelerator 1", "accelerator 0"]
    assert sorted(decode(traces[0].customdata)) == [2, 3]
    assert sorted(decode(traces[1].customdata)) == [0, 1]
    assert traces[0].marker.color != traces[1].marker.color


def test_graph_figure_marks_unplaced_nodes():
    problem = diamond()
    figure = viz.graph_figure(problem.graph, device_of={0: A0})
    names = [t.name for t in figure.data if t.mode == "markers"]
    assert names == ["accelerator 0", "unplaced"]


def test_graph_stats_are_plain_sums():
    stats = viz.graph_stats(diamond().graph)
    assert stats["nodes"] == 4 and stats["edges"] == 5
    assert stats["color classes"] == 1
    assert stats["total accelerator compute"] == 1 + 2 + 3 + 4
    assert stats["total CPU compute"] == 100
    assert stats["total memory (bytes)"] == 3.5 * GIB
    assert stats["total transfer cost"] == 0.5 + 0.25 + 0.75  # one output cost per node with edges


def test_node_rows_list_every_node_and_its_device():
    rows = viz.node_rows(diamond().graph, SPLIT.device_of)
    assert [r["id"] for r in rows] == [0, 1, 2, 3]
    assert rows[2]["size (MiB)"] == 2048 and rows[2]["device"] == "accelerator 1"
    assert rows[0]["output cost"] == 0.5 and rows[3]["output cost"] == 0.0


# ----------------------------------------------------------------------------- placement figures
def test_load_figure_stacks_hand_computed_compute_and_communication():
    problem = diamond()
    evaluation = evaluate(problem, SPLIT)
    figure = viz.load_figure(evaluation, slots=[A0, A1, A2, C0])
    compute, communication = figure.data[0], figure.data[1]
    assert decode(compute.x) == ["accelerator 0", "accelerator 1", "accelerator 2", "cpu 0"]
    # accelerator 0 runs {0, 1}: compute 1 + 2; node 0 (0.5) and node 1 (0.25) send across.
    # accelerator 1 runs {2, 3}: compute 3 + 4; it receives from nodes 0 (0.5) and 1 (0.25).
    assert decode(compute.y) == [3.0, 7.0, 0.0, 0.0]
    assert decode(communication.y) == [0.75, 0.75, 0.0, 0.0]
    assert figure.layout.barmode == "stack"
    lines = [s for s in figure.layout.shapes if s.type == "line"]
    assert len(lines) == 1 and lines[0].y0 == lines[0].y1 == 7.75


def test_load_figure_marks_overlapped_loads():
    problem = diamond()
    problem = Problem(problem.graph, problem.devices.with_changes(overlap=True))
    evaluation = evaluate(problem, SPLIT)
    figure = viz.load_figure(evaluation, overlap=True)
    loads = [t for t in figure.data if t.name == "load (overlapped)"][0]
    assert decode(loads.y) == [3.0, 7.0]  # max(compute, communication)
    assert [s for s in figure.layout.shapes if s.type == "line"][0].y0 == 7.0


def test_memory_figure_shows_use_against_cap_and_flags_overflow():
    problem = diamond(memory=1.75 * GIB)
    evaluation = evaluate(problem, SPLIT)
    figure = viz.memory_figure(evaluation, slots=[A0, A1, A2, C0])
    used, cap = figure.data[0], figure.data[1]
    assert decode(used.x) == ["accelerator 0", "accelerator 1", "accelerator 2"]  # CPU left out
    assert decode(used.y) == [1.5, 2.0, 0.0]
    colors = decode(used.marker.color)
    assert colors[0] != colors[1]  # accelerator 1 holds 2 GiB > 1.75 GiB
    assert decode(cap.x) == ["accelerator 0", "accelerator 1"] and decode(cap.y) == [1.75, 1.75]


def test_memory_figure_without_caps_says_unlimited():
    evaluation = evaluate(diamond(), SPLIT)
    figure = viz.memory_figure(evaluation)
    assert len(figure.data) == 1 and "unlimited" in figure.layout.title.text


def test_placement_rows_and_device_rows():
    problem = diamond()
    rows = viz.placement_rows(problem, SPLIT)
    assert {(r["node"], r["device kind"], r["device index"], r["stage"]) for r in rows} == {
        (0, "accelerator", 0, 0),
        (1, "accelerator", 0, 0),
        (2, "accelerator", 1, 1),
        (3, "accelerator", 1, 1),
    }
    devices = viz.device_rows(evaluate(problem, SPLIT))
    assert [(d["device"], d["load"], d["memory (GiB)"]) for d in devices] == [
        ("accelerator 0", 3.75, 1.5),
        ("accelerator 1", 7.75, 2.0),
    ]
    assert devices[0]["cap (GiB)"] is None


def test_format_bytes():
    assert viz.format_bytes(math.inf) == "unlimited"
    assert viz.format_bytes(1.5 * GIB) == "1.50 GiB"
    assert viz.format_bytes(3 * 2**20) == "3.00 MiB"
    assert viz.format_bytes(12) == "12 B"


def test_device_colors_are_distinct_and_grey_for_cpus():
    slots = [DeviceSlot("a", i) for i in range(5)] + [DeviceSlot("cpu", 0)]
    colors = viz.device_colors(slots)
    assert len(set(colors[s] for s in slots[:5])) == 5
    assert colors[slots[5]] in viz.CPU_COLORS


# ----------------------------------------------------------------------------- compare
def test_compare_figure_highlights_the_best_and_lists_failures():
    rows = [
        {"method": "dp", "objective": 2.0, "status": "optimal"},
        {"method": "ip", "objective": 2.5, "status": "feasible"},
        {"method": "pipedream", "objective": None, "status": "error"},
    ]
    figure = viz.compare_figure(rows)
    bar = figure.data[0]
    assert decode(bar.x) == ["dp", "ip", "pipedream"]
    assert decode(bar.y) == [2.0, 2.5, 0.0]
    colors = decode(bar.marker.color)
    assert colors[0] != colors[1] and colors[1] == colors[2]
    assert decode(bar.text) == ["2", "2.5 (+25.00 %)", "error"]


def test_heterogeneous_kinds_get_their_own_labels():
    problem = diamond()
    devices = Devices((AcceleratorKind("fast", 1, speed=2.0), AcceleratorKind("slow", 1)), cpus=0)
    split = Placement((Stage(DeviceSlot("fast", 0), (0, 1)), Stage(DeviceSlot("slow", 0), (2, 3))))
    evaluation = evaluate(Problem(problem.graph, devices), split)
    figure = viz.load_figure(evaluation)
    assert decode(figure.data[0].x) == ["fast 0", "slow 0"]
    assert decode(figure.data[0].y) == [1.5, 7.0]  # (1 + 2) / speed 2 ; 3 + 4


def test_long_graphs_open_on_a_window_with_an_overview_slider(samples_dir):
    graph = load_problem(samples_dir / "throughput" / "layer" / "resnet50_inference.json").graph
    layout = viz.dag_layout(graph)
    n_layers = int(max(x for x, _ in layout.values())) + 1
    assert n_layers > 90
    figure = viz.graph_figure(graph, layout=layout, window_layers=60)
    assert figure.layout.xaxis.rangeslider.visible
    assert tuple(figure.layout.xaxis.range) == (-0.5, 59.5)
    short = viz.graph_figure(diamond().graph)
    assert not short.layout.xaxis.rangeslider.visible
    assert tuple(short.layout.xaxis.range) == (-0.5, 2.5)
