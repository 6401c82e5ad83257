"""FLOOR_DIV: ``float(std::floor(double(x) / double(y)))`` element-wise (``micro/kernels/floor_div.cc``,
``reference/floor_div.h``): the quotient is taken in double, floored, rounded back to float32. Eval first scans the
whole divisor and fails on any zero ("Division by 0"; here :class:`~microinterp.errors.InvokeError`). FLOAT32
only; see :mod:`._float_binary` for shapes and checks.
"""

from __future__ import annotations

import numpy as np

from ._float_binary import FloatBinary


def floor_div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.floor(np.divide(a, b, dtype=np.float64)).astype(np.float32)


def _zero_divisor(b: np.ndarray) -> str | None:
    return "Division by 0" if (b == 0).any() else None


KERNEL = FloatBinary("FLOOR_DIV", floor_div, _zero_divisor)
