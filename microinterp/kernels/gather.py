"""GATHER: pick slices of ``input`` along ``axis`` at INT32 positions (float32 and int8), with ``batch_dims``.

TFLM (``micro/kernels/gather.cc``): inputs ``(input, positions)``; Prepare requires INT32 positions and a float32 or
int8 input (output takes the input type), ``axis`` (negative ``+= rank(input)``) in range, ``batch_dims`` (negative
``+= rank(positions)``) with ``0 <= batch_dims <= axis``, ``batch_dims < rank(input)``, ``batch_dims <=
rank(positions)`` and equal leading batch dims. It then rewrites the output dims to ``input[:axis] +
positions[batch_dims:] + input[axis+1:]`` (we require the model's output shape to be exactly that). Eval, viewing the
input as ``[batch, outer, axis_size, inner]`` and the positions as ``[batch, coords]``:
``out[b, o, c, :] = in[b, o, pos[b, c], :]``; a position outside ``[0, axis_size)`` fails the invoke (``InputError``
here). No requantization.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from ..errors import InputError
from ._qutil import count_nonzero
from .bands import RowBands
from .base import is_batch1_nhwc
from .contract import MIXING, Kernel

SUPPORTED = ("FLOAT32", "INT8")


@dataclass(frozen=True)
class GatherData:
    in_view: tuple[int, int, int, int]     # batch, outer, axis_size, inner
    pos_view: tuple[int, int]              # batch, coords
    axis: int = 0
    positions: np.ndarray | None = None    # constant positions, all within the axis (out of core: row bands)


def _band_rows(data: GatherData, k: int, y0: int, y1: int) -> tuple[int, int]:
    """Input rows a band of output rows reads: the gathered rows (axis 1), or the same rows (axes 2, 3)."""
    if data.axis != 1:
        return y0, y1
    pos = data.positions[y0:y1]
    return (int(pos.min()), int(pos.max()) + 1) if pos.size else (y0, y0)


def _band(data: GatherData, inputs: dict, row0: dict, out: np.ndarray, y0: int) -> None:
    x = inputs[0]
    if data.axis == 1:
        out[...] = x[:, data.positions[y0:y0 + out.shape[1]] - row0[0]]
        return
    pos = data.positions
    if pos is None:             # given at invoke (read whole with the band): checked as invoke checks them
        pos = np.asarray(inputs[1]).reshape(-1)
        if pos.size and (pos.min() < 0 or pos.max() >= data.in_view[2]):
            raise InputError(f"GATHER: a position is outside [0, {data.in_view[2]}) (TFLM fails the invoke)")
    out[...] = np.take(x, pos, axis=data.axis)


def _bandable(op, data: GatherData, inputs, output) -> bool:
    """Batch-1 4-D params and output, no batch dims, 1-D positions: constant and in range along rows, columns or
    channels; given at invoke along columns or channels (a band of rows reads the same rows whatever they are)."""
    return (data.positions is not None or data.axis in (2, 3)) and data.in_view[0] == 1 and \
        data.axis in (1, 2, 3) and inputs[1] is not None and len(inputs[1].shape) == 1 and \
        is_batch1_nhwc(inputs[0], output)


def _prod(dims) -> int:
    return int(np.prod(dims, dtype=np.int64))


class Gather(Kernel):
    ops = ("GATHER",)
    traits = MIXING
    opdata = 20
    #: out of core: row bands of batch-1 4-D params, the gathered input rows (constant positions) or the same rows
    #: when gathering columns or channels (positions constant or given at invoke)
    bands = RowBands({0: 1}, _band_rows, _band, _bandable)

    def prepare(self, ctx, op) -> GatherData:
        ctx.check_io_count(op, 2, 1)
        x, pos, y = ctx.require_input(op, 0), ctx.require_input(op, 1), ctx.output(op, 0)
        if pos.type_name != "INT32":
            raise ctx.fail(op, f"Positions of type '{pos.type_name}' are not supported by gather.")
        if x.type_name not in SUPPORTED:
            raise ctx.fail(op, f"Type '{x.type_name}' is not supported by gather.")
        if y.type_name != x.type_name:
            raise ctx.fail(op, f"output type {y.type_name} differs from input type {x.type_name}")
        rank, prank = len(x.shape), len(pos.shape)
        axis = int(op.options.get("axis", 0))
        if axis < 0:
            axis += rank
        if not 0 <= axis < rank:
            raise ctx.fail(op, f"axis {op.options.get('axis', 0)} out of range for input rank {rank}")
        batch_dims = int(op.options.get("batch_dims", 0))
        if batch_dims < 0:
            batch_dims += prank
        if not (batch_dims <= axis and 0 <= batch_dims < rank and batch_dims <= prank):
            raise ctx.fail(op, f"batch_dims {op.options.get('batch_dims', 0)} invalid for axis {axis}, input rank "
                               f"{rank} and positions rank {prank}")
        if x.shape[:batch_dims] != pos.shape[:batch_dims]:
            raise ctx.fail(op, f"batch dims differ: input {x.shape[:batch_dims]}, positions "
                               f"{pos.shape[:batch_dims]}")
        expected = x.shape[:axis] + pos.shape[batch_dims:] + x.shape[axis + 1:]
        if y.shape != expected:
            raise ctx.fail(op, f"output shape {y.shape} differs from the gathered shape {expected}")
        batch = _prod(x.shape[:batch_dims])
        positions = None
        if pos.data is not None:
            flat = np.asarray(pos.data, np.int64).reshape(-1)
            if not flat.size or (flat.min() >= 0 and flat.max() < x.shape[axis]):
                positions = flat
        return GatherData((batch, _prod(x.shape[batch_dims:axis]), x.shape[axis], _prod(x.shape[axis + 1:])),
                          (batch, _prod(pos.shape[batch_dims:])), axis, positions)

    def bind(self, ctx, op, data: GatherData):
        """On contiguous views: constant positions (checked in range at prepare) as every output element's position
        in the flattened input, computed once, one ``take`` per invoke; positions given at invoke without batch
        dims: :meth:`_bind_runtime` (None otherwise)."""
        x, out = ctx.input(op, 0), ctx.output(op, 0)
        if not (x.flags.c_contiguous and out.flags.c_contiguous) or not out.size:
            return None
        batch, outer, axis_size, inner = data.in_view
        if data.positions is None:
            return self._bind_runtime(op, data, x, ctx.input(op, 1), out) if batch == 1 else None
        pos = data.positions.reshape(data.pos_view)
        index = (((np.arange(batch)[:, None, None, None] * outer + np.arange(outer)[None, :, None, None]) * axis_size
                  + pos[:, None, :, None]) * inner + np.arange(inner)[None, None, None, :]).reshape(-1)
        # the method (no dispatch), "wrap": every position is valid, none checked (the default "raise" checks each)
        return functools.partial(x.reshape(-1).take, index, None, out.reshape(-1), "wrap")

    @staticmethod
    def _bind_runtime(op, data: GatherData, x: np.ndarray, positions: np.ndarray, out: np.ndarray):
        """Positions known only at invoke (no batch dims): checked in range as :meth:`invoke` does, then one
        ``take`` along the axis into the output view."""
        _, outer, axis_size, inner = data.in_view
        src, pos = x.reshape(outer, axis_size, inner), positions.reshape(-1)
        dst = out.reshape(outer, pos.size, inner)
        # one unsigned compare finds a position below 0 (a word of 2^(bits-1) or more) or at or past the axis' size
        unsigned = pos.view(np.dtype(f"u{pos.itemsize}"))
        size = np.array(min(axis_size, 1 << (8 * pos.itemsize - 1)), unsigned.dtype)
        outside = np.empty(pos.shape, bool)

        def call() -> None:
            if count_nonzero(np.greater_equal(unsigned, size, out=outside)):
                raise InputError(f"op {op.index} (GATHER): a position is outside [0, {axis_size}) "
                                 "(TFLM fails the invoke)")
            src.take(pos, 1, dst, "wrap")        # every position checked above: no buffered bounds check
        return call

    def invoke(self, ctx, op, data: GatherData) -> None:
        batch, outer, axis_size, _ = data.in_view
        x = ctx.input(op, 0).reshape(data.in_view)
        pos = ctx.input(op, 1).reshape(data.pos_view)
        if pos.size and (pos.min() < 0 or pos.max() >= axis_size):
            raise InputError(f"op {op.index} (GATHER): a position is outside [0, {axis_size}) "
                             "(TFLM fails the invoke)")
        b = np.arange(batch)[:, None, None]
        o = np.arange(outer)[None, :, None]
        ctx.output(op, 0).reshape(-1)[...] = x[b, o, pos[:, None, :]].reshape(-1)


KERNEL = Gather()
