"""SOFTMAX, optimized int8-input path (int8 or int16 output): few NumPy calls per row, reciprocal in Python ints.

TFLM's algorithm (``kernels/softmax.py``): per row, ``d = x - max``; ``e = exp(d)`` and its Q12.19 contribution come
from the reference's prepared 256-entry tables (``exp_table``, ``sum_table``; both 0 below ``diff_min``);
``(recip, bits_over_unit) = GetReciprocal(int32 sum, 12)``; ``E = bits_over_unit + 31 - output_bits``;
``out = clamp(RDBPOT(SRDHM(recip, e), E) + type_min)``.

The reference evaluates GetReciprocal (clz, RoundingHalfSum, three Newton steps of gemmlowp's 1/(1+x)) with ~100
vectorized NumPy calls, whatever the number of rows: that is the whole cost of a classifier's 1 x 10 softmax. Here,
for up to :data:`SCALAR_ROWS` rows, the same gemmlowp operations run on Python ints (exact, arbitrary precision, with
int32 wrap-around written out where gemmlowp's int32 arithmetic wraps); more rows use the vectorized
``quant.get_reciprocal``. The per-element tail is one multiply and one shift (see :func:`_finish`): ``recip > 0``
and ``e >= 0``, so SRDHM never saturates, and the two rounding shifts merge; elements below ``diff_min`` have
``e = 0`` and come out as ``type_min`` without a separate mask. A single row (the classifier case) indexes the
tables with its raw bytes through a slice that depends on the row maximum, instead of building ``x - max + 255``.

A negative reciprocal only arises when the int32 sum wrapped (thousands of equal maxima); such invokes are handed
to the reference kernel, which then computes or refuses exactly as TFLM does.

int16 and float32 inputs run the reference invoke.
"""

from __future__ import annotations

import numpy as np

from ...quant import INT32_MAX, INT32_MIN, QMAX, QMIN, get_reciprocal, wrap_int32
from ..softmax import KERNEL as REFERENCE
from ..softmax import SoftmaxData

#: Rows up to which the reciprocal is computed per row with Python ints (about 10 us per row).
SCALAR_ROWS = 16
_ACCUMULATION_INTEGER_BITS = 12
EXPONENT_ERROR = "softmax: reciprocal exponent out of [0, 31] (TFLITE_CHECK in TFLM)"


def _wrap(v: int) -> int:
    return ((v + (1 << 31)) & 0xFFFFFFFF) - (1 << 31)


def _srdhm(a: int, b: int) -> int:
    """gemmlowp SaturatingRoundingDoublingHighMul on int32 values (see ``quant.srdhm`` for the floor form)."""
    if a == b == INT32_MIN:
        return INT32_MAX
    return (a * b + (1 << 30)) >> 31


def _saturating_shl(x: int, k: int) -> int:
    return min(max(x << k, INT32_MIN), INT32_MAX)


def _one_over_one_plus_x(a: int) -> int:
    """gemmlowp one_over_one_plus_x_for_x_in_0_1 (Q0.31 in and out), as ``quant.one_over_one_plus_x_for_x_in_0_1``."""
    s = a + INT32_MAX                                   # RoundingHalfSum(a, 1): (s + sign(s)) / 2, C division
    t = s + (1 if s >= 0 else -1)
    half_denominator = t // 2 if t >= 0 else -((-t) // 2)
    x = _wrap(1515870810 + _srdhm(half_denominator, -1010580540))     # 48/17 - 32/17 * d, Q2.29
    for _ in range(3):
        one_minus_dx = _wrap((1 << 29) - _srdhm(half_denominator, x))
        x = _wrap(x + _saturating_shl(_srdhm(x, one_minus_dx), 2))  # Rescale<2>(F4) of F2 * F2
    return _saturating_shl(x, 1)                                    # ExactMulByPot<-1>, then Rescale<0>


def reciprocal(total: int, integer_bits: int = _ACCUMULATION_INTEGER_BITS) -> tuple[int, int]:
    """TFLM GetReciprocal(total, integer_bits) on a Python int holding an int32: ``(Q0.31 1/total, bits over unit)``."""
    u = total & 0xFFFFFFFF
    h = 32 - u.bit_length()                             # clz32 (32 for 0)
    shifted_minus_one = _wrap(((u << h) & ((1 << 64) - 1)) - (1 << 31))
    return _one_over_one_plus_x(shifted_minus_one), integer_bits - h


class FastSoftmax:
    def prepare(self, ctx, op) -> SoftmaxData:
        return REFERENCE.prepare(ctx, op)

    def invoke(self, ctx, op, data: SoftmaxData) -> None:
        x, out = ctx.input(op, 0), ctx.output(op, 0)
        if data.mode != "int8" or x.size == 0:
            REFERENCE.invoke(ctx, op, data)
            return
        rows = x.reshape(-1, x.shape[-1]) if x.ndim else x.reshape(1, 1)
        done = _one_row(rows, out, data) if rows.shape[0] == 1 else _many_rows(rows, out, data)
        if not done:
            REFERENCE.invoke(ctx, op, data)


def _finish(value: np.ndarray, recip, exponent, out: np.ndarray, data: SoftmaxData) -> None:
    """``out = min(RDBPOT(SRDHM(recip, e), E) + type_min, type_max)`` on ``value = e`` (int64, in place).

    With ``p = recip * e >= 0``: SRDHM is ``(p + 2^30) >> 31`` and the RDBPOT of that non-negative value is
    ``(. + 2^(E-1)) >> E``; two floor shifts merge: ``floor((floor(a / 2^31) + b) / 2^E) = floor((a + b 2^31) /
    2^(31+E))``, so the whole is ``(p + 2^30 + [E > 0] 2^(30+E)) >> (31 + E)`` (below 2^63: ``p < 2^62``).
    """
    type_name = "INT16" if data.output_bits == 16 else "INT8"
    value *= recip
    value += (1 << 30) + (((np.int64(1) << exponent) >> 1) << 31)
    value >>= exponent + 31
    np.minimum(value, QMAX[type_name] - QMIN[type_name], out=value)     # value >= 0 already
    np.add(value.reshape(out.shape), QMIN[type_name], out=out, casting="unsafe")


def _one_row(rows: np.ndarray, out: np.ndarray, data: SoftmaxData) -> bool:
    """One row: the tables are sliced so that the raw byte ``x + 128`` indexes them (``x - max + 255`` is
    ``(x + 128) + (127 - max)``), and the reciprocal is computed on Python ints."""
    row = rows.reshape(-1)
    start = 127 - int(np.maximum.reduce(row))
    u = row.view(np.uint8) ^ np.uint8(128)
    total = int(np.add.reduce(np.take(data.sum_table[start:], u)))
    recip, bits = reciprocal(_wrap(total))
    if recip < 0:           # only after an int32 wrap of the sum (thousands of equal maxima): the reference decides
        return False
    exponent = bits + 31 - data.output_bits
    if not 0 <= exponent <= 31:
        raise RuntimeError(EXPONENT_ERROR)
    _finish(np.take(data.exp_table[start:], u), recip, np.int64(exponent), out, data)
    return True


def _many_rows(rows: np.ndarray, out: np.ndarray, data: SoftmaxData) -> bool:
    index = rows.astype(np.intp)
    index -= rows.max(axis=1, keepdims=True)
    index += 255
    totals = data.sum_table[index].sum(axis=1)
    if len(totals) <= SCALAR_ROWS:
        pairs = [reciprocal(_wrap(t)) for t in totals.tolist()]
        recip = np.array([p[0] for p in pairs], np.int64)
        bits = np.array([p[1] for p in pairs], np.int64)
    else:
        recip, bits = get_reciprocal(wrap_int32(totals), _ACCUMULATION_INTEGER_BITS)
    if (recip < 0).any():
        return False
    exponent = bits + (31 - data.output_bits)
    if np.any((exponent < 0) | (exponent > 31)):
        raise RuntimeError(EXPONENT_ERROR)
    _finish(data.exp_table[index], recip[:, None], exponent[:, None], out, data)
    return True


KERNEL = FastSoftmax()
