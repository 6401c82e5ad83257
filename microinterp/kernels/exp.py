"""EXP: ``std::exp`` of every float32 element, i.e. the C library's ``expf`` (``micro/kernels/exp.cc``,
``reference/exp.h``; Prepare checks FLOAT32 and equal shapes). See :mod:`._float_unary`."""

from __future__ import annotations

from .. import libm
from ._float_unary import FloatUnary

KERNEL = FloatUnary("EXP", libm.expf, same_shape=True)
