"""SignalPCAN: per-channel automatic gain control, fixed point (``signal/src/pcan_argc_fixed.cc``).

Options: ``snr_shift``. Inputs (TFLM's Prepare): 1-D UINT32 filterbank output, 1-D UINT32 noise estimate, 1-D INT16
gain table; 1-D UINT32 output. Per channel: ``gain = WideDynamicFunction(noise, lut)`` -- ``lut[x]`` for x <= 2,
else a quadratic in the 10-bit fraction of x from the 4 table entries at ``4 * msb(x) - 6``; ``snr = (x * gain) >>
snr_shift`` (uint64); output ``PcanShrink(snr)``: ``(snr^2) >> 20`` below ``2 << 12``, else ``(snr >> 6) - 64``
(uint32 arithmetic). Table reads outside the gain table are refused at invoke (TFLM would read past it).
"""

from __future__ import annotations

from dataclasses import dataclass

from ...errors import InvokeError
from ._common import U32, msb32, options

SNR_BITS = 12
OUTPUT_BITS = 6


@dataclass(frozen=True)
class PcanData:
    snr_shift: int


def _i16(v: int) -> int:
    v &= 0xFFFF
    return v - 0x10000 if v & 0x8000 else v


def _i32(v: int) -> int:
    v &= U32
    return v - (1 << 32) if v & 0x80000000 else v


def wide_dynamic_function(x: int, lut: list[int]) -> int:
    if x <= 2:
        return lut[x]
    interval = msb32(x)
    base = 4 * interval - 6
    frac = ((x << (11 - interval)) if interval < 11 else (x >> (interval - 11))) & 0x3FF
    result = _i32(lut[base + 2] * frac) >> 5
    result = _i32(result + _i32((lut[base + 1] & U32) << 5))
    result = _i32(result * frac)
    result = _i32(result + (1 << 14)) >> 15
    result = _i32(result + lut[base])
    return _i16(result)


def pcan_shrink(x: int) -> int:
    if x < (2 << SNR_BITS):
        return ((x * x) & U32) >> (2 + 2 * SNR_BITS - OUTPUT_BITS)
    return ((x >> (SNR_BITS - OUTPUT_BITS)) - (1 << OUTPUT_BITS)) & U32


class Pcan:
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
        table = [int(v) for v in lut]
        noise_values = noise.tolist()
        for i, v in enumerate(x.tolist()):
            n = int(noise_values[i])
            needed = 2 if n <= 2 else 4 * msb32(n) - 6 + 2
            if needed >= len(table):
                raise InvokeError(op.index, op.key, f"noise estimate {n} reads gain table entry {needed} of "
                                                    f"{len(table)}")
            gain = wide_dynamic_function(n, table) & U32
            snr = ((int(v) * gain) >> data.snr_shift) & U32
            out[i] = pcan_shrink(snr)


KERNEL = Pcan()
