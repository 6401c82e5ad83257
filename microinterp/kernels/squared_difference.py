"""SQUARED_DIFFERENCE: ``(x - y)^2`` element-wise with broadcasting (``micro/kernels/squared_difference.cc``).

Prepare (TFLM): two inputs, one output; input types equal (the output is given input 2's type -- a different
output type is refused here). Eval by output type: FLOAT32 ``d * d`` with ``d = x - y`` in float32; INT32 the same
with int32 wrap-around; INT8 and INT16 quantized (INT16 needs zero points 0; INT8 zero points must lie in the int8
range):

* ``left_shift`` 7 (int8) or 0 (int16); ``twice_max = 2 * max(s1, s2)`` (double);
  ``(M1, e1) = QuantizeMultiplierSmallerThanOneExp(s1 / twice_max)``, likewise ``M2``;
  ``(M, e) = QuantizeMultiplier(twice_max^2 / ((1 << 2*left_shift) * s_out))`` (the product in float);
* per element ``v_k = MBQMSmallerThanOneExp((x_k - zp_k) << left_shift, M_k, e_k)``, ``d = v1 - v2``,
  ``out = clamp(MBQM(d * d, M, e) + zp_out)`` (int32 products wrap).

Equal shapes: flat element-wise; otherwise ``BroadcastBinaryFunction4DSlow`` (at most 4 dims). The per-input
rescaling is tabulated over every code in prepare.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..quant import (
    QMAX,
    QMIN,
    mbqm,
    quantize_multiplier,
    quantize_multiplier_smaller_than_one_exp,
    wrap_int32,
)
from ._broadcast import laid_out, refreshed
from ._qutil import all_codes, check_flat_or_broadcast, check_scales, lookup, qparams
from .bands import ROW_LOCAL
from .contract import POINTWISE, Kernel

SUPPORTED_TYPES = ("FLOAT32", "INT32", "INT8", "INT16")
MAX_BROADCAST_RANK = 4
LEFT_SHIFT = {"INT8": 7, "INT16": 0}


@dataclass(frozen=True)
class SquaredDifferenceData:
    broadcast: bool
    tables: tuple[np.ndarray, np.ndarray] | None = field(default=None, repr=False)
    multiplier: int = 0
    shift: int = 0
    zero_point: int = 0


class SquaredDifference(Kernel):
    ops = ("SQUARED_DIFFERENCE",)
    traits = POINTWISE
    op_class = "elementwise"
    cost_family = "elementwise"
    #: out of core: row bands (a row of the output from the same row of its inputs)
    bands = ROW_LOCAL

    def prepare(self, ctx, op) -> SquaredDifferenceData:
        ctx.check_io_count(op, 2, 1)
        a, b, y = ctx.require_input(op, 0), ctx.require_input(op, 1), ctx.output(op, 0)
        if a.type_name != b.type_name or y.type_name != b.type_name:
            raise ctx.fail(op, f"types must match, got {a.type_name}, {b.type_name} -> {y.type_name}")
        if y.type_name not in SUPPORTED_TYPES:
            raise ctx.fail(op, f"SquaredDifference only supports FLOAT32, INT32, INT16 and INT8, got {y.type_name}")
        broadcast = check_flat_or_broadcast(ctx, op, a, b, y, MAX_BROADCAST_RANK)
        if y.type_name in ("FLOAT32", "INT32"):
            return SquaredDifferenceData(broadcast)
        check_scales(ctx, op, a, b, y)
        t = y.type_name
        q = [qparams(v) for v in (a, b, y)]
        for s, zp in q:
            if t == "INT16" and zp != 0:
                raise ctx.fail(op, f"int16 SQUARED_DIFFERENCE needs zero points 0, got {zp}")
            if not QMIN["INT8"] <= zp <= QMAX["INT8"]:
                raise ctx.fail(op, f"zero point {zp} is outside the int8 range")
        shift = LEFT_SHIFT[t]
        twice_max = 2.0 * max(q[0][0], q[1][0])
        tables = []
        for s, zp in q[:2]:
            m, e = quantize_multiplier_smaller_than_one_exp(s / twice_max)
            codes = all_codes(t).astype(np.int64)
            tables.append(mbqm(wrap_int32((codes - zp) << shift), m, e).astype(np.int64))
        out_scale = float(np.float32((1 << (2 * shift)) * np.float32(q[2][0])))
        m, e = quantize_multiplier(twice_max * twice_max / out_scale)
        return SquaredDifferenceData(broadcast, (tables[0], tables[1]), m, e, q[2][1])

    def bind(self, ctx, op, data: SquaredDifferenceData):
        """FLOAT32 and INT32 on fixed views: ``d = x - y`` into the output, then ``d * d`` in place (two NaN operands
        keep the first's, as x86's subtraction does and NumPy's loops do), laid out for a long inner loop
        (:func:`._broadcast.long_inner`); None otherwise."""
        a, b, out = ctx.input(op, 0), ctx.input(op, 1), ctx.output(op, 0)
        if data.tables is not None or not out.flags.c_contiguous or not out.size:
            return None
        if not data.broadcast:
            a, b = a.reshape(out.shape), b.reshape(out.shape)
        y = out.reshape(np.broadcast_shapes(a.shape, b.shape))
        (a, b), y, refreshes = laid_out((a, b), y)

        def call() -> None:     # under the runtime's errstate (float errors ignored); int32 wraps as in C
            np.subtract(a, b, out=y)
            np.multiply(y, y, out=y)
        return refreshed(refreshes, call)

    def invoke(self, ctx, op, data: SquaredDifferenceData) -> None:
        a, b, out = ctx.input(op, 0), ctx.input(op, 1), ctx.output(op, 0)
        if not data.broadcast:
            a, b = a.reshape(out.shape), b.reshape(out.shape)
        if data.tables is None:
            with np.errstate(all="ignore"):
                d = np.subtract(a, b, dtype=out.dtype)
                out[...] = np.multiply(d, d, dtype=out.dtype).reshape(out.shape)
            return
        d = lookup(data.tables[0], a) - lookup(data.tables[1], b)
        r = mbqm(wrap_int32(d * d), data.multiplier, data.shift) + data.zero_point
        t = "INT8" if out.dtype == np.int8 else "INT16"
        out[...] = np.clip(r, QMIN[t], QMAX[t]).reshape(out.shape)


KERNEL = SquaredDifference()
