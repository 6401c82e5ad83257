"""Streamlined, exact forms of TFLM's requantization primitives for the hot paths of ADD/SUB/MUL/FULLY_CONNECTED.

``quant.py`` spells the TFLM functions out literally (and stays the reference); these compute the same values in
fewer NumPy passes, for non-negative multipliers ``M`` (what QuantizeMultiplier produces) and int32-range inputs:

* ``SRDHM(x, M)`` = ``trunc((x*M + (x*M >= 0 ? 2^30 : 1 - 2^30)) / 2^31)`` = ``(x*M + 2^30) >> 31`` (floor shift).
  Proof for ``p = x*M < 0``: ``trunc((p + 1 - 2^30) / 2^31) = -floor((2^30 - 1 - p) / 2^31)``, and
  ``floor((p + 2^30) / 2^31) = -ceil((-p - 2^30) / 2^31) = -floor((2^30 - 1 - p) / 2^31)``. The saturating case
  ``x == M == INT32_MIN`` cannot occur with ``M >= 0``.
* ``RDBPOT(x, e)`` (round half away from zero) = ``(x + 2^(e-1) - (x < 0)) >> e`` for ``e >= 1``, ``x`` for ``e == 0``:
  for ``x >= 0`` it is round-half-up; for ``x < 0`` subtracting 1 first turns floor's half-up into half-down.

``tests/kernels/test_fixedpoint.py`` checks both against ``quant.py`` around every rounding boundary.
"""

from __future__ import annotations

import numpy as np

from ..quant import wrap_int32


def srdhm(x: np.ndarray, m) -> np.ndarray:
    """SaturatingRoundingDoublingHighMul(x, M) for int64 ``x`` (int32 values) and ``M >= 0``."""
    p = x * np.asarray(m, dtype=np.int64)
    p += 1 << 30
    p >>= 31
    return p


def rdbpot(x: np.ndarray, e) -> np.ndarray:
    """RoundingDivideByPOT(x, e), ``e >= 0`` (scalar or broadcasting array), on int64 ``x``; returns a new array."""
    e = np.asarray(e, dtype=np.int64)
    if e.ndim == 0:
        if e == 0:
            return np.array(x, dtype=np.int64, copy=True)
        y = x - (x < 0)
        y += 1 << (int(e) - 1)
        y >>= int(e)
        return y
    half = (np.int64(1) << e) >> 1
    y = x + half
    y -= (x < 0) & (e > 0)
    y >>= e
    return y


def mbqm(x: np.ndarray, m, shift) -> np.ndarray:
    """TFLM's double-rounding MultiplyByQuantizedMultiplier(int32 x, M, shift) on int64 ``x``."""
    shift = np.asarray(shift, dtype=np.int64)
    x = np.asarray(x, dtype=np.int64)
    if (shift > 0).any():
        x = wrap_int32(x << np.maximum(shift, 0))
    return rdbpot(srdhm(x, m), np.maximum(-shift, 0))


def mbqm_smaller_than_one_exp(x: np.ndarray, m, shift) -> np.ndarray:
    """MultiplyByQuantizedMultiplierSmallerThanOneExp: ``RDBPOT(SRDHM(x, M), -shift)``, ``shift <= 0``."""
    return rdbpot(srdhm(np.asarray(x, dtype=np.int64), m), -np.asarray(shift, dtype=np.int64))
