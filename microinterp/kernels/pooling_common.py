"""Shared Prepare and band driver of AVERAGE_POOL_2D and MAX_POOL_2D: TFLM ``micro/kernels/pooling_common.cc``.

Prepare (the same routine for both ops): padding from ``ComputePaddingHeightWidth`` with dilation 1
(``padding.py``); int8/int16 require ``|s_in - s_out| <= 1e-6`` (double) and equal zero points (no requantization
happens); the fused activation gives ``[act_min, act_max]`` (quantized with float32 ``roundf``) or the float range
(NONE = +-FLT_MAX). The kernels loop over the *output tensor's* H/W. For output ``(oy, ox)`` the window starts at
``(oy*sh - pad_h, ox*sw - pad_w)`` and is clipped to the image; taps outside are skipped (never counted).

Banding: each op exposes ``pool_rows(data, x, x_row0, y0, y1)`` computing output rows ``[y0, y1)`` from a view ``x``
that holds input rows ``[x_row0, x_row0 + x.shape[1])`` covering :func:`input_rows`, so an out-of-core pager can run
the op band by band. :func:`padded_band` copies the rows a band reads into a buffer padded with a neutral value
(0 for sums, the lowest value for max: skipping a tap and adding 0 / maxing with the lowest value are the same),
after which every tap is one strided slice.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from ..quant import activation_range
from .bands import Tiler
from .base import is_batch1_nhwc
from .binary_common import float_activation_range
from .padding import compute_padding_height_width, input_rows_for

#: invoke() works in bands whose padded buffer holds about this many elements.
BAND_ELEMENTS = 1 << 21


@dataclass(frozen=True)
class PoolData:
    type_name: str                  # FLOAT32, INT8, INT16
    in_h: int
    in_w: int
    out_h: int
    out_w: int
    filter_h: int
    filter_w: int
    stride_h: int
    stride_w: int
    pad_h: int
    pad_w: int
    act_min: Any
    act_max: Any
    count: np.ndarray               # valid taps per output position [out_h, out_w] (int64)


def valid_taps(out_size: int, stride: int, pad: int, filter_size: int, in_size: int) -> np.ndarray:
    """Per output index: taps of the clipped window, ``min(f, in - origin) - max(0, -origin)`` (>= 0)."""
    origin = np.arange(out_size, dtype=np.int64) * stride - pad
    return np.maximum(np.minimum(filter_size, in_size - origin) - np.maximum(0, -origin), 0)


def prepare_pooling(ctx, op) -> PoolData:
    """PoolingPrepare + CalculateOpDataPooling (shared by both pooling ops)."""
    ctx.check_io_count(op, 1, 1)
    x, y = ctx.require_input(op, 0), ctx.output(op, 0)
    t = x.type_name
    if t not in ("FLOAT32", "INT8", "INT16"):
        raise ctx.fail(op, f"type {t} not supported (FLOAT32, INT8, INT16)")
    if y.type_name != t:
        raise ctx.fail(op, f"output type {y.type_name} differs from input type {t}")
    if len(x.shape) != 4 or len(y.shape) != 4:
        raise ctx.fail(op, f"input {x.shape} and output {y.shape} must be 4-D (NHWC)")
    if x.shape[0] != y.shape[0] or x.shape[3] != y.shape[3]:
        raise ctx.fail(op, f"batch/channels of input {x.shape} and output {y.shape} differ")
    o = op.options
    fh, fw = o.get("filter_height", 1), o.get("filter_width", 1)
    sh, sw = o.get("stride_h", 1), o.get("stride_w", 1)
    if fh < 1 or fw < 1 or sh < 1 or sw < 1:
        raise ctx.fail(op, f"filter {fh}x{fw} and strides {sh}x{sw} must be >= 1")
    pad = compute_padding_height_width(sh, sw, 1, 1, x.shape[1], x.shape[2], fh, fw, o.get("padding", "SAME"))
    act = o.get("fused_activation_function", "NONE")
    if t == "FLOAT32":
        lo, hi = float_activation_range(act)
    else:
        qx, qy = x.quantization, y.quantization
        if qx is None or qy is None:
            raise ctx.fail(op, "int8/int16 pooling needs quantized input and output")
        if not abs(float(qx.scale) - float(qy.scale)) <= 1.0e-6:
            raise ctx.fail(op, f"input scale {qx.scale} and output scale {qy.scale} differ by more than 1e-6")
        if qx.zero_point != qy.zero_point:
            raise ctx.fail(op, f"input zero point {qx.zero_point} != output zero point {qy.zero_point}")
        lo, hi = activation_range(act, qy.scale, qy.zero_point, t)
    out_h, out_w = y.shape[1], y.shape[2]
    count = (valid_taps(out_h, sh, pad.height, fh, x.shape[1])[:, None]
             * valid_taps(out_w, sw, pad.width, fw, x.shape[2])[None, :])
    return PoolData(t, x.shape[1], x.shape[2], out_h, out_w, fh, fw, sh, sw, pad.height, pad.width, lo, hi, count)


def input_rows(data: PoolData, y0: int, y1: int) -> tuple[int, int]:
    """Input rows ``[lo, hi)`` that output rows ``[y0, y1)`` read (``(0, 0)`` if none)."""
    return input_rows_for(y0, y1, data.stride_h, 1, data.filter_h, data.pad_h, data.in_h)


def band_geometry(data: PoolData, y0: int, y1: int) -> tuple[tuple[int, int], tuple[slice, slice],
                                                              tuple[slice, slice]]:
    """The padded band of output rows ``[y0, y1)``: its (rows, columns), where the image's pixels land in it, and
    which image rows and columns those are (both pairs of slices empty when no tap reaches the image). Row ``i`` of
    the band is input row ``y0*sh - pad_h + i``, column ``j`` input column ``j - pad_w``."""
    r_lo, r_hi = y0 * data.stride_h - data.pad_h, (y1 - 1) * data.stride_h - data.pad_h + data.filter_h
    c_lo, c_hi = -data.pad_w, (data.out_w - 1) * data.stride_w - data.pad_w + data.filter_w
    v_lo, h_lo = max(r_lo, 0), max(c_lo, 0)
    v_hi, h_hi = max(min(r_hi, data.in_h), v_lo), max(min(c_hi, data.in_w), h_lo)
    return ((r_hi - r_lo, c_hi - c_lo), (slice(v_lo - r_lo, v_hi - r_lo), slice(h_lo - c_lo, h_hi - c_lo)),
            (slice(v_lo, v_hi), slice(h_lo, h_hi)))


def padded_band(data: PoolData, x: np.ndarray, x_row0: int, y0: int, y1: int, fill: Any,
                dtype: Any) -> np.ndarray:
    """The input rows/columns the windows of output rows ``[y0, y1)`` span (:func:`band_geometry`), outside the
    image set to ``fill``; tap ``(ky, kx)`` of all outputs of the band is
    ``band[:, ky::sh][:, :rows, kx::sw][:, :, :out_w]``."""
    (rows, cols), (inside_r, inside_c), (src_r, src_c) = band_geometry(data, y0, y1)
    band = np.full((x.shape[0], rows, cols, x.shape[3]), fill, dtype=dtype)
    if src_r.start < src_r.stop and src_c.start < src_c.stop:
        if src_r.start < x_row0 or src_r.stop > x_row0 + x.shape[1]:
            raise ValueError(f"input rows [{src_r.start}, {src_r.stop}) are needed, the view holds "
                             f"[{x_row0}, {x_row0 + x.shape[1]})")
        band[:, inside_r, inside_c] = x[:, src_r.start - x_row0:src_r.stop - x_row0, src_c]
    return band


def fixed_band(data: PoolData, x: np.ndarray, fill: Any) -> tuple[np.ndarray, np.ndarray | None, np.ndarray] | None:
    """For a bound float pool on the fixed view ``x`` (one band of every output row): ``(band, dst, src)`` -- the kept
    padded band (margins ``fill``), the part of it the image goes to and the image view to refresh it with
    (``dst[...] = src`` before each call). When no tap falls outside the image the band is ``src`` itself and
    ``dst`` is None: nothing to copy. None for a band above :data:`BAND_ELEMENTS`."""
    band = padded_band(data, x, 0, 0, data.out_h, fill, np.float32)
    if band.size > BAND_ELEMENTS:
        return None
    _, inside, source = band_geometry(data, 0, data.out_h)
    dst, src = band[:, inside[0], inside[1]], x[:, source[0], source[1]]
    if dst.shape == band.shape:     # no tap outside the image: the taps read the input itself
        return src, None, src
    return band, dst, src


#: A bound float pool gathers every tap into one block up to this many elements (else tap by tap).
TAP_BLOCK_ELEMENTS = 1 << 18


def tap_block(data: PoolData, band: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """For a bound float pool on the fixed padded ``band`` (:func:`fixed_band`): ``(block, taps)`` -- a kept
    ``[filter_h, filter_w, N, out_h, out_w, C]`` buffer and the strided read-only view of ``band`` holding, at
    ``[ky, kx]``, tap ``(ky, kx)`` of every output (what ``band[:, ky::sh][:, :out_h, kx::sw][:, :, :out_w]`` is), so
    one copy gathers all taps (the per-tap slices of a stride-2 pool over a few channels made NumPy loop per
    pixel) and one reduction over the flattened ``[taps, outputs]`` block follows. None for a block above
    :data:`TAP_BLOCK_ELEMENTS` or of a single output (a reduction of one column runs along its contiguous axis)."""
    n, _, _, c = band.shape
    shape = (data.filter_h, data.filter_w, n, data.out_h, data.out_w, c)
    outputs = n * data.out_h * data.out_w * c
    if outputs < 2 or outputs * data.filter_h * data.filter_w > TAP_BLOCK_ELEMENTS:
        return None
    s_n, s_h, s_w, s_c = band.strides
    taps = np.lib.stride_tricks.as_strided(band, shape, (s_h, s_w, s_n, s_h * data.stride_h, s_w * data.stride_w,
                                                         s_c), writeable=False)
    return np.empty(shape, band.dtype), taps


def run_bands(data: PoolData, x: np.ndarray, out: np.ndarray,
              pool_rows: Callable[[PoolData, np.ndarray, int, int, int], np.ndarray]) -> None:
    """Whole-tensor invoke: ``pool_rows`` over bands of output rows sized to keep temporaries small."""
    n, c = x.shape[0], x.shape[3]
    row_elems = max(1, n * c * ((data.out_w - 1) * data.stride_w + data.filter_w) * data.stride_h)
    step = max(1, BAND_ELEMENTS // row_elems)
    for y0 in range(0, data.out_h, step):
        y1 = min(data.out_h, y0 + step)
        out[:, y0:y1] = pool_rows(data, x, 0, y0, y1)


class PoolTiler(Tiler):
    """MAX_POOL_2D / AVERAGE_POOL_2D out of core: a band of output rows from the input rows its windows reach,
    computed by the kernel's own ``pool_rows`` (``rows_fn``)."""

    mode = "rows"
    row_inputs: ClassVar[dict[int, int]] = {0: 1}

    def __init__(self, rows_fn: Callable[..., np.ndarray]):
        self.rows_fn = rows_fn

    def for_op(self, op: Any, data: Any, inputs: Any, output: Any) -> Tiler | None:
        return self if is_batch1_nhwc(inputs[0], output) else None

    def input_rows(self, data, k, y0, y1):
        return input_rows(data, y0, y1)

    def compute(self, kernel, op, data, band):
        y1 = band.y0 + band.out.shape[1]
        band.out[...] = self.rows_fn(data, band.inputs[0], band.row0[0], band.y0, y1)


def filter_area(op: Any) -> int:
    """The pooling window's taps (``filter_height x filter_width`` of the op's options)."""
    return int(op.options.get("filter_height", 1)) * int(op.options.get("filter_width", 1))
