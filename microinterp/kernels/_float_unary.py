"""Shared by FLOOR, CEIL, ROUND, NEG and EXP: float32-only unary ops (TFLM's ``floor.cc``, ``ceil.cc``,
``round.cc``, ``neg.cc``, ``exp.cc``).

Their Prepare checks differ (FLOOR and NEG have none, CEIL/ROUND/EXP check one input, one output, FLOAT32 and the
same shape), their Eval takes FLOAT32 only; here every one of them is refused at prepare unless it has one FLOAT32
input and a FLOAT32 output with as many elements (TFLM would otherwise read or write the wrong number of bytes).
``same_shape`` adds TFLM's own dims check where its Prepare makes it.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ._qutil import select
from .bands import ROW_LOCAL
from .contract import ELEMENTWISE, Kernel


def nan_passthrough(fn: Callable) -> Callable:
    """``fn`` on every element, NaNs returned with their input bits: the wheel's ``std::floor``/``std::ceil``
    leave a signalling NaN signalling (its quiet bit unset), where the C library's ``floorf`` would quiet it."""
    def call(x: np.ndarray) -> np.ndarray:
        return select(np.isnan(x), x, fn(x))
    return call


class FloatUnary(Kernel):
    traits = ELEMENTWISE
    #: out of core: row bands (a row of the output from the same row of its inputs)
    bands = ROW_LOCAL

    def __init__(self, name: str, fn: Callable, same_shape: bool):
        self.name = name
        self.ops = (name,)
        self.fn = fn
        self.same_shape = same_shape

    def prepare(self, ctx, op) -> None:
        ctx.check_io_count(op, 1, 1)
        x, y = ctx.require_input(op, 0), ctx.output(op, 0)
        if x.type_name != "FLOAT32" or y.type_name != "FLOAT32":
            raise ctx.fail(op, f"{self.name} supports FLOAT32 only, got {x.type_name} -> {y.type_name}")
        if self.same_shape and tuple(x.shape) != tuple(y.shape):
            raise ctx.fail(op, f"output shape {y.shape} differs from input shape {x.shape}")
        if x.num_elements != y.num_elements:
            raise ctx.fail(op, f"input shape {x.shape} and output shape {y.shape} differ in size")

    def invoke(self, ctx, op, data: None) -> None:
        out = ctx.output(op, 0)
        out[...] = self.fn(ctx.input(op, 0)).reshape(out.shape)
