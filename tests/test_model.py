"""placement.model: the graph's file form and its digest (stable: shared links name graphs by it)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import placement
from placement.errors import PlacementError
from placement.io import graph_from_dict, graph_to_dict
from placement.model import Recompute

ROOT = Path(__file__).resolve().parent.parent

#: Every field of the format (extra keys, names, classes, kinds, latencies, edge sizes); its digest as of the
#: first release of links (computed by the code before the digest moved into ``placement.model``).
KNOWN = {
    "maxFPGAs": 2,
    "maxCPUs": 1,
    "maxSizePerFPGA": 100.0,
    "comment": "kept",
    "nodes": [
        {
            "id": 1,
            "name": "a",
            "supportedOnFpga": 1,
            "cpuLatency": 1.5,
            "fpgaLatency": 0.25,
            "isBackwardNode": 0,
            "colorClass": 1,
            "size": 10,
            "latencies": {"X": 0.1},
            "kinds": ["X"],
            "note": 3,
        },
        {"id": 2, "supportedOnFpga": 0, "cpuLatency": 2.0, "fpgaLatency": 0.0, "isBackwardNode": 1, "colorClass": 1},
        {"id": 3, "supportedOnFpga": 1, "cpuLatency": 0.5, "fpgaLatency": 0.5, "isBackwardNode": 0},
    ],
    "edges": [
        {"sourceId": 1, "destId": 3, "cost": 0.125, "size": 4096, "tag": "t"},
        {"sourceId": 3, "destId": 2, "cost": 0.0},
    ],
    "deviceKinds": [{"name": "X", "count": 2, "memory": 100.0}],
}


def test_a_known_graph_keeps_its_digest():
    graph, _ = graph_from_dict(KNOWN)
    assert graph.digest == "f955c55e4afa8d5e"


@pytest.mark.parametrize(
    "path, digest",
    [
        ("sample_graphs/ours/tiny_training.json", "3642d7bb8294b703"),
        ("sample_graphs/latency/layer/bert24_inference.json", "0bdfc225c25748c0"),
        ("sample_graphs/throughput/layer/gnmt_training.json", "c94d7411ca95ba28"),
    ],
)
def test_sample_digests_are_unchanged(path, digest):
    assert placement.load_problem(ROOT / path).graph.digest == digest


def test_the_digest_ignores_devices_and_io_adds_them():
    graph, devices = graph_from_dict(KNOWN)
    body = graph.to_dict()
    full = graph_to_dict(graph, devices)
    assert "deviceKinds" not in body and "deviceKinds" in full
    assert full["nodes"] == body["nodes"] and full["edges"] == body["edges"]
    assert graph_from_dict(full)[0].digest == graph.digest  # a round trip keeps it


def test_model_does_not_import_io():
    """The core layer stands alone: ``model`` imports nothing of ``io`` (no import cycle)."""
    tree = ast.parse((ROOT / "placement" / "model.py").read_text())
    imported = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    assert "io" not in imported and "placement.io" not in imported


@pytest.mark.parametrize(
    "value, member",
    [(False, Recompute.NONE), (True, Recompute.ALWAYS), ("none", Recompute.NONE), ("per-stage", Recompute.PER_STAGE)],
)
def test_recompute_has_one_spelling_with_boolean_aliases(value, member):
    assert Recompute.of(value) is member
    assert Recompute.of(member) is member


@pytest.mark.parametrize("value", ["never", "None", None, 1, 0])
def test_other_recompute_spellings_are_refused(value):
    with pytest.raises(PlacementError, match="recompute must be one of"):
        Recompute.of(value)
