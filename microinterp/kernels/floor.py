"""FLOOR: ``std::floor`` of every float32 element (``micro/kernels/floor.cc``, ``reference/floor.h``; no Prepare in
TFLM, Eval requires FLOAT32). NaNs keep their bits (a signalling NaN stays signalling, as in the wheel). See :mod:`._float_unary` for the checks."""

from __future__ import annotations

from .. import libm
from ._float_unary import FloatUnary, nan_passthrough

KERNEL = FloatUnary("FLOOR", nan_passthrough(libm.floorf), same_shape=False)
