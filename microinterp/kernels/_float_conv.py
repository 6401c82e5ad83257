"""CONV_2D in float32 bound to its views: im2col windows gathered once per call, TFLM's sequential float sums
(:mod:`._float_dot`) over them, bias and clamp -- the in-memory fast path of the reference kernel (``bind``)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from ._float_dot import BoundDot, bias_as_tap, bind_finish
from .padding import (
    bind_gather,
    fixed_windows,
    outside_image,
)

INT32_TYPE = 2          # TensorType.INT32, as stored in Conv2DOptions.quantized_bias_type


class BoundFloatConv:
    """A float CONV_2D on fixed arena views (the interpreter's ``bind``): what :func:`conv_rows` computes, with
    everything that does not depend on the input values done once -- the tap buffer and its window view, the
    copy of the image into it, the taps-first im2col buffer, the taps outside the image -- so an invoke is a handful
    of NumPy calls: refresh the image, write the im2col, the sequential sums, the bias, the clamp into the output."""

    def __init__(self, data: Any, dst: np.ndarray, src: np.ndarray | None, win: np.ndarray, base: np.ndarray,
                 w: np.ndarray, bias: np.ndarray | None, skip_t: np.ndarray | None, out: np.ndarray):
        self.dst, self.src, self.base = dst, src, base
        self.win_t = win.transpose(3, 4, 5, 0, 1, 2)
        taps, pixels = math.prod(win.shape[3:]), math.prod(win.shape[:3])
        tap = bias_as_tap(w, bias) if skip_t is None and data.float_filter_t is not None else None
        w_t = data.float_filter_t
        if tap is not None:         # the bias as a last tap over a kept row of ones
            (w, w_t), bias = tap, None
        # the taps-first im2col buffer [K, N] (and the row of ones after it)
        cols_t = np.ones((taps + (tap is not None), pixels), np.float32)
        self.cols_view = cols_t[:taps].reshape(*win.shape[3:], *win.shape[:3])
        dot = BoundDot(cols_t, w, skip_t, w_t, out=out)
        self.finish = bind_finish(dot, bias, "total", data.act_min, data.act_max, out)

    @classmethod
    def build(cls, data: Any, x: np.ndarray, w: np.ndarray, bias: np.ndarray | None,
              out: np.ndarray) -> BoundFloatConv | None:
        n, oh, ow, c_out = out.shape
        _, kh, kw, _ = w.shape
        fixed = fixed_windows(x, data, out, kh, kw)
        if fixed is None:
            return None         # the unusual geometries (windows() gathers their taps): conv_rows as it is
        dst, src, win, base = fixed
        skip_t = _outside_taps(data, x, 0, out.shape, w.shape, 0)
        if skip_t is not None and data.float_filter_t is not None and np.isfinite(data.float_filter_t).all():
            skip_t = None   # the taps outside the image read the buffer's zeros: +-0 products, which add nothing
        return cls(data, dst, src, win, base, w.reshape(c_out, -1), bias, skip_t, out.reshape(n * oh * ow, c_out))

    def bound(self) -> Callable[[], None]:
        """The invoke as a closure over its parts (an instance's ``__call__`` costs 0.06 us more a call: the method
        lookup and the attribute reads); the finish runs under the runtime's quiet errstate."""
        return bound_windows_call(self.dst, self.src, bind_gather(self.cols_view, self.win_t, self.base), self.finish)


def bound_windows_call(dst: np.ndarray | None, src: np.ndarray | None, gather: Callable[[], None],
                       finish: Callable[[], None]) -> Callable[[], None]:
    """A bound float convolution's call: the image into the tap buffer (``dst[...] = src``, when there is one to
    refresh), the windows into the taps-first buffer (``gather``, :func:`.padding.bind_gather`), then ``finish``
    (the sums, bias and clamp)."""
    if dst is None:
        def call() -> None:
            gather()
            finish()
        return call

    def refresh_call() -> None:
        dst[...] = src
        gather()
        finish()
    return refresh_call


def _float_filter_t(ctx, w) -> np.ndarray | None:
    """The float filter as :func:`._float_dot.sequential_dot_t` reads it, ``[K, C_out]``, transposed once (a
    transposing copy at every invoke cost more than the products of a small layer); not out of core, where weights
    stay on the card."""
    if w.data is None or not getattr(ctx, "weights_resident", True):
        return None
    return np.ascontiguousarray(np.asarray(w.data, np.float32).reshape(w.shape[0], -1).T)


def _outside_taps(data: Any, x: np.ndarray, y0: int, out_shape: tuple[int, ...], w_shape: tuple[int, ...],
                  x_row0: int) -> np.ndarray | None:
    """float32: the taps outside the image, ``[K, pixels]`` (im2col order, taps first), when TFLM's skipping them differs from
    adding a zero input's product -- only with an infinity or a NaN in the filter (``0 * inf`` is NaN; ``0 * w`` is a
    zero, which leaves every total unchanged since a total starting at ``0.f`` is never ``-0.f``). None otherwise."""
    if data.filter_finite:
        return None
    n, oh, ow, _ = out_shape
    _, kh, kw, c_grp = w_shape
    mask = outside_image(x, data, y0, oh, ow, kh, kw, x_row0)
    if mask is None:
        return None
    return np.broadcast_to(mask, (*mask.shape[:5], c_grp)).transpose(3, 4, 5, 0, 1, 2).reshape(kh * kw * c_grp,
                                                                                             n * oh * ow)
