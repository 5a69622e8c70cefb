"""Borrowed arrays (placement/exact/borrow.py): the same memory, no reference counts in compiled code."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from placement.exact.borrow import BorrowedArray, borrow, borrow_all


class _Pair(NamedTuple):
    values: np.ndarray
    grid: np.ndarray
    scale: float


@njit(inline="always")
def _first_above(k, a, b, c, d):
    for m in range(3):
        if a[(k + m) % a.shape[0]] > 0.99:
            return b[m]
        if c[m] > 2.0:
            return d[m]
    return 0.0


@njit
def _sum_plain(n, a, b, c, d):
    s = 0.0
    for k in range(n):
        s += _first_above(k, a, b, c, d)
    return s


@njit
def _sum_borrowed(n, a0, b0, c0, d0):
    a, b, c, d = borrow_all((a0, b0, c0, d0))
    s = 0.0
    for k in range(n):
        s += _first_above(k, a, b, c, d)
    return s


@njit
def _write_through(values, grid):
    pair = borrow_all(_Pair(values, grid, 2.0))
    pair.grid[1, 0] = pair.values.sum() * pair.scale  # fields by name: still a _Pair
    alone = borrow(values)
    alone[0] = grid.shape[1]
    return pair.grid.shape[0] + alone.shape[0]


def _increfs(fn) -> int:
    return sum(ir.count("call void @NRT_incref") for ir in fn.inspect_llvm().values())


def test_a_borrowed_array_is_the_same_memory_with_its_shape_and_fields():
    values = np.array([1.0, 2.0, 3.0])
    grid = np.zeros((2, 5))
    assert _write_through(values, grid) == 2 + 3
    assert grid[1, 0] == 12.0  # written through the borrowed named tuple's array
    assert values[0] == 5.0  # written through the borrowed array


def test_borrowed_helpers_compute_the_same_and_count_no_references():
    rng = np.random.default_rng(3)
    arrays = [rng.random(5) * 3.0 for _ in range(4)]
    assert _sum_borrowed(50, *arrays) == _sum_plain(50, *arrays)
    assert _increfs(_sum_plain) > 0  # the inlined helper's arrays are counted ...
    assert _increfs(_sum_borrowed) == 0  # ... unless borrowed


def test_only_arrays_are_borrowed_and_only_once():
    from numba import types

    from placement.exact.borrow import _borrowed_type

    array = types.Array(types.float64, 2, "C")
    assert isinstance(_borrowed_type(array), BorrowedArray)
    assert _borrowed_type(_borrowed_type(array)) == _borrowed_type(array)
    assert _borrowed_type(types.float64) == types.float64
