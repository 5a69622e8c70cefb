"""Microbenchmark: what a helper call costs the lattice kernel, by how its arrays reach it.

The lattice kernel (:func:`placement.exact.lattice_search.lattice_dp`) does 100-250 ns of work
per ideal pair, 6-22 M pairs per solve on Inception-v3, so a helper called per pair must cost
next to nothing. numba counts references (``NRT_incref``/``NRT_decref``: an atomic add through a
non-inlined call) for every array that enters a call or is bound to a new name, and its pruning
pass removes them only in simple control flow. This script times one loop of ``--n`` iterations
doing the same small work (a search over three entries with two early exits) on four arrays:

* ``written out``          - the work in the loop itself (the reference);
* ``inline helper``        - an ``inline="always"`` helper with early ``return``s;
* ``inline, borrowed``     - the same helper given borrowed arrays (:mod:`placement.exact.borrow`);
* ``call, borrowed``       - a plain ``@njit`` helper given borrowed arrays;
* ``two inline helpers``   - a helper calling the first one twice (nested inlining) ...
* ``two inline, borrowed`` - ... and the same with borrowed arrays;
* ``closure``              - the helper defined inside the loop's function, capturing the arrays.

Columns: nanoseconds per iteration (best of ``--repeat``, one thread) and the reference-count
increments left in the loop's compiled code. On a loaded machine compare within one run.

Usage: python scripts/bench_kernel_calls.py [--n N] [--repeat R]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from numba import njit

from placement.exact.borrow import borrow_all


@njit(inline="always")
def _first(k, a, b, c, d):
    for m in range(3):
        if a[(k + m) % 5] > 0.99:
            return b[m]
        if c[m] > 2.0:
            return d[m]
    return 0.0


@njit
def _first_call(k, a, b, c, d):
    for m in range(3):
        if a[(k + m) % 5] > 0.99:
            return b[m]
        if c[m] > 2.0:
            return d[m]
    return 0.0


@njit(inline="always")
def _two(k, a, b, c, d):
    return _first(k, a, b, c, d) + _first(k + 1, b, a, d, c)


@njit
def written_out(n, arrays):
    a, b, c, d = arrays
    s = 0.0
    for k in range(n):
        x = 0.0
        for m in range(3):
            if a[(k + m) % 5] > 0.99:
                x = b[m]
                break
            if c[m] > 2.0:
                x = d[m]
                break
        s += x
    return s


@njit
def inline_helper(n, arrays):
    a, b, c, d = arrays
    s = 0.0
    for k in range(n):
        s += _first(k, a, b, c, d)
    return s


@njit
def inline_borrowed(n, arrays):
    a, b, c, d = borrow_all(arrays)
    s = 0.0
    for k in range(n):
        s += _first(k, a, b, c, d)
    return s


@njit
def call_borrowed(n, arrays):
    a, b, c, d = borrow_all(arrays)
    s = 0.0
    for k in range(n):
        s += _first_call(k, a, b, c, d)
    return s


@njit
def two_inline(n, arrays):
    a, b, c, d = arrays
    s = 0.0
    for k in range(n):
        s += _two(k, a, b, c, d)
    return s


@njit
def two_inline_borrowed(n, arrays):
    a, b, c, d = borrow_all(arrays)
    s = 0.0
    for k in range(n):
        s += _two(k, a, b, c, d)
    return s


@njit
def closure(n, arrays):
    a, b, c, d = arrays

    def first(k):
        for m in range(3):
            if a[(k + m) % 5] > 0.99:
                return b[m]
            if c[m] > 2.0:
                return d[m]
        return 0.0

    s = 0.0
    for k in range(n):
        s += first(k)
    return s


VARIANTS = {
    "written out": written_out,
    "inline helper": inline_helper,
    "inline, borrowed": inline_borrowed,
    "call, borrowed": call_borrowed,
    "two inline helpers": two_inline,
    "two inline, borrowed": two_inline_borrowed,
    "closure": closure,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10_000_000, help="iterations per loop")
    parser.add_argument("--repeat", type=int, default=5, help="runs per variant (the best is kept)")
    args = parser.parse_args()
    arrays = tuple(np.random.default_rng(k).random(5) for k in range(4))
    print(f"{'variant':<22} {'ns/iter':>8} {'increfs':>8}")
    for name, fn in VARIANTS.items():
        fn(10, arrays)  # compile
        best = float("inf")
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            fn(args.n, arrays)
            best = min(best, time.perf_counter() - t0)
        increfs = sum(ir.count("call void @NRT_incref") for ir in fn.inspect_llvm().values())
        print(f"{name:<22} {best / args.n * 1e9:>8.2f} {increfs:>8}")


if __name__ == "__main__":
    main()
