"""SignalFilterBankLog: ``min(Log32(x << correction_bits, output_scale), 32767)`` per channel, 0 for inputs whose
shifted value is at most 1 (``signal/src/filter_bank_log.cc``, ``signal/src/log.cc``; see :mod:`._common`).

Options: ``input_correction_bits``, ``output_scale``. Prepare (TFLM): 1-D UINT32 in, 1-D INT16 out. The shift is
uint32 (bits shifted out are lost).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from .._qutil import count_nonzero
from ..contract import PURE, Kernel
from ._common import U32, BoundLog32, log32, options

#: Inputs below this have their results tabulated (an int16 table of 128 KB per shift and scale).
TABLED = 1 << 16


@functools.lru_cache(maxsize=8)
def results_below(bits: int, scale: int) -> np.ndarray:
    """The op's result for every input below :data:`TABLED` (read-only int16), computed by
    :class:`._common.BoundLog32` itself."""
    table = np.empty(TABLED, np.int16)
    with np.errstate(all="ignore"):
        BoundLog32(np.arange(TABLED, dtype=np.uint32), table, bits, scale)()
    table.flags.writeable = False
    return table


@dataclass(frozen=True)
class FilterBankLogData:
    correction_bits: int
    output_scale: int


class FilterBankLog(Kernel):
    ops = ("SignalFilterBankLog",)
    traits = PURE
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
        """On fixed views: where every input is below :data:`TABLED` (a power spectrum after PCAN usually is), one
        look-up in the op's table of results (:func:`results_below`); else :class:`._common.BoundLog32` (kept
        buffers, the same integers). One compare and a count decide, per call."""
        x, out = ctx.input(op, 0), ctx.output(op, 0)
        dst = out[:x.shape[-1]]
        exact = BoundLog32(x, dst, data.correction_bits, data.output_scale)
        table, limit = results_below(data.correction_bits, data.output_scale), np.array(TABLED, x.dtype)
        above = np.empty(x.shape, bool)

        def call() -> None:
            if count_nonzero(np.greater_equal(x, limit, above)):
                exact()
            else:
                table.take(x, None, dst, "wrap")
        return call

    def invoke_streams(self, ctx, op, data: FilterBankLogData, state: None) -> None:
        """Streams (:mod:`..streams`): every stream's channels at once, element by element -- from the table of
        results where every input is below :data:`TABLED`, else as :meth:`invoke`."""
        x = ctx.input(op, 0)
        if x.size and int(np.maximum.reduce(x, axis=None)) < TABLED:
            ctx.output(op, 0)[..., :x.shape[-1]] = results_below(data.correction_bits, data.output_scale).take(x)
        else:
            self.invoke(ctx, op, data)

    def invoke(self, ctx, op, data: FilterBankLogData) -> None:
        x, out = ctx.input(op, 0), ctx.output(op, 0)
        scaled = (x.astype(np.int64) << data.correction_bits) & U32
        big = scaled > 1
        out[..., :x.shape[-1]] = np.where(big, np.minimum(log32(np.where(big, scaled, 2), data.output_scale), 32767), 0)


KERNEL = FilterBankLog()
