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
    shifted = wrap_int32(np.asarray(x, dtype=np.int64) << np.asarray(left_shift, dtype=np.int64))
    return srdhm(shifted, multiplier)


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
def _trunc_div(num, den: int):
    """C integer division (truncation toward zero) of int64 arrays by a positive constant."""
    num = np.asarray(num, dtype=np.int64)
    q = np.abs(num) // den
    return np.where(num < 0, -q, q)


def rounding_half_sum(a, b):
    """gemmlowp RoundingHalfSum (int32): ``(a + b + sign(a + b)) / 2`` with C truncation, sign(0) = +1."""
    s = np.asarray(a, dtype=np.int64) + np.asarray(b, dtype=np.int64)
    return _trunc_div(s + np.where(s >= 0, 1, -1), 2)


def saturating_rounding_multiply_by_pot(x, exponent: int):
    """gemmlowp SaturatingRoundingMultiplyByPOT<exponent>: saturating left shift (exponent > 0) or rounding right
    shift (:func:`rdbpot`, exponent < 0). The threshold test of gemmlowp equals clamping ``x << exponent``."""
    if exponent > 0:
        return saturating_left_shift(x, exponent)
    if exponent < 0:
        return rdbpot(x, -exponent)
    return np.asarray(x, dtype=np.int64)


def rescale(x, src_integer_bits: int, dst_integer_bits: int):
    """gemmlowp Rescale<dst>(FixedPoint<int32, src>): SaturatingRoundingMultiplyByPOT<src - dst>."""
    return saturating_rounding_multiply_by_pot(x, src_integer_bits - dst_integer_bits)


_EXP_CONSTANT_TERM = 1895147668  # exp(-1/8) in Q0.31
_ONE_THIRD = 715827883  # 1/3 in Q0.31
#: exp_on_negative_values barrel shifter: (exponent E, exp(-2^E) in Q0.31), applied when integer_bits > E.
_EXP_BARREL = ((-2, 1672461947), (-1, 1302514674), (0, 790015084), (1, 290630308), (2, 39332535), (3, 720401),
               (4, 242))


def exp_on_interval_between_negative_one_quarter_and_0_excl(a):
    """exp(a) for a in [-1/4, 0), Q0.31 in and out: Taylor series around -1/8.

    ``x = a + 1/8``; ``p = RDBPOT((RDBPOT(x^4, 2) + x^3) * 1/3 + x^2, 1)``; ``exp(-1/8) + exp(-1/8) * (x + p)``.
    """
    x = wrap_int32(np.asarray(a, dtype=np.int64) + (1 << 28))
    x2 = srdhm(x, x)
    x3 = srdhm(x2, x)
    x4 = srdhm(x2, x2)
    x4_over_4 = rdbpot(x4, 2)
    poly = rdbpot(wrap_int32(srdhm(wrap_int32(x4_over_4 + x3), _ONE_THIRD) + x2), 1)
    return wrap_int32(_EXP_CONSTANT_TERM + srdhm(_EXP_CONSTANT_TERM, wrap_int32(x + poly)))


def exp_on_negative_values(a, integer_bits: int):
    """exp(a) for a <= 0 given in Q``integer_bits``; result Q0.31 (a == 0 -> INT32_MAX).

    Split ``a`` into ``t = (a mod 1/4) - 1/4`` in [-1/4, 0) and a remainder that is a multiple of 1/4; exp(t) from
    :func:`exp_on_interval_between_negative_one_quarter_and_0_excl` (t rescaled to Q0.31, saturating), then one
    multiplication by exp(-2^E) per set bit E of the remainder (only for E < integer_bits). For more than 5 integer
    bits, inputs below -32 give 0.
    """
    a = np.asarray(a, dtype=np.int64)
    k = int(integer_bits)
    frac = 31 - k
    quarter = 1 << (frac - 2)
    t = (a & (quarter - 1)) - quarter
    result = exp_on_interval_between_negative_one_quarter_and_0_excl(rescale(t, k, 0))
    remainder = wrap_int32(t - a)
    for exponent, multiplier in _EXP_BARREL:
        if k > exponent:
            bit = (remainder >> (frac + exponent)) & 1
            result = np.where(bit != 0, srdhm(result, multiplier), result)
    if k > 5:
        result = np.where(a < -(1 << (36 - k)), 0, result)
    return np.where(a == 0, INT32_MAX, result)


def _newton_reciprocal_of_half_denominator(half_denominator):
    """The shared Newton-Raphson loop of gemmlowp's 1/(1+x) and (1-x)/(1+x): x ~ 1/half_denominator in Q2.29."""
    x = wrap_int32(1515870810 + srdhm(half_denominator, -1010580540))  # 48/17 - 32/17 * d (Q2.29)
    for _ in range(3):
        one_minus_dx = wrap_int32((1 << 29) - srdhm(half_denominator, x))
        x = wrap_int32(x + rescale(srdhm(x, one_minus_dx), 4, 2))
    return x


def one_over_one_plus_x_for_x_in_0_1(a):
    """1/(1 + a) for a in [0, 1) (Q0.31 in and out): Newton-Raphson on d = (a + 1)/2 (RoundingHalfSum), three
    iterations in Q2.29, result ``sat-shift-left(x, 1)``."""
    x = _newton_reciprocal_of_half_denominator(rounding_half_sum(a, INT32_MAX))
    return rescale(x, 1, 0)  # ExactMulByPot<-1> (Q2 -> Q1, same raw), then Rescale<0>


def one_minus_x_over_one_plus_x_for_x_in_0_1(a):
    """(1 - a)/(1 + a) for a in [0, 1) (Q0.31): same iteration, result ``sat-shift-left(x - 1, 2)``."""
    x = _newton_reciprocal_of_half_denominator(rounding_half_sum(a, INT32_MAX))
    return rescale(wrap_int32(x - (1 << 29)), 2, 0)


def fixed_point_logistic(a, integer_bits: int):
    """gemmlowp logistic(a), a in Q``integer_bits``, result Q0.31.

    ``a > 0``: 1/(1 + exp(-a)); ``a < 0``: INT32_MAX - that of -a; ``a == 0``: 2^30 (one half).
    """
    a = np.asarray(a, dtype=np.int64)
    positive = a > 0
    abs_input = np.where(positive, a, wrap_int32(-a))
    result_if_positive = one_over_one_plus_x_for_x_in_0_1(exp_on_negative_values(wrap_int32(-abs_input),
                                                                                 integer_bits))
    result_if_negative = wrap_int32(INT32_MAX - result_if_positive)
    return np.where(a == 0, 1 << 30, np.where(positive, result_if_positive, result_if_negative))


def fixed_point_tanh(a, integer_bits: int):
    """gemmlowp tanh(a), a in Q``integer_bits``, result Q0.31.

    ``n = -|a|``; ``t = (1 - e)/(1 + e)`` with ``e = exp_on_negative_values`` of the *same raw* n read with one more
    integer bit (ExactMulByPot<1>, i.e. exp(2n)); result ``-t`` for a < 0, ``t`` for a > 0, 0 for a == 0.
    """
    a = np.asarray(a, dtype=np.int64)
    negative = a < 0
    n = np.where(negative, a, wrap_int32(-a))
    t = one_minus_x_over_one_plus_x_for_x_in_0_1(exp_on_negative_values(n, integer_bits + 1))
    return np.where(a == 0, 0, np.where(negative, wrap_int32(-t), t))


def get_reciprocal(x, x_integer_bits: int):
    """TFLM GetReciprocal(x, x_integer_digits): 1/x as (Q0.31 ``shifted_scale``, ``num_bits_over_unit``).

    ``h = clz32(x)``; ``num_bits_over_unit = x_integer_bits - h``; ``shifted_scale =
    one_over_one_plus_x_for_x_in_0_1(int32((uint32(x) << h) - 2^31))``. Arrays broadcast.
    """
    x = np.asarray(x, dtype=np.int64)
    h = clz32(x)
    shifted_minus_one = wrap_int32(((x & 0xFFFFFFFF) << h) - (1 << 31))
    return one_over_one_plus_x_for_x_in_0_1(shifted_minus_one), x_integer_bits - h


def clz32(x):
    """Count leading zeros of ``uint32(x)`` (32 for 0), for int64 arrays."""
    u = np.asarray(x, dtype=np.int64) & 0xFFFFFFFF
    n = np.zeros(u.shape, dtype=np.int64)
    for bits in (16, 8, 4, 2, 1):
        small = u < (np.int64(1) << (32 - bits))
        n = np.where(small, n + bits, n)
        u = np.where(small, u << bits, u)
    return np.where(np.asarray(x, dtype=np.int64) & 0xFFFFFFFF == 0, 32, n)


def srdhm16(a, b):
    """gemmlowp SaturatingRoundingDoublingHighMul for int16: ``(a*b + (a*b >= 0 ? 2^14 : 1 - 2^14)) / 2^15``
    (C truncation), -32768 * -32768 -> 32767."""
    a = np.asarray(a, dtype=np.int64)
    b = np.asarray(b, dtype=np.int64)
    ab = a * b
    res = _trunc_div(ab + np.where(ab >= 0, 1 << 14, 1 - (1 << 14)), 1 << 15)
    return np.where((a == -32768) & (b == -32768), 32767, res)


def wrap_int16(x):
    """Reinterpret int64 values as C int16 (two's complement wrap-around)."""
    return ((np.asarray(x, dtype=np.int64) + (1 << 15)) & 0xFFFF) - (1 << 15)


def calculate_input_radius(input_integer_bits: int, input_left_shift: int, total_signed_bits: int = 31) -> int:
    """TFLM CalculateInputRadius: ``floor((2^ib - 1) * 2^(total - ib) / 2^left_shift)`` (double maths)."""
    return math.floor(((1 << input_integer_bits) - 1) * 2.0 ** (total_signed_bits - input_integer_bits)
                      / 2.0 ** input_left_shift)


def checked_log2(x: float) -> tuple[bool, int]:
    """TFLM CheckedLog2 (float32 maths): ``(|log2(x) - round(log2(x))| < 1e-3, round(log2(x)))``."""
    x_log2 = np.float32(np.float32(math.log(np.float32(x))) * np.float32(1.0 / np.float32(math.log(2.0))))
    rounded = np.float32(_round_half_away(float(x_log2)))
    return bool(abs(float(np.float32(x_log2 - rounded))) < np.float32(1e-3)), int(rounded)


# -- int16 look-up tables (kernels/internal/common.h) --------------------------------------------------------------
def lut_populate_int16(transform, input_scale: float, input_zero_point: int, output_scale: float,
                       output_zero_point: int) -> np.ndarray:
    """TFLM ``LUTPopulate<int16_t>`` (float version): 513 int16 samples of ``transform`` over the input range.

    All arithmetic is float32 as in TFLM: sample i at ``x_i = input_min + i*step`` (step = range/512) is
    ``round(f(x_i) * inv)``, minus a bias ``round((interp_mid - round(f(mid) * inv)) / 2)`` that centres the linear
    interpolation error between x_i and x_{i+1}; the last entry is ``round(f(input_max) * inv)``; all clamped to
    int16. ``transform`` maps a float32 array to a float32 array and must reproduce TFLM's float function bit for bit
    (see :mod:`microinterp.libm`). ``round`` is round-half-away-from-zero (TfLiteRound).
    """
    f32 = np.float32
    input_scale, output_scale = f32(input_scale), f32(output_scale)
    input_min = f32(input_scale * f32(-32768 - int(input_zero_point)))
    input_max = f32(input_scale * f32(32767 - int(input_zero_point)))
    output_min = f32(output_scale * f32(-32768 - int(output_zero_point)))
    output_max = f32(output_scale * f32(32767 - int(output_zero_point)))
    nb_steps = 512
    step = f32(f32(input_max - input_min) / f32(nb_steps))
    half_step = f32(step / f32(2))
    inv = f32(f32(65536) / f32(output_max - output_min))
    i = np.arange(nb_steps, dtype=np.float32)
    x = (input_min + i * step).astype(np.float32)
    x_mid = (x + half_step).astype(np.float32)
    x_next = (input_min + (i + f32(1)) * step).astype(np.float32)
    val, val_mid, val_next = (np.asarray(transform(v), dtype=np.float32) for v in (x, x_mid, x_next))
    sample = round_half_away_f32(val * inv)
    midpoint_interp = round_half_away_f32(((val_next * inv + sample) / f32(2)).astype(np.float32))
    midpoint = round_half_away_f32(val_mid * inv)
    bias = round_half_away_f32(((midpoint_interp - midpoint) / f32(2)).astype(np.float32))
    lut = np.empty(nb_steps + 1, dtype=np.int16)
    lut[:nb_steps] = np.clip(sample - bias, -32768, 32767).astype(np.int16)
    last = round_half_away_f32(np.asarray(transform(np.array([input_max], np.float32)), np.float32) * inv)
    lut[nb_steps] = np.clip(last, -32768, 32767).astype(np.int16)[0]
    return lut


def round_half_away_f32(x) -> np.ndarray:
    """std::round on float32 values (half away from zero), result float32 (exact: done in float64)."""
    x = np.asarray(x, dtype=np.float32).astype(np.float64)
    return (np.sign(x) * np.floor(np.abs(x) + 0.5)).astype(np.float32)


def lut_lookup_int16(value, lut: np.ndarray):
    """TFLM ``LUTLookup(int16, lut)``: linear interpolation between 512 samples (9 index bits, 7 fraction bits).

    ``index = 256 + (v >> 7)``, ``offset = v & 0x7f``, ``slope = int16(lut[index+1] - lut[index])``,
    ``int16(lut[index] + ((slope * offset + 64) >> 7))``.
    """
    v = np.asarray(value, dtype=np.int64)
    table = np.asarray(lut, dtype=np.int64)
    index = 256 + (v >> 7)
    offset = v & 0x7F
    base = table[index]
    slope = wrap_int16(table[index + 1] - base)
    return wrap_int16(base + ((slope * offset + 64) >> 7))


def sigmoid_table_uint16() -> np.ndarray:
    """TFLM ``sigmoid_table_uint16`` (``kernels/internal/common.h``): sigmoid(i/24) in Q0.16, i = 0..255.

    The values are TFLM's data (they are close to, but not exactly, ``round(65536 * sigmoid(i/24))``, so they cannot
    be regenerated); used by the int16 LOGISTIC and TANH kernels (tanh(x) = 2 sigmoid(2x) - 1).
    """
    return _SIGMOID_TABLE_UINT16


_SIGMOID_TABLE_UINT16 = np.array([
    32768, 33451, 34133, 34813, 35493, 36169, 36843, 37513, 38180, 38841, 39498, 40149, 40794, 41432, 42064, 42688,
    43304, 43912, 44511, 45102, 45683, 46255, 46817, 47369, 47911, 48443, 48964, 49475, 49975, 50464, 50942, 51409,
    51865, 52311, 52745, 53169, 53581, 53983, 54374, 54755, 55125, 55485, 55834, 56174, 56503, 56823, 57133, 57433,
    57724, 58007, 58280, 58544, 58800, 59048, 59288, 59519, 59743, 59959, 60168, 60370, 60565, 60753, 60935, 61110,
    61279, 61441, 61599, 61750, 61896, 62036, 62172, 62302, 62428, 62549, 62666, 62778, 62886, 62990, 63090, 63186,
    63279, 63368, 63454, 63536, 63615, 63691, 63765, 63835, 63903, 63968, 64030, 64090, 64148, 64204, 64257, 64308,
    64357, 64405, 64450, 64494, 64536, 64576, 64614, 64652, 64687, 64721, 64754, 64786, 64816, 64845, 64873, 64900,
    64926, 64950, 64974, 64997, 65019, 65039, 65060, 65079, 65097, 65115, 65132, 65149, 65164, 65179, 65194, 65208,
    65221, 65234, 65246, 65258, 65269, 65280, 65291, 65301, 65310, 65319, 65328, 65337, 65345, 65352, 65360, 65367,
    65374, 65381, 65387, 65393, 65399, 65404, 65410, 65415, 65420, 65425, 65429, 65433, 65438, 65442, 65445, 65449,
    65453, 65456, 65459, 65462, 65465, 65468, 65471, 65474, 65476, 65479, 65481, 65483, 65485, 65488, 65489, 65491,
    65493, 65495, 65497, 65498, 65500, 65501, 65503, 65504, 65505, 65507, 65508, 65509, 65510, 65511, 65512, 65513,
    65514, 65515, 65516, 65517, 65517, 65518, 65519, 65520, 65520, 65521, 65522, 65522, 65523, 65523, 65524, 65524,
    65525, 65525, 65526, 65526, 65526, 65527, 65527, 65528, 65528, 65528, 65529, 65529, 65529, 65529, 65530, 65530,
    65530, 65530, 65531, 65531, 65531, 65531, 65531, 65532, 65532, 65532, 65532, 65532, 65532, 65533, 65533, 65533,
    65533, 65533, 65533, 65533, 65533, 65534, 65534, 65534, 65534, 65534, 65534, 65534, 65534, 65534, 65534, 65535,
], dtype=np.uint16)
_SIGMOID_TABLE_UINT16.flags.writeable = False
