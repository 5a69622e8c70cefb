"""Huge names never make huge pages (issue 27.1): the graph figure's hover and the Graph page's node table cut them."""

from __future__ import annotations

import pytest

import placement
from placement import viz
from tests.apptest_helpers import goto, start
from ui import session_keys
from ui.navigation import page_file

LONG = 10_000


def _problem(nodes: int = 3) -> placement.Problem:
    rows = [
        {"id": i, "name": f"n{i}_" + "x" * LONG, "supportedOnFpga": 1, "cpuLatency": 2.0, "fpgaLatency": 1.0}
        | {"isBackwardNode": 0}
        for i in range(nodes)
    ]
    edges = [{"sourceId": i, "destId": i + 1, "cost": 0.1} for i in range(nodes - 1)]
    return placement.parse_problem(placement.io.json.dumps({"maxFPGAs": 2, "nodes": rows, "edges": edges}), "long.json")


def test_hover_text_cuts_long_names():
    graph = _problem().graph
    hover = viz.node_hover(graph, 0)
    assert f"<b>n0_{'x' * (viz.graph.HOVER_NAME_CHARS - 4)}…</b>" in hover
    assert "x" * viz.graph.HOVER_NAME_CHARS not in viz.graph_figure(graph).to_json()  # no 10 kB name in the figure
    short = placement.parse_problem(
        placement.io.json.dumps(
            {
                "maxFPGAs": 1,
                "nodes": [
                    {
                        "id": 0,
                        "name": "a",
                        "supportedOnFpga": 1,
                        "cpuLatency": 1.0,
                        "fpgaLatency": 1.0,
                        "isBackwardNode": 0,
                    }
                ],
                "edges": [],
            }
        ),
        "a.json",
    ).graph
    assert "<b>a</b>" in viz.node_hover(short, 0)  # short names unchanged


@pytest.mark.slow
def test_graph_page_cuts_long_names_in_its_node_table():
    at = start()
    problem = _problem()
    at.session_state[session_keys.PROBLEM] = problem
    at.session_state[session_keys.NAME] = "long.json"
    at.session_state[session_keys.SOURCE] = "upload:long.json"
    at.session_state[session_keys.DEVICES] = problem.devices
    goto(at, page_file("Graph"))
    (table,) = [frame.value for frame in at.dataframe if "name" in frame.value.columns]
    names = list(table["name"])
    assert len(names) == 3 and all(len(name) == 200 and name.endswith("…") for name in names)
    assert names[0].startswith("n0_xxx")
    assert any("Names longer than 200 characters are cut" in caption.value for caption in at.caption)
