"""HARD_SWISH ``x * relu6(x + 3) / 6``: float32 and int8, as TFLM computes them.

TFLM (``micro/kernels/hard_swish.cc``, ``hard_swish_common.cc``, ``reference/hard_swish.h``):

* Prepare (int8): ``hires = float32(s_in / 128)``; ``(Mo, so) = QuantizeMultiplier(double(hires) / double(s_out))``
  and ``(Mr, sr) = QuantizeMultiplier(double(hires) / double(3/32768))`` (the wheel divides in double), both
  multipliers down-scaled to int16 (``(M + 2^15) >> 16``, saturating at 32767); refuses ``so > 0``.
* int8 Eval, all in int16 arithmetic: ``v = (x - zp_in) * 128``; ``p = SRDHM16(v, Mo)``; reluish ``r = v``; if
  ``sr > 0``: ``r = sat16(r * 2^(sr-1))``; ``r = SRDHM16(r, Mr)``; if ``sr > 0``: ``r = sat16(2 r)``; if ``sr < 0``:
  ``r = RDBPOT16(r, -sr)``; ``r = (r + 2^15) >> 1`` (now [0, 1] in Q0.15); ``o = trunc(r * p / 2^15)`` (truncating,
  not rounding); ``out = clamp(int16(RDBPOT16(o, -so) + zp_out), -128, 127)`` -- the zero-point add wraps in int16.
* float32: ``x * min(6, max(0, x + 3)) / 6`` in float32.
* TFLM's Prepare does not look at other types (Eval fails); refused here at prepare, as are mixed types.

Speed: the int8 function is tabulated for all 256 inputs in Prepare (an OpData cache, no arena memory).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ..quant import downscale_int32_to_int16_multiplier, quantize_multiplier, rdbpot16, srdhm16, wrap_int16
from ._qutil import all_codes, qparams
from .bands import ROW_LOCAL
from .contract import ELEMENTWISE, Kernel


@dataclass(frozen=True)
class HardSwishData:
    mode: str               # "float" or "int8"
    input_zero_point: int
    output_zero_point: int
    output_multiplier: int  # int16 fixed point
    output_exponent: int
    reluish_multiplier: int
    reluish_exponent: int
    table: np.ndarray | None = None  # int8: output for every input, indexed by the uint8 view


class HardSwish(Kernel):
    ops = ("HARD_SWISH",)
    traits = ELEMENTWISE
    op_class = "elementwise"
    cost_family = "elementwise"
    opdata = 20
    #: out of core: row bands (a row of the output from the same row of its inputs)
    bands = ROW_LOCAL

    def prepare(self, ctx, op) -> HardSwishData:
        ctx.check_io_count(op, 1, 1)
        x, y = ctx.require_input(op, 0), ctx.output(op, 0)
        if x.type_name != y.type_name:
            raise ctx.fail(op, f"input type {x.type_name} differs from output type {y.type_name}")
        if x.type_name == "FLOAT32":
            return HardSwishData("float", 0, 0, 0, 0, 0, 0)
        if x.type_name != "INT8":
            raise ctx.fail(op, f"unsupported type {x.type_name}")
        s_in, zp_in = qparams(x)
        s_out, zp_out = qparams(y)
        hires = np.float32(np.float32(1.0 / 128.0) * np.float32(s_in))
        m_out, e_out = quantize_multiplier(float(hires) / float(np.float32(s_out)))
        if e_out > 0:
            raise ctx.fail(op, f"output multiplier exponent must be <= 0 (input scale / 128 < output scale), "
                               f"got {e_out}")
        m_rel, e_rel = quantize_multiplier(float(hires) / float(np.float32(3.0 / 32768.0)))
        data = HardSwishData("int8", zp_in, zp_out, downscale_int32_to_int16_multiplier(m_out), e_out,
                             downscale_int32_to_int16_multiplier(m_rel), e_rel)
        table = _hard_swish_int8(all_codes("INT8"), data).astype(np.int8)
        return replace(data, table=table)

    def invoke(self, ctx, op, data: HardSwishData) -> None:
        x = ctx.input(op, 0)
        out = ctx.output(op, 0)
        if data.mode == "float":
            f = np.float32
            out[...] = (x * np.minimum(f(6), np.maximum(f(0), x + f(3))) / f(6)).astype(np.float32)
        else:
            out[...] = data.table[x.view(np.uint8)]


def _hard_swish_int8(x: np.ndarray, data: HardSwishData) -> np.ndarray:
    hires = wrap_int16((x.astype(np.int64) - data.input_zero_point) * 128)
    preshift_output = srdhm16(hires, data.output_multiplier)
    reluish = hires
    if data.reluish_exponent > 0:
        reluish = np.clip(reluish * (1 << (data.reluish_exponent - 1)), -32768, 32767)
    reluish = srdhm16(reluish, data.reluish_multiplier)
    if data.reluish_exponent > 0:
        reluish = np.clip(reluish * 2, -32768, 32767)
    if data.reluish_exponent < 0:
        reluish = rdbpot16(reluish, -data.reluish_exponent)
    reluish = (reluish + (1 << 15)) >> 1
    product = reluish * preshift_output  # SaturatingDoublingHighMul: truncating division by 2^15
    preshift = np.where(product < 0, -((-product) >> 15), product >> 15)
    value = wrap_int16(rdbpot16(preshift, -data.output_exponent) + data.output_zero_point)
    return np.clip(value, -128, 127)


KERNEL = HardSwish()
