"""Shared kernel of ARG_MAX and ARG_MIN (``micro/kernels/arg_min_max.cc``, ``reference/arg_min_max.h``).

TFLM has no Prepare for these ops; Eval reads the axis from input 1 at run time (so it may be a graph input):
``axis = axis_data[0]`` (only the first element), ``axis += rank`` if negative. Supported: input FLOAT32 or INT8,
axis INT32, output INT32 (an INT64 output or axis, and any other input type, fail at Eval in TFLM -- here at
prepare; ``output_type`` in the options is not consulted, the output tensor's type is). For each (outer, inner)
position the running best starts at index 0 and is replaced only when ``cmp(value, best)`` holds strictly
(``>`` for ARG_MAX, ``<`` for ARG_MIN): ties keep the first index; a NaN never wins, and a NaN at index 0 makes the
result 0.

Refused here although TFLM only DCHECKs: a constant axis out of range, an output whose size is not that of the
input without the axis, a rank-0 input. A non-constant axis is checked when the op runs.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import InputError
from .contract import PURE, Kernel


@dataclass(frozen=True)
class ArgMinMaxData:
    axis: int | None  # None: read from the axis tensor at invoke


class ArgMinMax(Kernel):
    traits = PURE
    opdata = 0
    def __init__(self, name: str, is_arg_max: bool):
        self.name = name
        self.ops = (name,)
        self.is_arg_max = is_arg_max

    def prepare(self, ctx, op) -> ArgMinMaxData:
        ctx.check_io_count(op, 2, 1)
        x, axis_t, y = ctx.require_input(op, 0), ctx.require_input(op, 1), ctx.output(op, 0)
        if axis_t.type_name != "INT32":
            raise ctx.fail(op, f"Only int32_t are supported currently, got axis type {axis_t.type_name}")
        if y.type_name != "INT32":
            raise ctx.fail(op, f"Only int32_t are supported currently, got output type {y.type_name}")
        if x.type_name not in ("FLOAT32", "INT8"):
            raise ctx.fail(op, f"Only float32 and int8 inputs are supported currently, got {x.type_name}")
        if len(x.shape) == 0:
            raise ctx.fail(op, "input must have at least one dimension")
        if axis_t.num_elements < 1:
            raise ctx.fail(op, "axis tensor is empty")
        if axis_t.data is None:
            return ArgMinMaxData(None)
        axis = self._axis(int(np.ravel(axis_t.data)[0]), x.shape)
        if axis is None:
            raise ctx.fail(op, f"axis {int(np.ravel(axis_t.data)[0])} out of range for input shape {x.shape}")
        if x.num_elements // max(x.shape[axis], 1) != y.num_elements or x.shape[axis] == 0:
            raise ctx.fail(op, f"output shape {y.shape} does not match input shape {x.shape} reduced over "
                               f"axis {axis}")
        return ArgMinMaxData(axis)

    @staticmethod
    def _axis(axis: int, shape: tuple[int, ...]) -> int | None:
        if axis < 0:
            axis += len(shape)
        return axis if 0 <= axis < len(shape) else None

    def invoke(self, ctx, op, data: ArgMinMaxData) -> None:
        x = ctx.input(op, 0)
        out = ctx.output(op, 0)
        axis = data.axis
        if axis is None:
            raw = int(np.ravel(ctx.input(op, 1))[0])
            axis = self._axis(raw, x.shape)
            if axis is None or x.shape[axis] == 0 or x.size // x.shape[axis] != out.size:
                raise InputError(f"op {op.index} ({self.name}): axis {raw} invalid for input shape {x.shape} "
                                 f"and output shape {out.shape}")
        arg = np.argmax if self.is_arg_max else np.argmin
        nan = np.isnan(x) if x.dtype == np.float32 else None
        if nan is not None and nan.any():
            # A NaN never wins the strict comparison, but a NaN at index 0 is never replaced either.
            idx = arg(np.where(nan, np.float32(-np.inf if self.is_arg_max else np.inf), x), axis=axis)
            idx = np.where(np.take(nan, 0, axis=axis), 0, idx)
        else:
            idx = arg(x, axis=axis)
        out[...] = idx.astype(np.int32).reshape(out.shape)
