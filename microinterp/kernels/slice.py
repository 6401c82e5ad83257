"""SLICE: a contiguous box ``input[begin : begin + size]`` (float32, int8, int16, int32, bool), up to 5 dims.

TFLM (``micro/kernels/slice.cc``, ``reference/slice.h``): inputs ``(input, begin, size)``, rank <= 5, input and
output types equal. Eval reads begin/size (so they may be runtime tensors) as INT32 or INT64 (others fail Eval; the
*begin* type decides how both are read), pads to 5-D, takes ``stop = dim`` where ``size == -1`` else
``begin + size``, and writes the box's elements sequentially into the output (only the output's element count
matters, not its shape). The pinned wheel validates almost nothing: mixed begin/size types, fewer entries than dims,
boxes out of bounds or of the wrong element count all make it read garbage. We refuse those (newer TFLM refuses them
too): at prepare for constants, at invoke (``InputError``) for runtime values. The wheel does accept begin/size
tensors of any shape with one entry per dim; so do we.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import InputError
from .contract import MIXING, Kernel

SUPPORTED = ("FLOAT32", "INT8", "INT16", "INT32", "BOOL")
MAX_DIMS = 5


@dataclass(frozen=True)
class SliceData:
    box: tuple[slice, ...] | None   # None: begin/size are runtime tensors, resolved at invoke


def resolve_box(begin, size, shape: tuple[int, ...], out_count: int) -> tuple[slice, ...]:
    """The slices TFLM reads; ValueError when TFLM would read out of bounds or write a different count."""
    box, count = [], 1
    for b, s, d in zip(np.asarray(begin).reshape(-1).tolist(), np.asarray(size).reshape(-1).tolist(), shape):
        if not 0 <= b <= d:
            raise ValueError(f"begin {b} outside [0, {d}]")
        n = d - b if s == -1 else s
        if not 0 <= n <= d - b:
            raise ValueError(f"size {s} at begin {b} does not fit in a dim of {d}")
        box.append(slice(b, b + n))
        count *= n
    if count != out_count:
        raise ValueError(f"the slice has {count} elements, the output {out_count}")
    return tuple(box)


class Slice(Kernel):
    ops = ("SLICE",)
    traits = MIXING
    def prepare(self, ctx, op) -> SliceData:
        ctx.check_io_count(op, 3, 1)
        x, begin, size, y = (ctx.require_input(op, 0), ctx.require_input(op, 1), ctx.require_input(op, 2),
                             ctx.output(op, 0))
        rank = len(x.shape)
        if x.type_name != y.type_name:
            raise ctx.fail(op, f"input type {x.type_name} differs from output type {y.type_name}")
        if begin.type_name != size.type_name or begin.type_name not in ("INT32", "INT64"):
            raise ctx.fail(op, f"begin ({begin.type_name}) and size ({size.type_name}) must both be INT32 or INT64")
        if begin.num_elements != rank or size.num_elements != rank:
            raise ctx.fail(op, f"begin and size need {rank} entries, have {begin.num_elements} and "
                               f"{size.num_elements}")
        if rank > MAX_DIMS:
            raise ctx.fail(op, f"input has {rank} dims; TFLM's SLICE supports at most {MAX_DIMS}")
        if x.type_name not in SUPPORTED:
            raise ctx.fail(op, f"type {x.type_name} not supported (TFLM supports {', '.join(SUPPORTED)}; it "
                               "refuses others when the op is invoked)")
        if begin.data is None or size.data is None:
            return SliceData(None)
        try:
            return SliceData(resolve_box(begin.data, size.data, x.shape, y.num_elements))
        except ValueError as e:
            raise ctx.fail(op, str(e)) from None

    def invoke(self, ctx, op, data: SliceData) -> None:
        x, out = ctx.input(op, 0), ctx.output(op, 0)
        box = data.box
        if box is None:
            try:
                box = resolve_box(ctx.input(op, 1), ctx.input(op, 2), x.shape, out.size)
            except ValueError as e:
                raise InputError(f"op {op.index} (SLICE): {e}") from None
        out.reshape(-1)[...] = x[box].reshape(-1)


KERNEL = Slice()
