"""RELU: float32, int8 and int16 (the quantized kernels requantize from the input to the output scale).

TFLM (``micro/kernels/activations.cc``, ``activations_common.cc`` ReluPrepare / CalculateReluOpData / ReluQuantized):

* Prepare: int16 requires input and output zero points 0. For int8/int16:
  ``(M, shift) = QuantizeMultiplier(double(s_in) / double(s_out))``;
  ``act_min = max(qmin, zp_out + (int)roundf(0.0f / s_out))`` (= zp_out), ``act_max = qmax``.
* Eval: float ``x < 0 ? 0 : x``; quantized ``min(act_max, max(act_min, zp_out + MBQM(x - zp_in, M, shift)))``
  (double-rounding MBQM). Other types (uint8, int32, ...) fail at Eval in TFLM (here at prepare); TFLM does not
  check that the output type equals the input type (it would write the wrong element size), so that is refused too.

The quantized function is evaluated in prepare for every input code; invoke is a table lookup.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from ..quant import activation_range, mbqm, quantize_multiplier
from ._float_relu import bind_relu_op, relu_float
from ._qutil import all_codes, check_scales, lookup, qparams
from .bands import ROW_LOCAL
from .contract import ELEMENTWISE, Kernel

SUPPORTED_TYPES = ("FLOAT32", "INT8", "INT16")


@dataclass(frozen=True)
class ReluData:
    input_zero_point: int = 0
    output_zero_point: int = 0
    multiplier: int = 0
    shift: int = 0
    act_min: int = 0
    act_max: int = 0
    lut: np.ndarray | None = field(default=None, repr=False)


def relu_quantized(x: np.ndarray, d: ReluData) -> np.ndarray:
    """TFLM ReluQuantized: ``min(act_max, max(act_min, zp_out + MBQM(x - zp_in, M, shift)))``."""
    r = mbqm(x.astype(np.int64) - d.input_zero_point, d.multiplier, d.shift) + d.output_zero_point
    return np.minimum(np.maximum(r, d.act_min), d.act_max)


def check_activation_types(ctx, op):
    """Shared by RELU and RELU6: 1 in, 1 out, same type, one of float32/int8/int16, same number of elements."""
    ctx.check_io_count(op, 1, 1)
    x, y = ctx.require_input(op, 0), ctx.output(op, 0)
    if x.type_name not in SUPPORTED_TYPES:
        raise ctx.fail(op, f"Only float32/int8/int16 is supported currently, got {x.type_name}")
    if y.type_name != x.type_name:
        raise ctx.fail(op, f"output type {y.type_name} differs from input type {x.type_name}")
    if x.num_elements != y.num_elements:
        raise ctx.fail(op, f"input shape {x.shape} and output shape {y.shape} differ in size")
    return x, y


class Relu(Kernel):
    ops = ("RELU",)
    traits = ELEMENTWISE
    op_class = "elementwise"
    cost_family = "elementwise"
    opdata = 28
    #: out of core: row bands (a row of the output from the same row of its inputs)
    bands = ROW_LOCAL

    def prepare(self, ctx, op) -> ReluData:
        x, y = check_activation_types(ctx, op)
        if x.type_name == "FLOAT32":
            return ReluData()
        check_scales(ctx, op, x, y)
        s_in, zp_in = qparams(x)
        s_out, zp_out = qparams(y)
        if x.type_name == "INT16" and (zp_in != 0 or zp_out != 0):
            raise ctx.fail(op, f"int16 RELU requires zero points 0, got input {zp_in} and output {zp_out}")
        m, shift = quantize_multiplier(s_in / s_out)
        act_min, act_max = activation_range("RELU", s_out, zp_out, y.type_name)
        data = ReluData(zp_in, zp_out, m, shift, act_min, act_max)
        return replace(data, lut=relu_quantized(all_codes(x.type_name), data).astype(y.dtype))

    def bind(self, ctx, op, data: ReluData):
        """:func:`._float_relu.bind_relu_op`: the table's lookup, or the float32 clip."""
        return bind_relu_op(ctx.input(op, 0), ctx.output(op, 0), data.lut, six=False)

    def invoke(self, ctx, op, data: ReluData) -> None:
        x = ctx.input(op, 0)
        out = ctx.output(op, 0)
        if data.lut is None:  # float: x < 0 ? 0 : x (NaN and -0.0 pass through unchanged)
            relu_float(x, out)
        else:
            out[...] = lookup(data.lut, x).reshape(out.shape)


KERNEL = Relu()
