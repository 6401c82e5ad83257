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


def _wrap(v: np.ndarray, bits: int) -> np.ndarray:
    """C's conversion of an int64 value to a signed ``bits``-bit integer (two's complement)."""
    half = 1 << (bits - 1)
    return ((v + half) & ((1 << bits) - 1)) - half


def wide_dynamic_function(x: np.ndarray, lut: np.ndarray) -> np.ndarray:
    """``WideDynamicFunction`` of every noise estimate ``x`` (int64, below 2^32) with the int16 table ``lut`` (int64):
    ``lut[x]`` for x <= 2, else the quadratic in the 10-bit fraction of x from the entries at ``4 * msb(x) - 6``,
    each step wrapped to int32 as the C code's ``int32_t`` results are, the result to int16."""
    small = x <= 2
    interval = np.frexp(np.maximum(x, 1).astype(np.float64))[1].astype(np.int64)       # msb32: the bit length
    base = np.where(small, 0, 4 * interval - 6)
    frac = np.where(interval < 11, x << np.maximum(11 - interval, 0), x >> np.maximum(interval - 11, 0)) & 0x3FF
    result = _wrap(lut[base + 2] * frac, 32) >> 5
    result = _wrap(result + _wrap((lut[base + 1] & U32) << 5, 32), 32)
    result = _wrap(result * frac, 32)
    result = _wrap(result + (1 << 14), 32) >> 15
    result = _wrap(result + lut[base], 32)
    return np.where(small, lut[np.minimum(x, 2)], _wrap(result, 16))


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
