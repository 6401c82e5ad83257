"""UNPACK: split a tensor into ``num`` tensors along ``axis``, dropping that axis (float32, int8, int16, int32).

TFLM (``micro/kernels/unpack.cc``) has no Prepare; Eval takes ``axis`` (negative ``+= input rank``) and copies chunk
``out_i[k, :] = in[k, i, :]`` (outer dims before the axis, copy dims after) for ``i < num``. No requantization; other
types fail Eval. TFLM checks nothing else; we refuse at prepare a ``num`` different from the number of outputs, a
``num`` different from the axis dim, and outputs whose shape or type is not the input's without the axis.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._qutil import bind_copies
from .contract import MIXING, Kernel

SUPPORTED = ("FLOAT32", "INT8", "INT16", "INT32")


@dataclass(frozen=True)
class UnpackData:
    axis: int
    num: int


class Unpack(Kernel):
    ops = ("UNPACK",)
    traits = MIXING
    def prepare(self, ctx, op) -> UnpackData:
        num = int(op.options.get("num", 0))
        if num < 1 or len(op.outputs) != num:
            raise ctx.fail(op, f"num {num} differs from the number of outputs {len(op.outputs)}")
        ctx.check_io_count(op, 1, num)
        x = ctx.require_input(op, 0)
        if x.type_name not in SUPPORTED:
            raise ctx.fail(op, f"type {x.type_name} not supported (TFLM supports {', '.join(SUPPORTED)}; it "
                               "refuses others when the op is invoked)")
        rank = len(x.shape)
        axis = int(op.options.get("axis", 0))
        if axis < 0:
            axis += rank
        if not 0 <= axis < rank:
            raise ctx.fail(op, f"axis {op.options.get('axis', 0)} out of range for input rank {rank}")
        if x.shape[axis] != num:
            raise ctx.fail(op, f"input dim {axis} is {x.shape[axis]}, expected num = {num}")
        expected = x.shape[:axis] + x.shape[axis + 1:]
        for k in range(num):
            t = ctx.output(op, k)
            if t.type_name != x.type_name or t.shape != expected:
                raise ctx.fail(op, f"output {k} is {t.type_name}{list(t.shape)}, expected "
                                   f"{x.type_name}{list(expected)}")
        return UnpackData(axis, num)

    def bind(self, ctx, op, data: UnpackData):
        """On fixed views: output ``k`` copied from the input's slice ``k`` along the axis (taken once)."""
        slices = np.moveaxis(ctx.input(op, 0), data.axis, 0)
        return bind_copies([(ctx.output(op, k), slices[k, ...]) for k in range(data.num)])

    def invoke(self, ctx, op, data: UnpackData) -> None:
        x = ctx.input(op, 0)
        for k in range(data.num):
            ctx.output(op, k)[...] = x.take(k, axis=data.axis)


KERNEL = Unpack()
