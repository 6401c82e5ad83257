"""RESHAPE (and the pure-copy shape ops SQUEEZE, EXPAND_DIMS): TFLM copies the bytes when the buffers differ.

TFLM (``micro/kernels/reshape.cc``): the output shape comes from the model (``-1`` already resolved by the converter
or in Prepare); the element counts of input and output must agree; Eval is a memcpy of ``bytes(input)``.
"""

from __future__ import annotations

from dataclasses import dataclass

from .contract import VIEW, Kernel
from .squeeze import bind_copy, copy_bytes
from .streams import INVOKE


@dataclass(frozen=True)
class ReshapeData:
    num_elements: int


class Reshape(Kernel):
    shape_input = 1
    shape_option = "new_shape"
    ops = ("RESHAPE",)
    traits = VIEW
    cost_family = "view"
    opdata = 0
    #: streams: a byte copy, whatever the leading axes (:mod:`.streams`)
    streams = INVOKE

    def prepare(self, ctx, op) -> ReshapeData:
        if len(op.outputs) != 1 or not 1 <= len(op.inputs) <= 2:
            raise ctx.fail(op, f"expected 1 or 2 inputs and 1 output, got {len(op.inputs)} and {len(op.outputs)}")
        x, y = ctx.require_input(op, 0), ctx.output(op, 0)
        if x.type_name != y.type_name:
            raise ctx.fail(op, f"input type {x.type_name} differs from output type {y.type_name}")
        if x.num_elements != y.num_elements:
            raise ctx.fail(op, f"input has {x.num_elements} elements but output shape {y.shape} has "
                               f"{y.num_elements}")
        return ReshapeData(y.num_elements)

    def bind(self, ctx, op, data: ReshapeData):
        return bind_copy(ctx.output(op, 0), ctx.input(op, 0))

    def invoke(self, ctx, op, data: ReshapeData) -> None:
        copy_bytes(ctx.output(op, 0), ctx.input(op, 0))


KERNEL = Reshape()
