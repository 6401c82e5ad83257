"""BROADCAST_TO: repeat the input along size-1 and missing leading dims to a constant shape
(``micro/kernels/broadcast_to.cc``, ``reference/broadcast_to.h``).

Prepare (TFLM): two inputs, one output; at most 5 dims; the shape tensor is a constant INT32 or INT64 vector with
one value per output dim; the input has no more dims than the output, each of its dims is 1 or the shape's; the
output's dims equal the shape; input and output types equal (any type but STRING: the data is moved as raw bytes).
"""

from __future__ import annotations

import numpy as np

from .contract import MIXING, Kernel

MAX_DIMS = 5


class BroadcastTo(Kernel):
    ops = ("BROADCAST_TO",)
    traits = MIXING
    def prepare(self, ctx, op) -> None:
        ctx.check_io_count(op, 2, 1)
        x, shape, y = ctx.require_input(op, 0), ctx.require_input(op, 1), ctx.output(op, 0)
        if len(x.shape) > MAX_DIMS or len(y.shape) > MAX_DIMS:
            raise ctx.fail(op, "BroadcastTo only supports 1-5D tensor.")
        if shape.type_name not in ("INT32", "INT64"):
            raise ctx.fail(op, f"the shape must be INT32 or INT64, got {shape.type_name}")
        if x.type_name != y.type_name or x.dtype is None:
            raise ctx.fail(op, f"input and output types must match, got {x.type_name} -> {y.type_name}")
        if shape.data is None:
            raise ctx.fail(op, "Non-constant >shape< tensor is not supported")
        if len(shape.shape) != 1 or shape.num_elements != len(y.shape):
            raise ctx.fail(op, "Output must match with the expected shape dimension.")
        want = [int(v) for v in shape.data.reshape(-1)]
        if len(x.shape) > len(y.shape):
            raise ctx.fail(op, "Output shape must be broadcastable from input shape.")
        extra = len(y.shape) - len(x.shape)
        if any(d != 1 and d != want[extra + k] for k, d in enumerate(x.shape)):
            raise ctx.fail(op, "Output shape must be broadcastable from input shape.")
        if list(y.shape) != want:
            raise ctx.fail(op, f"output shape {tuple(y.shape)} differs from the shape tensor {tuple(want)}")

    def invoke(self, ctx, op, data: None) -> None:
        out = ctx.output(op, 0)
        out[...] = np.broadcast_to(ctx.input(op, 0), out.shape)


KERNEL = BroadcastTo()
