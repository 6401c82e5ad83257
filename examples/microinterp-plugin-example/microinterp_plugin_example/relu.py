"""RELU computed directly: ``clamp(zp_out + MBQM(x - zp_in, M, shift), act_min, act_max)`` at invoke time.

microinterp's reference RELU evaluates that formula once in prepare for all 256 (int8) or 65536 (int16) input codes
and looks the codes up at invoke time. This kernel keeps the reference's prepare (so it validates and refuses exactly
what TFLM refuses, and computes the same multiplier, shift and activation range) but evaluates the formula on the
tensor itself: a different algorithm with bit-identical results. float32 goes to the reference invoke
(``x < 0 ? 0 : x``, which keeps NaN and -0.0 as TFLM does; ``np.maximum(x, 0)`` would not).
"""

from __future__ import annotations

import numpy as np

from microinterp import Kernel
from microinterp.kernels import REFERENCE_KERNELS
from microinterp.quant import mbqm

REFERENCE = REFERENCE_KERNELS["RELU"]


class DirectRelu(Kernel):
    def prepare(self, ctx, op):
        return REFERENCE.prepare(ctx, op)  # validation and quantization maths: the reference's (a ReluData)

    def invoke(self, ctx, op, data) -> None:
        x = ctx.input(op, 0)
        if x.dtype == np.float32:
            REFERENCE.invoke(ctx, op, data)
            return
        out = ctx.output(op, 0)
        y = mbqm(x.astype(np.int64) - data.input_zero_point, data.multiplier, data.shift) + data.output_zero_point
        out[...] = np.clip(y, data.act_min, data.act_max).reshape(out.shape)
