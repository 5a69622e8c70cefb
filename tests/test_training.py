"""Training graphs built from inference graphs: nodes, color classes and edges against hand-written ones."""

import pytest

from placement import Devices, Edge, Graph, InvalidGraphError, Node, Problem, evaluate, solve_dp
from placement.modelling.training import backward_offset, training_graph


def diamond():
    """0 -> 1, 0 -> 2, 1 -> 3, 2 -> 3 with distinct output costs."""
    nodes = (
        Node(0, 10, 1, size=100, name="in", kind_latency=(("k", 0.5),)),
        Node(1, 20, 2, size=200, name="a"),
        Node(2, 30, 3, name="b"),
        Node(3, 40, 4, name="out"),
    )
    edges = (Edge(0, 1, 0.1, 10), Edge(0, 2, 0.1, 10), Edge(1, 3, 0.2, 20), Edge(2, 3, 0.3, 30))
    return Graph(nodes, edges, name="diamond")


def test_nodes_latencies_and_classes():
    graph = training_graph(diamond())
    assert backward_offset(diamond()) == 4
    assert len(graph.nodes) == 8 and graph.is_training
    by_id = graph.node_by_id
    for v in range(4):
        forward, backward = by_id[v], by_id[v + 4]
        assert not forward.is_backward and backward.is_backward
        assert backward.accelerator_latency == 2 * forward.accelerator_latency
        assert backward.cpu_latency == 2 * forward.cpu_latency
        assert forward.color_class == backward.color_class
        assert backward.size == forward.size
    assert dict(by_id[4].kind_latency) == {"k": 1.0}
    assert len({by_id[v].color_class for v in range(4)}) == 4  # one class per forward node
    assert by_id[5].name == "a (grad)"


def test_edges_match_hand_construction():
    graph = training_graph(diamond())
    got = {(e.source, e.target): (e.cost, e.size) for e in graph.edges}
    expected = {
        # forward edges, unchanged
        (0, 1): (0.1, 10),
        (0, 2): (0.1, 10),
        (1, 3): (0.2, 20),
        (2, 3): (0.3, 30),
        # activation edges u -> u' carry u's output cost
        (0, 4): (0.1, 10),
        (1, 5): (0.2, 20),
        (2, 6): (0.3, 30),
        (3, 7): (0.0, None),
        # gradient edges v' -> u' for each forward u -> v; v' sends the gradients of all its inputs
        (5, 4): (0.1, 10),
        (6, 4): (0.1, 10),
        (7, 5): (0.5, 50),
        (7, 6): (0.5, 50),
    }
    assert got.keys() == expected.keys()
    for key, (cost, size) in expected.items():
        assert got[key][0] == pytest.approx(cost)
        assert got[key][1] == (pytest.approx(size) if size is not None else None)
    by_id = graph.node_by_id
    assert not any(by_id[e.source].is_backward and not by_id[e.target].is_backward for e in graph.edges)


def test_factors_and_existing_classes():
    nodes = (Node(0, 1, 1, color_class=7, size=8), Node(1, 1, 1, color_class=7), Node(2, 1, 1))
    graph = Graph(nodes, (Edge(0, 1, 0.0), Edge(1, 2, 0.0)))
    training = training_graph(graph, backward_factor=3.0, gradient_memory_factor=0.5)
    by_id = training.node_by_id
    assert by_id[3].accelerator_latency == 3.0 and by_id[3].size == 4.0
    assert by_id[3].color_class == 7 and by_id[4].color_class == 7  # kept class
    assert by_id[2].color_class == by_id[5].color_class == 8  # a new class after the largest


def test_refusals():
    with pytest.raises(InvalidGraphError, match="already has backward"):
        training_graph(training_graph(diamond()))
    with pytest.raises(InvalidGraphError, match="backward factor"):
        training_graph(diamond(), backward_factor=-1)


def test_training_graph_solves_and_pairs_forward_with_backward():
    problem = Problem(training_graph(diamond()), Devices.paper(2, 1))
    result = solve_dp(problem)
    assert result.status == "optimal"
    device_of = result.placement.device_of
    for v in range(4):
        assert device_of[v] == device_of[v + 4]
    assert evaluate(problem, result.placement).max_load == pytest.approx(result.objective)
