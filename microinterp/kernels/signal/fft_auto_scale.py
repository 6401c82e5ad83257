"""SignalFftAutoScale: shift the frame left as far as its largest magnitude allows (``signal/src/fft_auto_scale.cc``).

Prepare (TFLM): one 1-D INT16 input, two outputs: the 1-D INT16 frame and a 0-D INT32 shift. Eval: ``max`` =
``MaxAbs16``, a running int16 maximum: ``value > max ? value : -value > max ? -value : max``, where ``-value`` is
computed in int and stored back to int16 -- so a -32768 sample sets the maximum to -32768 and the next sample above
it replaces it (the result depends on where -32768 occurs; kept literally); ``bits = 16 -
MostSignificantBit32(max) - 1`` floored at 0 (``max`` read as uint32; MostSignificantBit32(0) is 32); every sample
times ``2^bits`` (int arithmetic stored to int16). No options.
"""

from __future__ import annotations

import numpy as np
from numpy._core import umath as np_umath

from .._qutil import copyto
from ..contract import PURE, Kernel
from ._common import bit_length, options


class FftAutoScale(Kernel):
    ops = ("SignalFftAutoScale",)
    traits = PURE
    def prepare(self, ctx, op) -> None:
        if op.custom_options is not None:
            options(ctx, op, ())
        ctx.check_io_count(op, 1, 2)
        x, y, s = ctx.require_input(op, 0), ctx.output(op, 0), ctx.output(op, 1)
        if len(x.shape) != 1 or len(y.shape) != 1 or len(s.shape) != 0:
            raise ctx.fail(op, f"input {x.shape} and output {y.shape} must be 1-D, the scale {s.shape} 0-D")
        if x.type_name != "INT16" or y.type_name != "INT16" or s.type_name != "INT32":
            raise ctx.fail(op, "INT16 in and out, an INT32 scale")
        if y.num_elements > x.num_elements:
            raise ctx.fail(op, f"output {y.shape} longer than input {x.shape}")

    def bind(self, ctx, op, data: None):
        """One frame on fixed views (a non-empty one): :meth:`invoke`'s steps with the extremes by the ufuncs'
        reductions and the shift and the scale as kept 0-d arrays, one per possible shift (None for an empty
        frame)."""
        x, y, s = ctx.input(op, 0), ctx.output(op, 0), ctx.output(op, 1)
        v = x[:y.shape[-1]]
        if not v.size:
            return None
        lowest, highest = np_umath.minimum.reduce, np_umath.maximum.reduce
        shifts = [np.array(bits, np.int16) for bits in range(16)]
        scales = [np.array(bits, np.int32) for bits in range(16)]

        def call() -> None:
            bits = _shift(int(lowest(v)), int(highest(v)), v)
            np.left_shift(v, shifts[bits], y)
            copyto(s, scales[bits])
        return call

    def invoke(self, ctx, op, data: None) -> None:
        """One frame: its extremes as Python ints (the running peak is ``max(|v|)`` unless a -32768 occurs, which
        :func:`_peak` replays), the shift into place in int16 (C's int result stored to int16 wraps alike)."""
        x, y, s = ctx.input(op, 0), ctx.output(op, 0), ctx.output(op, 1)
        v = x[:y.shape[-1]]
        if not v.size:
            self.invoke_streams(ctx, op, data, None)
            return
        bits = _shift(int(v.min()), int(v.max()), v)
        np.left_shift(v, bits, y)
        s[...] = bits

    def invoke_streams(self, ctx, op, data: None, state: None) -> None:
        """One stream, or many (:mod:`..streams`: every tensor with a leading stream axis): the peak of each from its
        int16 extremes (the C loop's replay where a -32768 occurs), the shift in int16 (C's int result stored to
        int16 wraps alike)."""
        x, y, s = ctx.input(op, 0), ctx.output(op, 0), ctx.output(op, 1)
        v = x[..., :y.shape[-1]]
        rows = v.reshape(-1, v.shape[-1])
        if not rows.shape[1]:
            s[...] = 0
            return
        low = np_umath.minimum.reduce(rows, axis=1).astype(np.int64)
        peak = np.maximum(np_umath.maximum.reduce(rows, axis=1).astype(np.int64), -low)
        np.maximum(peak, 0, out=peak)
        for r in np.flatnonzero(low == -32768):      # the C loop's int16 wrap: it alone decides
            peak[r] = _peak(rows[r].tolist())
        msb = np.where(peak == 0, 32, bit_length(peak & 0xFFFFFFFF))
        bits = np.maximum(16 - msb - 1, 0)
        np.left_shift(rows, bits.astype(np.int16)[:, None], y.reshape(rows.shape))
        s[...] = bits.reshape(s.shape)


def _shift(low: int, high: int, v: np.ndarray) -> int:
    """The frame's shift from its extremes: ``16 - MostSignificantBit32(peak) - 1`` floored at 0, the peak
    ``max(|v|)`` unless a -32768 occurs (then :func:`_peak` replays the C loop)."""
    peak = max(high, -low, 0) if low != -32768 else _peak(v.tolist())
    msb = 32 if peak == 0 else (peak & 0xFFFFFFFF).bit_length()
    return max(16 - msb - 1, 0)


def _peak(values: list[int]) -> int:
    """The C loop's running peak: ``max(|v|)``, except that ``-(-32768)`` stores ``-32768`` (an int16), after which
    every later value compares against that."""
    peak = 0
    for value in values:
        if value > peak:
            peak = value
        elif -value > peak:
            peak = -value if value != -32768 else -32768     # int16(32768)
    return peak


KERNEL = FftAutoScale()
