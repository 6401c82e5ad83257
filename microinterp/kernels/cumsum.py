"""CUMSUM: cumulative sums along one axis, optionally exclusive and/or reversed (``micro/kernels/cumsum.cc``,
``reference/cumsum.h``).

Prepare (TFLM): two inputs (the data, FLOAT32 or INT8, at least 1-D; the axis, one INT32), one output of the same
type and shape. Eval reads the axis (negative counts from the end; out of range fails -- here
:class:`~microinterp.errors.InvokeError`, or a PrepareError when the axis is a constant). ``reverse`` runs the sum
from the end; ``exclusive`` writes the sum *before* adding the element.

* FLOAT32: one float32 accumulator per line, added in order (``np.cumsum`` in float32 is the same sequence).
* INT8 (``left_shift = 20``, ``(Mi, ei) = QuantizeMultiplierSmallerThanOneExp(1/2)``,
  ``(Mo, eo) = QuantizeMultiplierSmallerThanOneExp(2 s_in / (2^20 s_out))``): the accumulator starts at the
  rescaled *offset* ``MBQMSmallerThanOneExp(-zp_in << 20, Mi, ei)`` (TFLM's ``accumulator = input1_offset``),
  adds ``MBQMSmallerThanOneExp((x - zp_in) << 20, Mi, ei)`` per element (int32, wrapping), and each output is
  ``clamp(MBQMSmallerThanOneExp(acc, Mo, eo) + zp_out)``. ``2 s_in / (2^20 s_out) >= 1`` would need a negative
  rounding shift (undefined) and is refused.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..errors import InvokeError
from ..quant import mbqm, quantize_multiplier_smaller_than_one_exp, wrap_int32
from ._qutil import all_codes, check_scales, lookup, qparams
from .contract import MIXING, Kernel

LEFT_SHIFT = 20


@dataclass(frozen=True)
class CumsumData:
    exclusive: bool
    reverse: bool
    axis: int | None
    table: np.ndarray | None = field(default=None, repr=False)
    start: int = 0
    multiplier: int = 0
    shift: int = 0
    zero_point: int = 0


def _axis(value, rank: int) -> int | None:
    a = int(np.asarray(value).reshape(-1)[0])
    a = a + rank if a < 0 else a
    return a if 0 <= a < rank else None


class Cumsum(Kernel):
    ops = ("CUMSUM",)
    traits = MIXING
    def prepare(self, ctx, op) -> CumsumData:
        ctx.check_io_count(op, 2, 1)
        x, axis, y = ctx.require_input(op, 0), ctx.require_input(op, 1), ctx.output(op, 0)
        if x.type_name not in ("FLOAT32", "INT8"):
            raise ctx.fail(op, f"CUMSUM only supports FLOAT32 and INT8, got {x.type_name}")
        if axis.type_name != "INT32" or axis.num_elements != 1:
            raise ctx.fail(op, f"the axis must be one INT32, got {axis.type_name} {axis.shape}")
        if len(x.shape) < 1:
            raise ctx.fail(op, "the input must have at least one dimension")
        if y.type_name != x.type_name or tuple(y.shape) != tuple(x.shape):
            raise ctx.fail(op, f"output {y.type_name} {y.shape} differs from input {x.type_name} {x.shape}")
        a = None
        if axis.data is not None:
            a = _axis(axis.data, len(x.shape))
            if a is None:
                raise ctx.fail(op, f"CUMSUM Invalid axis: {int(axis.data.reshape(-1)[0])}")
        exclusive, reverse = op.options["exclusive"], op.options["reverse"]
        if x.type_name == "FLOAT32":
            return CumsumData(exclusive, reverse, a)
        check_scales(ctx, op, x, y)
        (s, zp), (s_out, zp_out) = qparams(x), qparams(y)
        mi, ei = quantize_multiplier_smaller_than_one_exp(s / (2.0 * s))
        real_out = 2.0 * s / ((1 << LEFT_SHIFT) * s_out)
        if real_out >= 1.0:
            raise ctx.fail(op, f"2 * input scale / (2^20 * output scale) = {real_out} must be below 1")
        mo, eo = quantize_multiplier_smaller_than_one_exp(real_out)
        table = mbqm(wrap_int32((all_codes("INT8").astype(np.int64) - zp) << LEFT_SHIFT), mi, ei).astype(np.int64)
        start = int(mbqm(wrap_int32(np.int64(-zp) << LEFT_SHIFT), mi, ei))
        return CumsumData(exclusive, reverse, a, table, start, mo, eo, zp_out)

    def invoke(self, ctx, op, data: CumsumData) -> None:
        x, out = ctx.input(op, 0), ctx.output(op, 0)
        axis = data.axis
        if axis is None:
            axis = _axis(ctx.input(op, 1), x.ndim)
            if axis is None:
                raise InvokeError(op.index, op.key, f"CUMSUM Invalid axis: {int(ctx.input(op, 1).reshape(-1)[0])}")
        values = x if data.table is None else lookup(data.table, x)
        if data.reverse:
            values = np.flip(values, axis)
        if data.table is None:
            acc = np.cumsum(values, axis=axis, dtype=np.float32)
            zero = np.float32(0)
        else:
            acc = wrap_int32(np.cumsum(values, axis=axis, dtype=np.int64) + data.start)
            zero = data.start
        if data.exclusive and acc.shape[axis]:
            acc = np.concatenate([np.full_like(np.take(acc, [0], axis=axis), zero),
                                  np.take(acc, np.arange(acc.shape[axis] - 1), axis=axis)], axis=axis)
        if data.reverse:
            acc = np.flip(acc, axis)
        if data.table is not None:
            acc = np.clip(mbqm(acc, data.multiplier, data.shift) + data.zero_point, -128, 127)
        out[...] = acc


KERNEL = Cumsum()
