"""Fused-activation ranges, quantized and float (``kernels/internal/common.h``)."""

from __future__ import annotations

import numpy as np

from .multipliers import QMAX, QMIN, QuantizationOverflow, _round_half_away


def activation_range(activation: str, scale: float, zero_point: int, type_name: str = "INT8") -> tuple[int, int]:
    """CalculateActivationRangeQuantized: clamp bounds from a fused activation, quantized with float32 roundf;
    like TFLM's Quantize it refuses (QuantizationOverflow) a bound whose ``round(f / scale)`` leaves int32."""
    qmin, qmax = QMIN[type_name], QMAX[type_name]

    def q(f: float) -> int:
        v = _round_half_away(float(np.float32(f) / np.float32(scale)))
        if not -(1 << 31) <= v <= 1 << 31:      # TFLM's Quantize: TF_LITE_ENSURE(no_integer_overflow...)
            raise QuantizationOverflow(f"{activation} bound {f} / output scale {scale} overflows int32")
        return int(zero_point) + v

    if activation == "RELU":
        return max(qmin, q(0.0)), qmax
    if activation == "RELU6":
        return max(qmin, q(0.0)), min(qmax, q(6.0))
    if activation == "RELU_N1_TO_1":
        return max(qmin, q(-1.0)), min(qmax, q(1.0))
    return qmin, qmax


FLT_MAX = float(np.finfo(np.float32).max)


def activation_range_float(activation: str) -> tuple[float, float]:
    """CalculateActivationRange for float kernels: TFLM clamps to [lowest, max] of float32 (an overflowing sum
    becomes FLT_MAX, not inf)."""
    if activation == "RELU":
        return 0.0, FLT_MAX
    if activation == "RELU6":
        return 0.0, 6.0
    if activation == "RELU_N1_TO_1":
        return -1.0, 1.0
    return -FLT_MAX, FLT_MAX


# ======================================================================================================================
# gemmlowp fixed-point functions and TFLM's int16 LUT helpers (SOFTMAX, LOGISTIC, TANH)
#
# Sources: gemmlowp ``fixedpoint/fixedpoint.h`` and TFLM ``kernels/internal/common.h``. Values are raw int32 fixed
# point numbers held in int64 arrays; ``Qk`` means k integer bits and 31 - k fractional bits (gemmlowp
# ``FixedPoint<int32_t, k>``). gemmlowp's non-saturating +, - and unary - are plain int32 operations, i.e. they wrap;
# we wrap them explicitly with :func:`wrap_int32` wherever they could overflow. ``F * G`` is :func:`srdhm`.
# ======================================================================================================================
