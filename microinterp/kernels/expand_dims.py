"""EXPAND_DIMS: insert a size-1 dim at a constant axis; the data are copied unchanged (float32, int8, int16).

TFLM (``micro/kernels/expand_dims.cc``): inputs ``(input, axis)``; ``axis`` must be a constant INT32 tensor with at
most one dim (its first element is used); negative axes become ``rank + 1 + axis`` and must end up ``<= rank``; the
model's output shape must be the input shape with a 1 inserted there. Eval copies element by element and accepts only
float32, int8 and int16 (we refuse other types at prepare). TFLM never checks a too negative axis (it would read out of
bounds); we refuse it.
"""

from __future__ import annotations

from dataclasses import dataclass

from .contract import VIEW, Kernel
from .squeeze import bind_copy, copy_bytes
from .streams import INVOKE

SUPPORTED = ("FLOAT32", "INT8", "INT16")


@dataclass(frozen=True)
class ExpandDimsData:
    axis: int


class ExpandDims(Kernel):
    ops = ("EXPAND_DIMS",)
    traits = VIEW
    cost_family = "view"
    opdata = 0
    #: streams: a byte copy, whatever the leading axes (:mod:`.streams`)
    streams = INVOKE

    def prepare(self, ctx, op) -> ExpandDimsData:
        ctx.check_io_count(op, 2, 1)
        x, axis_t, y = ctx.require_input(op, 0), ctx.require_input(op, 1), ctx.output(op, 0)
        if axis_t.data is None:
            raise ctx.fail(op, "Non-constant >axis< tensor is not supported")
        if len(axis_t.shape) > 1:
            raise ctx.fail(op, "Axis has only one element for Expand_Dims.")
        if axis_t.type_name != "INT32":
            raise ctx.fail(op, f"Axis type {axis_t.type_name} not supported by Expand_Dims.")
        if axis_t.num_elements < 1:
            raise ctx.fail(op, "axis tensor is empty")
        rank = len(x.shape)
        axis = int(axis_t.data.reshape(-1)[0])
        if axis < 0:
            axis += rank + 1
        if not 0 <= axis <= rank:
            raise ctx.fail(op, f"axis {int(axis_t.data.reshape(-1)[0])} out of range for rank {rank}")
        expected = x.shape[:axis] + (1,) + x.shape[axis:]
        if y.shape != expected:
            raise ctx.fail(op, f"output shape {y.shape} is not the input shape {x.shape} with a 1 at {axis}")
        if y.type_name != x.type_name:
            raise ctx.fail(op, f"output type {y.type_name} differs from input type {x.type_name}")
        if x.type_name not in SUPPORTED:
            raise ctx.fail(op, f"type {x.type_name} not supported (TFLM supports {', '.join(SUPPORTED)}; it "
                               "refuses others when the op is invoked)")
        return ExpandDimsData(axis)

    def bind(self, ctx, op, data: ExpandDimsData):
        return bind_copy(ctx.output(op, 0), ctx.input(op, 0))

    def invoke(self, ctx, op, data: ExpandDimsData) -> None:
        copy_bytes(ctx.output(op, 0), ctx.input(op, 0))


KERNEL = ExpandDims()
