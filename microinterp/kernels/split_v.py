"""SPLIT_V: cut a tensor into parts of possibly different sizes along a constant axis (float32, int8, int16, int32).

TFLM (``micro/kernels/split_v.cc``): inputs ``(input, size_splits, axis)`` (exactly 3); Prepare only requires a
constant axis tensor. Eval reads ``axis[0]`` (negative ``+= rank``, must be in range) and takes each part's size from
its *output tensor's* dim along the axis; ``size_splits`` (and ``num_splits``) are never read, so a ``-1`` entry needs
no resolving. Copy order: for each outer index, consecutive chunks to outputs 0, 1, ... No requantization; other types
fail Eval. We refuse at prepare outputs that do not tile the input along the axis (TFLM only DCHECKs it).
"""

from __future__ import annotations

from ._qutil import first_int32
from .bands import SplitRows
from .contract import MIXING, Kernel
from .split import SplitData, bind_split, check_split, split_invoke


class SplitV(Kernel):
    ops = ("SPLIT_V",)
    traits = MIXING
    opdata = 0
    #: out of core: row bands when cut along another axis than the rows
    bands = SplitRows(0)

    def prepare(self, ctx, op) -> SplitData:
        if len(op.inputs) != 3 or len(op.outputs) < 1:
            raise ctx.fail(op, f"expected 3 inputs (input, size_splits, axis) and at least 1 output, got "
                               f"{len(op.inputs)} and {len(op.outputs)}")
        x, axis_t = ctx.require_input(op, 0), ctx.require_input(op, 2)
        if axis_t.data is None:
            raise ctx.fail(op, "Non-constant >axis< tensor is not supported")
        return check_split(ctx, op, x, first_int32(ctx, op, axis_t, "axis"), equal_parts=False)

    def bind(self, ctx, op, data: SplitData):
        return bind_split(ctx, op, data, ctx.input(op, 0))

    def invoke(self, ctx, op, data: SplitData) -> None:
        split_invoke(ctx, op, data, ctx.input(op, 0))


KERNEL = SplitV()
