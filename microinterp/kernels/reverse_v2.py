"""REVERSE_V2: reverse a tensor along the given axes (``micro/kernels/reverse.cc``, ``reference/reverse.h``).

Prepare (TFLM): two inputs, one output of the input's type; the axis tensor is 1-D INT32 with at most as many
values as the input has dims (at most 6); input types FLOAT32, INT32, UINT8, INT8, INT16, INT64, BOOL. Eval: negative
axes count from the end; every axis must lie in [0, rank); sorted, the axes must be *contiguous* (``[1, 2]`` but not
``[0, 2]`` or ``[1, 1]``: "Non-contiguous `axes` not supported"). The result is the input flipped along each of
them. An empty axis list reads past TFLM's array (undefined): refused. Checked at prepare when the axes are a
constant, else at every invoke (:class:`~microinterp.errors.InvokeError`).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from ..errors import InvokeError
from .contract import MIXING, Kernel

SUPPORTED_TYPES = ("FLOAT32", "INT32", "UINT8", "INT8", "INT16", "INT64", "BOOL")
MAX_RANK = 6


@dataclass(frozen=True)
class ReverseData:
    axes: tuple[int, ...] | None      # None: read at invoke


def resolve_axes(values, rank: int) -> tuple[tuple[int, ...] | None, str]:
    axes = [int(a) + rank if int(a) < 0 else int(a) for a in np.asarray(values).reshape(-1)]
    if not axes:
        return None, "no axis to reverse"
    if any(not 0 <= a < rank for a in axes):
        return None, f"axes {axes} out of range for rank {rank}"
    axes.sort()
    if any(a + 1 != b for a, b in itertools.pairwise(axes)):
        return None, "Non-contiguous `axes` not supported"
    return tuple(axes), ""


class ReverseV2(Kernel):
    ops = ("REVERSE_V2",)
    traits = MIXING
    def prepare(self, ctx, op) -> ReverseData:
        ctx.check_io_count(op, 2, 1)
        x, axis, y = ctx.require_input(op, 0), ctx.require_input(op, 1), ctx.output(op, 0)
        if len(axis.shape) != 1:
            raise ctx.fail(op, f"the axis tensor must be 1-D, got {axis.shape}")
        if len(x.shape) > MAX_RANK or axis.num_elements > len(x.shape):
            raise ctx.fail(op, f"{axis.num_elements} axes for a rank-{len(x.shape)} input (at most {MAX_RANK})")
        if x.type_name not in SUPPORTED_TYPES:
            raise ctx.fail(op, f"Type '{x.type_name}' is not supported by reverse.")
        if axis.type_name != "INT32":
            raise ctx.fail(op, f"Axis Type '{axis.type_name}' is not supported by reverse.")
        if y.type_name != x.type_name or y.num_elements != x.num_elements:
            raise ctx.fail(op, f"output {y.type_name} {y.shape} differs from input {x.type_name} {x.shape}")
        if axis.data is None:
            return ReverseData(None)
        axes, why = resolve_axes(axis.data, len(x.shape))
        if axes is None:
            raise ctx.fail(op, why)
        return ReverseData(axes)

    def invoke(self, ctx, op, data: ReverseData) -> None:
        x, out = ctx.input(op, 0), ctx.output(op, 0)
        axes = data.axes
        if axes is None:
            axes, why = resolve_axes(ctx.input(op, 1), x.ndim)
            if axes is None:
                raise InvokeError(op.index, op.key, why)
        out[...] = np.flip(x, axes).reshape(out.shape)


KERNEL = ReverseV2()
