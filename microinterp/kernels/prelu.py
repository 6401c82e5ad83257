"""PRELU: float32, int8 (int8 alpha) and int16 (int8 alpha), alpha broadcast against the input (<= 4 dims).

TFLM (``micro/kernels/prelu.cc``, ``prelu_common.cc``, ``reference/prelu.h`` BroadcastPrelu4DSlow):

* Prepare: ``(M1, s1) = QuantizeMultiplier(double(s_in) / double(s_out))``,
  ``(M2, s2) = QuantizeMultiplier(double(s_in) * double(s_alpha) / double(s_out))``; an int16 output requires an
  int8 alpha. Scales and zero points are the tensors' first ones (``params``).
* Eval: shapes are extended to 4-D and broadcast (a dim of 1 repeats); the loop runs over the *output* dims.
  ``v = x - zp_in``; ``v >= 0 ? MBQM(v, M1, s1) : MBQM(v * (alpha - zp_alpha), M2, s2)`` (int32 product,
  double-rounding MBQM), ``+ zp_out``, clamped to the output type. Float: ``x >= 0 ? x : x * alpha``.
* Refused here although TFLM only DCHECKs (it would compute garbage): more than 4 dims, shapes that do not
  broadcast to the output shape, mixed input/output types, an int8 output with a non-int8 alpha. Unsupported
  input types fail at Eval in TFLM, here at prepare.

int8: the function is tabulated in prepare for all 256 x 256 (input, alpha) codes; invoke is a lookup. int16: the
identity branch is tabulated over the input codes; the alpha branch is computed for the negative inputs only.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from ..quant import QMAX, QMIN, mbqm, quantize_multiplier, wrap_int32
from ._broadcast import laid_out, refreshed
from ._qutil import all_codes, bind_select, broadcast_shape, check_scales, lookup, qparams, select
from .bands import ROW_LOCAL
from .contract import POINTWISE, Kernel

#: input/output type -> required alpha type
ALPHA_TYPE = {"FLOAT32": "FLOAT32", "INT8": "INT8", "INT16": "INT8"}


@dataclass(frozen=True)
class PreluData:
    input_zero_point: int = 0
    alpha_zero_point: int = 0
    output_zero_point: int = 0
    multiplier_1: int = 0
    shift_1: int = 0
    multiplier_2: int = 0
    shift_2: int = 0
    qmin: int = 0
    qmax: int = 0
    lut: np.ndarray | None = field(default=None, repr=False)  # int8: [x code << 8 | alpha code]; int16: [x code]


def prelu_quantized(x: np.ndarray, alpha: np.ndarray, d: PreluData) -> np.ndarray:
    """TFLM BroadcastPrelu4DSlow per element (broadcasts like NumPy)."""
    v = np.asarray(x, dtype=np.int64) - d.input_zero_point
    a = np.asarray(alpha, dtype=np.int64) - d.alpha_zero_point
    r = np.where(v >= 0, mbqm(v, d.multiplier_1, d.shift_1), mbqm(wrap_int32(v * a), d.multiplier_2, d.shift_2))
    return np.clip(r + d.output_zero_point, d.qmin, d.qmax)


class Prelu(Kernel):
    ops = ("PRELU",)
    traits = POINTWISE
    op_class = "elementwise"
    #: out of core: row bands (a row of the output from the same row of its inputs)
    bands = ROW_LOCAL

    def prepare(self, ctx, op) -> PreluData:
        ctx.check_io_count(op, 2, 1)
        x, alpha, y = ctx.require_input(op, 0), ctx.require_input(op, 1), ctx.output(op, 0)
        if x.type_name not in ALPHA_TYPE:
            raise ctx.fail(op, f"Input type '{x.type_name}' is not supported (FLOAT32, INT8, INT16)")
        if y.type_name != x.type_name:
            raise ctx.fail(op, f"output type {y.type_name} differs from input type {x.type_name}")
        if alpha.type_name != ALPHA_TYPE[x.type_name]:
            raise ctx.fail(op, f"alpha must be {ALPHA_TYPE[x.type_name]} for {x.type_name} input, "
                               f"got {alpha.type_name}")
        problem = broadcast_shape(x.shape, alpha.shape, y.shape, 4)
        if problem:
            raise ctx.fail(op, problem)
        if x.type_name == "FLOAT32":
            return PreluData()
        check_scales(ctx, op, x, alpha, y)
        s_in, zp_in = qparams(x)
        s_a, zp_a = qparams(alpha)
        s_out, zp_out = qparams(y)
        m1, s1 = quantize_multiplier(s_in / s_out)
        m2, s2 = quantize_multiplier(s_in * s_a / s_out)
        data = PreluData(zp_in, zp_a, zp_out, m1, s1, m2, s2, QMIN[y.type_name], QMAX[y.type_name])
        if x.type_name == "INT8":
            codes = all_codes("INT8")
            return replace(data, lut=prelu_quantized(codes[:, None], codes[None, :], data).astype(np.int8).ravel())
        # int16: tabulate the identity branch only (the entries of negative inputs are never used)
        return replace(data, lut=prelu_quantized(all_codes("INT16"), zp_a, data).astype(np.int16))

    def bind(self, ctx, op, data: PreluData):
        """float32 on fixed views: ``x * alpha`` into the output, then ``x`` where ``x >= 0`` (None otherwise)."""
        x, alpha, out = ctx.input(op, 0), ctx.input(op, 1), ctx.output(op, 0)
        if x.dtype != np.float32 or not out.size or not out.flags.c_contiguous:
            return None
        view = out.reshape(np.broadcast_shapes(x.shape, alpha.shape))
        (x, alpha), view, refreshes = laid_out((x, alpha), view)     # a short broadcast inner loop made long
        keep = np.empty(x.shape, bool)
        zero = np.array(0.0, np.float32)         # 0-d: a scalar operand costs each call more
        choose = bind_select(keep, x, view, view)

        def call() -> None:       # under the runtime's quiet errstate (inf * 0 -> NaN, as in C)
            np.multiply(x, alpha, out=view)
            np.greater_equal(x, zero, out=keep)
            choose()
        return refreshed(refreshes, call)

    def invoke(self, ctx, op, data: PreluData) -> None:
        x, alpha = ctx.input(op, 0), ctx.input(op, 1)
        out = ctx.output(op, 0)
        if x.dtype == np.float32:
            with np.errstate(invalid="ignore", over="ignore"):  # inf * 0 -> NaN, as in C
                result = select(x >= 0, x, x * alpha)
        elif x.dtype == np.int8:
            result = data.lut.take((x.view(np.uint8).astype(np.uint16) << 8) | alpha.view(np.uint8))
        else:  # int16: identity branch from the table, alpha branch computed where the input is negative
            xb, ab = np.broadcast_arrays(x, alpha)
            result = lookup(data.lut, xb)
            negative = xb < data.input_zero_point
            result[negative] = prelu_quantized(xb[negative], ab[negative], data)
        out[...] = np.broadcast_to(result, np.broadcast_shapes(x.shape, alpha.shape)).reshape(out.shape)


KERNEL = Prelu()
