"""SELECT_V2: ``condition ? x : y`` element-wise with broadcasting (``micro/kernels/select.cc``,
``reference/select.h``).

Prepare (TFLM): 3 inputs, 1 output; the condition is BOOL; x and y have the same type (FLOAT32, INT8 or INT16 at
Eval; others fail there, here at prepare). Values are copied raw: quantization parameters are ignored (x, y and the
output are expected to share them; the wheel does not check and neither does this). When the three inputs do not
all have the same shape (and are not all single elements) the shapes must broadcast to the output's:
``CheckBroadcastShape`` (output rank = the largest input rank, each output dim the broadcast dim) and Eval uses
``BroadcastSelect5DSlow`` (at most 5 dims). Refused here although TFLM would run: an output type other than x's.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._qutil import select
from .bands import ROW_LOCAL
from .contract import MIXING, Kernel

SUPPORTED_TYPES = ("FLOAT32", "INT8", "INT16")
MAX_BROADCAST_RANK = 5


@dataclass(frozen=True)
class SelectData:
    broadcast: bool


def _broadcast_problem(shapes, out_shape) -> str | None:
    rank = max(len(s) for s in shapes)
    if rank != len(out_shape):
        return f"output rank {len(out_shape)} is not the largest input rank {rank}"
    if rank > MAX_BROADCAST_RANK:
        return f"broadcasting supports at most {MAX_BROADCAST_RANK} dimensions, got {rank}"
    for i in range(rank):
        dims = [s[len(s) - i - 1] if i < len(s) else 1 for s in shapes]
        top = 0 if min(dims) == 0 else max(dims)
        if any(d not in (1, top) for d in dims):
            return f"shapes {[tuple(s) for s in shapes]} are not broadcastable"
        if out_shape[rank - i - 1] != top:
            return f"output shape {tuple(out_shape)} is not the broadcast shape of {[tuple(s) for s in shapes]}"
    return None


class SelectV2(Kernel):
    ops = ("SELECT_V2",)
    traits = MIXING
    #: out of core: row bands (a row of the output from the same row of its inputs)
    bands = ROW_LOCAL

    def prepare(self, ctx, op) -> SelectData:
        ctx.check_io_count(op, 3, 1)
        c, x, y = (ctx.require_input(op, k) for k in range(3))
        out = ctx.output(op, 0)
        if c.type_name != "BOOL":
            raise ctx.fail(op, f"the condition must be BOOL, got {c.type_name}")
        if x.type_name != y.type_name:
            raise ctx.fail(op, f"x and y types differ: {x.type_name} and {y.type_name}")
        if x.type_name not in SUPPORTED_TYPES:
            raise ctx.fail(op, f"Does not support type other than int8|int16|float32, but got {x.type_name}")
        if out.type_name != x.type_name:
            raise ctx.fail(op, f"output type {out.type_name} differs from the inputs' {x.type_name}")
        scalars = all(t.num_elements == 1 for t in (c, x, y, out))
        same = c.shape == x.shape == y.shape
        if not same and not scalars:
            problem = _broadcast_problem([c.shape, x.shape, y.shape], out.shape)
            if problem:
                raise ctx.fail(op, problem)
            return SelectData(True)
        if x.num_elements != out.num_elements:
            raise ctx.fail(op, f"input shape {x.shape} and output shape {out.shape} differ in size")
        return SelectData(False)

    def invoke(self, ctx, op, data: SelectData) -> None:
        c, x, y = (ctx.input(op, k) for k in range(3))
        out = ctx.output(op, 0)
        if not data.broadcast:
            c, x, y = c.reshape(out.shape), x.reshape(out.shape), y.reshape(out.shape)
        if out.dtype == np.float32:
            out[...] = select(c, x, y).reshape(out.shape)
        else:
            out[...] = np.where(c, x, y).reshape(out.shape)


KERNEL = SelectV2()
