"""Generate our own sample graphs into sample_graphs/ours/ (deterministic; run from the repo root).

* ``inception_wide_inference.json``: an Inception-like network: a stem, then 16 modules of
  five parallel branches (lengths 2, 4, 6, 3, 5) between a split and a concat node, then a
  head. About 40,000 ideals: the wide case the paper's C++ DP could not finish.
* ``tiny_training.json``: a 4-layer MLP training graph for demos and tests (forward nodes,
  backward nodes tied by color classes, gradient edges).
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


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "inception_wide_inference.json").write_text(json.dumps(inception_wide()))
    (OUT / "tiny_training.json").write_text(json.dumps(tiny_training(), indent=1))


if __name__ == "__main__":
    main()
