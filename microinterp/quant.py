"""Fixed-point primitives of TFLM/gemmlowp, vectorized over int64 NumPy arrays.

Everything here reproduces C integer semantics exactly (truncating division, arithmetic shifts, int32 wrap-around
where TFLM's C code wraps). Scalars in, scalars out works too. Sources: ``kernels/internal/quantization_util.cc``,
``kernels/internal/common.h`` and gemmlowp ``fixedpoint/fixedpoint.h`` (see docs/tflm-facts.md §4). This is the one
home of the fixed-point primitives: the kernels call these, they do not re-derive them.

Fast exact forms
----------------
The requantization primitives are on every quantized kernel's hot path, so :func:`srdhm`, :func:`rdbpot` and
:func:`mbqm` do not transcribe the C code literally (a literal transcription took ~15 int64 temporaries per
element; ``tests/test_quant_fixedpoint.py`` keeps one and checks these against it at every rounding boundary).
They compute the same values, for every int64 input whose products do not overflow int64, with these identities
(``>>`` is the floor shift of two's complement integers, ``p = a*b``):

* ``SRDHM``: gemmlowp computes ``trunc((p + nudge) / 2^31)`` with ``nudge = 2^30`` for ``p >= 0`` and ``1 - 2^30``
  for ``p < 0``. This equals ``(p + 2^30) >> 31``. For ``p >= 0`` both are ``floor((p + 2^30) / 2^31)``. For
  ``p < 0`` the numerator ``p + 1 - 2^30`` is negative, so ``trunc(.) = -floor((2^30 - 1 - p) / 2^31)``; and
  ``floor((p + 2^30) / 2^31) = -ceil((-p - 2^30) / 2^31) = -floor((-p - 2^30 + 2^31 - 1) / 2^31)``, the same
  value. The identity depends on the sign of the product only, so negative multipliers (LEAKY_RELU's alpha) are
  covered. The one saturating case, ``a == b == INT32_MIN`` (-> INT32_MAX), is patched in afterwards, and only
  looked for when both operands can hold INT32_MIN (checked with a ``min()`` of the multiplier first).
* ``RDBPOT(x, e)`` (round half away from zero) is ``(x >> e) + (r > 2^(e-1) - 1 + (x < 0))`` with ``r = x & (2^e -
  1)``. Writing ``x = q 2^e + r`` (``q = x >> e``, ``0 <= r < 2^e``): ``(x + 2^(e-1) - (x < 0)) >> e = q + floor((r +
  2^(e-1) - (x < 0)) / 2^e)``; for ``e >= 1`` the numerator lies in ``[0, 2^(e+1))``, so the floor is 1 exactly when
  ``r + 2^(e-1) - (x < 0) >= 2^e``, i.e. ``r > 2^(e-1) - 1 + (x < 0)``: the same. ``e == 0`` is the identity, and
  per-channel exponents mix both cases (``2^(e-1)`` is then ``(1 << e) >> 1`` and ``(x < 0)`` is masked by ``e > 0``).
* ``MBQM`` = ``RDBPOT(SRDHM(x 2^left [int32 wrap], M), right)``: the product array is created once (int32 inputs
  are multiplied into int64 directly) and updated in place. RDBPOT's half is added ahead of SRDHM's shift:
  ``y = (x M + 2^30 + 2^31 h) >> 31 = SRDHM + h`` (a multiple of ``2^31`` passes through the floor shift), so
  ``SRDHM < 0`` is ``y < h`` and the result is ``(y - (y < h)) >> e``: four in-place operations after the product,
  with the constants prepared as int64 arrays (NumPy handles 0-d array operands faster than scalars). Needs
  ``e <= 31`` so that ``x M + 2^31 h`` stays in int64; larger exponents take the two-step form.
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


# -- core integer arithmetic ---------------------------------------------------------------------------------------
def wrap_int32(x):
    """Reinterpret int64 values as C int32 (two's complement wrap-around)."""
    return ((np.asarray(x, dtype=np.int64) + (1 << 31)) & 0xFFFFFFFF) - (1 << 31)


def _as_int(x) -> np.ndarray:
    """``x`` as an integer array: int8..int64 and uint8..uint32 as they are, anything else cast to int64."""
    x = np.asarray(x)
    return x if x.dtype.kind == "i" or (x.dtype.kind == "u" and x.dtype.itemsize < 8) else x.astype(np.int64)


def _is_scalar(v) -> bool:
    return isinstance(v, (int, np.integer)) or (isinstance(v, np.ndarray) and v.ndim == 0)


def _may_hold_int32_min(v: np.ndarray) -> bool:
    return v.size > 0 and int(v.min()) <= INT32_MIN


def srdhm(a, b):
    """SaturatingRoundingDoublingHighMul(a, b) on int32 values (any integer dtype), int64 result.

    gemmlowp: ``a == b == INT32_MIN ? INT32_MAX : trunc((a*b + (a*b >= 0 ? 2^30 : 1 - 2^30)) / 2^31)``, computed
    as ``(a*b + 2^30) >> 31`` (see *Fast exact forms* above).
    """
    a, b = _as_int(a), _as_int(b)
    p = _srdhm_no_saturation(a, b)
    if _may_hold_int32_min(b) and _may_hold_int32_min(a):
        p = np.where((a == INT32_MIN) & (b == INT32_MIN), INT32_MAX, p)
    return p


def _srdhm_no_saturation(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    p = np.multiply(a, b, dtype=np.int64)
    p += _TWO_30
    p >>= _THIRTY_ONE
    return p


#: 0-d int64 operands for the in-place int64 operations: NumPy handles them faster than Python ints (no weak-scalar
#: promotion step), which matters on the small arrays of MCU models; the values are the same.
_TWO_30, _THIRTY_ONE = np.array(1 << 30, dtype=np.int64), np.array(31, dtype=np.int64)


class _RoundingShift:
    """RoundingDivideByPOT by fixed exponents ``e`` (``0 <= e <= 62``, scalar or array), applied in place to int64
    arrays whose shape already covers ``e``'s; the constants are prepared once (see *Fast exact forms*)."""

    __slots__ = ("exponent", "half", "mask")

    def __init__(self, exponent):
        self.exponent = self.half = self.mask = None        # exponent None: the identity
        if _is_scalar(exponent):
            if exponent:
                self.exponent = int(exponent)
                self.half = 1 << (self.exponent - 1)
            return
        e = np.asarray(exponent, dtype=np.int64)
        if e.any():
            self.exponent, self.half = e, (np.int64(1) << e) >> 1
            self.mask = None if e.all() else e > 0          # where e == 0 the (x < 0) term must not apply

    def __call__(self, y: np.ndarray) -> np.ndarray:
        """Rounds ``y`` (an int64 array the caller owns) in place and returns it (a new object if ``y`` is 0-d)."""
        if self.exponent is None:
            return y
        negative = y < 0
        if self.mask is not None:
            negative &= self.mask
        y -= negative
        y += self.half
        y >>= self.exponent
        return y


def rdbpot(x, exponent):
    """RoundingDivideByPOT(x, exponent), ``0 <= exponent <= 62`` (scalar or broadcasting array): arithmetic shift
    right rounding half away from zero, computed as ``(x + 2^(e-1) - (x < 0)) >> e`` (see *Fast exact forms*).
    Always returns a new int64 array."""
    x = np.asarray(x)
    shape = np.broadcast_shapes(x.shape, np.shape(exponent))
    return _RoundingShift(exponent)(np.array(np.broadcast_to(x, shape), dtype=np.int64))


class Requantizer:
    """MultiplyByQuantizedMultiplier (int32, double rounding) with the multiplier and shift fixed in advance:
    ``Requantizer(M, shift)(x) == mbqm(x, M, shift)`` (:func:`mbqm` is exactly this).

    Kernels that requantize many small arrays with the same parameters (the LSTM's time steps) keep one, so the
    argument preparation happens once instead of on every call. ``M`` and ``shift`` broadcast against each other
    and against ``x`` (per-channel along the last axis).
    """

    __slots__ = ("fused", "left", "multiplier", "rounding", "saturation", "shift_left")

    def __init__(self, multiplier, shift):
        if _is_scalar(multiplier) and _is_scalar(shift):     # per tensor: Python ints, cheap for small arrays
            m, s = int(multiplier), int(shift)
            self.multiplier, self.left, self.shift_left = np.int64(m), max(s, 0) & 31, s > 0
            self.saturation = m <= INT32_MIN                # SRDHM(INT32_MIN, INT32_MIN) needs its patch
            self.rounding = _RoundingShift(max(-s, 0))
        else:
            m, shift = np.asarray(multiplier, dtype=np.int64), np.asarray(shift, dtype=np.int64)
            if m.shape != shift.shape:  # so that the product x * M covers the shape of the rounding exponents
                m, shift = np.broadcast_arrays(m, shift)
            self.multiplier = m
            self.left = np.maximum(shift, 0) & 31
            self.shift_left = bool(self.left.any())
            self.saturation = _may_hold_int32_min(m)
            self.rounding = _RoundingShift(np.maximum(-shift, 0))
        self.fused = None if self.saturation else _fused_rounding(self.multiplier, self.rounding)

    def __call__(self, x) -> np.ndarray:
        x = _as_int(x)
        if self.shift_left:
            x = (x.astype(np.int64) << self.left).astype(np.int32)     # x * 2^left wraps in int32, as in C
        if self.fused is not None:      # see *Fast exact forms*: y = SRDHM + h, then (y - (y < h)) >> e
            multiplier, offset, half, exponent = self.fused
            p = x * multiplier
            p += offset
            p >>= _THIRTY_ONE
            if exponent is not None:
                p -= p < half
                p >>= exponent
            return p
        p = srdhm(x, self.multiplier) if self.saturation else _srdhm_no_saturation(x, self.multiplier)
        return self.rounding(p)     # p has the broadcast shape of x, M and shift: rounded in place


def _fused_rounding(multiplier, rounding: _RoundingShift) -> tuple | None:
    """Constants of the one-pass MBQM ``(M, 2^30 + 2^31 h, h', e)`` as int64 arrays (``h' = h`` where ``e > 0``,
    INT64_MIN where no rounding applies; ``e`` None when no exponent is positive), from the prepared rounding shift;
    None when an exponent exceeds 31."""
    m = np.array(multiplier, dtype=np.int64)
    e, half = rounding.exponent, rounding.half
    if e is None:
        return m, np.array(1 << 30), None, None
    if isinstance(e, int):                              # per tensor: Python ints, then 0-d arrays
        return (m, np.array((1 << 30) + (half << 31)), np.array(half), np.array(e)) if e <= 31 else None
    if e.max() > 31:
        return None
    if rounding.mask is not None:                       # e == 0: the (y < h) term must not apply
        half = np.where(rounding.mask, half, np.iinfo(np.int64).min)
    return m, (1 << 30) + (rounding.half << 31), half, e


def mbqm(x, multiplier, shift):
    """MultiplyByQuantizedMultiplier for int32 accumulators (TFLM's double-rounding version), int64 result.

    ``RDBPOT(SRDHM(x * 2^max(shift, 0) [int32 wrap], M), max(-shift, 0))``. A left shift of 32 or more (an output
    scale so small that the multiplier exceeds 2^31: only a damaged model has one) is C's undefined ``1 << shift``,
    which x86-64 -- the wheel -- computes with the count taken modulo 32; so does this. Arguments broadcast (per-channel
    multipliers and shifts along the last axis work as-is); ``x`` may have any integer dtype (int32 inputs are
    multiplied into int64 without a conversion pass). One product array, rounded in place (*Fast exact forms*).
    """
    return Requantizer(multiplier, shift)(x)


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
    """MultiplyByQuantizedMultiplierSmallerThanOneExp: ``RDBPOT(SRDHM(x, M), -shift)``, ``shift <= 0`` (that is
    :func:`mbqm` without the left shift)."""
    return mbqm(x, multiplier, np.minimum(shift, 0))


def mbqm_greater_than_one(x, multiplier, left_shift):
    """MultiplyByQuantizedMultiplierGreaterThanOne: SRDHM(x * 2^left_shift, M)."""
    shifted = wrap_int32(np.asarray(x, dtype=np.int64) << (np.asarray(left_shift, dtype=np.int64) & 31))
    return srdhm(shifted, multiplier)


def saturating_left_shift(x, k):
    """gemmlowp SaturatingRoundingMultiplyByPOT for k >= 0 (clamps to int32 range)."""
    x = np.asarray(x, dtype=np.int64)
    return np.clip(x << k, INT32_MIN, INT32_MAX)


# -- activations ---------------------------------------------------------------------------------------------------
class QuantizationOverflow(ValueError):
    """A quantity TFLM's Prepare refuses because it overflows int32 (e.g. an activation bound / a tiny output scale);
    :func:`microinterp.kernels.base.prepare_ops` turns it into the op's PrepareError."""


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
