"""int16 look-up tables and the int16 LOGISTIC / TANH / RSQRT / LOG arithmetic (``kernels/internal/common.h``,
``reference_integer_ops``)."""

from __future__ import annotations

import numpy as np

from .fixedpoint import rdbpot, saturating_left_shift, srdhm, wrap_int32
from .gemmlowp import clz32, one_over_one_plus_x_for_x_in_0_1, rounding_half_sum, wrap_int16
from .multipliers import INT32_MAX, INT32_MIN


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


def round_half_away(v) -> np.ndarray:
    """C ``round``/``roundf`` of float32 values (half away from zero, signed zeros kept), as float64 (exact:
    ``|v| + 0.5`` cannot round for a float32 ``v`` that is not already an integer)."""
    v = np.asarray(v)
    r = np.asarray(np.abs(v, dtype=np.float64))  # in place from here: few large temporaries
    r += 0.5
    np.floor(r, out=r)
    return np.copysign(r, v, out=r)


def round_half_away_f32(x) -> np.ndarray:
    """:func:`round_half_away` of float32 values, result float32."""
    return round_half_away(np.asarray(x, dtype=np.float32)).astype(np.float32)


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
    be regenerated); used by the int16 LOGISTIC and TANH kernels (tanh(x) = 2 sigmoid(2x) - 1) and the LSTM gates.
    """
    return _SIGMOID_TABLE_UINT16


# -- int16 LOGISTIC / TANH (reference_integer_ops::Logistic / Tanh, int16 overloads) --------------------------------
def scale_int16_input(x, multiplier: int, left_shift: int) -> np.ndarray:
    """The input scaling of the int16 Logistic/Tanh: ``int32(x * M + round) >> shift`` with ``round = 2^(shift-1)``
    (0 for shift 0); the power-of-two case (``M == 0``) uses ``M = 3 << shift``, shift 0."""
    if multiplier == 0:
        multiplier, left_shift = 3 << left_shift, 0
    rounding = (1 << (left_shift - 1)) if left_shift > 0 else 0
    return wrap_int32(np.asarray(x, dtype=np.int64) * multiplier + rounding) >> left_shift


def _sigmoid_table_interpolation(abs_v: np.ndarray, frac_bits: int, saturated: int) -> np.ndarray:
    """``(T[h] << f) + (|v| & (2^f - 1)) * (T[h+1] - T[h])`` as uint32 with ``h = |v| >> f``; ``saturated`` for
    ``h >= 255``."""
    table = _SIGMOID_TABLE_UINT16.astype(np.int64)
    h = abs_v >> frac_bits
    hc = np.minimum(h, 254)
    ua, ub = table[hc], table[hc + 1]
    frac = abs_v & ((1 << frac_bits) - 1)
    return np.where(h >= 255, saturated, ((ua << frac_bits) + frac * (ub - ua)) & 0xFFFFFFFF)


def logistic_int16(x, multiplier: int = 0, left_shift: int = 0) -> np.ndarray:
    """int16 Logistic: ``v`` = :func:`scale_int16_input` (Q.9 steps of 1/24 in the table), ``r`` = the table
    interpolation of ``|v|`` (``0x7FFF << 10`` when saturated); ``v >= 0 -> r + 2^9``, else ``2^25 - r + 2^9 - 1``
    (uint32); result ``>> 10`` as int16 (Q0.15). The LSTM gates call it with multiplier 0 and shift 0."""
    v = scale_int16_input(x, multiplier, left_shift)
    r = _sigmoid_table_interpolation(np.abs(v), 9, 0x7FFF << 10)
    r = np.where(v >= 0, r + (1 << 9), (1 << 25) - r + (1 << 9) - 1) & 0xFFFFFFFF
    return (r >> 10).astype(np.int16)


def tanh_int16(x, multiplier: int, left_shift: int) -> np.ndarray:
    """int16 Tanh: the same scaling and table with 8 fraction bits (``0xFFFF << 8`` when saturated); ``v >= 0 ->
    r - 2^23 + 2^7``, else ``-r + 2^23 + 2^7 - 1``; result ``>> 8`` as int16 (tanh(x) = 2 sigmoid(2x) - 1)."""
    v = scale_int16_input(x, multiplier, left_shift)
    r = _sigmoid_table_interpolation(np.abs(v), 8, 0xFFFF << 8)
    r = np.where(v >= 0, r - (1 << 23) + (1 << 7), -r + (1 << 23) + (1 << 7) - 1)
    return (r >> 8).astype(np.int16)


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


def inv_sqrt_quantized_multiplier_exp(value, reverse_shift: int) -> tuple[np.ndarray, np.ndarray]:
    """TFLM's ``GetInvSqrtQuantizedMultiplierExp`` (``internal/common.h``), vectorized over int32 ``value >= 0``:
    ``(multiplier, shift)`` arrays with ``1/sqrt(value) ~ multiplier * 2^(-31) * 2^(-shift * reverse_shift)``.

    Values <= 1 give ``(INT32_MAX, 0)``. Otherwise ``value`` is normalised into [2^27, 2^29) by steps of 4
    (``shift`` starts at 11 and counts them), then five Newton-Raphson steps ``x = 3/2 x - (v/2) x^3`` in gemmlowp
    Q3.28 from x = 1 (``x*x*x`` through Q6/Q9 with SRDHM, ``Rescale<3>`` = saturating left shifts), times
    sqrt(2)/2 in Q0.31; a negative shift is folded into the multiplier; ``shift *= reverse_shift``.
    """
    v = np.asarray(value, dtype=np.int64)
    small = v <= 1
    v = np.where(small, 2, v)
    bits = bit_length(v)
    steps = np.maximum(0, (bits - 28) // 2)          # while value >= 2^29: value /= 4
    v = v >> (2 * steps)
    shift = 11 + steps
    pairs = (31 - bit_length(v)) // 2 - 1            # (CountLeadingZeros(v) - 1) / 2 - 1
    shift = shift - pairs
    v = v << (2 * pairs)
    half_input = rdbpot(v >> 1, 1)
    half_three = (1 << 28) + (1 << 27)
    x = np.full(v.shape, 1 << 28, dtype=np.int64)
    for _ in range(5):
        x3 = saturating_left_shift(srdhm(srdhm(x, x), x), 6)
        x = saturating_left_shift(wrap_int32(srdhm(half_three, x) - srdhm(half_input, x3)), 3)
    x = srdhm(x, 1518500250)
    neg = shift < 0
    x = np.where(neg, wrap_int32(x << np.where(neg, -shift, 0)), x)
    shift = np.where(neg, 0, shift)
    return np.where(small, INT32_MAX, x), np.where(small, 0, shift * reverse_shift)


def bit_length(x) -> np.ndarray:
    """``int.bit_length`` of non-negative int64 values below 2^53 (exact through ``frexp``)."""
    return np.frexp(np.asarray(x, dtype=np.int64).astype(np.float64))[1].astype(np.int64)


def log_x_for_x_greater_than_or_equal_to_1(x, input_integer_bits: int, output_integer_bits: int) -> np.ndarray:
    """TFLM's ``log_x_for_x_greater_than_or_equal_to_1_impl`` (``internal/common.h``), vectorized: ln(x) of a
    Q``input_integer_bits`` value ``x >= 1`` as Q``output_integer_bits``.

    The input is read as Q0.31 ``z``; two candidate normalisations -- ``z`` shifted by its headroom, times
    sqrt(1/2) (``r_a``), and ``z`` shifted by the headroom of ``z * sqrt(1/2)`` (``r_b``) -- give ``r = min(r_a,
    r_b)`` in [sqrt(1/2), 1) and the power of two ``max(IIB - h_a + 1/4, IIB - h_b - 1/4)`` (saturating, Q6 for a
    Q5 result). ln(r) comes from a rational approximation in ``q = 2 (r - 2^-1/4)``: ``num = q r + q^3 a_n``,
    ``denom - 1 = p (a_i + q + a_d q^2) + a_f q`` with ``p = RoundingHalfSum(r, 2^-1/4)``, and
    ``one_over_one_plus_x_for_x_in_0_1``. Result: ``Rescale<OIB>(pow2 * ln 2 + Rescale<OIB+1>(num) / denom)``.
    gemmlowp ``*`` is SRDHM, ``+``/``-`` wrap, ``Rescale`` / ``SaturatingRoundingMultiplyByPOTParam`` are
    saturating shifts.
    """
    acc_bits = output_integer_bits + 1
    log_2, sqrt_sqrt_half, sqrt_half = 1488522236, 1805811301, 1518500250
    alpha_n, alpha_d, alpha_i, alpha_f = 117049297, 127690142, 1057819769, 638450708
    shifted_quarter = int(rdbpot(536870912, acc_bits))
    z_a = np.asarray(x, dtype=np.int64)
    h_a = clz32(z_a)
    r_a_tmp = np.clip(z_a << (h_a - 1), INT32_MIN, INT32_MAX)
    r_a = saturating_left_shift(srdhm(r_a_tmp, sqrt_half), 1)
    pow_a = np.clip(saturating_left_shift_array(input_integer_bits - h_a, 31 - acc_bits) + shifted_quarter,
                    INT32_MIN, INT32_MAX)
    z_b = srdhm(z_a, sqrt_half)
    h_b = clz32(z_b) - 1
    r_b = np.clip(z_a << h_b, INT32_MIN, INT32_MAX)
    pow_b = np.clip(saturating_left_shift_array(input_integer_bits - h_b, 31 - acc_bits) - shifted_quarter,
                    INT32_MIN, INT32_MAX)
    r = np.minimum(r_a, r_b)
    pow2 = np.maximum(pow_a, pow_b)
    p = rounding_half_sum(r, sqrt_sqrt_half)
    q = wrap_int32(r - sqrt_sqrt_half)
    q = wrap_int32(q + q)
    common_sq = srdhm(q, q)
    num = wrap_int32(srdhm(q, r) + srdhm(srdhm(q, common_sq), alpha_n))
    denom_minus_one = wrap_int32(srdhm(p, wrap_int32(wrap_int32(alpha_i + q) + srdhm(alpha_d, common_sq)))
                                 + srdhm(alpha_f, q))
    recip = one_over_one_plus_x_for_x_in_0_1(denom_minus_one)
    num_scaled = rdbpot(num, acc_bits)
    total = wrap_int32(srdhm(pow2, log_2) + srdhm(num_scaled, recip))
    return saturating_left_shift(total, acc_bits - output_integer_bits)


def saturating_left_shift_array(x, k: int) -> np.ndarray:
    """``SaturatingRoundingMultiplyByPOTParam(x, k)`` for ``k >= 0`` on int32 values (clamped ``x << k``)."""
    return np.clip(np.asarray(x, dtype=np.int64) << k, INT32_MIN, INT32_MAX)
