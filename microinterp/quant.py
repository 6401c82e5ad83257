"""Fixed-point primitives of TFLM/gemmlowp, vectorized over int64 NumPy arrays.

Everything here reproduces C integer semantics exactly (truncating division, arithmetic shifts, int32 wrap-around
where TFLM's C code wraps). Scalars in, scalars out works too. Sources: ``kernels/internal/quantization_util.cc``,
``kernels/internal/common.h`` and gemmlowp ``fixedpoint/fixedpoint.h`` (see docs/tflm-facts.md §4).
"""

from __future__ import annotations

import math

import numpy as np

INT32_MIN = -(1 << 31)
INT32_MAX = (1 << 31) - 1

QMIN = {"INT8": -128, "UINT8": 0, "INT16": -32768, "INT32": INT32_MIN}
QMAX = {"INT8": 127, "UINT8": 255, "INT16": 32767, "INT32": INT32_MAX}


# -- multipliers ---------------------------------------------------------------------------------------------------
def quantize_multiplier(real: float) -> tuple[int, int]:
    """TFLM QuantizeMultiplier: ``real ~= M * 2**(shift - 31)`` with M an int32 in [2^30, 2^31)."""
    real = float(real)
    if real == 0.0:
        return 0, 0
    q, shift = math.frexp(real)
    m = _round_half_away(q * (1 << 31))
    if m == (1 << 31):
        m //= 2
        shift += 1
    if shift < -31:
        return 0, 0
    return int(m), int(shift)


def quantize_multiplier_smaller_than_one_exp(real: float) -> tuple[int, int]:
    """QuantizeMultiplierSmallerThanOneExp: requires 0 < real < 1, returns (M, shift <= 0)."""
    m, shift = quantize_multiplier(real)
    if shift > 0:
        raise ValueError(f"multiplier {real} is not smaller than one")
    return m, shift


def quantize_multiplier_greater_than_one(real: float) -> tuple[int, int]:
    """QuantizeMultiplierGreaterThanOne: requires real > 1, returns (M, left_shift >= 0)."""
    m, shift = quantize_multiplier(real)
    if shift < 0:
        raise ValueError(f"multiplier {real} is not greater than one")
    return m, shift


def quantize_multipliers(reals: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-channel :func:`quantize_multiplier` -> (int64 multipliers, int64 shifts)."""
    pairs = [quantize_multiplier(float(r)) for r in np.ravel(reals)]
    return (np.array([p[0] for p in pairs], dtype=np.int64), np.array([p[1] for p in pairs], dtype=np.int64))


def downscale_int32_to_int16_multiplier(m: int) -> int:
    """DownScaleInt32ToInt16Multiplier: (M + 2^15) >> 16, saturating at 32767."""
    return min((int(m) + (1 << 15)) >> 16, 32767)


def _round_half_away(x: float) -> int:
    """std::round on a double."""
    return int(math.floor(abs(x) + 0.5)) * (1 if x >= 0 else -1)


# -- core integer arithmetic ---------------------------------------------------------------------------------------
def wrap_int32(x):
    """Reinterpret int64 values as C int32 (two's complement wrap-around)."""
    return ((np.asarray(x, dtype=np.int64) + (1 << 31)) & 0xFFFFFFFF) - (1 << 31)


def srdhm(a, b):
    """SaturatingRoundingDoublingHighMul(a, b) on int32 values held in int64."""
    a = np.asarray(a, dtype=np.int64)
    b = np.asarray(b, dtype=np.int64)
    ab = a * b
    nudge = np.where(ab >= 0, 1 << 30, 1 - (1 << 30))
    s = ab + nudge
    # C division by 2^31 truncates toward zero.
    res = np.where(s >= 0, s >> 31, -((-s) >> 31))
    overflow = (a == INT32_MIN) & (b == INT32_MIN)
    return np.where(overflow, INT32_MAX, res)


def rdbpot(x, exponent):
    """RoundingDivideByPOT(x, exponent): arithmetic shift right rounding half away from zero."""
    x = np.asarray(x, dtype=np.int64)
    e = np.asarray(exponent, dtype=np.int64)
    mask = (np.int64(1) << e) - 1
    remainder = x & mask
    threshold = (mask >> 1) + (x < 0)
    return (x >> e) + (remainder > threshold)


def mbqm(x, multiplier, shift):
    """MultiplyByQuantizedMultiplier for int32 accumulators (TFLM's double-rounding version).

    ``RDBPOT(SRDHM(x * 2^max(shift, 0) [int32 wrap], M), max(-shift, 0))``. Arguments broadcast (per-channel
    multipliers and shifts along the last axis work as-is).
    """
    shift = np.asarray(shift, dtype=np.int64)
    left = np.maximum(shift, 0)
    right = np.maximum(-shift, 0)
    x = np.asarray(x, dtype=np.int64)
    if np.any(left):
        x = wrap_int32(x << left)
    return rdbpot(srdhm(x, multiplier), right)


def mbqm_int64(x, multiplier, shift):
    """MultiplyByQuantizedMultiplier for int64 accumulators (16x8 kernels): one rounding, 16-bit multiplier.

    ``m16 = (M + 2^15) >> 16`` (or 0x7FFF when M >= 0x7FFF0000); ``t = 15 - shift``;
    ``int32((x * m16 + 2^(t-1)) >> t)``. Computed with Python ints where int64 could overflow.
    """
    x = np.asarray(x, dtype=np.int64)
    m = np.asarray(multiplier, dtype=np.int64)
    m16 = np.where(m < 0x7FFF0000, (m + (1 << 15)) >> 16, 0x7FFF)
    t = 15 - np.asarray(shift, dtype=np.int64)
    # |x| < 2^48 and m16 < 2^15 keep the product inside int64 (TFLM's own precondition).
    total = x * m16 + (np.int64(1) << (t - 1))
    return wrap_int32(total >> t)


def mbqm_smaller_than_one_exp(x, multiplier, shift):
    """MultiplyByQuantizedMultiplierSmallerThanOneExp: RDBPOT(SRDHM(x, M), -shift)."""
    return rdbpot(srdhm(x, multiplier), -np.asarray(shift, dtype=np.int64))


def mbqm_greater_than_one(x, multiplier, left_shift):
    """MultiplyByQuantizedMultiplierGreaterThanOne: SRDHM(x * 2^left_shift, M)."""
    return srdhm(np.asarray(x, dtype=np.int64) << np.asarray(left_shift, dtype=np.int64), multiplier)


def saturating_left_shift(x, k):
    """gemmlowp SaturatingRoundingMultiplyByPOT for k >= 0 (clamps to int32 range)."""
    x = np.asarray(x, dtype=np.int64)
    return np.clip(x << k, INT32_MIN, INT32_MAX)


# -- activations ---------------------------------------------------------------------------------------------------
def activation_range(activation: str, scale: float, zero_point: int, type_name: str = "INT8") -> tuple[int, int]:
    """CalculateActivationRangeQuantized: clamp bounds from a fused activation, quantized with float32 roundf."""
    qmin, qmax = QMIN[type_name], QMAX[type_name]

    def q(f: float) -> int:
        v = np.float32(f) / np.float32(scale)
        return int(zero_point) + _round_half_away(float(v))

    if activation == "RELU":
        return max(qmin, q(0.0)), qmax
    if activation == "RELU6":
        return max(qmin, q(0.0)), min(qmax, q(6.0))
    if activation == "RELU_N1_TO_1":
        return max(qmin, q(-1.0)), min(qmax, q(1.0))
    return qmin, qmax


def activation_range_float(activation: str) -> tuple[float, float]:
    """CalculateActivationRange for float kernels."""
    if activation == "RELU":
        return 0.0, float("inf")
    if activation == "RELU6":
        return 0.0, 6.0
    if activation == "RELU_N1_TO_1":
        return -1.0, 1.0
    return float("-inf"), float("inf")
