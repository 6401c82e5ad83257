"""RESIZE_BILINEAR: float32 (float maths) and int8 (10-bit fixed-point maths).

TFLM (``micro/kernels/resize_bilinear.cc``, ``reference/resize_bilinear.h``). Prepare: see :mod:`._resize`, plus
``half_pixel_centers && align_corners`` is refused. Eval supports FLOAT32 and INT8 only (others fail at Eval in
TFLM, here at prepare). Per output row ``y`` (columns alike):

* float32 (``ResizeBilinear``), every step a float32 operation::

      scale = align_corners && out > 1 ? (float)(in - 1) / (out - 1) : (float)in / out
      s     = half_pixel_centers ? (y + 0.5f) * scale - 0.5f : y * scale
      y0 = max((int)floorf(s), 0);  y1 = min((int)ceilf(s), in - 1);  dy = s - y0
      out = v00 * (1 - dy) * (1 - dx) + v10 * dy * (1 - dx) + v01 * (1 - dy) * dx + v11 * dy * dx  (left to right)

* int8 (``ResizeBilinearInteger``), C integer division (truncating)::

      scale10 = ((1 << 10) * in + out / 2) / out     (align_corners && out > 1: (1024 (in-1) + (out-1)/2) / (out-1))
      s  = half_pixel_centers ? y * scale10 + scale10 / 2 - 512 : y * scale10
      y0 = max(s / 1024, 0);  y1 = min((s + 1023) / 1024, in - 1);  wy1 = s - 1024 y0;  wy0 = 1024 - wy1
      acc = v00 wy0 wx0 + v10 wy1 wx0 + v01 wy0 wx1 + v11 wy1 wx1          (int64)
      out = (int8)((acc + (acc > 0 ? 2^19 : -2^19)) / 2^20)                (round half away; double-rounding build)

Pitfall: for extreme integer upscales (roughly ``out^2 >= 2048 * in``) the rounded ``scale10`` pushes ``s / 1024``
past ``in - 1``; TFLM then reads outside the row (the next row/batch, or past the tensor). Here ``y0``/``x0`` are
clamped to the image instead, so such cases are not bit-exact.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from ._float_order import REDUCE_ROWS_IN_ORDER
from ._qutil import copyto
from ._resize import prepare_resize
from ._x86_nan import QUIET
from .bands import RowBands
from .base import is_batch1_nhwc
from .contract import PURE, Kernel


def _cdiv(a, b: int):
    """C integer division (truncation toward zero)."""
    a = np.asarray(a, dtype=np.int64)
    return np.where(a >= 0, a // b, -((-a) // b))


def float_axis(in_size: int, out_size: int, align_corners: bool, half_pixel_centers: bool):
    """(lower, upper, weight of lower, weight of upper) along one axis, float32 weights."""
    f32 = np.float32
    scale = f32(in_size) / f32(out_size)
    if align_corners and out_size > 1:
        scale = f32(in_size - 1) / f32(out_size - 1)
    pos = np.arange(out_size, dtype=f32)
    s = (pos + f32(0.5)) * scale - f32(0.5) if half_pixel_centers else pos * scale
    lower = np.maximum(np.floor(s).astype(np.int64), 0)
    upper = np.minimum(np.ceil(s).astype(np.int64), in_size - 1)
    d = s - lower.astype(f32)
    return np.minimum(lower, in_size - 1), upper, f32(1) - d, d


def int_axis(in_size: int, out_size: int, align_corners: bool, half_pixel_centers: bool):
    """(lower, upper, weight of lower, weight of upper) along one axis, weights in 1/1024 units (int64)."""
    scale10 = ((1 << 10) * in_size + out_size // 2) // out_size
    if align_corners and out_size > 1:
        scale10 = ((1 << 10) * (in_size - 1) + (out_size - 1) // 2) // (out_size - 1)
    pos = np.arange(out_size, dtype=np.int64)
    s = pos * scale10 + scale10 // 2 - (1 << 9) if half_pixel_centers else pos * scale10
    lower = np.maximum(_cdiv(s, 1 << 10), 0)
    upper = np.minimum(_cdiv(s + (1 << 10) - 1, 1 << 10), in_size - 1)
    w1 = s - (1 << 10) * lower
    return np.minimum(lower, in_size - 1), upper, (1 << 10) - w1, w1


#: A bound float resize whose taps hold at most this many elements per sample keeps its weights laid out over the
#: channels (products with long inner loops instead of one loop per pixel of a few channels).
LAID_OUT_WEIGHTS = 1 << 16


@dataclass(frozen=True)
class ResizeBilinearData:
    integer: bool
    rows: tuple        # (y0, y1) source rows, each shaped (H_out, 1)
    cols: tuple        # (x0, x1) source columns, each shaped (W_out,)
    weights: tuple     # float32: (wy0, wy1) shaped (H_out,1,1) and (wx0, wx1) shaped (W_out,1);
                       # int8: the four products w00, w10, w01, w11 (int32, shaped (H_out, W_out, 1))


class ResizeBilinear(Kernel):
    ops = ("RESIZE_BILINEAR",)
    traits = PURE
    opdata = 0
    def prepare(self, ctx, op) -> ResizeBilinearData:
        align = bool(op.options.get("align_corners", False))
        half = bool(op.options.get("half_pixel_centers", False))
        if align and half:
            raise ctx.fail(op, "If half_pixel_centers is True, align_corners must be False.")
        x, _, out_h, out_w = prepare_resize(ctx, op, ("FLOAT32", "INT8"), exact_size_len=False)
        integer = x.type_name == "INT8"
        axis = int_axis if integer else float_axis
        y0, y1, wy0, wy1 = axis(x.shape[1], out_h, align, half)
        x0, x1, wx0, wx1 = axis(x.shape[2], out_w, align, half)
        if integer:  # |value * wy * wx| <= 128 * 2^20: the whole sum fits in int32
            wy0, wy1 = wy0.reshape(-1, 1, 1), wy1.reshape(-1, 1, 1)
            wx0, wx1 = wx0.reshape(-1, 1), wx1.reshape(-1, 1)
            weights = tuple((a * b).astype(np.int32) for a, b in ((wy0, wx0), (wy1, wx0), (wy0, wx1), (wy1, wx1)))
        else:
            weights = (wy0.reshape(-1, 1, 1), wy1.reshape(-1, 1, 1), wx0.reshape(-1, 1), wx1.reshape(-1, 1))
        return ResizeBilinearData(integer, (y0.reshape(-1, 1), y1.reshape(-1, 1)), (x0, x1), weights)

    def bind(self, ctx, op, data: ResizeBilinearData):
        """On fixed contiguous views: the four taps of every output gathered by one ``take`` of kept positions
        (``[N, 4, pixels, C]``), weighted and added in :func:`resize_rows`' order -- float32 ``(v * wy) * wx``, the
        four terms left to right (the rows reduce in order), ``+ 0.f``; int8 the int32 products and the rounding
        shift (None where NumPy might not reduce rows in order, or one output value per batch)."""
        x, out = ctx.input(op, 0), ctx.output(op, 0)
        n, ih, iw, c = x.shape
        _, oh, ow, _ = out.shape
        pixels = oh * ow
        if not (x.flags.c_contiguous and out.flags.c_contiguous) or pixels * c < 2 or not REDUCE_ROWS_IN_ORDER:
            return None
        (r0, r1), (x0, x1) = data.rows, data.cols
        index = np.stack([(r.reshape(-1, 1) * iw + col.reshape(1, -1)).reshape(-1)
                          for r, col in ((r0, x0), (r1, x0), (r0, x1), (r1, x1))])
        flat, dst = x.reshape(n, ih * iw, c), out.reshape(n, pixels, c)
        taps = np.empty((n, 4, pixels, c), x.dtype)
        if data.integer:
            w = np.stack([np.broadcast_to(t, (oh, ow, 1)).reshape(pixels, 1) for t in data.weights])
            products = np.empty(taps.shape, np.int32)
            acc = np.empty(dst.shape, np.int32)

            def integer() -> None:
                flat.take(index, 1, taps, "wrap")
                np.multiply(taps, w, out=products)
                np.add.reduce(products, axis=1, out=acc)      # |sum| <= 128 * 2^20: no int32 wrap
                rounded = (np.abs(acc) + (1 << 19)) >> 20        # C truncation of (acc +- 2^19) / 2^20
                copyto(dst, np.where(acc < 0, -rounded, rounded), casting="unsafe")
            return integer
        wy0, wy1, wx0, wx1 = data.weights
        wy = np.stack([np.broadcast_to(t.reshape(oh, 1), (oh, ow)).reshape(pixels, 1) for t in (wy0, wy1, wy0, wy1)])
        wx = np.stack([np.broadcast_to(t.reshape(1, ow), (oh, ow)).reshape(pixels, 1) for t in (wx0, wx0, wx1, wx1)])
        products = taps
        if taps[0].size <= LAID_OUT_WEIGHTS:     # few channels made NumPy loop per pixel: weights laid out in full
            wy, wx = (np.ascontiguousarray(np.broadcast_to(v, taps.shape[1:])) for v in (wy, wx))
            if n == 1:          # one batch: the products on flat views (a leading axis of 1 to broadcast cost 2x)
                products, wy, wx = taps.reshape(-1), wy.reshape(-1), wx.reshape(-1)
        # every position is valid: "wrap" mode checks none (the default "raise" checks each)
        zero, gather = np.float32(0.0), functools.partial(flat.take, index, 1, taps, "wrap")
        if products.ndim == 1:      # and the gather by element positions, from the flat input
            positions = (index[:, :, None] * c + np.arange(c)).reshape(-1).astype(np.intp)
            gather = functools.partial(x.reshape(-1).take, positions, 0, products, "wrap")
        dst_dot, ones = out.reshape(-1).dot, np.ones(out.size, np.float32)    # NaN where an output is (or inf - inf)

        def call() -> None:       # under the runtime's quiet errstate
            gather()
            np.multiply(products, wy, out=products)
            np.multiply(products, wx, out=products)
            # from +0.f: the same sums as the four terms plus 0.f (0.f + t0 is t0 but for a zero's sign, and a
            # running sum from +0.f never becomes -0.f)
            np.add.reduce(taps, axis=1, out=dst, initial=zero)
            if math.isnan(dst_dot(ones)):
                nan_sums_as_x86(np.moveaxis(taps, 1, -1).reshape(-1, 4), dst.reshape(-1))
        return call

    def invoke(self, ctx, op, data: ResizeBilinearData) -> None:
        resize_rows(data, ctx.input(op, 0), 0, ctx.output(op, 0), 0)

    #: out of core: a band of output rows reads the input rows it interpolates between
    bands = RowBands({0: 1}, lambda data, k, y0, y1: input_rows(data, y0, y1),
                         lambda data, inputs, row0, out, y0: resize_rows(data, inputs[0], row0[0], out, y0),
                         lambda op, data, inputs, output: is_batch1_nhwc(inputs[0], output))


def input_rows(data: ResizeBilinearData, y0: int, y1: int) -> tuple[int, int]:
    """Input rows ``[lo, hi)`` that output rows ``[y0, y1)`` interpolate between."""
    lo, hi = data.rows
    return int(lo[y0:y1].min()), int(hi[y0:y1].max()) + 1


def resize_rows(data: ResizeBilinearData, x: np.ndarray, x_row0: int, out: np.ndarray, y0: int) -> None:
    """Output rows ``[y0, y0 + out rows)`` from input rows starting at ``x_row0`` (the whole op: 0, 0): the same
    four taps and weights, per output element, as the whole tensor."""
    y1 = y0 + out.shape[1]
    (r0, r1), (x0, x1) = data.rows, data.cols
    r0, r1 = r0[y0:y1] - x_row0, r1[y0:y1] - x_row0
    v00, v10, v01, v11 = x[:, r0, x0], x[:, r1, x0], x[:, r0, x1], x[:, r1, x1]
    if data.integer:
        w00, w10, w01, w11 = (w[y0:y1] for w in data.weights)
        acc = v00 * w00 + v10 * w10 + v01 * w01 + v11 * w11
        rounded = (np.abs(acc) + (1 << 19)) >> 20  # (acc +- 2^19) / 2^20, C truncation = half away from zero
        out[...] = np.where(acc < 0, -rounded, rounded)
    else:
        wy0, wy1, wx0, wx1 = data.weights
        wy0, wy1 = wy0[y0:y1], wy1[y0:y1]
        terms = np.stack([v00 * wy0 * wx0, v10 * wy1 * wx0, v01 * wy0 * wx1, v11 * wy1 * wx1], axis=-1)
        out[...] = terms[..., 0] + terms[..., 1] + terms[..., 2] + terms[..., 3] + np.float32(0)
        nan_sums_as_x86(terms.reshape(-1, 4), out.reshape(-1))


def nan_sums_as_x86(terms: np.ndarray, out: np.ndarray) -> None:
    """Outputs ``out[i]`` that came out NaN, again as x86 adds ``terms[i, 0] + ... + terms[i, 3]``: where both
    operands are NaN the left one's (quieted), which NumPy's vector remainders would not pick (see
    :mod:`._float_dot`); measured against the wheel."""
    bad = np.flatnonzero(np.isnan(out))
    if not bad.size:
        return
    t = terms[bad]
    total = t[:, 0].copy()
    for k in range(1, 4):
        both = np.isnan(total) & np.isnan(t[:, k])
        quieted = total.view(np.uint32) | QUIET
        total = total + t[:, k]
        total.view(np.uint32)[both] = quieted[both]
    out[bad] = total


KERNEL = ResizeBilinear()
