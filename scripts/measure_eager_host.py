"""Measure the host's time per aten operation of an eager training layer, in trivial ``add_`` operations.

Times forward + backward of :mod:`placement.perf.torch_model` layers at tiny shapes on the CPU (so that the
arithmetic is negligible and what is left is Python, the dispatcher and autograd), divides by the number of
aten operations a layer issues (counted with a ``TorchDispatchMode``) and by the time of one in-place
``x.add_(1.0)`` on a one-element tensor (what ``calibrate`` times as the launch cost). The result is
``placement.perf.eager.HOST_OP_TRIVIAL_OPS``. Usage: ``PYTHONPATH=. python scripts/measure_eager_host.py``.
"""

from __future__ import annotations

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


def main() -> None:
    """Print the aten operations per layer, seconds per layer and per trivial op, and their ratio."""
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
