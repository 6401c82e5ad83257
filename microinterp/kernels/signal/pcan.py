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
from ..contract import STATEFUL, Kernel
from ..streams import BIND
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
    :meth:`Pcan.invoke` computes, the same integers in about thirty NumPy calls without temporaries.

    WideDynamicFunction by the bit length ``e`` of the noise estimate (``frexp``, exact for a uint32): the three
    table entries it reads at ``4 e - 6`` come from one ``take`` of a kept ``[3, 33]`` table indexed by ``e``
    (``lut[base + 2]``, ``lut[base + 1] << 5`` -- C's ``(int32_t)((uint32_t)lut[1] << 5)`` -- and ``lut[base]``),
    the fraction ``((x << 11) >> e) & 0x3FF`` from the mantissa ``m = x / 2^e`` in [0.5, 1) as ``m 2048 - 1024``
    (exact in float64, truncated), the products in int32 (C's ``int32_t``, NumPy's int32 wraps alike). Estimates 0
    and 1 (bit lengths 0 and 1) have table columns ``(0, 0, lut[x])``, which give ``lut[x]`` whatever the fraction,
    as C's ``x <= 2`` branch; 2 (fraction 0 at base 2) gives ``lut[2]`` through the quadratic. The SNR product in
    uint64 (C's, wrapping alike), PcanShrink in uint64: its square is below 2^26 and its difference positive where
    each is used, so neither needs the uint32 mask. An estimate whose quadratic would read past the table fails the
    invoke as :meth:`Pcan.invoke` does."""

    def __init__(self, op: Any, x: np.ndarray, noise: np.ndarray, lut: np.ndarray, out: np.ndarray, shift: int):
        n = x.shape                 # one stream's channels, or a stream axis before them (streams = BIND)
        self.op, self.x, self.noise, self.lut, self.out = op, x, noise[..., :n[-1]], lut, out[..., :n[-1]]
        table = lut.astype(np.int64)
        bit_lengths = np.arange(33)
        base = 4 * bit_lengths - 6
        valid = base + 2 < len(lut)
        at = np.where(valid & (bit_lengths >= 2), base, 0)
        columns = np.stack([table[at + 2], (table[at + 1] << 5), table[at]])
        columns[:2, :2] = 0
        columns[2, :2] = table[:2]
        self.columns = np.ascontiguousarray(columns.astype(np.int32))
        self.last = np.array(int(np.flatnonzero(valid).max()), np.intc)     # a longer estimate reads past the table
        self.shift = np.array(shift, np.uint64)
        self.f, self.e = np.empty(n, np.float64), np.empty(n, np.intc)
        self.rows = np.empty((3, *n), np.int32)
        self.frac, self.a = np.empty(n, np.int32), np.empty(n, np.int32)
        self.r16 = np.empty(n, np.int16)
        self.s, self.q, self.h = (np.empty(n, np.uint64) for _ in range(3))
        self.mask = np.empty(n, bool)

    def __call__(self) -> None:
        f, e, frac, a, s, q, h, mask = self.f, self.e, self.frac, self.a, self.s, self.q, self.h, self.mask
        rows = self.rows
        copyto(f, self.noise)
        np.frexp(f, f, e)                            # e: the bit length, f: x / 2^e
        if count_nonzero(np.greater(e, self.last, mask)):
            self._refuse()
        np.multiply(f, _FRAC_SCALE, f)
        np.subtract(f, _FRAC_OFFSET, f)
        copyto(frac, f, casting="unsafe")            # ((x << 11) >> e) & 0x3FF
        self.columns.take(e, 1, rows, "wrap")
        np.multiply(rows[0], frac, a)
        np.right_shift(a, _FIVE32, a)
        np.add(a, rows[1], a)
        np.multiply(a, frac, a)
        np.add(a, _ROUND14, a)
        np.right_shift(a, _FIFTEEN32, a)
        np.add(a, rows[2], a)
        copyto(self.r16, a, casting="unsafe")        # the int16 result
        copyto(s, self.r16, casting="unsafe")        # sign-extended, as uint64: its low 32 bits the uint32 gain
        np.bitwise_and(s, _U32, s)
        copyto(q, self.x)
        np.multiply(q, s, s)
        np.right_shift(s, self.shift, s)
        np.bitwise_and(s, _U32, s)               # the SNR
        np.multiply(s, s, q)
        np.right_shift(q, _TWENTY, q)            # (snr^2) >> 20 where snr < 2^13
        np.right_shift(s, _SIX_U, h)
        np.subtract(h, _SIXTY_FOUR, h)           # (snr >> 6) - 64 where snr >= 2^13
        np.less(s, _LOW_BELOW, mask)
        copyto(h, q, where=mask)
        copyto(self.out, h, casting="unsafe")

    def _refuse(self) -> None:
        raise _past_the_table(self.op, int(self.noise.max()), self.lut.shape[0])


def _past_the_table(op: Any, top: int, entries: int) -> InvokeError | None:
    """The invoke's failure when the largest noise estimate ``top`` makes the quadratic read past a gain table of
    ``entries`` (TFLM would read past it): entry ``4 msb(top) - 6 + 2``, or ``top`` itself up to 2; else None."""
    needed = 2 if top <= 2 else 4 * msb32(top) - 6 + 2      # the entries a channel reads grow with x
    if needed < entries:
        return None
    return InvokeError(op.index, op.key, f"noise estimate {top} reads gain table entry {needed} of {entries}")


_FRAC_SCALE, _FRAC_OFFSET = np.array(2048.0), np.array(1024.0)
_FIVE32, _FIFTEEN32, _ROUND14 = (np.array(v, np.int32) for v in (5, 15, 1 << 14))
_U32, _TWENTY, _SIX_U, _SIXTY_FOUR, _LOW_BELOW = (np.array(v, np.uint64) for v in (
    0xFFFFFFFF, 2 + 2 * SNR_BITS - OUTPUT_BITS, SNR_BITS - OUTPUT_BITS, 1 << OUTPUT_BITS, 2 << SNR_BITS))


class Pcan(Kernel):
    ops = ("SignalPCAN",)
    traits = STATEFUL
    #: streams: its bound form (:class:`BoundPcan`, of any leading shape) runs every stream at once (:mod:`..streams`)
    streams = BIND

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
        if lut.ndim > 1:            # over streams (:mod:`..streams`), a gain table given at invoke: one per stream
            for s in range(lut.shape[0]):
                self._apply(op, x[s], noise[s], lut[s], out[s], data)
            return
        self._apply(op, x, noise, lut, out, data)

    @staticmethod
    def _apply(op, x: np.ndarray, noise: np.ndarray, lut: np.ndarray, out: np.ndarray, data: PcanData) -> None:
        n = noise[..., :x.shape[-1]].astype(np.int64)
        error = _past_the_table(op, int(n.max()), lut.shape[0]) if n.size else None
        if error is not None:
            raise error
        gain = wide_dynamic_function(n, lut.astype(np.int64)) & U32
        snr = ((x.astype(np.uint64) * gain.astype(np.uint64)) >> np.uint64(data.snr_shift)) & np.uint64(U32)
        out[...] = pcan_shrink(snr.astype(np.int64))


KERNEL = Pcan()
