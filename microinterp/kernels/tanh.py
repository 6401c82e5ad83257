"""TANH: float32, int8 (gemmlowp fixed point) and int16 (sigmoid table), as TFLM computes them.

TFLM (``micro/kernels/tanh.cc``, ``reference/integer_ops/tanh.h``, ``reference/tanh.h``):

* Prepare: 1 input, 1 output, equal types. int8: the same (M, ls, radius) as LOGISTIC (``frexp(s_in * 2^27)``);
  no check at all on the output quantization (zero point 0 and scale 1/128 are assumed). int16: input and output
  zero point 0, output scale 2^-15; input scales 2^-12 and 2^-11 are the power-of-two cases (multiplier
  ``3 << shift``), any other scale gets the doubled ``s_in * 4096 * 3`` multiplier as in LOGISTIC.
* int8: ``v = x - zp_in``; ``v <= -radius -> -128``; ``v >= radius -> 127``; else
  ``clamp(RDBPOT(tanh(MBQM(v, M, ls) as Q4.27), 24), -128, 127)`` -- pitfall: the output zero point is *not*
  added.
* int16: ``a = |v|``, ``uh = a >> 8``; ``uh >= 255 -> 0xFFFF << 8``; else ``(T[uh] << 8) + (a & 0xff) * (T[uh+1] -
  T[uh])``; ``v >= 0 -> r - 2^23 + 2^7``, else ``-r + 2^23 + 2^7 - 1``; result ``>> 8`` (tanh(x) = 2 sigmoid(2x) - 1
  on the same table): :func:`~microinterp.quant.tanh_int16`.
* float32: the C library's ``tanhf`` (see :mod:`microinterp.libm`).

Speed: as in LOGISTIC, the int8/int16 functions are tabulated for every input value in Prepare (OpData cache).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from .. import libm
from ..quant import fixed_point_tanh, tanh_int16
from ._qutil import all_codes, bind_lookup, lookup, qparams
from .bands import ROW_LOCAL
from .contract import ELEMENTWISE, Kernel
from .logistic import int8_function, int8_input_params, int16_input_params


@dataclass(frozen=True)
class TanhData:
    mode: str               # "float", "int8" or "int16"
    input_zero_point: int
    input_range_radius: int
    input_multiplier: int
    input_left_shift: int
    table: np.ndarray | None = None  # int8 / int16: output for every input value, indexed by uint8/uint16 view


class Tanh(Kernel):
    ops = ("TANH",)
    traits = ELEMENTWISE
    op_class = "elementwise"
    cost_family = "elementwise"
    opdata = 16
    #: out of core: row bands (a row of the output from the same row of its inputs)
    bands = ROW_LOCAL

    def prepare(self, ctx, op) -> TanhData:
        ctx.check_io_count(op, 1, 1)
        x, y = ctx.require_input(op, 0), ctx.output(op, 0)
        if x.type_name != y.type_name:
            raise ctx.fail(op, f"input type {x.type_name} differs from output type {y.type_name}")
        if x.type_name == "INT8":
            m, shift, radius = int8_input_params(qparams(x)[0])
            data = TanhData("int8", qparams(x)[1], radius, m, shift)
            return replace(data, table=_tanh_int8(all_codes("INT8"), data))
        if x.type_name == "INT16":
            m, shift = int16_input_params(ctx, op, x, y, pot_shifts=(0, 1))
            return TanhData("int16", 0, 0, m, shift, tanh_int16(all_codes("INT16"), m, shift))
        if x.type_name == "FLOAT32":
            return TanhData("float", 0, 0, 0, 0)
        raise ctx.fail(op, f"unsupported type {x.type_name}")

    def bind(self, ctx, op, data: TanhData):
        """int8 / int16 on fixed views: the table's lookup (:func:`._qutil.bind_lookup`); None for float32."""
        return None if data.mode == "float" else bind_lookup(data.table, ctx.input(op, 0), ctx.output(op, 0))

    def invoke(self, ctx, op, data: TanhData) -> None:
        x = ctx.input(op, 0)
        out = ctx.output(op, 0)
        if data.mode == "float":
            out[...] = libm.tanhf(x)
        else:
            out[...] = lookup(data.table, x)


def _tanh_int8(x: np.ndarray, data: TanhData) -> np.ndarray:
    """Result in Q0.7 (``>> 24``), no output zero point added."""
    return int8_function(x, data, fixed_point_tanh, 31 - 7, 0)


KERNEL = Tanh()
