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

from dataclasses import dataclass

import numpy as np

from ...quant import INT32_MAX, QMAX, QMIN, Requantizer, wrap_int32
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


class FastMean:
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
        """The reference's bound float call (float32 runs the reference)."""
        return REFERENCE.bind(ctx, op, data.ref) if data.axes is None else None

    def invoke(self, ctx, op, data: FastMeanData) -> None:
        if data.axes is None:
            REFERENCE.invoke(ctx, op, data.ref)
            return
        sums = np.add.reduce(ctx.input(op, 0), axis=data.axes, dtype=np.int32, keepdims=True).reshape(-1)
        shifted = np.subtract(sums, data.offset, dtype=np.int64)
        if data.wrap_in:
            shifted = wrap_int32(shifted)
        y = data.requantize(shifted)
        y += data.output_zp
        if data.wrap_out:
            y = wrap_int32(y)
        np.clip(y, data.lo, data.hi, out=y)
        out = ctx.output(op, 0)
        out[...] = y.reshape(out.shape)


KERNEL = FastMean()
