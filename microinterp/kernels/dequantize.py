"""DEQUANTIZE: int8 / int16 / uint8 -> float32.

TFLM (``micro/kernels/dequantize_common.cc``, ``reference/dequantize.h``): Prepare requires 1 input and 1 output, input
type INT8, INT16 or UINT8 and output type FLOAT32. Eval: ``out = (float)(scale * (q - zp))`` with ``scale`` and
``zp`` from the input's ``params`` -- the *first* scale / zero point, also for per-channel inputs (TFLM's micro
kernel has no per-channel path). The product of a float32 scale and an integer below 2^17 is exact in double, so
computing it in float64 and rounding once to float32 is bit-identical to TFLM's float32 multiply.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from ._qutil import LUT_INDEX, all_codes, qparams
from .bands import ROW_LOCAL
from .contract import ELEMENTWISE, Kernel


@dataclass(frozen=True)
class DequantizeData:
    scale: float
    zero_point: int


class Dequantize(Kernel):
    ops = ("DEQUANTIZE",)
    traits = ELEMENTWISE
    converts_type = True
    cost_family = "elementwise"
    opdata = 32
    #: out of core: row bands (a row of the output from the same row of its inputs)
    bands = ROW_LOCAL

    def prepare(self, ctx, op) -> DequantizeData:
        ctx.check_io_count(op, 1, 1)
        x, y = ctx.require_input(op, 0), ctx.output(op, 0)
        if x.type_name not in ("INT8", "INT16", "UINT8"):
            raise ctx.fail(op, f"input type {x.type_name} not supported (INT8, INT16, UINT8)")
        if y.type_name != "FLOAT32":
            raise ctx.fail(op, f"output type must be FLOAT32, got {y.type_name}")
        if x.num_elements != y.num_elements:
            raise ctx.fail(op, f"input shape {x.shape} and output shape {y.shape} differ in size")
        scale, zp = qparams(x)
        return DequantizeData(float(np.float32(scale)), zp)

    def bind(self, ctx, op, data: DequantizeData):
        """On fixed contiguous views: every code's result tabulated once (256 entries for 8 bits, 65536 for int16;
        the invoke's own arithmetic over all codes), one look-up into the output (None for other views)."""
        x, out = ctx.input(op, 0), ctx.output(op, 0)
        if not (x.flags.c_contiguous and out.flags.c_contiguous):
            return None
        type_name = _TYPE[x.dtype.type]
        table = _results(all_codes(type_name), data)
        index, dst = x.reshape(-1).view(LUT_INDEX[type_name]), out.reshape(-1)
        return functools.partial(table.take, index, None, dst, "wrap")

    def invoke(self, ctx, op, data: DequantizeData) -> None:
        x = ctx.input(op, 0)
        out = ctx.output(op, 0)
        out[...] = _results(x, data).reshape(out.shape)


def _results(x: np.ndarray, data: DequantizeData) -> np.ndarray:
    """``(float)(scale * (q - zp))`` of every code ``q`` of ``x`` (float32)."""
    return (data.scale * (x.astype(np.float64) - data.zero_point)).astype(np.float32)


_TYPE = {np.int8: "INT8", np.uint8: "UINT8", np.int16: "INT16"}


KERNEL = Dequantize()
