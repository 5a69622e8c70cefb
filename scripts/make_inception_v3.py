"""Write the Inception-v3 layer graphs ``sample_graphs/ours/inception_v3_{inference,training}.json``.

How they are made:

1. torchvision's ``inception_v3(weights=None, aux_logits=False, init_weights=False)`` in eval
   mode, batch 32 at 299 x 299, exported with the pinned CPU torch to ONNX (opset 17, legacy
   exporter, ``do_constant_folding=False`` so each BatchNorm stays its own node);
2. imported by :func:`placement.modelling.onnx.import_onnx` (the perf model's kernels, H100 reference
   accelerator and the other presets; weights as node sizes). Every ONNX node is one torch
   layer here (Conv, BatchNorm, ReLU, pools, Concat, Flatten, Gemm): 309 layers;
3. the training graph by :func:`placement.modelling.training.training_graph` (backward nodes priced by
   their kernels' backward, colour classes tying each layer to its gradient);
4. 6 accelerators of 16 GB and 1 CPU core, like the other throughput samples.

torchvision is not a dependency of the package: install the wheel matching the pinned torch
into a scratch folder (``pip install --no-deps --target /tmp/tv torchvision==0.28.0``) and run
``PYTHONPATH=.:/tmp/tv python scripts/make_inception_v3.py``. Its compiled ops may not load
next to a newer torch; only the model definitions are needed, so their fake-op registration
module is skipped.

Usage: python scripts/make_inception_v3.py [--onnx FILE]  (``--onnx``: also keep the ONNX file)
"""

from __future__ import annotations

import argparse
import io
import sys
import types
from pathlib import Path

from placement import Devices, Problem
from placement.io import problem_to_json
from placement.modelling.onnx import import_onnx
from placement.modelling.pricing import price_graph
from placement.modelling.training import training_graph
from placement.perf.hardware import ACCELERATORS

OUT = Path(__file__).resolve().parent.parent / "sample_graphs" / "ours"
BATCH = 32


def export_onnx() -> bytes:
    """torchvision's Inception-v3 (eval mode, batch ``BATCH``) as ONNX bytes."""
    # The compiled torchvision ops (nms etc.) are not needed and may not match the pinned torch.
    sys.modules.setdefault("torchvision._meta_registrations", types.ModuleType("torchvision._meta_registrations"))
    import torch
    import torchvision

    model = torchvision.models.inception_v3(weights=None, aux_logits=False, init_weights=False).eval()
    buffer = io.BytesIO()
    torch.onnx.export(
        model,
        torch.randn(BATCH, 3, 299, 299),
        buffer,
        dynamo=False,
        opset_version=17,
        do_constant_folding=False,
        input_names=["input"],
        output_names=["logits"],
    )
    return buffer.getvalue()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--onnx", help="also write the exported ONNX model here")
    args = parser.parse_args()
    data = export_onnx()
    if args.onnx:
        Path(args.onnx).write_bytes(data)
    kinds = list(ACCELERATORS)
    kinds.insert(0, kinds.pop(kinds.index("H100")))
    graph = import_onnx(data, "inception_v3.onnx", kinds=kinds, max_bytes=len(data) + 1).graph
    devices = Devices.paper(6, 1, memory=16e9)
    for name, g in (("inference", graph), ("training", price_graph(training_graph(graph), kinds))):
        path = OUT / f"inception_v3_{name}.json"
        path.write_text(problem_to_json(Problem(g, devices)) + "\n")
        print(f"{path}: {len(g.nodes)} nodes")


if __name__ == "__main__":
    main()
