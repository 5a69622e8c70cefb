"""Recompute chains of one layout, built lazily: the variants :func:`placement.perf.search.variants` lists, with
their memory from :class:`~placement.perf.memory.RecomputeMemory` (bit-equal to ``memory_breakdown``; tested).

The search bisects a chain on memory and the Pareto front scans a suffix of it, so most variants are never built.
"""

from __future__ import annotations

from .layout import Layout, Recompute, RecomputeMethod, stage_layers
from .memory import RecomputeMemory
from .params import PerfParams
from .spaces import SearchSpace
from .transformer import TransformerSpec


def _variant(split: Layout, **changes: object) -> Layout:
    """``split.with_changes(**changes)`` without validating again: only recompute fields change, to values
    :func:`variants` builds through the validating path (the tests compare both)."""
    out = object.__new__(Layout)
    out.__dict__.update(split.__dict__)
    out.__dict__.update(changes)
    return out


class _Chain:
    """One recompute chain of a split (:func:`variants`' order), its layouts and memory built on demand."""

    def __init__(self, sizer: RecomputeMemory, split: Layout, mode: Recompute, ks: range) -> None:
        self.sizer, self.split, self.mode, self.ks = sizer, split, mode, ks
        self.layouts: dict[int, Layout] = {}
        self.mems: dict[int, float] = {}

    def __len__(self) -> int:
        return len(self.ks)

    def layout(self, i: int) -> Layout:
        if i not in self.layouts:
            if self.mode is Recompute.NONE:
                lay = self.split
            elif self.mode is Recompute.SELECTIVE:
                lay = _variant(self.split, recompute=Recompute.SELECTIVE)
            else:
                lay = _variant(
                    self.split, recompute=Recompute.FULL, recompute_method=RecomputeMethod.BLOCK,
                    recompute_layers=self.ks[i],
                )  # fmt: skip
            self.layouts[i] = lay
        return self.layouts[i]

    def memory(self, i: int) -> float:
        if i not in self.mems:
            self.mems[i] = self.sizer.total(self.layout(i))
        return self.mems[i]


def _chains(space: SearchSpace, model: TransformerSpec, params: PerfParams, split: Layout) -> list[_Chain]:
    """:func:`variants` of ``split``, lazily (the test suite checks both give the same layouts and memory)."""
    sizer = RecomputeMemory(model, split, params)
    out = []
    for mode in space.recompute:
        if mode is Recompute.FULL:
            chunk = max(stage_layers(model, split)) // split.virtual_stages
            ks = range(1, chunk + 1) if space.partial_recompute else range(chunk, chunk + 1)
        else:
            ks = range(1)
        out.append(_Chain(sizer, split, mode, ks))
    return out
