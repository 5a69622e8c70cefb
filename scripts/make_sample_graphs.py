"""Generate our own sample graphs into sample_graphs/ours/ (deterministic; run from the repo root).

* ``inception_wide_inference.json``: an Inception-like network: a stem, then 16 modules of
  five parallel branches (lengths 2, 4, 6, 3, 5) between a split and a concat node, then a
  head. About 40,000 ideals: the wide case the paper's C++ DP could not finish.
* ``tiny_training.json``: a 4-layer MLP training graph for demos and tests (forward nodes,
  backward nodes tied by color classes, gradient edges).
* ``teach_residual_inference.json``, ``teach_two_branch_training.json``,
  ``teach_inception_mini_inference.json``: small branched graphs for teaching mode (their lattices
  are not a line); latencies in ms, sizes in bytes; the residual block does not fit one
  accelerator's memory and its input decoder runs on the CPU only (so "not allowed" has both reasons).
"""

from __future__ import annotations

import json
import random
from pathlib import Path

OUT = Path("sample_graphs/ours")


def inception_wide(modules: int = 16, branches: tuple[int, ...] = (2, 4, 6, 3, 5), seed: int = 7) -> dict:
    rng = random.Random(seed)
    nodes, edges = [], []

    def node(name: str, scale: float = 1.0, size: float = 4e6) -> int:
        node_id = len(nodes) + 1
        fpga = round(rng.uniform(0.2, 1.2) * scale, 4)
        nodes.append(
            {
                "id": node_id,
                "name": name,
                "supportedOnFpga": 1,
                "cpuLatency": round(fpga * 12, 4),
                "fpgaLatency": fpga,
                "isBackwardNode": 0,
                "colorClass": node_id,
                "size": size,
            }
        )
        return node_id

    cost = {}

    def edge(a: int, b: int) -> None:
        cost.setdefault(a, round(rng.uniform(0.01, 0.08), 4))
        edges.append({"sourceId": a, "destId": b, "cost": cost[a]})

    previous = node("stem", 2.0, 2e7)
    for m in range(modules):
        split = node(f"mixed{m}/split", 0.1, 0)
        edge(previous, split)
        ends = []
        for b, length in enumerate(branches):
            last = split
            for step in range(length):
                current = node(f"mixed{m}/branch{b}/conv{step}")
                edge(last, current)
                last = current
            ends.append(last)
        concat = node(f"mixed{m}/concat", 0.1, 0)
        for end in ends:
            edge(end, concat)
        previous = concat
    head = node("head/fc", 1.5, 8e6)
    edge(previous, head)
    return {"maxFPGAs": 6, "maxCPUs": 1, "maxSizePerFPGA": 16e9, "nodes": nodes, "edges": edges}


def tiny_training() -> dict:
    layers = [("embed", 1.0, 30e6), ("layer1", 3.0, 20e6), ("layer2", 3.0, 20e6), ("head", 1.5, 10e6)]
    nodes, edges = [], []
    n = len(layers)
    for i, (name, t, size) in enumerate(layers):
        nodes.append(
            {
                "id": i + 1,
                "name": f"{name}/fwd",
                "supportedOnFpga": 1,
                "cpuLatency": t * 10,
                "fpgaLatency": t,
                "isBackwardNode": 0,
                "colorClass": i + 1,
                "size": size,
            }
        )
        nodes.append(
            {
                "id": n + i + 1,
                "name": f"{name}/bwd",
                "supportedOnFpga": 1,
                "cpuLatency": t * 20,
                "fpgaLatency": 2 * t,
                "isBackwardNode": 1,
                "colorClass": i + 1,
                "size": 0,
            }
        )
    for i in range(n - 1):
        edges.append({"sourceId": i + 1, "destId": i + 2, "cost": 0.2, "size": 4e6})
        edges.append({"sourceId": n + i + 2, "destId": n + i + 1, "cost": 0.2, "size": 4e6})
    edges.append({"sourceId": n, "destId": 2 * n, "cost": 0.2, "size": 4e6})  # loss -> head backward
    return {"maxFPGAs": 2, "maxCPUs": 1, "maxSizePerFPGA": 64e6, "nodes": nodes, "edges": edges}


def _small(spec: list[tuple[str, float, float, int]], links: list[tuple[str, str, float]], **head: float) -> dict:
    """A small forward graph: ``spec`` is (name, accelerator ms, size in bytes, runs on accelerators)."""
    ids = {name: k + 1 for k, (name, *_) in enumerate(spec)}
    nodes = [
        {
            "id": ids[name],
            "name": name,
            "supportedOnFpga": fpga,
            "cpuLatency": round(t * 10, 4),
            "fpgaLatency": t,
            "isBackwardNode": 0,
            "colorClass": ids[name],
            "size": size,
        }
        for name, t, size, fpga in spec
    ]
    edges = [{"sourceId": ids[a], "destId": ids[b], "cost": cost, "size": 4e6} for a, b, cost in links]
    return {**head, "nodes": nodes, "edges": edges}


def teach_residual() -> dict:
    spec = [
        ("input/decode", 0.4, 0, 0),
        ("conv1", 2.0, 30e6, 1),
        ("conv2", 2.0, 30e6, 1),
        ("shortcut", 0.5, 10e6, 1),
        ("add", 0.2, 0, 1),
        ("head", 1.5, 20e6, 1),
    ]
    links = [
        ("input/decode", "conv1", 0.3),
        ("input/decode", "shortcut", 0.3),
        ("conv1", "conv2", 0.2),
        ("conv2", "add", 0.2),
        ("shortcut", "add", 0.2),
        ("add", "head", 0.2),
    ]
    return _small(spec, links, maxFPGAs=2, maxCPUs=1, maxSizePerFPGA=64e6)


def teach_inception_mini() -> dict:
    spec = [
        ("stem", 1.0, 10e6, 1),
        ("branch1x1", 1.2, 8e6, 1),
        ("branch3x3/a", 0.8, 8e6, 1),
        ("branch3x3/b", 1.6, 12e6, 1),
        ("pool", 0.6, 0, 1),
        ("concat", 0.1, 0, 1),
        ("fc", 0.9, 16e6, 1),
    ]
    links = [
        ("stem", "branch1x1", 0.1),
        ("stem", "branch3x3/a", 0.1),
        ("stem", "pool", 0.1),
        ("branch3x3/a", "branch3x3/b", 0.1),
        ("branch1x1", "concat", 0.1),
        ("branch3x3/b", "concat", 0.1),
        ("pool", "concat", 0.1),
        ("concat", "fc", 0.1),
    ]
    return _small(spec, links, maxFPGAs=3, maxCPUs=0, maxSizePerFPGA=64e6)


def teach_two_branch_training() -> dict:
    """Forward embed -> (attention | mlp) -> merge -> head, with backward nodes tied by color classes."""
    forward = [
        ("embed", 1.0, 20e6),
        ("attention", 3.0, 24e6),
        ("mlp", 2.5, 24e6),
        ("merge", 0.3, 0),
        ("head", 1.2, 12e6),
    ]
    links = [("embed", "attention"), ("embed", "mlp"), ("attention", "merge"), ("mlp", "merge"), ("merge", "head")]
    n = len(forward)
    ids = {name: k + 1 for k, (name, *_) in enumerate(forward)}
    nodes = []
    for k, (name, t, size) in enumerate(forward):
        for backward in (0, 1):
            nodes.append(
                {
                    "id": k + 1 + backward * n,
                    "name": f"{name}/{'bwd' if backward else 'fwd'}",
                    "supportedOnFpga": 1,
                    "cpuLatency": round(t * 10 * (1 + backward), 4),
                    "fpgaLatency": t * (1 + backward),
                    "isBackwardNode": backward,
                    "colorClass": k + 1,
                    "size": 0 if backward else size,
                }
            )
    edges = []
    for a, b in links:
        edges.append({"sourceId": ids[a], "destId": ids[b], "cost": 0.2, "size": 4e6})
        edges.append({"sourceId": ids[b] + n, "destId": ids[a] + n, "cost": 0.2, "size": 4e6})
    edges.append({"sourceId": n, "destId": 2 * n, "cost": 0.2, "size": 4e6})  # loss -> head backward
    return {"maxFPGAs": 2, "maxCPUs": 1, "maxSizePerFPGA": 64e6, "nodes": nodes, "edges": edges}


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "inception_wide_inference.json").write_text(json.dumps(inception_wide()))
    (OUT / "tiny_training.json").write_text(json.dumps(tiny_training(), indent=1))
    (OUT / "teach_residual_inference.json").write_text(json.dumps(teach_residual(), indent=1))
    (OUT / "teach_inception_mini_inference.json").write_text(json.dumps(teach_inception_mini(), indent=1))
    (OUT / "teach_two_branch_training.json").write_text(json.dumps(teach_two_branch_training(), indent=1))


if __name__ == "__main__":
    main()
