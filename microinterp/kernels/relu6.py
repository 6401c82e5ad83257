"""RELU6: float32, int8 and int16 -- a clamp in the *input's* quantization; no requantization.

TFLM (``micro/kernels/activations.cc``, ``activations_common.cc`` Relu6Prepare / Relu6Quantized):

* Prepare (int8/int16): ``zero = (T)zp_in`` (C cast, wraps for an out-of-range zero point) and
  ``six = FloatToQuantizedType<T>(6.0f, s_in, zp_in)`` = ``clamp_T(int32(round(6.0f / s_in) + zp_in))``, the division
  in float32. The output's scale and zero point are ignored (no requantization, unlike RELU). Pitfall: when
  ``6 / s_in`` exceeds int32 the x86 conversion gives INT32_MIN, so ``six`` becomes the type minimum.
* Eval: ``x > six ? six : (x < zero ? zero : x)`` (in that order, which matters when ``six < zero``);
  float: the same with 6.0f and 0.0f. Other types fail at Eval in TFLM (here at prepare). Quantized: evaluated in
  prepare for every input code, invoke is a table lookup.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..quant import round_half_away
from ._float_relu import bind_relu_op, relu6_float
from ._qutil import all_codes, clamp_to_type, lookup, qparams, to_int32_x86
from .bands import ROW_LOCAL
from .contract import ELEMENTWISE, Kernel
from .relu import check_activation_types


@dataclass(frozen=True)
class Relu6Data:
    zero: float | int
    six: float | int
    lut: np.ndarray | None = field(default=None, repr=False)


def relu6(x: np.ndarray, zero, six) -> np.ndarray:
    """TFLM Relu6Float / Relu6Quantized: ``x > six ? six : (x < zero ? zero : x)``."""
    six, zero = x.dtype.type(six), x.dtype.type(zero)
    return np.where(x > six, six, np.where(x < zero, zero, x))


class Relu6(Kernel):
    ops = ("RELU6",)
    traits = ELEMENTWISE
    op_class = "elementwise"
    cost_family = "elementwise"
    opdata = 8
    #: out of core: row bands (a row of the output from the same row of its inputs)
    bands = ROW_LOCAL

    def prepare(self, ctx, op) -> Relu6Data:
        x, _ = check_activation_types(ctx, op)
        if x.type_name == "FLOAT32":
            return Relu6Data(0.0, 6.0)
        scale, zp = qparams(x)
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.float32(6.0) / np.float32(scale)
        six = int(clamp_to_type(to_int32_x86(round_half_away(ratio) + zp), x.type_name))
        zero = int(np.array(zp, dtype=np.int64).astype(x.dtype))  # C cast to int8/int16 wraps
        return Relu6Data(zero, six, relu6(all_codes(x.type_name), zero, six))

    def bind(self, ctx, op, data: Relu6Data):
        """:func:`._float_relu.bind_relu_op`: the table's lookup, or the float32 clip."""
        return bind_relu_op(ctx.input(op, 0), ctx.output(op, 0), data.lut, six=True)

    def invoke(self, ctx, op, data: Relu6Data) -> None:
        x = ctx.input(op, 0)
        out = ctx.output(op, 0)
        if data.lut is None:  # float: x > 6 ? 6 : (x < 0 ? 0 : x) (NaN and -0.0 pass through unchanged)
            relu6_float(x, out)
        else:
            out[...] = lookup(data.lut, x).reshape(out.shape)


KERNEL = Relu6()
