"""LEAKY_RELU: float32, int8 and int16, with separate multipliers for the identity and the alpha branch.

TFLM (``micro/kernels/leaky_relu.cc``, ``leaky_relu_common.cc``, ``reference/leaky_relu.h``):

* Prepare: 1 input, 1 output of the same type. For int8/int16, from doubles (the wheel widens every float32 scale
  to double *before* multiplying -- docs/tflm-facts.md section 0; the mirror source still shows float32 products):
  ``(M_alpha, s_alpha) = QuantizeMultiplier(double(s_in) * double(alpha) / double(s_out))`` and
  ``(M_id, s_id) = QuantizeMultiplier(double(s_in) / double(s_out))``. A negative alpha gives a negative multiplier
  (``QuantizeMultiplier`` works on the signed fraction; no 2^31 fix-up happens for -2^31).
* Eval: ``v = x - zp_in``; ``v >= 0``: ``MBQM(v, M_id, s_id)``; else ``MBQM(v, |M_alpha|, s_alpha)``, negated when
  ``M_alpha < 0`` (``|.|`` in int32, so -2^31 stays -2^31); ``out = clamp(zp_out + that)`` (double-rounding MBQM).
  Pitfall: ``-MBQM(v, |M|)`` is not ``MBQM(v, -M)`` -- SRDHM's nudge depends on the product's sign, so the two
  differ by one on exact halves. Float: ``x > 0 ? x : x * alpha`` in float32. Other types fail at Eval in TFLM (here at
  prepare). ``alpha`` defaults to 0 when the options table is missing (TFLM zero-initialises the params).
  Quantized: evaluated in prepare for every input code, invoke is a table lookup.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from ..quant import QMAX, QMIN, mbqm, quantize_multiplier, wrap_int32
from ._qutil import all_codes, bind_lookup, check_scales, lookup, qparams, select
from .bands import ROW_LOCAL
from .contract import ELEMENTWISE, Kernel


@dataclass(frozen=True)
class LeakyReluData:
    alpha: float
    input_zero_point: int = 0
    output_zero_point: int = 0
    multiplier_identity: int = 0
    shift_identity: int = 0
    multiplier_alpha: int = 0
    shift_alpha: int = 0
    qmin: int = 0
    qmax: int = 0
    lut: np.ndarray | None = field(default=None, repr=False)


def leaky_relu_quantized(x: np.ndarray, d: LeakyReluData) -> np.ndarray:
    """TFLM QuantizeLeakyRelu (identity branch for ``v >= 0``, sign-split alpha branch otherwise)."""
    v = x.astype(np.int64) - d.input_zero_point
    negative_alpha = d.multiplier_alpha < 0
    safe_multiplier = int(wrap_int32(-d.multiplier_alpha)) if negative_alpha else d.multiplier_alpha
    scaled_alpha = mbqm(v, safe_multiplier, d.shift_alpha)
    r = np.where(v >= 0, mbqm(v, d.multiplier_identity, d.shift_identity),
                 -scaled_alpha if negative_alpha else scaled_alpha)
    return np.clip(r + d.output_zero_point, d.qmin, d.qmax)


class LeakyRelu(Kernel):
    ops = ("LEAKY_RELU",)
    traits = ELEMENTWISE
    op_class = "elementwise"
    cost_family = "elementwise"
    opdata = 24
    #: out of core: row bands (a row of the output from the same row of its inputs)
    bands = ROW_LOCAL

    def prepare(self, ctx, op) -> LeakyReluData:
        ctx.check_io_count(op, 1, 1)
        x, y = ctx.require_input(op, 0), ctx.output(op, 0)
        if x.type_name != y.type_name:
            raise ctx.fail(op, f"input type {x.type_name} differs from output type {y.type_name}")
        if x.type_name not in ("FLOAT32", "INT8", "INT16"):
            raise ctx.fail(op, f"Only float32, int8 and int16 are supported by LEAKY_RELU, got {x.type_name}")
        if x.num_elements != y.num_elements:
            raise ctx.fail(op, f"input shape {x.shape} and output shape {y.shape} differ in size")
        alpha = float(np.float32(op.options.get("alpha", 0.0)))
        if x.type_name == "FLOAT32":
            return LeakyReluData(alpha)
        check_scales(ctx, op, x, y)
        s_in, zp_in = qparams(x)
        s_out, zp_out = qparams(y)
        m_id, s_id = quantize_multiplier(s_in / s_out)
        m_a, s_a = quantize_multiplier(s_in * alpha / s_out)  # all doubles, left to right as in the wheel
        data = LeakyReluData(alpha, zp_in, zp_out, m_id, s_id, m_a, s_a, QMIN[y.type_name], QMAX[y.type_name])
        return replace(data, lut=leaky_relu_quantized(all_codes(x.type_name), data).astype(y.dtype))

    def bind(self, ctx, op, data: LeakyReluData):
        """int8 / int16 on fixed views: the table's lookup (:func:`._qutil.bind_lookup`); None for float32."""
        return None if data.lut is None else bind_lookup(data.lut, ctx.input(op, 0), ctx.output(op, 0))

    def invoke(self, ctx, op, data: LeakyReluData) -> None:
        x = ctx.input(op, 0)
        out = ctx.output(op, 0)
        if data.lut is None:
            with np.errstate(invalid="ignore", over="ignore"):  # inf * 0 -> NaN, as in C
                result = select(x > 0, x, x * np.float32(data.alpha))
        else:
            result = lookup(data.lut, x)
        out[...] = result.reshape(out.shape)


KERNEL = LeakyRelu()
