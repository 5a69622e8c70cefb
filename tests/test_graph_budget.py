"""The Graph page's budget (issue 45.3): a graph past it is refused in one line within 5 s; large graphs shown bounded."""

from __future__ import annotations

import json
import time

import pytest

from tests.apptest_helpers import metrics, start
from ui import graph_budget, state
from ui.navigation import page_file


def _chain(n: int) -> bytes:
    """A chain of ``n`` nodes in the paper's format (about 200 bytes a node, as the paper's files)."""
    nodes = [
        {
            "name": f"block{i // 8}/op{i % 8}",
            "id": i,
            "supportedOnFpga": 1,
            "cpuLatency": 1.5,
            "fpgaLatency": 0.25,
            "isBackwardNode": 0,
            "colorClass": i,
            "size": 1000.0,
        }
        for i in range(n)
    ]
    edges = [{"sourceId": i, "destId": i + 1, "cost": 0.5} for i in range(n - 1)]
    return json.dumps({"maxSizePerFPGA": 1.6e10, "maxFPGAs": 4, "maxCPUs": 1, "nodes": nodes, "edges": edges}).encode()


def test_the_estimate_counts_keys_not_words_in_names():
    data = json.dumps({"nodes": [{"id": 1, "name": '"id" "sourceId"'}], "edges": []}).encode()
    estimate = graph_budget.estimate_upload(data)
    assert (estimate.nodes, estimate.edges, estimate.size) == (1, 0, len(data))
    assert estimate.refusal("g.json") is None
    big = graph_budget.UploadEstimate(40 << 20, 200_000, 199_999)
    line = big.refusal("big.json")
    assert line is not None and "\n" not in line
    assert line.startswith("big.json: about 200,000 nodes and 199,999 edges (40.0 MiB)")
    assert "coarser graph" in line and "python -m placement solve" in line
    assert graph_budget.UploadEstimate(0, graph_budget.max_nodes(), graph_budget.max_nodes()).refusal("x") is None


def test_a_200000_node_upload_is_refused_in_one_line_within_5_s():
    state.clear_caches()
    data = _chain(200_000)
    assert len(data) < 50 * 2**20  # under the upload cap: only the page's budget refuses it
    at = start(page_file("Graph"))
    before = (at.session_state["_ui_graph_name"], metrics(at)["Nodes"])
    started = time.perf_counter()
    at.file_uploader(key="graph_upload").set_value(("huge.json", data, "application/json")).run()
    took = time.perf_counter() - started
    assert not at.exception
    errors = [e.value for e in at.error]
    assert len(errors) == 1 and "\n" not in errors[0], errors
    assert errors[0].startswith("huge.json: about 200,000 nodes") and "command line" in errors[0]
    assert took < 5.0, took
    assert (at.session_state["_ui_graph_name"], metrics(at)["Nodes"]) == before  # the previous graph stays
    # the refused file is let go (a fresh uploader: Streamlit frees the bytes), its error stays shown; the next
    # file goes to the fresh uploader
    assert [u.key for u in at.file_uploader if u.key.startswith("graph_upload")] == ["graph_upload_1"]
    assert not at.file_uploader(key="graph_upload_1").value
    at.run()
    assert [e.value for e in at.error] == errors
    small = _chain(10)
    at.file_uploader(key="graph_upload_1").set_value(("small.json", small, "application/json")).run()
    assert not at.exception and not at.error and metrics(at)["Nodes"] == "10"


@pytest.mark.slow
def test_a_large_accepted_graph_is_shown_bounded():
    state.clear_caches()
    n = 6_000
    at = start(page_file("Graph"))
    at.file_uploader(key="graph_upload").set_value(("long.json", _chain(n), "application/json")).run(timeout=180)
    assert not at.exception and not at.error
    assert metrics(at)["Nodes"] == f"{n:,}" and metrics(at)["Ideals"] == "not counted"
    captions = [c.value for c in at.caption]
    assert any(c.startswith(f"Drawn: the first {graph_budget.FIGURE_MAX_NODES:,} of {n:,} nodes") for c in captions)
    assert any(c.startswith("Order graph") for c in captions)  # the bounds, always
    assert at.dataframe[0].value.shape[0] == graph_budget.TABLE_PAGE_ROWS
    at.number_input(key="graph_table_page").set_value(6).run(timeout=60)
    table = at.dataframe[0].value
    assert list(table["id"])[:1] == [5_000] and table.shape[0] == 1_000
    assert f"Rows 5,001 to 6,000 of {n:,} (pages of 1,000 rows)." in [c.value for c in at.caption]
