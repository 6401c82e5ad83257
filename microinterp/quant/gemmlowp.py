"""gemmlowp fixed-point functions (``fixedpoint/fixedpoint.h``): exp, logistic, tanh, reciprocals, and the
int16 helpers TFLM builds on them."""

from __future__ import annotations

import math

import numpy as np

from .fixedpoint import rdbpot, saturating_left_shift, srdhm, wrap_int32
from .multipliers import INT32_MAX, INT32_MIN, _round_half_away


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
    if x.size <= _SCALAR_RECIPROCALS:   # a classifier's softmax: a few Python-int chains beat ~60 NumPy calls
        pairs = [reciprocal_int(v, x_integer_bits) for v in x.reshape(-1).tolist()]
        if x.ndim == 0:
            return np.int64(pairs[0][0]), np.int64(pairs[0][1])
        return (np.array([p[0] for p in pairs], dtype=np.int64).reshape(x.shape),
                np.array([p[1] for p in pairs], dtype=np.int64).reshape(x.shape))
    h = clz32(x)
    shifted_minus_one = wrap_int32(((x & 0xFFFFFFFF) << h) - (1 << 31))
    return one_over_one_plus_x_for_x_in_0_1(shifted_minus_one), x_integer_bits - h


#: :func:`get_reciprocal` evaluates up to this many values one by one with Python ints (a few us each, against
#: ~60 NumPy calls for the vectorized chain).
_SCALAR_RECIPROCALS = 16


def reciprocal_int(x: int, x_integer_bits: int) -> tuple[int, int]:
    """:func:`get_reciprocal` of one Python int (an int32 value), with Python ints: the same chain, literally.

    ``clz32`` is ``32 - bit_length`` of the uint32; RoundingHalfSum, SRDHM (floor form, see *Fast exact forms*),
    the int32 wraps and the saturating left shifts of Rescale are written out for scalars.
    """
    u = x & 0xFFFFFFFF
    h = 32 - u.bit_length()
    a = _wrap_int(((u << h) & 0xFFFFFFFF) - (1 << 31))             # uint32(x) << h, minus one (Q0.31)
    total = a + INT32_MAX                                          # RoundingHalfSum(a, one): C division by 2
    total += 1 if total >= 0 else -1
    half_denominator = total // 2 if total >= 0 else -(-total // 2)
    r = _wrap_int(1515870810 + _srdhm_int(half_denominator, -1010580540))     # 48/17 - 32/17 * d (Q2.29)
    for _ in range(3):
        one_minus_dx = _wrap_int((1 << 29) - _srdhm_int(half_denominator, r))
        r = _wrap_int(r + _shift_left_saturating_int(_srdhm_int(r, one_minus_dx), 2))   # Rescale<2> of Q4
    return _shift_left_saturating_int(r, 1), x_integer_bits - h                     # Q2 -> Q1, Rescale<0>


def _wrap_int(v: int) -> int:
    return ((v + (1 << 31)) & 0xFFFFFFFF) - (1 << 31)


def _srdhm_int(a: int, b: int) -> int:
    return INT32_MAX if a == b == INT32_MIN else (a * b + (1 << 30)) >> 31


def _shift_left_saturating_int(v: int, k: int) -> int:
    return min(max(v << k, INT32_MIN), INT32_MAX)


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


def rdbpot16(x, exponent: int):
    """gemmlowp RoundingDivideByPOT<int16_t>: the mask and threshold are int16 (matters only for exponent > 15)."""
    x = np.asarray(x, dtype=np.int64)
    mask = int(wrap_int16((1 << exponent) - 1))
    remainder = wrap_int16(x & mask)
    threshold = wrap_int16((mask >> 1) + (x < 0))
    return wrap_int16((x >> exponent) + (remainder > threshold))


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
