"""SHAPE: write the input's dims into an INT32 vector (the input's data are never read).

TFLM (``micro/kernels/shape.cc``): one input, one output; Eval requires an INT32 output (the ``out_type`` option is
ignored; other output types fail Eval, we refuse them at prepare) and writes ``dims[i]`` for every input dim. The
shape is fixed at conversion time, so it is computed once here. We refuse an output that cannot hold ``rank`` values
exactly (TFLM would write past it).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._qutil import bind_copies
from .contract import MIXING, Kernel


@dataclass(frozen=True)
class ShapeData:
    dims: tuple[int, ...]


class Shape(Kernel):
    ops = ("SHAPE",)
    traits = MIXING
    cost_family = "view"
    opdata = 0
    def prepare(self, ctx, op) -> ShapeData:
        ctx.check_io_count(op, 1, 1)
        x, y = ctx.require_input(op, 0), ctx.output(op, 0)
        if y.type_name != "INT32":
            raise ctx.fail(op, f"Output type {y.type_name} not supported (TFLM's SHAPE writes INT32).")
        if y.num_elements != len(x.shape):
            raise ctx.fail(op, f"output has {y.num_elements} elements, the input has {len(x.shape)} dims")
        return ShapeData(tuple(x.shape))

    def bind(self, ctx, op, data: ShapeData):
        """The dims written by one copy of a kept array (the output's memory may hold other tensors in between)."""
        out = ctx.output(op, 0).reshape(-1)
        return bind_copies([(out, np.asarray(data.dims, dtype=np.int32).reshape(out.shape))])

    def invoke(self, ctx, op, data: ShapeData) -> None:
        ctx.output(op, 0).reshape(-1)[...] = np.asarray(data.dims, dtype=np.int32)


KERNEL = Shape()
