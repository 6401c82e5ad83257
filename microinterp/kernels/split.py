"""SPLIT: cut a tensor into equal parts along a constant axis (float32, int8, int16, int32).

TFLM (``micro/kernels/split.cc``): inputs ``(axis, input)`` (axis first!); Prepare only requires a constant axis
tensor. Eval reads ``axis[0]`` (negative ``+= rank``, must be in range) and copies, for each outer index, consecutive
chunks of ``out_dim[axis] * inner`` elements to the outputs in turn. The number of parts is the number of outputs
(``num_splits`` is not read) and all outputs are assumed to have output 0's shape. No requantization; other types
fail Eval. We refuse at prepare what TFLM would only notice at Eval or not at all (out-of-range axis, outputs whose
shapes do not tile the input).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._qutil import bind_copies, first_int32
from .bands import SplitRows
from .contract import MIXING, Kernel

SUPPORTED = ("FLOAT32", "INT8", "INT16", "INT32")


@dataclass(frozen=True)
class SplitData:
    axis: int
    bounds: tuple[int, ...]   # start of each output along the axis, then the end


def check_split(ctx, op, x, axis_value: int, equal_parts: bool) -> SplitData:
    """Shared by SPLIT and SPLIT_V: axis range, types and that the outputs tile the input along ``axis``."""
    rank = len(x.shape)
    axis = axis_value + rank if axis_value < 0 else axis_value
    if not 0 <= axis < rank:
        raise ctx.fail(op, f"axis {axis_value} out of range for input rank {rank}")
    if x.type_name not in SUPPORTED:
        raise ctx.fail(op, f"type {x.type_name} not supported (TFLM supports {', '.join(SUPPORTED)}; it refuses "
                           "others when the op is invoked)")
    bounds = [0]
    for k in range(len(op.outputs)):
        t = ctx.output(op, k)
        fits = (t.type_name == x.type_name and len(t.shape) == rank
                and all(t.shape[i] == x.shape[i] for i in range(rank) if i != axis))
        if not fits or (equal_parts and t.shape != ctx.output(op, 0).shape):
            raise ctx.fail(op, f"output {k} is {t.type_name}{list(t.shape)}, which does not tile the input "
                               f"{x.type_name}{list(x.shape)} along axis {axis}")
        bounds.append(bounds[-1] + t.shape[axis])
    if bounds[-1] != x.shape[axis]:
        raise ctx.fail(op, f"the outputs cover {bounds[-1]} of the {x.shape[axis]} entries along axis {axis}")
    return SplitData(axis, tuple(bounds))


def _parts(ctx, op, data: SplitData, x: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
    """Every output with the slice of ``x`` along the axis it receives."""
    index = [slice(None)] * x.ndim
    pairs = []
    for k in range(len(data.bounds) - 1):
        index[data.axis] = slice(data.bounds[k], data.bounds[k + 1])
        pairs.append((ctx.output(op, k), x[tuple(index)]))
    return pairs


def split_invoke(ctx, op, data: SplitData, x: np.ndarray) -> None:
    for out, part in _parts(ctx, op, data, x):
        out[...] = part


def bind_split(ctx, op, data: SplitData, x: np.ndarray):
    """:func:`split_invoke` on fixed views: the slices taken once, one copy per output."""
    return bind_copies(_parts(ctx, op, data, x))


class Split(Kernel):
    ops = ("SPLIT",)
    traits = MIXING
    opdata = 0
    #: out of core: row bands when cut along another axis than the rows
    bands = SplitRows(1)

    def prepare(self, ctx, op) -> SplitData:
        if len(op.inputs) != 2 or len(op.outputs) < 1:
            raise ctx.fail(op, f"expected 2 inputs (axis, input) and at least 1 output, got {len(op.inputs)} "
                               f"and {len(op.outputs)}")
        axis_t, x = ctx.require_input(op, 0), ctx.require_input(op, 1)
        if axis_t.data is None:
            raise ctx.fail(op, "Non-constant >axis< tensor is not supported")
        return check_split(ctx, op, x, first_int32(ctx, op, axis_t, "axis"), equal_parts=True)

    def bind(self, ctx, op, data: SplitData):
        return bind_split(ctx, op, data, ctx.input(op, 1))

    def invoke(self, ctx, op, data: SplitData) -> None:
        split_invoke(ctx, op, data, ctx.input(op, 1))


KERNEL = Split()
