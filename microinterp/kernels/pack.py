"""PACK: stack ``values_count`` equally shaped tensors along a new axis (float32, int8, int16, int32, int64).

TFLM (``micro/kernels/pack.cc``) has no Prepare; Eval takes ``axis`` (negative ``+= output rank``), splits the output
into ``outer`` (dims before the axis) x ``values_count`` x ``copy`` (dims after) and copies input ``i``'s k-th chunk
to ``out[k, i, :]``. No requantization (the quantization parameters are not even looked at). Types other than the five
above fail Eval. Because TFLM checks nothing, we refuse at prepare what would make it read or write out of bounds: a
``values_count`` different from the number of inputs, inputs of a different shape or type, or an output shape that
is not the input shape with ``values_count`` inserted at ``axis``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._qutil import bind_copies
from .contract import MIXING, Kernel

SUPPORTED = ("FLOAT32", "INT8", "INT16", "INT32", "INT64")


@dataclass(frozen=True)
class PackData:
    axis: int
    count: int


class Pack(Kernel):
    ops = ("PACK",)
    traits = MIXING
    opdata = 0
    def prepare(self, ctx, op) -> PackData:
        count = int(op.options.get("values_count", 0))
        if count < 1 or len(op.inputs) != count:
            raise ctx.fail(op, f"values_count {count} differs from the number of inputs {len(op.inputs)}")
        ctx.check_io_count(op, count, 1)
        y = ctx.output(op, 0)
        if y.type_name not in SUPPORTED:
            raise ctx.fail(op, f"type {y.type_name} not supported (TFLM supports {', '.join(SUPPORTED)}; it "
                               "refuses others when the op is invoked)")
        first = ctx.require_input(op, 0)
        for k in range(count):
            t = ctx.require_input(op, k)
            if t.type_name != y.type_name or t.shape != first.shape:
                raise ctx.fail(op, f"input {k} is {t.type_name}{list(t.shape)}, expected "
                                   f"{y.type_name}{list(first.shape)}")
        axis = int(op.options.get("axis", 0))
        if axis < 0:
            axis += len(y.shape)
        if not 0 <= axis <= len(first.shape):
            raise ctx.fail(op, f"axis {op.options.get('axis', 0)} out of range for output rank {len(y.shape)}")
        expected = first.shape[:axis] + (count,) + first.shape[axis:]
        if y.shape != expected:
            raise ctx.fail(op, f"output shape {y.shape} differs from the packed shape {expected}")
        return PackData(axis, count)

    def bind(self, ctx, op, data: PackData):
        """On fixed views: input ``k`` copied into the output's slice ``k`` along the axis (the slices taken once)."""
        slices = np.moveaxis(ctx.output(op, 0), data.axis, 0)
        return bind_copies([(slices[k, ...], ctx.input(op, k)) for k in range(data.count)])    # [k, ...]: a view

    def invoke(self, ctx, op, data: PackData) -> None:
        ctx.output(op, 0)[...] = np.stack([ctx.input(op, k) for k in range(data.count)], axis=data.axis)


KERNEL = Pack()
