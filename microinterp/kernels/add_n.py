"""ADD_N: the element-wise sum of N >= 2 tensors of one shape (``micro/kernels/add_n.cc``, ``reference/add_n.h``).

Prepare (TFLM): at least two inputs, one output of the first input's type; every input has the first one's shape
and type (INT8: also its scale and zero point). FLOAT32 and INT8 only. Both request a scratch buffer of N pointers
(``sizeof(T*) * N``: 8 bytes each on the wheel's 64-bit host) for the input list. Eval:

* FLOAT32: ``x = 0; x += in_j[i]`` for j in order, in float32 (no activation clamp).
* INT8, ``left_shift = 20``, ``(Mi, ei) = QuantizeMultiplierSmallerThanOneExp(s / (2 s))`` (= 1/2),
  ``(Mo, eo) = QuantizeMultiplierSmallerThanOneExp(2 s / (2^20 s_out))``: per element the sum starts at the
  rescaled *offset* (``MBQMSmallerThanOneExp(-zp << 20, Mi, ei)``: TFLM's ``x = input1_offset`` where a comment says
  ``x = 0``), adds ``MBQMSmallerThanOneExp((x_j - zp) << 20, Mi, ei)`` for every input (int32 sums wrap), then
  ``clamp(MBQMSmallerThanOneExp(sum, Mo, eo) + zp_out)`` to int8. ``2 s / (2^20 s_out) >= 1`` would need a
  negative rounding shift (undefined behaviour) and is refused.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..quant import mbqm, quantize_multiplier_smaller_than_one_exp, wrap_int32
from ._qutil import all_codes, check_scales, lookup, qparams
from .bands import ROW_LOCAL
from .contract import PURE, Kernel

LEFT_SHIFT = 20
POINTER_BYTES = 8


@dataclass(frozen=True)
class AddNData:
    scratch: int
    table: np.ndarray | None = field(default=None, repr=False)
    start: int = 0
    multiplier: int = 0
    shift: int = 0
    zero_point: int = 0


class AddN(Kernel):
    ops = ("ADD_N",)
    traits = PURE
    #: out of core: row bands (a row of the output from the same row of its inputs)
    bands = ROW_LOCAL

    def prepare(self, ctx, op) -> AddNData:
        n = len(op.inputs)
        if n < 2:
            raise ctx.fail(op, f"ADD_N needs at least two inputs, got {n}")
        ctx.check_io_count(op, (2, n), 1)
        first, y = ctx.require_input(op, 0), ctx.output(op, 0)
        if y.type_name != first.type_name:
            raise ctx.fail(op, f"output type {y.type_name} differs from input type {first.type_name}")
        for k in range(1, n):
            t = ctx.require_input(op, k)
            if tuple(t.shape) != tuple(first.shape) or t.type_name != first.type_name:
                raise ctx.fail(op, f"input {k} is {t.type_name} {t.shape}, input 0 {first.type_name} {first.shape}")
            if first.type_name == "INT8" and qparams(t) != qparams(first):
                raise ctx.fail(op, f"input {k} has quantization {qparams(t)}, input 0 {qparams(first)}")
        if y.type_name not in ("FLOAT32", "INT8"):
            raise ctx.fail(op, f"ADD_N only supports FLOAT32 and INT8, got {y.type_name}.")
        if first.num_elements != y.num_elements:
            raise ctx.fail(op, f"input shape {first.shape} and output shape {y.shape} differ in size")
        if y.type_name == "FLOAT32":
            return AddNData(ctx.request_scratch(op, POINTER_BYTES * n))
        check_scales(ctx, op, first, y)
        (s, zp), (s_out, zp_out) = qparams(first), qparams(y)
        twice = 2.0 * s
        mi, ei = quantize_multiplier_smaller_than_one_exp(s / twice)
        real_out = twice / ((1 << LEFT_SHIFT) * s_out)
        if real_out >= 1.0:
            raise ctx.fail(op, f"2 * input scale / (2^20 * output scale) = {real_out} must be below 1")
        mo, eo = quantize_multiplier_smaller_than_one_exp(real_out)
        scratch = ctx.request_scratch(op, POINTER_BYTES * n)
        table = mbqm(wrap_int32((all_codes("INT8").astype(np.int64) - zp) << LEFT_SHIFT), mi, ei).astype(np.int64)
        start = int(mbqm(wrap_int32(np.int64(-zp) << LEFT_SHIFT), mi, ei))
        return AddNData(scratch, table, start, mo, eo, zp_out)

    def invoke(self, ctx, op, data: AddNData) -> None:
        out = ctx.output(op, 0)
        ins = [ctx.views[t] for t in op.inputs]
        if data.table is None:
            acc = np.zeros(out.shape, np.float32)
            with np.errstate(all="ignore"):
                for x in ins:
                    acc += x.reshape(out.shape)
            out[...] = acc
            return
        acc = np.full(out.shape, data.start, np.int64)
        for x in ins:
            acc = wrap_int32(acc + lookup(data.table, x).reshape(out.shape))
        r = mbqm(acc, data.multiplier, data.shift) + data.zero_point
        out[...] = np.clip(r, -128, 127)


KERNEL = AddN()
