"""CEIL: ``std::ceil`` of every float32 element (``micro/kernels/ceil.cc``, ``reference/ceil.h``; Prepare checks
FLOAT32 and equal shapes). NaNs keep their bits (a signalling NaN stays signalling, as in the wheel). See :mod:`._float_unary`."""

from __future__ import annotations

from .. import libm
from ._float_unary import FloatUnary, nan_passthrough

KERNEL = FloatUnary("CEIL", nan_passthrough(libm.ceilf), same_shape=True)
