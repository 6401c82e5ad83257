"""The core integer arithmetic: SRDHM, RDBPOT, MBQM and the requantizer (the fast exact forms are
explained in :mod:`microinterp.quant`)."""

from __future__ import annotations

import numpy as np

from .multipliers import INT32_MAX, INT32_MIN


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

    def bind(self, x: np.ndarray, out: np.ndarray):
        """``out[...] = self(x)`` for the fixed integer array ``x`` and int64 ``out`` (its shape), as a call without
        arguments: the left shift wrapped in int32 and the one-pass form on kept buffers (the same operations as
        :meth:`__call__`); where that form does not apply (a saturating multiplier, an exponent above 31), the call
        and a copy."""
        if self.fused is None:
            return lambda: np.copyto(out, self(x))
        multiplier, offset, half, exponent = self.fused
        # (y < h) as the sign of y - h, -1 or 0 (an int64 add instead of a bool's subtraction, which NumPy casts),
        # where no h is INT64_MIN (a channel without rounding: y - h would overflow)
        signed = exponent is not None and int(np.min(half)) > np.iinfo(np.int64).min
        below = np.empty(out.shape, np.int64 if signed else bool) if exponent is not None else None
        left, sign_bit = np.asarray(self.left, np.int64), np.array(63, np.int64)
        wide_shape = np.broadcast_shapes(x.shape, left.shape)
        wide, shifted = (np.empty(wide_shape, np.int64), np.empty(wide_shape, np.int32)) if self.shift_left \
            else (None, x)

        def call() -> None:
            if wide is not None:                # x * 2^left wraps in int32, as in C
                np.copyto(wide, x)
                np.left_shift(wide, left, out=wide)
                np.copyto(shifted, wide, casting="unsafe")
            np.multiply(shifted, multiplier, out=out)
            np.add(out, offset, out=out)
            np.right_shift(out, _THIRTY_ONE, out=out)
            if signed:
                np.subtract(out, half, out=below)
                np.right_shift(below, sign_bit, out=below)
                np.add(out, below, out=out)
                np.right_shift(out, exponent, out=out)
            elif exponent is not None:
                np.less(out, half, out=below)
                np.subtract(out, below, out=out)
                np.right_shift(out, exponent, out=out)
        return call


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
