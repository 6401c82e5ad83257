"""NEG: ``-x`` of every float32 element (``micro/kernels/neg.cc``, ``reference/neg.h``; no Prepare in TFLM, Eval
takes FLOAT32 only -- integer NEG fails there). The sign bit flips: NaN payloads keep their bits, -0.0 <-> 0.0.
See :mod:`._float_unary`."""

from __future__ import annotations

import numpy as np

from ._float_unary import FloatUnary

KERNEL = FloatUnary("NEG", np.negative, same_shape=False)
