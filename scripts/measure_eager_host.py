"""Measure the host's time per aten operation of an eager training layer, in trivial ``add_`` operations.

Times forward + backward of :mod:`placement.perf.torch_model` layers at tiny shapes on the CPU (so that the
arithmetic is negligible and what is left is Python, the dispatcher and autograd), divides by the number of
aten operations a layer issues (counted with a ``TorchDispatchMode``) and by the time of one in-place
``x.add_(1.0)`` on a one-element tensor (what ``calibrate`` times as the launch cost). The result is
``placement.perf.eager.HOST_OP_TRIVIAL_OPS``. Usage: ``PYTHONPATH=. python scripts/measure_eager_host.py``.

``--ops-on cuda`` also lists, by name, the aten operations one bf16 autocast layer dispatches on that device
(forward and backward), to check :func:`placement.perf.eager.layer_ops` against the device's own dispatch
(whether RMSNorm is composite or ``_fused_rms_norm`` there, for one).
"""

from __future__ import annotations

import argparse
import collections
import time

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from placement.perf.torch_model import build
from placement.perf.transformer import Norm, TransformerSpec


class _Count(TorchDispatchMode):
    def __init__(self) -> None:
        super().__init__()
        self.ops: collections.Counter[str] = collections.Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
        self.ops[str(func.overloadpacket)] += 1
        return func(*args, **(kwargs or {}))


def _best(fn, repeats: int = 30) -> float:  # type: ignore[no-untyped-def]
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def layer_ops_on(device: str) -> collections.Counter[str]:
    """Aten operations of one Llama-style layer's forward and backward under bf16 autocast on ``device``."""
    base = dict(hidden=256, heads=4, seq_length=64, vocab=128, ffn_hidden=512, query_groups=2, swiglu=True,
                norm=Norm.RMSNORM, rope=True, bias=False, dropout=False, tied_embeddings=False)  # fmt: skip
    totals = []
    for layers in (1, 2):
        model = build(TransformerSpec(layers=layers, **base), device)  # type: ignore[arg-type]
        tokens = torch.randint(0, 128, (1, 65), device=device)
        with _Count() as count:
            with torch.autocast(torch.device(device).type, dtype=torch.bfloat16):
                loss = model(tokens[:, :-1], tokens[:, 1:])
            loss.backward()
        totals.append(count.ops)
    return totals[1] - totals[0]


def main() -> None:
    """Print the aten operations per layer, seconds per layer and per trivial op, and their ratio."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops-on", default=None, help="also list one layer's aten operations on this device")
    args = parser.parse_args()
    if args.ops_on is not None:
        ops_by_name = layer_ops_on(args.ops_on)
        print(f"{sum(ops_by_name.values())} aten ops per layer on {args.ops_on}:")
        print(", ".join(f"{name} {n}" for name, n in ops_by_name.most_common()))
    torch.set_num_threads(1)
    x = torch.zeros(1)

    def trivial() -> None:
        for _ in range(100):
            x.add_(1.0)

    base = dict(hidden=32, heads=16, seq_length=4, vocab=16, ffn_hidden=8, query_groups=8, swiglu=True,
                norm=Norm.RMSNORM, rope=True, bias=False, dropout=False, tied_embeddings=False)  # fmt: skip
    seconds, counts = {}, {}
    for layers in (1, 3):
        model = build(TransformerSpec(layers=layers, **base), "cpu")  # type: ignore[arg-type]
        tokens = torch.randint(0, 16, (1, 5))

        def step(model: torch.nn.Module = model, tokens: torch.Tensor = tokens) -> None:
            model(tokens[:, :-1], tokens[:, 1:]).backward()

        step()
        seconds[layers] = _best(step)
        with _Count() as count:
            step()
        counts[layers] = sum(count.ops.values())
    per_layer = (seconds[3] - seconds[1]) / 2
    ops = (counts[3] - counts[1]) / 2
    op = _best(trivial) / 100
    print(f"aten ops per layer {ops:.0f}; {per_layer * 1e6:.1f} us per layer; trivial add_ {op * 1e6:.2f} us")
    print(f"host time per aten op = {per_layer / ops / op:.2f} trivial ops")


if __name__ == "__main__":
    main()
