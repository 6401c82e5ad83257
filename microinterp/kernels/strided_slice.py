"""STRIDED_SLICE with constant begin/end/strides on tensors of at most 4 dims (float32, int8, int16, int32, bool).

TFLM (``micro/kernels/strided_slice.cc`` + ``strided_slice_common.cc``, ``kernels/internal/strided_slice_logic.h``,
``reference/strided_slice.h``):

* Prepare: 4 inputs, 1 output, rank <= 4, begin/end/strides constant, every stride non-zero. ``ellipsis_mask`` and
  ``new_axis_mask`` are forced to 0 and ``offset`` is never copied (so it is ignored). The model's output shape must
  equal, for every non-shrunk axis, ``max(0, ceil((end - start) / stride))`` (computed with ``StartForAxis`` /
  ``StopForAxis``: a shrunk axis counts ``start + 1``).
* Eval pads everything to 5-D (leading dims: begin 0, end 1, stride 1, begin and end mask bits set) and per axis:
  ``start``: negative ``+= dim``, clamp to ``[0, dim]`` (stride > 0) or ``[-1, dim-1]`` (stride < 0), begin_mask ->
  ``0`` or ``dim-1``. ``end``: shrunk axis -> ``start + 1`` (``start`` if ``start >= dim``); else negative ``+= dim``,
  same clamp, end_mask -> ``dim`` or ``-1``. Indices run ``i = start; i < end`` (stride > 0) or ``i > end``
  (stride < 0), ``i += stride``; the visited elements are written *sequentially* from the start of the output.
  Pitfall kept on purpose: a shrunk axis with a negative stride (or a start past the end) visits nothing, so TFLM
  leaves (part of) the output unwritten; we write exactly what TFLM writes and leave the rest untouched.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .contract import MIXING, Kernel

SUPPORTED = ("FLOAT32", "INT8", "INT16", "INT32", "BOOL")
MAX_DIMS = 4
INT_MIN, INT_MAX = -(1 << 31), (1 << 31) - 1


@dataclass(frozen=True)
class StridedSliceData:
    index: tuple[np.ndarray, ...]   # np.ix_ index of the visited elements of the 5-D padded input
    count: int                      # how many elements the kernel writes


def _clamp(v: int, lo: int, hi: int) -> int:
    return hi if v > hi else max(v, lo)


def _prepare_start(begin: int, stride: int, dim: int, masked: bool) -> int:
    """strided_slice::StartForAxis (used by TFLM's Prepare to check the output shape)."""
    if dim == 0:
        return 0
    start = (INT_MIN if stride > 0 else INT_MAX) if masked else begin
    if start < 0:
        start += dim
    return _clamp(start, 0, dim) if stride > 0 else _clamp(start, -1, dim - 1)


def _prepare_stop(end: int, stride: int, dim: int, masked: bool, shrink: bool, start: int) -> int:
    """strided_slice::StopForAxis."""
    if dim == 0:
        return 0
    if shrink:
        return start + 1
    stop = (INT_MAX if stride > 0 else INT_MIN) if masked else end
    if stop < 0:
        stop += dim
    return _clamp(stop, 0, dim) if stride > 0 else _clamp(stop, -1, dim - 1)


def _eval_start(begin: int, stride: int, dim: int, masked: bool) -> int:
    """strided_slice::StridedSliceStartForAxis (used by the reference kernel)."""
    start = begin + dim if begin < 0 else begin
    start = _clamp(start, 0, dim) if stride > 0 else _clamp(start, -1, dim - 1)
    if masked:
        start = 0 if stride > 0 else dim - 1
    return start


def _eval_end(end: int, stride: int, dim: int, masked: bool, shrink: bool, start: int) -> int:
    """strided_slice::StridedSliceEndForAxis (``offset`` is always false in TFLM Micro)."""
    if shrink:
        return start if start >= dim else start + 1
    end = end + dim if end < 0 else end
    end = _clamp(end, 0, dim) if stride > 0 else _clamp(end, -1, dim - 1)
    if masked:
        end = dim if stride > 0 else -1
    return end


def _slices(index: tuple[np.ndarray, ...]) -> tuple[slice, ...] | None:
    """The basic slices that visit what the ``np.ix_`` ``index`` visits, when every axis visits an arithmetic
    progression (what a strided slice visits); None otherwise (an empty axis)."""
    slices = []
    for idx in index:
        idx = np.asarray(idx).reshape(-1)
        if not idx.size:
            return None
        step = int(idx[1] - idx[0]) if idx.size > 1 else 1
        if step == 0 or not np.array_equal(idx, idx[0] + step * np.arange(idx.size)):
            return None
        stop = int(idx[-1]) + step
        slices.append(slice(int(idx[0]), stop if stop >= 0 else None, step))
    return tuple(slices)


def _as_slices(padded: np.ndarray, index: tuple[np.ndarray, ...]) -> np.ndarray | None:
    """The view of ``padded`` that ``padded[index]`` copies (:func:`_slices`), or None."""
    slices = _slices(index)
    return None if slices is None else padded[slices]


class StridedSlice(Kernel):
    ops = ("STRIDED_SLICE",)
    traits = MIXING
    geometry = "slice"
    opdata = 84
    def prepare(self, ctx, op) -> StridedSliceData:
        ctx.check_io_count(op, 4, 1)
        x, y = ctx.require_input(op, 0), ctx.output(op, 0)
        rank = len(x.shape)
        if rank > MAX_DIMS:
            raise ctx.fail(op, "input dim should not exceed 4")
        vectors = []
        for k, name in ((1, "begin"), (2, "end"), (3, "strides")):
            t = ctx.require_input(op, k)
            if t.data is None:
                raise ctx.fail(op, f"Non-constant >{name}< tensor is not supported")
            v = [int(a) for a in np.asarray(t.data).reshape(-1)]
            if len(v) < rank:
                raise ctx.fail(op, f"{name} has {len(v)} entries, the input has {rank} dims")
            vectors.append(v[:rank])
        begin, end, strides = vectors
        opts = op.options
        begin_mask, end_mask = int(opts.get("begin_mask", 0)), int(opts.get("end_mask", 0))
        shrink_mask = int(opts.get("shrink_axis_mask", 0))

        out_shape = []
        for i in range(rank):
            if strides[i] == 0:
                raise ctx.fail(op, "stride value has to be non-zero")
            shrink = bool(shrink_mask >> i & 1)
            start = _prepare_start(begin[i], strides[i], x.shape[i], bool(begin_mask >> i & 1))
            stop = _prepare_stop(end[i], strides[i], x.shape[i], bool(end_mask >> i & 1), shrink, start)
            if shrink:
                stop = start + 1
            if not shrink:
                out_shape.append(max(0, math.ceil(np.float32(stop - start) / np.float32(strides[i]))))
        if tuple(y.shape) != tuple(out_shape):
            raise ctx.fail(op, f"output shape {y.shape} differs from the sliced shape {tuple(out_shape)}")
        if x.type_name not in SUPPORTED or y.type_name != x.type_name:
            raise ctx.fail(op, f"type {x.type_name} -> {y.type_name} not supported (TFLM supports "
                               f"{', '.join(SUPPORTED)}, same type in and out)")

        # Pad to 5-D as the reference kernel does and list the visited indices per axis.
        pad = 5 - rank
        shape5 = (1,) * pad + tuple(x.shape)
        begin5, end5, strides5 = [0] * pad + begin, [1] * pad + end, [1] * pad + strides
        bmask5 = (begin_mask << pad) | ((1 << pad) - 1)
        emask5 = (end_mask << pad) | ((1 << pad) - 1)
        smask5 = shrink_mask << pad
        axes = []
        for i in range(5):
            start = _eval_start(begin5[i], strides5[i], shape5[i], bool(bmask5 >> i & 1))
            stop = _eval_end(end5[i], strides5[i], shape5[i], bool(emask5 >> i & 1), bool(smask5 >> i & 1), start)
            axes.append(np.arange(start, stop, strides5[i], dtype=np.intp))
        count = int(np.prod([a.size for a in axes]))
        return StridedSliceData(np.ix_(*axes), min(count, y.num_elements))

    def bind(self, ctx, op, data: StridedSliceData):
        """On fixed views: the padded input view, the flat output view and the gather into it, resolved once."""
        x, out = ctx.input(op, 0), ctx.output(op, 0)
        if not out.flags.c_contiguous:
            return None
        padded = x.reshape((1,) * (5 - x.ndim) + x.shape)
        target = out.reshape(-1)[:data.count]
        index, count = data.index, data.count
        view = _as_slices(padded, index)
        if view is not None and view.size == count:     # the visited elements as a basic (strided) view
            flat = target.reshape(view.shape)

            def copy() -> None:
                flat[...] = view
            return copy

        def call() -> None:
            target[...] = padded[index].reshape(-1)[:count]
        return call

    def invoke(self, ctx, op, data: StridedSliceData) -> None:
        x = ctx.input(op, 0)
        picked = x.reshape((1,) * (5 - x.ndim) + x.shape)[data.index].reshape(-1)
        ctx.output(op, 0).reshape(-1)[:data.count] = picked[:data.count]

    def invoke_streams(self, ctx, op, data: StridedSliceData, state: None) -> None:
        """Streams (:mod:`.streams`): the same visit behind the stream axis -- basic slices where the axes visit
        progressions (:func:`_slices`), else the ``np.ix_`` index (its arrays stay adjacent, so the stream axis
        stays first)."""
        x, out = ctx.input(op, 0), ctx.output(op, 0)
        s = x.shape[0]
        padded = x.reshape((s,) + (1,) * (6 - x.ndim) + x.shape[1:])
        slices = _slices(data.index)
        picked = padded[(slice(None), *(data.index if slices is None else slices))].reshape(s, -1)
        out.reshape(s, -1)[:, :data.count] = picked[:, :data.count]


KERNEL = StridedSlice()
