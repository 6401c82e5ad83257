"""FLOOR_MOD: the remainder with the divisor's sign (``micro/kernels/floor_mod.cc``, ``reference/floor_mod.h``).

``r = std::fmod(x, y)`` in float (the C library's ``fmodf``, exact); ``r + y`` when ``r != 0`` and the signs of
``y`` and ``r`` differ, else ``r`` (the addition in float32). No zero check: ``fmod(x, 0)`` is NaN. FLOAT32 only;
see :mod:`._float_binary` for shapes and checks.
"""

from __future__ import annotations

import numpy as np

from ._float_binary import FloatBinary


def floor_mod(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    r = np.fmod(a, b, dtype=np.float32)
    adjust = (r != 0) & ((b < 0) != (r < 0))
    return np.where(adjust, r + b, r).astype(np.float32)


KERNEL = FloatBinary("FLOOR_MOD", floor_mod)
