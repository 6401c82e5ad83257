"""MEAN, optimized int8/int16 path: one integer reduction over the axes, then the reference's requantization.

The reference (``kernels/mean.py`` / ``reduce_common.py``, which state TFLM's algorithm) transposes the input so that
each output's elements form a row and sums the rows in int64. Integer sums do not depend on the order, so here the
sum is one ``np.add.reduce`` over the (constant) axes with an int32 accumulator: NumPy's int32 addition wraps like
TFLM's, and wrapping is order-independent too, so the result equals the reference's ``wrap_int32(sum)`` for every
input. The outputs come out in row-major order of the kept axes, which is TFLM's output order. Then, as the
reference: ``MBQM(int32(sum - zp_in * N), M', s') + zp_out`` clamped, with the 1/N-folded multiplier ``(M', s')``
of prepare (``quant.Requantizer``, the double-rounding int32 MBQM, built once).

The two int32 wrap-arounds of the reference (after ``- zp_in * N`` and after ``+ zp_out``) are only applied when
prepare cannot rule them out from ``N``, the zero points and the multiplier.

Reference invoke: float32 (its sum order matters), axes given by a non-constant tensor, empty tensors.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ...quant import INT32_MAX, QMAX, QMIN, Requantizer, wrap_int32
from ..contract import Kernel
from ..mean import KERNEL as REFERENCE
from ..mean import MeanData
from ..reduce_common import reduced_count


@dataclass(frozen=True)
class FastMeanData:
    ref: MeanData
    axes: tuple[int, ...] | None        # None: reference invoke
    offset: int = 0                     # zp_in * N
    requantize: Requantizer | None = None
    output_zp: int = 0
    lo: int = 0
    hi: int = 0
    wrap_in: bool = False               # sum - zp_in * N may leave int32
    wrap_out: bool = False              # MBQM(...) + zp_out may leave int32


class FastMean(Kernel):
    ops = ("MEAN",)
    def prepare(self, ctx, op) -> FastMeanData:
        ref = REFERENCE.prepare(ctx, op)
        io = ref.io
        x = ctx.input(op, 0)
        if io.input_type == "FLOAT32" or io.axes is None or ref.folded is None or x.num_elements == 0:
            return FastMeanData(ref, None)
        n = reduced_count(io.input_shape, io.axes)
        m, s = ref.folded
        top = 1 << (8 if io.input_type == "INT8" else 16)         # |raw value| <= top / 2
        max_shifted = n * (top // 2 + abs(ref.input_zp))
        # |MBQM(v)| <= |v| * M' * 2^s' / 2^31 + 1 (each rounding adds at most one half)
        max_scaled = max_shifted * m * 2.0 ** (s - 31) + 2
        return FastMeanData(ref, io.axes, ref.input_zp * n, Requantizer(m, s), ref.output_zp,
                            QMIN[io.input_type], QMAX[io.input_type], max_shifted > INT32_MAX,
                            max_scaled + abs(ref.output_zp) >= INT32_MAX)

    def bind(self, ctx, op, data: FastMeanData):
        """The reference's bound float call (float32 runs the reference); int8 / int16 on fixed views where the
        sums' range is small: every output is a function of its exact sum alone, so a table of the outputs by sum
        (:func:`_table`) makes the call three NumPy calls -- the int32 sums over the axes, offset to table
        positions, the table's outputs taken into the output."""
        if data.axes is None:
            return REFERENCE.bind(ctx, op, data.ref)
        x, out = ctx.input(op, 0), ctx.output(op, 0)
        n = reduced_count(x.shape, data.axes)
        table = _table(data, n, out.dtype)
        if table is None or not out.flags.c_contiguous:
            return None
        if math.prod(x.shape[d] for d in range(x.ndim) if d not in data.axes) != out.size:
            return None
        kept = np.empty([1 if d in data.axes else x.shape[d] for d in range(x.ndim)], np.int32)
        sums, flat, first = kept.reshape(-1), out.reshape(-1), np.array(-n * data.lo, np.int32)
        take = table.take           # the method: no __array_function__ dispatch

        def call() -> None:
            np.add.reduce(x, axis=data.axes, dtype=np.int32, keepdims=True, out=kept)
            np.add(sums, first, out=sums)
            take(sums, None, flat, "wrap")        # every offset sum is a table position: "wrap" checks none
        return call

    def invoke(self, ctx, op, data: FastMeanData) -> None:
        if data.axes is None:
            REFERENCE.invoke(ctx, op, data.ref)
            return
        sums = np.add.reduce(ctx.input(op, 0), axis=data.axes, dtype=np.int32, keepdims=True).reshape(-1)
        y = _requantized(sums, data)
        out = ctx.output(op, 0)
        out[...] = y.reshape(out.shape)


#: Most entries a bound int8 / int16 MEAN's table of outputs by sum may have (one byte each for int8).
TABLE_ENTRIES = 1 << 18


def _table(data: FastMeanData, n: int, dtype: np.dtype) -> np.ndarray | None:
    """The output for every possible sum of ``n`` inputs, ``table[sum - n * lo]``: what :meth:`FastMean.invoke`
    computes from each (the requantization as the reference states it); None where the range of sums has more than
    :data:`TABLE_ENTRIES` values (the sums then fit int32 with room to spare: no wrap happens)."""
    lo, hi = n * data.lo, n * data.hi
    if not n or hi - lo + 1 > TABLE_ENTRIES:
        return None
    sums = np.arange(lo, hi + 1, dtype=np.int64)
    return _requantized(sums, data).astype(dtype)


def _requantized(sums: np.ndarray, data: FastMeanData) -> np.ndarray:
    """``clamp(MBQM(sum - zp_in * N) + zp_out)`` of int32 sums, the wraps where prepare could not rule them out."""
    shifted = np.subtract(sums, data.offset, dtype=np.int64)
    if data.wrap_in:
        shifted = wrap_int32(shifted)
    y = data.requantize(shifted)
    y += data.output_zp
    if data.wrap_out:
        y = wrap_int32(y)
    return np.clip(y, data.lo, data.hi, out=y)


KERNEL = FastMean()
