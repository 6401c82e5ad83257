"""SignalPCAN: per-channel automatic gain control, fixed point (``signal/src/pcan_argc_fixed.cc``).

Options: ``snr_shift``. Inputs (TFLM's Prepare): 1-D UINT32 filterbank output, 1-D UINT32 noise estimate, 1-D INT16
gain table; 1-D UINT32 output. Per channel: ``gain = WideDynamicFunction(noise, lut)`` -- ``lut[x]`` for x <= 2,
else a quadratic in the 10-bit fraction of x from the 4 table entries at ``4 * msb(x) - 6``; ``snr = (x * gain) >>
snr_shift`` (uint64); output ``PcanShrink(snr)``: ``(snr^2) >> 20`` below ``2 << 12``, else ``(snr >> 6) - 64``
(uint32 arithmetic). Table reads outside the gain table are refused at invoke (TFLM would read past it).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...errors import InvokeError
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
