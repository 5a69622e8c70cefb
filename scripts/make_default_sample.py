"""Write the app's default graph, ``sample_graphs/models/llama3_8b_training.json``.

Llama 3 8B (sequence 4,096, micro-batch 1, bf16, training, layer granularity) built from its
:class:`placement.perf.transformer.TransformerSpec` and priced by the perf model's kernels on 8 H100 + 4 A100,
with 32 CPU cores and the catalogue's prices. The file keeps each node's kernels, so the app re-prices it for
whatever catalogue kinds the Devices page holds. Run it again after the catalogue or the kernels change::

    python scripts/make_default_sample.py
"""

from __future__ import annotations

from pathlib import Path

import placement
from placement.modelling.builders import build_transformer
from placement.perf.transformer import MODELS

OUT = Path(__file__).resolve().parent.parent / "sample_graphs" / "models" / "llama3_8b_training.json"
SEQUENCE, MICRO_BATCH = 4096, 1
INVENTORY = {"H100": 8, "A100": 4}
CPUS = 32


def main() -> None:
    """Build, price and write the default sample."""
    model = MODELS["llama3-8b"].with_changes(seq_length=SEQUENCE)
    problem = build_transformer(model, INVENTORY, cpus=CPUS, training=True, micro_batch=MICRO_BATCH)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(placement.problem_to_json(problem) + "\n", encoding="utf-8")
    print(f"wrote {OUT} ({len(problem.graph.nodes)} nodes)")


if __name__ == "__main__":
    main()
