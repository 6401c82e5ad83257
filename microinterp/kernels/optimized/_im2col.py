"""The im2col blocks of the optimized CONV_2D: a layer's windows gathered into a host block per band, laid out for one GEMM
(positions x taps), filled by strided copies or, for short contiguous runs, by gathering positions."""

from __future__ import annotations

import functools
import math

import numpy as np

from .._qutil import copyto
from ..conv import ConvData
from ..padding import flat_positions
from ._buffers import claimed_buffer, still_claimed


class Im2col:
    """The im2col block of one convolution geometry, float ``[rows, K + 1]`` with a constant 1.0 last column, and
    :meth:`fill`, which copies raw input values into it (``zp_in`` on taps outside the image: a zp-filled image
    with the padding margins is kept, its margins written once). 1x1 convolutions without padding copy the (strided)
    input straight into the block. ``data`` gives strides, dilations and padding; ``x_shape`` / ``y_shape`` the
    geometry (a row band is the same convolution on the band's rows with ``pad_h`` moved: see
    :func:`conv_band`).

    In memory the block and image are the layer's own (allocated here). ``shared=True`` (out of core) takes them
    from the host work buffers every band kernel shares (:func:`._buffers.claimed_buffer`): the 1.0 column and the
    margins are rewritten only when another geometry used the blocks since, so the heap holds one block, not one per
    layer and band geometry."""

    __slots__ = ("cols", "cols_source", "dtype", "geometry", "image", "image_shape", "interior", "k", "rows",
                 "shared", "source", "target", "zp_in")

    def __init__(self, data: ConvData, x_shape, y_shape, kernel_hw: tuple[int, int], dtype,
                 shared: bool = False) -> None:
        n, in_h, in_w, c_in = x_shape
        kh, kw = kernel_hw
        _, oh, ow, _ = y_shape
        self.zp_in, self.dtype, self.shared = -data.input_offset, np.dtype(dtype), shared
        self.k = kh * kw * c_in
        self.rows = n * oh * ow
        sh, sw, dh, dw, ph, pw = (data.stride_h, data.stride_w, data.dilation_h, data.dilation_w, data.pad_h,
                                  data.pad_w)
        self.geometry = (n, oh, ow, kh, kw, c_in, sh, sw, dh, dw)
        if kh == kw == 1 and ph == pw == 0 and (oh - 1) * sh < in_h and (ow - 1) * sw < in_w:
            # 1x1 without padding: every tap is inside the image, the strided input is the column block
            self.image_shape = None
            self.source = (slice(None), slice(0, (oh - 1) * sh + 1, sh), slice(0, (ow - 1) * sw + 1, sw))
        else:
            # zp-filled image covering every tap position: input rows [-ph, -ph + h), columns [-pw, -pw + wd)
            h, wd = (oh - 1) * sh + (kh - 1) * dh + 1, (ow - 1) * sw + (kw - 1) * dw + 1
            self.image_shape = (n, h, wd, c_in)
            r0, r1 = max(0, -ph), min(in_h, h - ph)
            c0, c1 = max(0, -pw), min(in_w, wd - pw)
            self.source = (slice(None), slice(r0, max(r0, r1)), slice(c0, max(c0, c1)))
            self.interior = (slice(None), slice(r0 + ph, max(r0, r1) + ph), slice(c0 + pw, max(c0, c1) + pw))
        self.cols = self.image = None
        if not shared:
            self.own()

    def own(self) -> None:
        """Allocate this geometry's own block and image (no longer shared)."""
        self.shared = False
        image = None if self.image_shape is None else np.empty(self.image_shape, self.dtype)
        self._bind(np.empty((self.rows, self.k + 1), self.dtype), image)

    @property
    def nbytes(self) -> int:
        """Bytes of the block and the image."""
        image = math.prod(self.image_shape) if self.image_shape is not None else 0
        return (self.rows * (self.k + 1) + image) * self.dtype.itemsize

    def _bind(self, cols: np.ndarray, image: np.ndarray | None) -> None:
        """Point the views at ``cols`` / ``image`` and write their constant parts (1.0 column, zp margins)."""
        n, oh, ow, kh, kw, c_in, sh, sw, dh, dw = self.geometry
        self.cols, self.image = cols, image
        cols[:, self.k] = 1.0
        windows = _view(cols[:, :self.k], (n, oh, ow, kh, kw, c_in))
        if image is None:
            self.target = windows[:, :, :, 0, 0, :]
            return
        image.fill(self.zp_in)
        self.target = windows
        s = image.strides
        self.cols_source = np.lib.stride_tricks.as_strided(
            image, (n, oh, ow, kh, kw, c_in), (s[0], sh * s[1], sw * s[2], dh * s[1], dw * s[2], s[3]),
            writeable=False)

    def _claim(self) -> None:
        cols, kept = claimed_buffer("band_im2col", (self.rows, self.k + 1), self.dtype, self)
        image = None
        if self.image_shape is not None:
            image, kept_image = claimed_buffer("band_im2col_image", self.image_shape, self.dtype, self)
            kept = kept and kept_image
        if not kept or cols is not self.cols:
            self._bind(cols, image)

    def filler(self, x: np.ndarray):
        """:meth:`fill` of the fixed input view ``x`` into this geometry's own block, as a call without arguments.
        Where a window's contiguous runs are short (:data:`GATHER_RUN`: a first layer over one or two channels) and
        the block small, the image gets one more element, ``1.0``, after it, and one ``take`` of kept positions
        writes the whole block, the column of ones included (a strided copy of 3-element runs cost twice that)."""
        source, target = x[self.source], self.target
        if self.image is None:
            return functools.partial(copyto, target, source)
        _, _, _, _, kw, c_in, _, _, _, dw = self.geometry
        run = kw * c_in if dw == 1 else c_in
        if not self.shared and run < GATHER_RUN and self.cols.size <= GATHER_ELEMENTS:
            extended = np.empty(self.image.size + 1, self.dtype)
            self._bind(self.cols, extended[:-1].reshape(self.image_shape))
            extended[-1] = 1.0
            positions = np.empty(self.cols.shape, np.intp)
            positions[:, :self.k] = flat_positions(self.cols_source, self.image).reshape(self.rows, self.k)
            positions[:, self.k] = self.image.size
            interior, cols, take = self.image[self.interior], self.cols, extended.take

            def gather() -> None:
                copyto(interior, source)
                take(positions, None, cols, "wrap")     # every position is valid: "wrap" checks none (0.3 us less)
            return gather
        interior, windows = self.image[self.interior], self.cols_source

        def fill() -> None:
            copyto(interior, source)
            copyto(target, windows)
        return fill

    def release(self) -> None:
        """Another geometry claimed the shared blocks: drop the views of them."""
        self.cols = self.image = self.target = self.cols_source = None

    def holds(self) -> bool:
        """Out of core: True while the shared block still holds this geometry's last fill (no other claim since)."""
        return not self.shared or (self.cols is not None and still_claimed("band_im2col", self, self.cols)
                                   and (self.image is None or still_claimed("band_im2col_image", self, self.image)))

    def fill(self, x: np.ndarray) -> np.ndarray:
        if self.shared:
            self._claim()
        if self.image is None:
            copyto(self.target, x[self.source])
        else:
            copyto(self.image[self.interior], x[self.source])
            copyto(self.target, self.cols_source)
        return self.cols


#: :meth:`Im2col.filler` gathers by positions where a window's contiguous runs are shorter than this many elements,
#: for blocks of at most :data:`GATHER_ELEMENTS` elements (the positions take 8 bytes each).
GATHER_RUN = 8
GATHER_ELEMENTS = 1 << 15


def _view(a: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """``a`` reshaped without a copy (raises if that is impossible), so writes reach ``a``."""
    v = a.view()
    v.shape = shape
    return v
