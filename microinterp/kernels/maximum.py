"""MAXIMUM: element-wise ``a > b ? a : b`` with broadcasting; raw values, no requantization.

See :mod:`._max_min` for TFLM's algorithm and pitfalls (quantization parameters are ignored).
"""

from __future__ import annotations

import numpy as np

from ._max_min import MaximumMinimum

KERNEL = MaximumMinimum("MAXIMUM", np.greater, np.maximum)
