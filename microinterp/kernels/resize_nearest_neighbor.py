"""RESIZE_NEAREST_NEIGHBOR: float32, int8, int16 (a pure gather; values are copied bit for bit).

TFLM (``micro/kernels/resize_nearest_neighbor.cc``, ``micro/kernels/internal/reference/resize_nearest_neighbor.h``),
per output row ``y`` (columns alike), all in float32::

    scale  = align_corners && out > 1 ? (in - 1) / (float)(out - 1) : in / (float)out
    offset = half_pixel_centers ? 0.5f : 0.0f
    src    = min(align_corners ? (int32)roundf((y + offset) * scale) : (int32)floorf((y + offset) * scale), in - 1)
    if half_pixel_centers: src = max(0, src)

``align_corners`` and ``half_pixel_centers`` may both be set (TFLM does not refuse it, unlike RESIZE_BILINEAR);
then the rounding branch is taken with the 0.5 offset. Prepare checks: see :mod:`._resize`.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from ..quant import round_half_away
from ._resize import prepare_resize
from .bands import RowBands
from .base import is_batch1_nhwc
from .contract import PURE, Kernel


def nearest_indices(in_size: int, out_size: int, align_corners: bool, half_pixel_centers: bool) -> np.ndarray:
    """Source index of every output position along one axis (TFLM's GetNearestNeighbor)."""
    f32 = np.float32
    if align_corners and out_size > 1:
        scale = f32(in_size - 1) / f32(out_size - 1)
    else:
        scale = f32(in_size) / f32(out_size)
    pos = (np.arange(out_size, dtype=f32) + f32(0.5 if half_pixel_centers else 0.0)) * scale
    if align_corners:
        src = round_half_away(pos)  # roundf of the float32 product
    else:
        src = np.floor(pos)
    src = np.minimum(src.astype(np.int64), in_size - 1)
    if half_pixel_centers:
        src = np.maximum(src, 0)
    return src


@dataclass(frozen=True)
class ResizeNearestData:
    rows: np.ndarray
    cols: np.ndarray


class ResizeNearestNeighbor(Kernel):
    ops = ("RESIZE_NEAREST_NEIGHBOR",)
    traits = PURE
    opdata = 0
    def prepare(self, ctx, op) -> ResizeNearestData:
        x, _, out_h, out_w = prepare_resize(ctx, op, ("FLOAT32", "INT8", "INT16"), exact_size_len=True)
        align = bool(op.options.get("align_corners", False))
        half = bool(op.options.get("half_pixel_centers", False))
        return ResizeNearestData(nearest_indices(x.shape[1], out_h, align, half),
                                 nearest_indices(x.shape[2], out_w, align, half))

    def bind(self, ctx, op, data: ResizeNearestData):
        """On fixed contiguous views: every output pixel's source pixel as a position in the flattened image,
        computed once, one ``take`` of whole pixels per invoke (None for views of some rows: a phased segment's)."""
        x, out = ctx.input(op, 0), ctx.output(op, 0)
        n, h, w, c = x.shape
        if not (x.flags.c_contiguous and out.flags.c_contiguous) or out.shape[1:3] != (len(data.rows), len(data.cols)) \
                or (len(data.rows) and int(data.rows.max()) >= h) or (len(data.cols) and int(data.cols.max()) >= w):
            return None
        index = (data.rows[:, None] * w + data.cols[None, :]).reshape(-1)
        # every position is valid (checked above): "wrap" mode checks none
        return functools.partial(x.reshape(n, h * w, c).take, index, 1, out.reshape(n, index.size, c), "wrap")

    def invoke(self, ctx, op, data: ResizeNearestData) -> None:
        resize_rows(data, ctx.input(op, 0), 0, ctx.output(op, 0), 0)

    #: out of core: a band of output rows reads the input rows it copies from
    bands = RowBands({0: 1}, lambda data, k, y0, y1: input_rows(data, y0, y1),
                         lambda data, inputs, row0, out, y0: resize_rows(data, inputs[0], row0[0], out, y0),
                         lambda op, data, inputs, output: is_batch1_nhwc(inputs[0], output))


def input_rows(data: ResizeNearestData, y0: int, y1: int) -> tuple[int, int]:
    """Input rows ``[lo, hi)`` that output rows ``[y0, y1)`` copy from."""
    rows = data.rows[y0:y1]
    return int(rows.min()), int(rows.max()) + 1


def resize_rows(data: ResizeNearestData, x: np.ndarray, x_row0: int, out: np.ndarray, y0: int) -> None:
    """Output rows ``[y0, y0 + out rows)`` from input rows starting at ``x_row0`` (the whole op: 0, 0)."""
    out[...] = x[:, data.rows[y0:y0 + out.shape[1]] - x_row0][:, :, data.cols]


KERNEL = ResizeNearestNeighbor()
