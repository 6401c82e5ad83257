"""SOFTMAX, optimized int8-input path (int8 or int16 output): short rows on Python ints, longer rows in few NumPy calls.

TFLM's algorithm (``kernels/softmax.py``): per row, ``d = x - max``; ``e = exp(d)`` and its Q12.19 contribution come
from the reference's prepared 256-entry tables (``exp_table``, ``sum_table``, indexed by ``d + 255``; both 0 below
``diff_min``); ``(recip, bits_over_unit) = GetReciprocal(int32 sum, 12)``; ``E = bits_over_unit + 31 - output_bits``;
``out = clamp(RDBPOT(SRDHM(recip, e), E) + type_min)``.

Short rows (a classifier's 1 x 4 .. 1 x 12: the zoo's micro_speech, kws and LSTM heads), :meth:`FastSoftmax.bind`:
a bound call on the op's fixed views, all in Python ints and bytes, no NumPy call at all (about 4 us instead of
~16 us):

- the row's raw bytes are read once; ``translate`` with :data:`_FLIP` gives ``u = x + 128`` (bytes compare as
  unsigned), ``max(u)`` the maximum, and a second ``translate`` with ``_INDEX[max]`` turns every raw byte into its
  table index ``d + 255 = u - max + 255`` (in [0, 255]: a byte);
- ``e`` and the int32 sum come from the two tables as Python lists; the sum stays below ``2^31`` (checked at bind:
  ``depth * 2^19``), so no wrap and no negative reciprocal;
- :func:`reciprocal` is GetReciprocal for a positive int32 on Python ints, in closed form (see there);
- the tail is :func:`_finish`'s merged shift per element; the int8 codes ``v - 128`` are the bytes ``v ^ 128``
  (``_FLIP`` again), written into the output's memory in one slice assignment.

Longer rows and many rows keep the vectorized :meth:`FastSoftmax.invoke` (the reciprocal: :func:`reciprocal` for one
row, ``quant.get_reciprocal`` otherwise, which itself runs up to 16 rows on Python ints). The
per-element tail is one multiply and one shift (:func:`_finish`); elements below ``diff_min`` have ``e = 0`` and come
out as ``type_min`` without a separate mask. A single row indexes the tables with its raw bytes through a slice that
depends on the row maximum, instead of building ``x - max + 255``.

A sum of 2^31 or more wraps in TFLM's int32 (thousands of equal maxima); such invokes are handed to the reference
kernel, which then computes or refuses exactly as TFLM does.

int16 and float32 inputs run the reference invoke.
"""

from __future__ import annotations

from array import array

import numpy as np

from ...errors import CheckFailed
from ...quant import INT32_MAX, QMAX, QMIN, get_reciprocal
from ..contract import Kernel
from ..softmax import _ACCUMULATION_INTEGER_BITS, EXPONENT_ERROR, SoftmaxData
from ..softmax import KERNEL as REFERENCE

#: The bound Python-int path takes tensors of at most this many rows and :data:`BOUND_SIZE` values (about 3 us a
#: row plus 0.15 us a value; the vectorized invoke costs about 15 us for one row, 30 us and more for several).
BOUND_ROWS = 16
BOUND_SIZE = 64

#: ``raw byte of an int8 x  ->  x + 128`` (the sign bit flipped): bytes then order like the int8 values.
_FLIP = bytes(b ^ 0x80 for b in range(256))
#: ``_INDEX[m]``: ``raw byte of x  ->  (x + 128) - m + 255``, the table index ``x - max + 255`` of a row whose
#: maximum is ``m - 128`` (entries for ``x + 128 > m`` never occur; masked to a byte).
_INDEX = tuple(bytes(((b ^ 0x80) - m + 255) & 0xFF for b in range(256)) for m in range(256))


def reciprocal(total: int) -> tuple[int, int]:
    """TFLM ``GetReciprocal(total, 12)`` for ``0 < total < 2^31`` on Python ints: ``(Q0.31 1/total, bits over unit)``.

    gemmlowp's chain: ``h = clz32(total)``; ``a = (total << h) - 2^31`` (Q0.31, >= 0);
    ``half_denominator = RoundingHalfSum(a, One) = (a + 2^31 - 1 + 1) / 2 = total << (h - 1)`` (in [2^30, 2^31));
    ``r = 48/17 + (-32/17) * half_denominator`` (Q2.29 constants 1515870810, -1010580540), then three Newton steps
    ``r += Rescale<2>(r * (1 - half_denominator * r))`` and ``ExactMulByPot<-1>`` / ``Rescale<0>``: ``r << 1``
    saturated. SRDHM of two int32 is ``(a * b + 2^30) >> 31`` (``quant.srdhm``'s floor form).

    The int32 wraps and saturations of the generic chain (``quant.reciprocal_int``) are left out: run exhaustively
    over all 2^30 half denominators, ``r`` stays in [505290270, 1073741824], ``1 - half_denominator * r`` in
    [-31580642, 31580642] and the Newton correction in [-45187456, 59445916] — far inside int32, never INT32_MIN;
    only the last doubling saturates (``r = 2^30`` for a power-of-two ``total``). ``test_softmax`` compares with
    ``quant.get_reciprocal`` on the powers of two, their neighbours and random sums.
    """
    h = 32 - total.bit_length()
    half_denominator = total << (h - 1)
    r = 1515870810 + ((half_denominator * -1010580540 + 0x40000000) >> 31)
    for _ in range(3):
        one_minus_dx = 0x20000000 - ((half_denominator * r + 0x40000000) >> 31)
        r += ((r * one_minus_dx + 0x40000000) >> 31) << 2
    return min(r << 1, INT32_MAX), _ACCUMULATION_INTEGER_BITS - h


class FastSoftmax(Kernel):
    ops = ("SOFTMAX",)
    def prepare(self, ctx, op) -> SoftmaxData:
        return REFERENCE.prepare(ctx, op)

    def bind(self, ctx, op, data: SoftmaxData):
        """The Python-int path as a call on the op's fixed views, for int8 input with at most :data:`BOUND_ROWS`
        rows and :data:`BOUND_SIZE` values; float32: the reference's bound call; None (run :meth:`invoke`)
        otherwise.

        Exactness conditions, checked here: the int32 sum of a row lies in ``[S_max, depth * S_max]`` (the maximum
        contributes ``S_max = sum_table[255]``, the largest entry), so it is positive and below 2^31 (no wrap,
        :func:`reciprocal` applies); the exponent ``E`` at both ends of that range (it grows with the sum) is in
        [0, 31], so TFLM's check cannot fail.
        """
        x, out = ctx.views[op.inputs[0]], ctx.views[op.outputs[0]]
        if data.mode == "float":
            return REFERENCE.bind(ctx, op, data)
        if data.mode != "int8" or not x.size or not (x.flags.c_contiguous and out.flags.c_contiguous):
            return None
        depth = x.shape[-1] if x.ndim else 1
        rows = x.size // depth
        top = int(data.sum_table.max())
        if x.size > BOUND_SIZE or rows > BOUND_ROWS or top != int(data.sum_table[255]):
            return None
        exponents = [(t.bit_length() - 20) + 31 - data.output_bits for t in (top, depth * top)]
        if not (0 < top and depth * top <= INT32_MAX and all(0 <= e <= 31 for e in exponents)):
            return None
        row = _bound_row(data)
        src, dst = memoryview(x).cast("B"), memoryview(out).cast("B")
        if rows == 1:
            def one_row() -> None:
                dst[:] = row(src.tobytes())
            return one_row
        starts = range(0, rows * depth, depth)

        def each_row() -> None:
            raw = src.tobytes()
            dst[:] = b"".join([row(raw[k:k + depth]) for k in starts])
        return each_row

    def invoke(self, ctx, op, data: SoftmaxData) -> None:
        x, out = ctx.input(op, 0), ctx.output(op, 0)
        if data.mode != "int8" or x.size == 0:
            REFERENCE.invoke(ctx, op, data)
            return
        rows = x.reshape(-1, x.shape[-1]) if x.ndim else x.reshape(1, 1)
        done = _one_row(rows, out, data) if rows.shape[0] == 1 else _many_rows(rows, out, data)
        if not done:
            REFERENCE.invoke(ctx, op, data)


def _bound_row(data: SoftmaxData):
    """``row(raw bytes of one int8 row) -> raw bytes of its output row`` (see the module docstring)."""
    exp_of, term_of = data.exp_table.tolist(), data.sum_table.tolist()
    top = (1 << data.output_bits) - 1           # the clamp, relative to type_min
    bits_to_exponent = 31 - data.output_bits

    def values(raw: bytes) -> list[int]:
        """``RDBPOT(SRDHM(recip, e), E)`` per element (>= 0), merged as in :func:`_finish`."""
        index = raw.translate(_INDEX[max(raw.translate(_FLIP))])
        total = sum(map(term_of.__getitem__, index))
        recip, bits = reciprocal(total)
        exponent = bits + bits_to_exponent
        offset, shift = (1 << 30) + (((1 << exponent) >> 1) << 31), exponent + 31
        v = [(e * recip + offset) >> shift for e in map(exp_of.__getitem__, index)]
        return v if max(v) <= top else [min(e, top) for e in v]

    if data.output_bits == 8:
        def int8_row(raw: bytes) -> bytes:
            return bytes(values(raw)).translate(_FLIP)          # v - 128 as int8 is the byte v ^ 128
        return int8_row

    def int16_row(raw: bytes) -> bytes:
        return array("H", [v ^ 0x8000 for v in values(raw)]).tobytes()    # v - 32768 as int16
    return int16_row


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
    total = int(np.add.reduce(data.sum_table[start:].take(u)))
    if total > INT32_MAX:   # the int32 sum wraps (thousands of equal maxima): the reference decides
        return False
    recip, bits = reciprocal(total)
    exponent = bits + 31 - data.output_bits
    if not 0 <= exponent <= 31:
        raise CheckFailed(EXPONENT_ERROR)
    _finish(data.exp_table[start:].take(u), recip, np.int64(exponent), out, data)
    return True


def _many_rows(rows: np.ndarray, out: np.ndarray, data: SoftmaxData) -> bool:
    index = rows.astype(np.intp)
    index -= rows.max(axis=1, keepdims=True)
    index += 255
    totals = data.sum_table[index].sum(axis=1)
    if totals.max() > INT32_MAX:     # an int32 sum wraps (thousands of equal maxima): the reference decides
        return False
    recip, bits = get_reciprocal(totals, _ACCUMULATION_INTEGER_BITS)      # per row on Python ints up to 16 rows
    exponent = bits + (31 - data.output_bits)
    if np.any((exponent < 0) | (exponent > 31)):
        raise CheckFailed(EXPONENT_ERROR)
    _finish(data.exp_table[index], recip[:, None], exponent[:, None], out, data)
    return True


KERNEL = FastSoftmax()
