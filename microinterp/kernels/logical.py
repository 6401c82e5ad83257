"""LOGICAL_AND, LOGICAL_OR (``micro/kernels/logical.cc``, ``logical_common.cc``): element-wise ``x && y`` /
``x || y`` on BOOL tensors.

TFLM registers these ops without a Prepare: nothing is checked and both inputs are read as bool. Refused here:
non-BOOL inputs or output (the wheel would reinterpret the bytes). Equal shapes: flat element-wise (any rank);
otherwise ``BroadcastBinaryFunction4DSlow``: at most 4 dims, numpy broadcasting, the output shape must be the
broadcast shape. (LOGICAL_NOT lives in ``elementwise.cc`` in TFLM, and in :mod:`.elementwise` here.)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._qutil import check_flat_or_broadcast
from .bands import ROW_LOCAL
from .contract import PURE, Kernel

MAX_BROADCAST_RANK = 4


@dataclass(frozen=True)
class LogicalData:
    broadcast: bool


class Logical(Kernel):
    traits = PURE
    #: out of core: row bands (a row of the output from the same row of its inputs)
    bands = ROW_LOCAL

    def __init__(self, name: str, fn: np.ufunc):
        self.name = name
        self.ops = (name,)
        self.fn = fn

    def prepare(self, ctx, op) -> LogicalData:
        ctx.check_io_count(op, 2, 1)
        a, b, y = ctx.require_input(op, 0), ctx.require_input(op, 1), ctx.output(op, 0)
        for t in (a, b, y):
            if t.type_name != "BOOL":
                raise ctx.fail(op, f"{self.name} works on BOOL tensors, {t.name!r} is {t.type_name}")
        broadcast = check_flat_or_broadcast(ctx, op, a, b, y, MAX_BROADCAST_RANK)
        return LogicalData(broadcast)

    def invoke(self, ctx, op, data: LogicalData) -> None:
        a, b, out = ctx.input(op, 0), ctx.input(op, 1), ctx.output(op, 0)
        if not data.broadcast:
            a, b = a.reshape(out.shape), b.reshape(out.shape)
        out[...] = self.fn(a, b).reshape(out.shape)


LOGICAL_AND = Logical("LOGICAL_AND", np.logical_and)
LOGICAL_OR = Logical("LOGICAL_OR", np.logical_or)

#: the kernels of this file (:mod:`.registry`)
KERNELS = (LOGICAL_AND, LOGICAL_OR)
