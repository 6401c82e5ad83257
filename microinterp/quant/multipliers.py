"""Integer ranges and quantized multipliers (``kernels/internal/quantization_util.cc``)."""

from __future__ import annotations

import math

import numpy as np


class QuantizationOverflow(ValueError):
    """A quantity TFLM's Prepare refuses because it overflows int32 (e.g. an activation bound / a tiny output scale);
    :func:`microinterp.kernels.base.prepare_ops` turns it into the op's PrepareError."""


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
    if not math.isfinite(real):
        raise QuantizationOverflow(f"quantization multiplier {real} is not finite (a zero, NaN or infinite scale, "
                                   "or a NaN parameter)")
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
        raise QuantizationOverflow(f"multiplier {real} is not smaller than one")
    return m, shift


def quantize_multiplier_greater_than_one(real: float) -> tuple[int, int]:
    """QuantizeMultiplierGreaterThanOne: requires real > 1, returns (M, left_shift >= 0)."""
    m, shift = quantize_multiplier(real)
    if shift < 0:
        raise QuantizationOverflow(f"multiplier {real} is not greater than one")
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
    return math.floor(abs(x) + 0.5) * (1 if x >= 0 else -1)
