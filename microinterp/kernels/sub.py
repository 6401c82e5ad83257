"""SUB: TFLM ``micro/kernels/sub.cc``, ``sub_common.cc``, ``reference/sub.h``; the arithmetic is ADD's with ``a - b``.

Quantized int8/int16: the same three multipliers as ADD (left shift 20 / 15, ``T = 2 * max(s1, s2)``,
``m1 = s1/T``, ``m2 = s2/T``, ``mo = T / (2^L * s_out)``, each QuantizeMultiplierSmallerThanOneExp), then per element
``y = clamp(STOE(STOE((x1 - zp1) * 2^L, m1) - STOE((x2 - zp2) * 2^L, m2), mo) + zp_out)``. Pitfall: the mirrored
source computes these multipliers with float32 intermediates; the wheel (the oracle) widens the scales to double
first (docs/tflm-facts.md section 0), which is what is done here.

float32: ``clamp(x1 - x2)`` with the float activation range (+-FLT_MAX for NONE). int32: unquantized inputs *and*
output are required; wrap-around subtraction clamped to ``CalculateActivationRange<int32_t>`` of the fused activation.
Broadcasting up to rank 6 (``binary_common``). See ``add.py`` for the implementation (one gather for int8).
"""

from __future__ import annotations

from .add import AddSub, AddSubData

__all__ = ["KERNEL", "AddSubData"]

KERNEL = AddSub(-1, "SUB")
