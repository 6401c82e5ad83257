"""Output size and padding of windowed ops, as TFLM computes them (``micro/kernels/padding.h``, the checked
version of ``tensorflow/lite/kernels/padding.h`` that the wheel uses).

Used by CONV_2D, DEPTHWISE_CONV_2D, the pooling ops (dilation 1) and TRANSPOSE_CONV (with ``in_size`` := the output
tensor's H/W, dilation 1). The algorithm, per spatial axis (docs/tflm-facts.md §6), all in int64::

    eff   = (filter - 1) * dilation + 1                       effective (dilated) filter size
    out   = SAME:  (in + stride - 1) / stride                 C integer division (truncates toward zero)
            VALID: (in + stride - eff) / stride
    total = max(0, (out - 1) * stride + eff - in)
    pad   = total / 2,  offset = total % 2                     the odd pixel goes at the end

Checked variant (what the wheel runs): an axis is *invalid* when the padding is neither SAME nor VALID, or
``in < 0``, ``filter <= 0``, ``stride <= 0``, ``dilation <= 0``, or ``out < 0``, or a value leaves the int range.
ComputePaddingHeightWidth starts from all zeros and computes, in this order, out_width, out_height, pad_height,
pad_width, **stopping at the first invalid step** (so e.g. a zero height dilation leaves out_height and both paddings
at 0 while out_width keeps its value). Nothing fails: the kernels run with whatever was computed.

Kernels use only ``pad`` (the "before" padding); the extra odd pixel is implicit because taps outside the image are
skipped. Pitfall: TFLM's kernels loop over the *output tensor's* H/W, not over ``out`` computed here (the two
agree for converter-made models); ``out`` only enters ``pad``.

Helpers for row tiling (out-of-core execution): :func:`input_rows_for` names the input rows a band of output rows
reads, so a pager can hand a kernel the input band plus its halo; :func:`windows` gives all filter windows of a
band as one strided view.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ._qutil import copyto

_INT_MIN, _INT_MAX = -(1 << 31), (1 << 31) - 1


def _cdiv(a: int, b: int) -> int:
    """C integer division (truncation toward zero)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def effective_filter_size(filter_size: int, dilation: int = 1) -> int:
    return (filter_size - 1) * dilation + 1


def compute_out_size_checked(padding: str, in_size: int, filter_size: int, stride: int,
                             dilation: int = 1) -> int | None:
    """TFLM ComputeOutSizeChecked: the output extent of one axis, or None where TFLM reports an error."""
    if padding not in ("SAME", "VALID") or in_size < 0 or filter_size <= 0 or stride <= 0 or dilation <= 0:
        return None
    if padding == "SAME":
        value = _cdiv(in_size + stride - 1, stride)
    else:
        value = _cdiv(in_size + stride - effective_filter_size(filter_size, dilation), stride)
    return value if 0 <= value <= _INT_MAX else None


def compute_out_size(padding: str, in_size: int, filter_size: int, stride: int, dilation: int = 1) -> int:
    """TFLM ComputeOutSize: as :func:`compute_out_size_checked`, 0 on error."""
    out = compute_out_size_checked(padding, in_size, filter_size, stride, dilation)
    return 0 if out is None else out


def compute_padding_with_offset_checked(stride: int, dilation: int, in_size: int, filter_size: int,
                                        out_size: int) -> tuple[int, int] | None:
    """TFLM ComputePaddingWithOffsetChecked: ``(pad_before, odd_offset)`` for one axis, or None on error."""
    if in_size < 0 or filter_size <= 0 or out_size < 0 or stride <= 0 or dilation <= 0:
        return None
    total = max(0, (out_size - 1) * stride + effective_filter_size(filter_size, dilation) - in_size)
    return (total // 2, total % 2) if total // 2 <= _INT_MAX else None


def compute_padding_with_offset(stride: int, dilation: int, in_size: int, filter_size: int,
                                out_size: int) -> tuple[int, int]:
    """TFLM ComputePaddingWithOffset: as the checked version, ``(0, 0)`` on error."""
    return compute_padding_with_offset_checked(stride, dilation, in_size, filter_size, out_size) or (0, 0)


@dataclass(frozen=True)
class Padding:
    """Result of :func:`compute_padding_height_width` (names follow TfLitePaddingValues)."""

    height: int
    width: int
    height_offset: int
    width_offset: int
    out_height: int
    out_width: int


def compute_padding_height_width(stride_h: int, stride_w: int, dilation_h: int, dilation_w: int, in_h: int,
                                 in_w: int, filter_h: int, filter_w: int, padding: str) -> Padding:
    """TFLM ComputePaddingHeightWidth: out W, out H, pad H, pad W in that order, stopping at the first error."""
    vals = {"out_width": 0, "out_height": 0, "height": 0, "height_offset": 0, "width": 0, "width_offset": 0}

    def result() -> Padding:
        return Padding(**vals)

    out_w = compute_out_size_checked(padding, in_w, filter_w, stride_w, dilation_w)
    if out_w is None:
        return result()
    vals["out_width"] = out_w
    out_h = compute_out_size_checked(padding, in_h, filter_h, stride_h, dilation_h)
    if out_h is None:
        return result()
    vals["out_height"] = out_h
    ph = compute_padding_with_offset_checked(stride_h, dilation_h, in_h, filter_h, out_h)
    if ph is None:
        return result()
    vals["height"], vals["height_offset"] = ph
    pw = compute_padding_with_offset_checked(stride_w, dilation_w, in_w, filter_w, out_w)
    if pw is None:
        return result()
    vals["width"], vals["width_offset"] = pw
    return result()


def input_rows_for(y0: int, y1: int, stride: int, dilation: int, filter_size: int, pad: int,
                   in_size: int) -> tuple[int, int]:
    """Input rows ``[lo, hi)`` (clipped to ``[0, in_size)``) read by output rows ``[y0, y1)``; ``(0, 0)`` if none.

    Output row ``oy`` reads rows ``oy * stride - pad + k * dilation`` for taps ``k < filter_size``; rows outside the
    image are padding (skipped taps) and need no data.
    """
    if y1 <= y0 or filter_size <= 0:
        return 0, 0
    rows = [oy * stride - pad + k * dilation for oy in (y0, y1 - 1) for k in (0, filter_size - 1)]
    lo, hi = max(0, min(rows)), min(in_size, max(rows) + 1)
    return (lo, hi) if lo < hi else (0, 0)


def input_row_runs_for(y0: int, y1: int, stride: int, dilation: int, filter_size: int, pad: int,
                       in_size: int) -> list[tuple[int, int]]:
    """The input rows output rows ``[y0, y1)`` actually read, as sorted disjoint runs ``[lo, hi)``: per tap ``k``
    the rows ``oy * stride - pad + k * dilation``, clipped to the image. A dilated filter over a band lower than
    its dilation reads ``filter_size`` separate runs where :func:`input_rows_for` gives their whole hull."""
    if y1 <= y0 or filter_size <= 0:
        return []
    if stride > 1 and y1 - y0 > 1:      # a strided band's rows of one tap are not contiguous: take their hull
        lo, hi = input_rows_for(y0, y1, stride, dilation, filter_size, pad, in_size)
        return [(lo, hi)] if lo < hi else []
    runs = []
    for k in range(filter_size):
        lo = max(0, y0 * stride - pad + k * dilation)
        hi = min(in_size, (y1 - 1) * stride - pad + k * dilation + 1)
        if lo < hi:
            runs.append((lo, hi))
    merged: list[tuple[int, int]] = []
    for lo, hi in sorted(runs):
        if merged and lo <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], hi))
        else:
            merged.append((lo, hi))
    return merged


def tap_rows(data: Any, x: np.ndarray, runs: list[tuple[int, int]], oy: int) -> tuple[np.ndarray, Any]:
    """Output row ``oy`` of a convolution (``data``: ``stride_h``, ``dilation_h``, ``pad_h``, ``in_h``,
    ``filter_shape``) from ``x``, the input rows of ``runs`` one run after another: its taps' rows in tap order,
    and ``data`` for computing that one row from them as output row 0 (stride and dilation 1 down the rows, the
    taps above the image as padding). Every in-image tap reads the same value in the same order, and the taps
    outside the image stay skipped."""
    kh = data.filter_shape[1]
    rows = [oy * data.stride_h - data.pad_h + k * data.dilation_h for k in range(kh)]
    inside = [k for k, r in enumerate(rows) if 0 <= r < data.in_h]
    index, at = {}, 0
    for lo, hi in runs:
        for r in range(lo, hi):
            index[r] = at + r - lo
        at += hi - lo
    picked = x[:, [index[rows[k]] for k in inside]]
    first = inside[0] if inside else kh
    return picked, dataclasses.replace(data, stride_h=1, dilation_h=1, pad_h=first, in_h=len(inside))


def _gathered_windows(x, y0, out_h, out_w, filter_h, filter_w, stride_h, stride_w, dilation_h, dilation_w, pad_h,
                      pad_w, in_h, x_row0, offset, fill, dtype) -> np.ndarray:
    """:func:`windows` by fancy indexing: memory of the windows themselves, whatever the strides."""
    iy = ((y0 + np.arange(out_h, dtype=np.int64)) * stride_h - pad_h)[:, None] + \
        np.arange(filter_h, dtype=np.int64)[None, :] * dilation_h
    ix = (np.arange(out_w, dtype=np.int64) * stride_w - pad_w)[:, None] + \
        np.arange(filter_w, dtype=np.int64)[None, :] * dilation_w
    rows_in_view, width = x.shape[1], x.shape[2]
    oky = (iy >= 0) & (iy < in_h)
    if (oky & ((iy < x_row0) | (iy >= x_row0 + rows_in_view))).any():
        raise ValueError(f"input rows [{x_row0}, {x_row0 + rows_in_view}) do not cover output rows "
                         f"[{y0}, {y0 + out_h})")
    okx = (ix >= 0) & (ix < width)
    ry = np.clip(iy - x_row0, 0, max(rows_in_view - 1, 0))
    rx = np.clip(ix, 0, max(width - 1, 0))
    if x.size == 0:
        vals = np.zeros((x.shape[0], out_h, out_w, filter_h, filter_w, x.shape[3]), dtype)
    else:                       # [n, oy, ky, ox, kx, c] -> [n, oy, ox, ky, kx, c]
        vals = x[:, ry[:, :, None, None], rx[None, None, :, :]].astype(dtype).transpose(0, 1, 3, 2, 4, 5)
        if offset:
            vals += dtype.type(offset)
    inside = oky[:, None, :, None] & okx[None, :, None, :]
    return np.where(inside[None, :, :, :, :, None], vals, dtype.type(fill))


def windows(x: np.ndarray, *, y0: int, out_h: int, out_w: int, filter_h: int, filter_w: int, stride_h: int,
            stride_w: int, dilation_h: int, dilation_w: int, pad_h: int, pad_w: int, in_h: int | None = None,
            x_row0: int = 0, offset: float = 0, fill: float = 0, dtype: Any = None) -> np.ndarray:
    """All filter windows of output rows ``[y0, y0 + out_h)``: a read-only view ``(N, out_h, out_w, fh, fw, C)``.

    Element ``[n, oy, ox, ky, kx, c]`` is ``x[n, iy, ix, c] + offset`` with ``iy = (y0 + oy) * stride_h - pad_h +
    ky * dilation_h`` and ``ix = ox * stride_w - pad_w + kx * dilation_w``, or ``fill`` where ``(iy, ix)`` lies
    outside the ``in_h x W`` image (TFLM skips those taps; ``fill = 0`` after the offset makes them contribute
    nothing). ``x`` is an NHWC view holding input rows ``[x_row0, x_row0 + x.shape[1])`` — the whole tensor, or a
    row band with its halo (see :func:`input_rows_for`); ``in_h`` is the full image height (default: the view's).

    Algorithm: copy the needed part of ``x`` (plus ``offset``, in ``dtype``) into a ``fill``-initialised buffer that
    covers every tap position of the band, then ``as_strided`` it with strides ``(stride*row, dilation*row)`` per
    axis — no per-tap copies, and any output size (even larger than the padding formula's) works.
    """
    n, rows_in_view, _, channels = x.shape
    in_h = rows_in_view if in_h is None else in_h
    dtype = np.dtype(x.dtype if dtype is None else dtype)
    extent = tap_extent(n, out_h, out_w, filter_h, filter_w, channels, stride_h, stride_w, dilation_h, dilation_w)
    if extent is None:
        return _gathered_windows(x, y0, out_h, out_w, filter_h, filter_w, stride_h, stride_w, dilation_h,
                                 dilation_w, pad_h, pad_w, in_h, x_row0, offset, fill, dtype)
    buf = np.full((n, *extent, channels), fill, dtype)
    copy = window_copy(x, buf, y0, stride_h, pad_h, pad_w, in_h, x_row0)
    if copy is not None:
        dst, src = copy
        dst[...] = src
        if offset:
            dst += dtype.type(offset)
    return window_view(buf, out_h, out_w, filter_h, filter_w, stride_h, stride_w, dilation_h, dilation_w)


def tap_extent(n: int, out_h: int, out_w: int, filter_h: int, filter_w: int, channels: int, stride_h: int,
               stride_w: int, dilation_h: int, dilation_w: int) -> tuple[int, int] | None:
    """Rows and columns of the buffer :func:`windows` covers every tap position with, or None where it gathers the
    taps instead: strides or dilations far larger than the image (covering every position between the taps would
    take more than 4x the gathered taps), or negative ones (a hand-edited model; TFLM's int16 ConvParams wrap)."""
    rows = max(0, (out_h - 1) * stride_h + (filter_h - 1) * dilation_h + 1)
    cols = max(0, (out_w - 1) * stride_w + (filter_w - 1) * dilation_w + 1)
    gathered = n * out_h * out_w * filter_h * filter_w * channels
    if min(stride_h, stride_w, dilation_h, dilation_w) < 0 or n * rows * cols * channels > max(4 * gathered, 1 << 24):
        return None
    return rows, cols


def outside_image(x: np.ndarray, data: Any, y0: int, out_h: int, out_w: int, filter_h: int, filter_w: int,
                  x_row0: int = 0) -> np.ndarray | None:
    """The taps outside the image, ``[N, out_h, out_w, fh, fw, 1]`` bool (:func:`windows`' geometry, read from the
    convolution's ``data``: strides, dilations, padding, ``in_h``), or None when every tap is inside."""
    mask = windows(np.zeros((x.shape[0], x.shape[1], x.shape[2], 1), bool), y0=y0, out_h=out_h, out_w=out_w,
                   filter_h=filter_h, filter_w=filter_w, stride_h=data.stride_h, stride_w=data.stride_w,
                   dilation_h=data.dilation_h, dilation_w=data.dilation_w, pad_h=data.pad_h, pad_w=data.pad_w,
                   in_h=data.in_h, x_row0=x_row0, fill=True, dtype=bool)
    return mask if mask.any() else None


def window_copy(x: np.ndarray, buf: np.ndarray, y0: int, stride_h: int, pad_h: int, pad_w: int, in_h: int,
                x_row0: int = 0) -> tuple[np.ndarray, np.ndarray] | None:
    """The part of ``buf`` (the fill-initialised tap buffer of :func:`windows`) that holds image pixels and the view
    of ``x`` that goes there, or None when no tap reaches the image. A caller that keeps ``buf`` (a bound kernel)
    refreshes it with ``dst[...] = src`` at every invoke."""
    rows_in_view, width = x.shape[1], x.shape[2]
    rows, cols = buf.shape[1], buf.shape[2]
    base_r, base_c = y0 * stride_h - pad_h, -pad_w
    r_lo, r_hi = max(base_r, 0), min(base_r + rows, in_h)
    c_lo, c_hi = max(base_c, 0), min(base_c + cols, width)
    if not (r_lo < r_hi and c_lo < c_hi):
        return None
    if r_lo < x_row0 or r_hi > x_row0 + rows_in_view:
        raise ValueError(f"input rows [{x_row0}, {x_row0 + rows_in_view}) do not cover rows [{r_lo}, {r_hi}) "
                         f"needed by output rows [{y0}, ...)")
    return (buf[:, r_lo - base_r:r_hi - base_r, c_lo - base_c:c_hi - base_c],
            x[:, r_lo - x_row0:r_hi - x_row0, c_lo:c_hi])


def fixed_windows(x: np.ndarray, data: Any, out: np.ndarray, filter_h: int,
                  filter_w: int) -> tuple[np.ndarray | None, np.ndarray | None, np.ndarray, np.ndarray] | None:
    """For a bound float convolution on fixed views (whole op, ``data``'s geometry): ``(dst, src, win, base)`` -- the
    part of a kept zero-filled float32 tap buffer that holds the image and the view of ``x`` that goes there (refresh
    with ``dst[...] = src``), every window of the buffer (:func:`window_view`), and the array the windows view (the
    buffer, or ``x``: for :func:`bind_gather`); ``dst`` and ``src`` None when there is nothing to refresh: no tap
    reaches the image, or every tap is inside it (then ``win`` views ``x`` itself). None for the unusual geometries
    (:func:`tap_extent`; strides or dilations below 1) and empty or non-contiguous outputs, which keep the unbound
    path."""
    n, oh, ow, _ = out.shape
    c_in = x.shape[3]
    steps = (data.stride_h, data.stride_w, data.dilation_h, data.dilation_w)
    extent = tap_extent(n, oh, ow, filter_h, filter_w, c_in, *steps)
    if not n * oh * ow or extent is None or min(steps) < 1 or not out.flags.c_contiguous:
        return None
    buf = np.zeros((n, *extent, c_in), np.float32)
    copy = window_copy(x, buf, 0, data.stride_h, data.pad_h, data.pad_w, data.in_h)
    if copy is not None and copy[0].shape == buf.shape and x.dtype == np.float32:
        # the image fills the whole buffer (no tap outside it): the windows of x itself, nothing to copy (a 1 x 1
        # or unpadded convolution; 0.16-0.2 us a call saved on a small one)
        return None, None, window_view(copy[1], oh, ow, filter_h, filter_w, *steps), x
    dst, src = copy if copy is not None else (None, None)
    return dst, src, window_view(buf, oh, ow, filter_h, filter_w, *steps), buf


#: A bound convolution gathers its windows by one ``take`` of positions found once up to this many values; a copy
#: of the strided 6-d window view costs more below it (675 values 0.63 -> 0.38 us, 2304 1.08 -> 0.81), less above
#: (18432 values 5.1 against 5.7 us).
GATHER_TAKE_BELOW = 4096


def bind_gather(target: np.ndarray, windows: np.ndarray, base: np.ndarray) -> Callable[[], None]:
    """``copyto(target, windows)`` as a call without arguments, where ``windows`` is a strided view of the
    C-contiguous ``base`` (:func:`fixed_windows`): up to :data:`GATHER_TAKE_BELOW` values into a C-contiguous
    ``target``, one ``take`` of ``base``'s flat positions of every element (:func:`flat_positions`; ``wrap`` mode:
    every position is valid, no bounds check); else the copy itself."""
    fits = target.size <= GATHER_TAKE_BELOW and target.flags.c_contiguous and target.shape == windows.shape \
        and target.dtype == windows.dtype == base.dtype
    positions = flat_positions(windows, base) if fits else None
    if positions is None:
        return functools.partial(copyto, target, windows)
    return functools.partial(base.reshape(-1).take, positions.reshape(-1), None, target.reshape(-1), "wrap")


def flat_positions(view: np.ndarray, base: np.ndarray) -> np.ndarray | None:
    """The position in ``base``'s flat data (``base`` C-contiguous) of every element of ``view``, a strided view of
    it of the same dtype, as an intp array of ``view``'s shape, computed from the view's address and strides; None
    where an element lies outside ``base`` or between its items (or ``view`` is empty)."""
    if not base.flags.c_contiguous or view.dtype != base.dtype:
        return None
    item = base.itemsize
    offsets = np.zeros((), np.int64) + (view.__array_interface__["data"][0] - base.__array_interface__["data"][0])
    for axis, (n, stride) in enumerate(zip(view.shape, view.strides)):
        offsets = offsets + (np.arange(n, dtype=np.int64) * stride).reshape([-1 if a == axis else 1
                                                                            for a in range(view.ndim)])
    offsets = np.broadcast_to(offsets, view.shape)
    if not offsets.size or offsets.min() < 0 or offsets.max() >= base.nbytes or (offsets % item).any():
        return None
    return (offsets // item).astype(np.intp)


def window_view(buf: np.ndarray, out_h: int, out_w: int, filter_h: int, filter_w: int, stride_h: int, stride_w: int,
                dilation_h: int, dilation_w: int) -> np.ndarray:
    """Every filter window of the tap buffer ``buf`` as a read-only view ``(N, out_h, out_w, fh, fw, C)``."""
    s = buf.strides
    return np.lib.stride_tricks.as_strided(
        buf, (buf.shape[0], out_h, out_w, filter_h, filter_w, buf.shape[3]),
        (s[0], stride_h * s[1], stride_w * s[2], dilation_h * s[1], dilation_w * s[2], s[3]), writeable=False)
