"""The Graph page states the width and the ideal bounds before any solve (issue 16.1)."""

from __future__ import annotations

import json

from tests.apptest_helpers import start
from ui import state
from ui.navigation import page_file


def _antichain(n: int) -> bytes:
    nodes = [{"id": i, "supportedOnFpga": 1, "cpuLatency": 1, "fpgaLatency": 1, "isBackwardNode": 0} for i in range(n)]
    return json.dumps({"maxFPGAs": 2, "maxCPUs": 1, "nodes": nodes, "edges": []}).encode()


def test_graph_page_shows_width_and_refusal_advice():
    state.clear_caches()
    at = start(page_file("Graph"))
    captions = [c.value for c in at.caption]
    # Issue 26: the exact count, once known, replaces the bounds (no "between 33 and 448" beside the 58 found).
    exact = next(m.value for m in at.metric if m.label == "Ideals")
    assert f"Order graph of 32 groups: width 3 (an antichain of 3 groups); exactly {exact} ideals." in captions, [
        c for c in captions if "Order" in c
    ]
    at.file_uploader(key="graph_upload").set_value(("wide.json", _antichain(40), "application/json")).run()
    assert not at.exception
    captions = [c.value for c in at.caption]
    line = next(c for c in captions if c.startswith("Order graph"))
    assert "width 40" in line and "between 1,099,511,627,776 and 1,099,511,627,776 ideals" in line
    assert "Over the exact DP's cap of 1,000,000 ideals" in line and "coarsen" in line


def test_upload_with_a_billion_accelerators_is_refused_at_load():
    """Issue 17: ``maxFPGAs`` 1e9 in an uploaded file is refused when it is read, not on Compare."""
    state.clear_caches()
    at = start(page_file("Graph"))
    before = at.session_state["_ui_graph_name"]
    graph = json.loads(_antichain(3))
    graph["maxFPGAs"] = 1e9
    at.file_uploader(key="graph_upload").set_value(("huge.json", json.dumps(graph).encode(), "application/json")).run()
    assert not at.exception
    errors = [e.value for e in at.error]
    assert any("huge.json" in e and "at most 256" in e for e in errors), errors
    assert at.session_state["_ui_graph_name"] == before
