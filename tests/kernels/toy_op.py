"""A toy op, defined in this one module the way a user would add one: ``ToyScale`` (custom op), y = 2 * x for int8
(saturating), elementwise. Everything the rest of microinterp needs to know about it is declared here."""

from __future__ import annotations

import numpy as np

from microinterp import Kernel
from microinterp.kernels.bands import ROW_LOCAL
from microinterp.kernels.contract import ELEMENTWISE, STATEFUL
from microinterp.kernels.streams import INVOKE
from microinterp.testing.builder import ModelBuilder


class ToyScale(Kernel):
    ops = ("ToyScale",)
    traits = ELEMENTWISE              # a plain function of its input, element by element
    bands = ROW_LOCAL                 # out of core: invoke on bands of rows
    streams = INVOKE                  # its invoke computes every stream at once
    op_class = "elementwise"
    cost_family = "elementwise"
    opdata = "ii"                     # the firmware kernel's OpData: two int32

    def prepare(self, ctx, op):
        x, y = ctx.require_input(op, 0), ctx.output(op, 0)
        if x.shape != y.shape or x.type_name != "INT8":
            raise ctx.fail(op, "int8, same shapes")
        return 2                      # the OpData: here just the factor

    def invoke(self, ctx, op, data) -> None:
        x = ctx.input(op, 0)
        np.clip(x.astype(np.int16) * data, -128, 127, out=ctx.output(op, 0), casting="unsafe")

    def macs(self, op, tensors, elements: int) -> int:
        return elements               # one multiply per element


class StatefulToyScale(ToyScale):
    """The same op with a state it would keep across invokes: nothing may reorder, batch or stream it blindly."""

    traits = STATEFUL

    def reset(self, ctx, op, data) -> None:
        pass


def toy_model(rows: int = 32, channels: int = 8) -> bytes:
    """x -> RESHAPE-free chain: ToyScale, then a builtin ADD of the input (int8, batch 1, NHWC)."""
    b = ModelBuilder()
    q = {"scale": 0.05, "zero_point": 0}
    x = b.add_tensor("x", (1, rows, rows, channels), "INT8", **q)
    y = b.add_tensor("y", (1, rows, rows, channels), "INT8", **q)
    z = b.add_tensor("z", (1, rows, rows, channels), "INT8", **q)
    b.add_op("CUSTOM", [x], [y], custom_code="ToyScale")
    b.add_op("ADD", [y, x], [z])
    b.inputs, b.outputs = [x], [z]
    return b.build()
