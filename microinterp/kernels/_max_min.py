"""Shared kernel of MAXIMUM and MINIMUM (``micro/kernels/maximum_minimum.cc``, ``reference/maximum_minimum.h``).

TFLM has no Prepare for these ops: no quantization checks at all. Pitfall: quantized inputs are compared as raw
integers -- input scales and zero points are ignored and the output is the raw winner (a model whose inputs and
output do not share quantization gets numerically wrong but TFLM-exact results). Eval dispatches on the *output*
type (FLOAT32, INT8, INT16, INT32, INT64) and reads both inputs as that type. Equal input shapes: element-wise over
the flat buffers (any rank). Otherwise ``MaximumMinimumBroadcastSlow`` with N = 5: shapes extended to 5-D,
broadcast, loop over the output dims. MAXIMUM picks ``a > b ? a : b``, MINIMUM ``a < b ? a : b`` (so a NaN in
``a`` yields ``b``, a NaN in ``b`` yields NaN).

Refused here although TFLM would run (reading garbage): input types differing from the output type, and shapes
that do not broadcast to the output shape / more than 5 dims when broadcasting. An unsupported output type fails at
Eval in TFLM, here at prepare.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ._broadcast import laid_out, refreshed
from ._qutil import bind_select, broadcast_shape, select
from .bands import ROW_LOCAL
from .contract import POINTWISE, Kernel

SUPPORTED_TYPES = ("FLOAT32", "INT8", "INT16", "INT32", "INT64")


@dataclass(frozen=True)
class MaxMinData:
    broadcast: bool


class MaximumMinimum(Kernel):
    """One kernel object per op; ``first_wins(a, b)`` is TFLM's comparison choosing ``a``; ``integer_op`` is the
    NumPy ufunc that equals ``first_wins(a, b) ? a : b`` on integers (floats differ only in NaN handling)."""
    traits = POINTWISE
    op_class = "elementwise"
    cost_family = "elementwise"
    opdata = 0
    #: out of core: row bands (a row of the output from the same row of its inputs)
    bands = ROW_LOCAL

    def __init__(self, name: str, first_wins: Callable[[np.ndarray, np.ndarray], np.ndarray],
                 integer_op: np.ufunc):
        self.name = name
        self.ops = (name,)
        self.first_wins = first_wins
        self.integer_op = integer_op

    def prepare(self, ctx, op) -> MaxMinData:
        ctx.check_io_count(op, 2, 1)
        a, b, y = ctx.require_input(op, 0), ctx.require_input(op, 1), ctx.output(op, 0)
        if y.type_name not in SUPPORTED_TYPES:
            raise ctx.fail(op, f"Type {y.type_name} is not supported by Maximum/Minimum")
        if a.type_name != y.type_name or b.type_name != y.type_name:
            raise ctx.fail(op, f"input types {a.type_name}, {b.type_name} differ from output type {y.type_name}")
        if a.shape == b.shape:
            if a.num_elements != y.num_elements:
                raise ctx.fail(op, f"input shape {a.shape} and output shape {y.shape} differ in size")
            return MaxMinData(broadcast=False)
        problem = broadcast_shape(a.shape, b.shape, y.shape, 5)
        if problem:
            raise ctx.fail(op, problem)
        return MaxMinData(broadcast=True)

    def bind(self, ctx, op, data: MaxMinData):
        """On fixed views: integers by the integer ufunc into the output; float32 by the comparison into a kept
        mask, ``b`` everywhere, ``a`` where it wins (the same choice as :meth:`invoke`, NaN included: a NaN ``a``
        never wins). A constant of another shape laid out once (:func:`._broadcast.laid_out`)."""
        a, b, out = ctx.input(op, 0), ctx.input(op, 1), ctx.output(op, 0)
        if not out.flags.c_contiguous:
            return None
        if not data.broadcast:
            a, b = a.reshape(out.shape), b.reshape(out.shape)
        y = out.reshape(np.broadcast_shapes(a.shape, b.shape))
        (a, b), y, refreshes = laid_out((a, b), y)     # a short broadcast inner loop made long
        if out.dtype != np.float32:
            return refreshed(refreshes, functools.partial(self.integer_op, a, b, out=y))
        compare = self.first_wins       # np.greater (MAXIMUM) or np.less (MINIMUM)
        mask = np.empty(y.shape, bool)
        choose = bind_select(mask, a, b, y)

        def call() -> None:
            compare(a, b, out=mask)
            choose()
        return refreshed(refreshes, call)

    def invoke(self, ctx, op, data: MaxMinData) -> None:
        a, b = ctx.input(op, 0), ctx.input(op, 1)
        out = ctx.output(op, 0)
        if not data.broadcast:
            a, b = a.reshape(out.shape), b.reshape(out.shape)
        if out.dtype == np.float32:
            out[...] = select(self.first_wins(a, b), a, b).reshape(out.shape)
        else:
            out[...] = self.integer_op(a, b).reshape(out.shape)
