"""Exact sums for the lattice kernel: Shewchuk expansions, and the error bound of its running sums.

Every load the kernel stores is a correctly rounded sum of per-node terms, the same number
:func:`math.fsum` gives (so the evaluator agrees bit for bit). Two tools:

* **Expansions** (:func:`_grow`, :func:`_round`, :func:`_round_sum`, :func:`exact_sum`): a sum
  kept as non-overlapping doubles, ``msum`` and the final rounding step of CPython's
  ``math.fsum``. Exact for any finite inputs; a sum that overflows is ``inf``. ``MAXP`` bounds
  the components: non-overlapping doubles span at most 2098 / 53 + 1 = 41 of them.
* **Running sums with an error bound** (float, cheap, used to decide most tests). Derivation,
  with ``u = 2**-53`` the unit roundoff (round to nearest) and ``EPS = 2 u = 2**-52``:

  1. One addition ``r = fl(a + v)`` has ``r = (a + v)(1 + d)``, ``|d| <= u``, so
     ``|r - (a + v)| <= u |a + v| <= u |r| / (1 - u) <= 2 u |r| = EPS |r|``.
  2. A running sum ``r_k = fl(r_{k-1} + v_k)`` of exact terms ``v_k`` (``r_0 = 0``) differs
     from the exact sum ``S_n`` by at most the sum of the step errors, since each step adds
     an exact term to the previous computed value:
     ``|r_n - S_n| <= sum_k |r_k - (r_{k-1} + v_k)| <= E := sum_k EPS |r_k|``.
  3. The kernel accumulates ``e = fl(sum_k EPS |r_k|)`` in floating point (``stage_errors`` per search
     depth, restored on pop, never subtracted back); a float sum of ``n`` non-negative terms
     is at least ``E (1 - n u)``. With ``n u <= 1/4`` (any realistic ``n < 2**51``),
     ``2 e >= 1.5 E``, so ``[r - 2 e, r + 2 e]`` holds ``S_n`` with slack ``>= 0.5 E``.
  4. Forming ``r - 2 e`` and ``r + 2 e`` rounds once more, by at most ``u (|r| + 2 e)``.
     If at least one term was added, ``E >= EPS |r_n| = 2 u |r|``, so ``u |r| <= E / 2``
     and the slack of step 3 (``>= 0.5 E``, less ``2 u e``, negligible) covers it; with no
     term added ``r = e = 0`` exactly. Hence the *computed* ``lo = fl(r - 2 e)`` and
     ``hi = fl(r + 2 e)`` satisfy ``lo <= S_n <= hi``, and the correctly rounded sum
     ``fl(S_n)`` too (rounding is monotone and ``lo``, ``hi`` are doubles).
  5. Sums of two running sums (a stage's compute + its communication, ``r = fl(a + b)``)
     carry ``e = e_a + e_b + EPS |r|`` (steps 1-2 with one more addition); differences of
     two prefix sums (pair mode, ``d = fl(A - B)``) carry ``e_A + e_B + EPS |d|`` likewise,
     where a prefix sum over groups adds each group's correctly rounded sum ``v``
     (``math.fsum``, off by at most ``u |v| <= EPS |v|``) with ``EPS (|v| + |r|)`` per
     addition (its rounding and the group sum's). Both are then widened by ``2 e`` as above.
  6. The products ``EPS |r|`` are exact (a power of two times a double) except in the
     subnormal range, where the computed product is still ``>= 2**(e - 52)`` for ``r``'s
     exponent ``e`` (that power of two is a double and rounding is monotone), above the
     addition's error of at most half an ulp of ``r``, ``2**(e - 53)``.
  7. Additive terms are ``>= 0``, so a lower end below 0 is raised to 0 (still a bound).

  Where ``[lo, hi]`` cannot decide a comparison, or a value must be stored, the kernel
  rebuilds the stage's expansions from its nodes and uses the correctly rounded values.
  The brute-force tests with magnitudes from 1e-9 to 1e16 (``tests/test_dp_exact.py``,
  ``tests/test_dp_pairs.py``) exercise both branches.
"""

from __future__ import annotations

import numpy as np
from numba import njit

#: ``2 u`` for the unit roundoff ``u = 2**-52 / 2``: one addition's error is at most ``EPS * |result|`` (step 1).
EPS = 2.0**-52

#: Room for one expansion: non-overlapping doubles span at most 2098 / 53 + 1 = 41 components.
MAXP = 48


@njit(cache=True, nogil=True)
def _grow(p, n, x):
    """Add ``x`` exactly to the expansion ``p[:n]`` (math.fsum's msum step); returns the new length."""
    if n > 0 and not np.isfinite(p[n - 1]):
        return n  # an overflowed sum stays inf (see the module docstring)
    if not np.isfinite(x):
        p[0] = x
        return 1
    i = 0
    for k in range(n):
        y = p[k]
        if abs(x) < abs(y):
            x, y = y, x
        hi = x + y
        if not np.isfinite(hi):
            p[0] = hi
            return 1
        lo = y - (hi - x)
        if lo != 0.0:
            p[i] = lo
            i += 1
        x = hi
    if x != 0.0 or i == 0:
        p[i] = x
        i += 1
    return i


@njit(cache=True, nogil=True)
def _round(p, n):
    """The expansion ``p[:n]`` rounded correctly to a double (math.fsum's final step)."""
    if n == 0:
        return 0.0
    for k in range(n):
        if not np.isfinite(p[k]):
            return np.inf if p[k] > 0 else -np.inf
    n -= 1
    hi = p[n]
    lo = 0.0
    while n > 0:
        x = hi
        n -= 1
        y = p[n]
        hi = x + y
        yr = hi - x
        lo = y - yr
        if lo != 0.0:
            break
    if n > 0 and ((lo < 0.0 and p[n - 1] < 0.0) or (lo > 0.0 and p[n - 1] > 0.0)):
        y = lo * 2.0
        x = hi + y
        yr = x - hi
        if y == yr:
            hi = x
    return hi


@njit(cache=True, nogil=True)
def _round_sum(a, na, b, nb, c, nc, tmp):
    """Correctly rounded sum of up to three expansions (``nb``/``nc`` may be 0)."""
    n = 0
    for k in range(na):
        tmp[k] = a[k]
    n = na
    for k in range(nb):
        n = _grow(tmp, n, b[k])
    for k in range(nc):
        n = _grow(tmp, n, c[k])
    return _round(tmp, n)


@njit(cache=True, nogil=True)
def exact_sum(values):
    """Correctly rounded sum of ``values`` (``math.fsum``; ``inf`` on overflow)."""
    p = np.empty(MAXP)
    n = 0
    for v in values:
        n = _grow(p, n, v)
        if not np.isfinite(p[n - 1]):
            return p[n - 1]
    return _round(p, n)
