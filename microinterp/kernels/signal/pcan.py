"""SignalPCAN: per-channel automatic gain control, fixed point (``signal/src/pcan_argc_fixed.cc``).

Options: ``snr_shift``. Inputs (TFLM's Prepare): 1-D UINT32 filterbank output, 1-D UINT32 noise estimate, 1-D INT16
gain table; 1-D UINT32 output. Per channel: ``gain = WideDynamicFunction(noise, lut)`` -- ``lut[x]`` for x <= 2,
else a quadratic in the 10-bit fraction of x from the 4 table entries at ``4 * msb(x) - 6``; ``snr = (x * gain) >>
snr_shift`` (uint64); output ``PcanShrink(snr)``: ``(snr^2) >> 20`` below ``2 << 12``, else ``(snr >> 6) - 64``
(uint32 arithmetic). Table reads outside the gain table are refused at invoke (TFLM would read past it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ...errors import InvokeError
from .._qutil import copyto, count_nonzero
from ..streams import INVOKE
from ._common import U32, msb32, options

SNR_BITS = 12
OUTPUT_BITS = 6


@dataclass(frozen=True)
class PcanData:
    snr_shift: int


def wide_dynamic_function(x: np.ndarray, lut: np.ndarray) -> np.ndarray:
    """``WideDynamicFunction`` of every noise estimate ``x`` (int64, below 2^32) with the int16 table ``lut`` (int64):
    ``lut[x]`` for x <= 2, else the quadratic in the 10-bit fraction of x from the entries at ``4 * msb(x) - 6``,
    in int32 arithmetic as the C code's ``int32_t`` results (NumPy's int32 wraps alike), the result to int16. The
    fraction ``(x << (11 - msb))`` or ``(x >> (msb - 11))`` is ``(x << 11) >> msb`` either way."""
    interval = np.frexp(np.maximum(x, 1).astype(np.float64))[1]           # msb32: the bit length
    frac = (((x << 11) >> interval) & 0x3FF).astype(np.int32)
    base = np.maximum(4 * interval - 6, 0)                                   # (x <= 2 reads lut[x] below)
    table = lut.astype(np.int32)
    result = (np.take(table, base + 2) * frac) >> 5
    result += np.take(table, base + 1) << 5
    result *= frac
    result += 1 << 14
    result >>= 15
    result += np.take(table, base)
    result = result.astype(np.int16).astype(np.int64)      # the int16 result, sign-extended as C converts it
    small = x <= 2
    if small.any():
        result[small] = lut[x[small]]
    return result


def pcan_shrink(x: np.ndarray) -> np.ndarray:
    """``PcanShrink`` of every uint32 SNR (held in int64)."""
    low = ((x * x) & U32) >> (2 + 2 * SNR_BITS - OUTPUT_BITS)
    return np.where(x < (2 << SNR_BITS), low, ((x >> (SNR_BITS - OUTPUT_BITS)) - (1 << OUTPUT_BITS)) & U32)


class BoundPcan:
    """SignalPCAN on fixed views with a constant gain table (of at least five entries), on kept buffers: what
    :meth:`Pcan.invoke` computes, the same integers in about forty NumPy calls without temporaries. The table is
    kept as three int32 copies shifted by 0, 1 and 2 entries (``take`` at ``base`` reads ``lut[base + k]``); the
    WideDynamicFunction's products in int32 (C's ``int32_t``, NumPy's int32 wraps alike), the SNR product in uint64
    (C's, wrapping alike), PcanShrink in uint64 masked to uint32. A channel whose quadratic would read past the table
    fails the invoke as :meth:`Pcan.invoke` does (``base + 2`` of a noise estimate of at most 2, which reads
    ``lut[x]`` instead, is at most 4: no false alarm with five entries)."""

    def __init__(self, op: Any, x: np.ndarray, noise: np.ndarray, lut: np.ndarray, out: np.ndarray, shift: int):
        n = x.shape[-1]
        self.op, self.x, self.noise, self.lut, self.out = op, x, noise[:n], lut, out
        table = lut.astype(np.int32)
        self.tables = [np.concatenate([table[k:], np.zeros(k, np.int32)]) for k in range(3)]
        self.last = np.array(len(lut) - 3, np.int64)      # base above this reads past the table
        self.shift = np.array(shift, np.uint64)
        self.n64, self.t, self.b = (np.empty(n, np.int64) for _ in range(3))
        self.f, self.e = np.empty(n, np.float64), np.empty(n, np.intc)
        self.frac, self.a, self.c = (np.empty(n, np.int32) for _ in range(3))
        self.r16 = np.empty(n, np.int16)
        self.s, self.q, self.h = (np.empty(n, np.uint64) for _ in range(3))
        self.mask = np.empty(n, bool)

    def __call__(self) -> None:
        n64, t, b, f, e, frac, a, c = self.n64, self.t, self.b, self.f, self.e, self.frac, self.a, self.c
        s, q, h, mask = self.s, self.q, self.h, self.mask
        t0, t1, t2 = self.tables
        copyto(n64, self.noise)
        np.maximum(n64, _ONE, out=f)
        np.frexp(f, out=(f, e))                      # e: the bit length of max(x, 1)
        np.left_shift(n64, _ELEVEN, out=t)
        np.right_shift(t, e, out=t)
        np.bitwise_and(t, _TEN_BITS, out=t)
        copyto(frac, t, casting="unsafe")
        np.multiply(e, _FOUR, out=b)
        np.subtract(b, _SIX, out=b)
        np.maximum(b, _ZERO, out=b)                  # base
        if count_nonzero(np.greater(b, self.last, out=mask)):
            self._refuse()
        t2.take(b, out=a)
        np.multiply(a, frac, out=a)
        np.right_shift(a, _FIVE32, out=a)
        t1.take(b, out=c)
        np.left_shift(c, _FIVE32, out=c)
        np.add(a, c, out=a)
        np.multiply(a, frac, out=a)
        np.add(a, _ROUND14, out=a)
        np.right_shift(a, _FIFTEEN32, out=a)
        t0.take(b, out=c)
        np.add(a, c, out=a)
        copyto(self.r16, a, casting="unsafe")        # the int16 result
        if count_nonzero(np.less_equal(n64, _TWO, out=mask)):     # x <= 2 reads lut[x] itself
            copyto(self.r16, self.lut.take(np.minimum(n64, _TWO)), where=mask)
        copyto(s, self.r16, casting="unsafe")        # sign-extended, as uint64: its low 32 bits the uint32 gain
        np.bitwise_and(s, _U32, out=s)
        copyto(q, self.x)
        np.multiply(q, s, out=s)
        np.right_shift(s, self.shift, out=s)
        np.bitwise_and(s, _U32, out=s)               # the SNR
        np.multiply(s, s, out=q)
        np.bitwise_and(q, _U32, out=q)
        np.right_shift(q, _TWENTY, out=q)            # (snr^2) >> 20 in uint32
        np.right_shift(s, _SIX_U, out=h)
        np.subtract(h, _SIXTY_FOUR, out=h)
        np.bitwise_and(h, _U32, out=h)               # (snr >> 6) - 64 in uint32
        np.less(s, _LOW_BELOW, out=mask)
        copyto(h, q, where=mask)
        copyto(self.out, h, casting="unsafe")

    def _refuse(self) -> None:
        top = int(self.n64.max())
        needed = 4 * msb32(top) - 6 + 2
        raise InvokeError(self.op.index, self.op.key, f"noise estimate {top} reads gain table entry {needed} of "
                                                      f"{self.lut.shape[0]}")


_ONE, _TWO, _ZERO, _FOUR, _SIX, _ELEVEN, _TEN_BITS = (np.array(v, np.int64) for v in (1, 2, 0, 4, 6, 11, 0x3FF))
_FIVE32, _FIFTEEN32, _ROUND14 = (np.array(v, np.int32) for v in (5, 15, 1 << 14))
_U32, _TWENTY, _SIX_U, _SIXTY_FOUR, _LOW_BELOW = (np.array(v, np.uint64) for v in (
    0xFFFFFFFF, 2 + 2 * SNR_BITS - OUTPUT_BITS, SNR_BITS - OUTPUT_BITS, 1 << OUTPUT_BITS, 2 << SNR_BITS))


class Pcan:
    #: streams: its invoke works element by element (:mod:`..streams`)
    streams = INVOKE

    def prepare(self, ctx, op) -> PcanData:
        shift = int(options(ctx, op, ("snr_shift",))["snr_shift"])
        ctx.check_io_count(op, 3, 1)
        x, noise, lut, y = (ctx.require_input(op, 0), ctx.require_input(op, 1), ctx.require_input(op, 2),
                            ctx.output(op, 0))
        if any(len(t.shape) != 1 for t in (x, noise, lut, y)):
            raise ctx.fail(op, "every tensor must be 1-D")
        if (x.type_name, noise.type_name, lut.type_name, y.type_name) != ("UINT32", "UINT32", "INT16", "UINT32"):
            raise ctx.fail(op, "UINT32 input and noise estimate, INT16 gain table, UINT32 output")
        if noise.num_elements < x.num_elements or y.num_elements != x.num_elements:
            raise ctx.fail(op, "noise estimate and output need the input's channels")
        if not 0 <= shift < 64:
            raise ctx.fail(op, f"snr_shift {shift} out of range")
        return PcanData(shift)

    def bind(self, ctx, op, data: PcanData):
        """A constant gain table of five entries or more: :class:`BoundPcan` (None otherwise)."""
        x, noise, lut, out = (ctx.input(op, 0), ctx.input(op, 1), ctx.input(op, 2), ctx.output(op, 0))
        if lut.flags.writeable or lut.shape[0] < 5:
            return None
        return BoundPcan(op, x, noise, lut, out, data.snr_shift)

    def invoke(self, ctx, op, data: PcanData) -> None:
        x, noise, lut, out = (ctx.input(op, 0), ctx.input(op, 1), ctx.input(op, 2), ctx.output(op, 0))
        n = noise[..., :x.shape[-1]].astype(np.int64)
        if n.size:
            top = int(n.max())
            needed = 2 if top <= 2 else 4 * msb32(top) - 6 + 2      # the entries a channel reads grow with x
            if needed >= lut.shape[0]:
                raise InvokeError(op.index, op.key, f"noise estimate {top} reads gain table entry {needed} of "
                                                    f"{lut.shape[0]}")
        gain = wide_dynamic_function(n, lut.astype(np.int64)) & U32
        snr = ((x.astype(np.uint64) * gain.astype(np.uint64)) >> np.uint64(data.snr_shift)) & np.uint64(U32)
        out[...] = pcan_shrink(snr.astype(np.int64))


KERNEL = Pcan()
