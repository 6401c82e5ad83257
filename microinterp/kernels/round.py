"""ROUND: TFLM's ``RoundToNearest`` on every float32 element (``micro/kernels/round.cc``, ``reference/round.h``;
Prepare checks FLOAT32 and equal shapes).

``f = floor(x); d = x - f``; ``f`` if ``d < 0.5`` or (``d == 0.5`` and ``static_cast<int>(f)`` is even), else
``f + 1`` -- ties to even, computed in float32. Pitfalls kept: a value in (-0.5, 0) gives +0.0 (``-1 + 1``), -0.5
gives +0.0, NaN and +-inf come out of ``f + 1`` unchanged; ``static_cast<int>`` of a float beyond int32 is INT32_MIN
on x86 (even), but such floats are integers (``d == 0``) anyway.
"""

from __future__ import annotations

import numpy as np

from .. import libm
from ._float_unary import FloatUnary
from ._qutil import to_int32_x86


def round_to_nearest(x: np.ndarray) -> np.ndarray:
    f = libm.floorf(x)
    with np.errstate(invalid="ignore", over="ignore"):
        d = np.subtract(x, f, dtype=np.float32)
        even = to_int32_x86(f) % 2 == 0
        keep = (d < np.float32(0.5)) | ((d == np.float32(0.5)) & even)
        return np.where(keep, f, f + np.float32(1.0)).astype(np.float32)


KERNEL = FloatUnary("ROUND", round_to_nearest, same_shape=True)
