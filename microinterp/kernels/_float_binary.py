"""Shared by FLOOR_DIV and FLOOR_MOD (``micro/kernels/floor_div.cc``, ``floor_mod.cc``): float32-only binary
functions over ``BinaryFunction`` (equal shapes, any rank, flat) or ``BroadcastBinaryFunction4DSlow`` (at most 4
dims, numpy broadcasting, the output shape the broadcast shape).

Prepare (TFLM): two inputs, one output, all of one type; Eval takes FLOAT32 only (others fail there, here at
prepare).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ._qutil import check_flat_or_broadcast
from .bands import ROW_LOCAL
from .contract import PURE, Kernel

MAX_BROADCAST_RANK = 4


@dataclass(frozen=True)
class FloatBinaryData:
    broadcast: bool


class FloatBinary(Kernel):
    traits = PURE
    #: out of core: row bands (a row of the output from the same row of its inputs)
    bands = ROW_LOCAL

    def __init__(self, name: str, fn: Callable[[np.ndarray, np.ndarray], np.ndarray],
                 check: Callable[[np.ndarray], str | None] | None = None):
        self.name = name
        self.ops = (name,)
        self.fn = fn
        self.check = check      # an Eval-time refusal of the divisor (None: fine)

    def prepare(self, ctx, op) -> FloatBinaryData:
        ctx.check_io_count(op, 2, 1)
        a, b, y = ctx.require_input(op, 0), ctx.require_input(op, 1), ctx.output(op, 0)
        if not (a.type_name == b.type_name == y.type_name):
            raise ctx.fail(op, f"types must match, got {a.type_name}, {b.type_name} -> {y.type_name}")
        if a.type_name != "FLOAT32":
            raise ctx.fail(op, f"Type '{a.type_name}' is not supported by {self.name}.")
        broadcast = check_flat_or_broadcast(ctx, op, a, b, y, MAX_BROADCAST_RANK)
        return FloatBinaryData(broadcast)

    def invoke(self, ctx, op, data: FloatBinaryData) -> None:
        from ..errors import InvokeError

        a, b, out = ctx.input(op, 0), ctx.input(op, 1), ctx.output(op, 0)
        if self.check is not None:
            problem = self.check(b)
            if problem:
                raise InvokeError(op.index, op.key, problem)
        if not data.broadcast:
            a, b = a.reshape(out.shape), b.reshape(out.shape)
        with np.errstate(all="ignore"):
            out[...] = self.fn(a, b).reshape(out.shape)
