"""ELU: ``x < 0 ? exp(x) - 1 : x`` (``micro/kernels/elu.cc``, ``reference/elu.h``).

Prepare (TFLM): one input, one output of the same type. FLOAT32 Eval: ``val < 0.0f ? TfLiteExpm1(val) : val``
(the C library's ``expm1f``; NaN passes through). INT8: a 256-entry table built in Prepare, all in float32:
``inverse_scale = 1 / s_out``; for every code ``d = s_in * (code - zp_in)``; ``t = d < 0 ? expf(d) - 1 : d``;
``q = static_cast<int32_t>(TfLiteRound(t * inverse_scale) + zp_out)`` (round half away from zero, the zero point
added in float), clamped to int8. Other types fail at Eval (here at prepare).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .. import libm
from ..quant import round_half_away_f32
from ._qutil import all_codes, bind_lookup, check_scales, lookup, qparams, select, to_int32_x86
from .bands import ROW_LOCAL
from .contract import PURE, Kernel


@dataclass(frozen=True)
class EluData:
    lut: np.ndarray | None = field(default=None, repr=False)


def elu_table(s_in: float, zp_in: int, s_out: float, zp_out: int) -> np.ndarray:
    f32 = np.float32
    inverse = f32(1.0) / f32(s_out)
    with np.errstate(all="ignore"):
        d = f32(s_in) * (all_codes("INT8").astype(np.int32) - zp_in).astype(f32)
        t = np.where(d < 0, libm.expf(d) - f32(1.0), d).astype(f32)
        rescaled = round_half_away_f32((t * inverse).astype(f32))
        q = to_int32_x86((rescaled + f32(zp_out)).astype(f32))
    return np.clip(q, -128, 127).astype(np.int8)


class Elu(Kernel):
    ops = ("ELU",)
    traits = PURE
    #: out of core: row bands (a row of the output from the same row of its inputs)
    bands = ROW_LOCAL

    def prepare(self, ctx, op) -> EluData:
        ctx.check_io_count(op, 1, 1)
        x, y = ctx.require_input(op, 0), ctx.output(op, 0)
        if x.type_name != y.type_name:
            raise ctx.fail(op, f"output type {y.type_name} differs from input type {x.type_name}")
        if x.type_name not in ("FLOAT32", "INT8"):
            raise ctx.fail(op, f"ELU only supports float32 and int8 currently, got {x.type_name}.")
        if x.num_elements != y.num_elements:
            raise ctx.fail(op, f"input shape {x.shape} and output shape {y.shape} differ in size")
        if x.type_name == "FLOAT32":
            return EluData()
        check_scales(ctx, op, x, y)
        (s_in, zp_in), (s_out, zp_out) = qparams(x), qparams(y)
        return EluData(elu_table(s_in, zp_in, s_out, zp_out))

    def bind(self, ctx, op, data: EluData):
        """int8 on fixed views: the table's lookup (:func:`._qutil.bind_lookup`); None for float32."""
        return None if data.lut is None else bind_lookup(data.lut, ctx.input(op, 0), ctx.output(op, 0))

    def invoke(self, ctx, op, data: EluData) -> None:
        x, out = ctx.input(op, 0), ctx.output(op, 0)
        if data.lut is not None:
            out[...] = lookup(data.lut, x).reshape(out.shape)
        else:
            out[...] = select(x < 0, libm.expm1f(x), x).reshape(out.shape)


KERNEL = Elu()
