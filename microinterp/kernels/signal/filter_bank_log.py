"""SignalFilterBankLog: ``min(Log32(x << correction_bits, output_scale), 32767)`` per channel, 0 for inputs whose
shifted value is at most 1 (``signal/src/filter_bank_log.cc``, ``signal/src/log.cc``; see :mod:`._common`).

Options: ``input_correction_bits``, ``output_scale``. Prepare (TFLM): 1-D UINT32 in, 1-D INT16 out. The shift is
uint32 (bits shifted out are lost).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..streams import INVOKE
from ._common import U32, BoundLog32, log32, options


@dataclass(frozen=True)
class FilterBankLogData:
    correction_bits: int
    output_scale: int


class FilterBankLog:
    #: streams: its invoke works element by element (:mod:`..streams`)
    streams = INVOKE

    def prepare(self, ctx, op) -> FilterBankLogData:
        o = options(ctx, op, ("input_correction_bits", "output_scale"))
        ctx.check_io_count(op, 1, 1)
        x, y = ctx.require_input(op, 0), ctx.output(op, 0)
        if len(x.shape) != 1 or len(y.shape) != 1 or x.type_name != "UINT32" or y.type_name != "INT16":
            raise ctx.fail(op, "1-D UINT32 in, 1-D INT16 out")
        if y.num_elements < x.num_elements:
            raise ctx.fail(op, f"output {y.shape} shorter than input {x.shape}")
        return FilterBankLogData(int(o["input_correction_bits"]) & 31, int(o["output_scale"]) & U32)

    def bind(self, ctx, op, data: FilterBankLogData):
        """On fixed views: :class:`._common.BoundLog32` (kept buffers, the same integers)."""
        x, out = ctx.input(op, 0), ctx.output(op, 0)
        return BoundLog32(x, out[:x.shape[-1]], data.correction_bits, data.output_scale)

    def invoke(self, ctx, op, data: FilterBankLogData) -> None:
        x, out = ctx.input(op, 0), ctx.output(op, 0)
        scaled = (x.astype(np.int64) << data.correction_bits) & U32
        big = scaled > 1
        out[..., :x.shape[-1]] = np.where(big, np.minimum(log32(np.where(big, scaled, 2), data.output_scale), 32767), 0)


KERNEL = FilterBankLog()
