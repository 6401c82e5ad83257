"""MAX_POOL_2D: TFLM ``micro/kernels/pooling.cc`` (MaxEval), ``reference/integer_ops/pooling.h``,
``reference/pooling.h``; Prepare, padding and banding in ``pooling_common.py``.

Per output: ``m = lowest(type)``; ``m = std::max(m, x)`` over the valid taps of the clipped window; then
``clamp(m, act_min, act_max)`` (quantized range from the fused activation; input and output share scale and zero
point, no requantization). ``std::max(m, x)`` is ``(m < x) ? x : m``: a NaN input never wins and among equal
values (+0.0/-0.0) the first one in (ky, kx) order stays, as here (repaired after the fast pass, only when the
input holds a -0.0).
Maxima are associative, so the taps are applied separably (x taps, then y taps), starting from the lowest value.
"""

from __future__ import annotations

import numpy as np
from numpy._core import umath as np_umath

from ..quant import QMIN
from ._qutil import bind_minus_zero_test, copyto, count_nonzero
from .binary_common import FLT_LOWEST, bind_clamp_into, clamp_float_
from .contract import PURE, Kernel
from .pooling_common import (
    PoolData,
    PoolTiler,
    filter_area,
    fixed_band,
    input_rows,
    padded_band,
    prepare_pooling,
    run_bands,
    tap_block,
)

__all__ = ["KERNEL", "MaxPool2D", "input_rows", "pool_rows"]


class MaxPool2D(Kernel):
    ops = ("MAX_POOL_2D",)
    traits = PURE
    geometry = "pool"
    op_class = "pool"
    cost_family = "pool"
    opdata = 32
    #: out of core: row bands of its own pool_rows
    bands = PoolTiler(lambda *a: pool_rows(*a))

    def macs(self, op, tensors, elements: int) -> int:
        """Output elements x filter area (compares)."""
        return elements * filter_area(op)

    def prepare(self, ctx, op) -> PoolData:
        return prepare_pooling(ctx, op)

    def bind(self, ctx, op, data: PoolData):
        """float32 on fixed views, when one band covers the output: the padded band kept (its margins written once
        with the lowest value, :func:`.pooling_common.fixed_band`), the image copied in unless no tap leaves it, every
        tap gathered into one block (:func:`.pooling_common.tap_block`) and one ``fmax`` reduction from the lowest
        value (maxima in any order: only a zero's sign depends on it) -- or, for a block too large or a single
        output, the x taps then the y taps folded into kept running maxima (what :func:`pool_rows` computes) --, the
        zero signs repaired when a zero maximum meets a -0.0 input, the clamp into the output."""
        x, out = ctx.input(op, 0), ctx.output(op, 0)
        if data.type_name != "FLOAT32" or not out.flags.c_contiguous or not out.size:
            return None
        fixed = fixed_band(data, x, FLT_LOWEST)
        if fixed is None:
            return None
        band, dst, src = fixed
        has_minus_zero = bind_minus_zero_test(src)
        sh, sw = data.stride_h, data.stride_w
        ys, xs = (data.out_h - 1) * sh + 1, (data.out_w - 1) * sw + 1
        best = np.empty(out.shape, np.float32)
        clamp = bind_clamp_into(best, data.act_min, data.act_max, out)
        block = tap_block(data, band)
        if block is not None:
            buf, view = block
            rows, flat, size = buf.reshape(data.filter_h * data.filter_w, -1), best.reshape(-1), best.size
            fmax_rows = np_umath.fmax.reduce

            def gathered() -> None:
                if dst is not None:
                    dst[...] = src
                copyto(buf, view)
                fmax_rows(rows, axis=0, out=flat, initial=FLT_LOWEST)   # std::max(lowest, v) over the taps
                if count_nonzero(best) < size and has_minus_zero():       # a zero maximum, a -0.0 tap: exact signs
                    _fix_zero_signs(best, band, data, ys, xs)
                clamp()
            return gathered
        across = np.empty(band[:, :, 0:xs:sw].shape, np.float32)
        x_taps = [band[:, :, kx:kx + xs:sw] for kx in range(data.filter_w)]
        y_taps = [across[:, ky:ky + ys:sh] for ky in range(data.filter_h)]
        lowest = np.array(FLT_LOWEST, np.float32)

        def call() -> None:
            if dst is not None:
                dst[...] = src
            np.fmax(x_taps[0], lowest, out=across)      # std::max(lowest, v): a NaN or -inf tap gives lowest
            for tap in x_taps[1:]:
                np.fmax(tap, across, out=across)
            np.fmax(y_taps[0], lowest, out=best)
            for tap in y_taps[1:]:
                np.fmax(tap, best, out=best)
            if has_minus_zero():      # a -0.0 tap: make zero signs exact
                _fix_zero_signs(best, band, data, ys, xs)
            clamp()
        return call

    def invoke(self, ctx, op, data: PoolData) -> None:
        run_bands(data, ctx.input(op, 0), ctx.output(op, 0), pool_rows)


_MINUS_ZERO_BITS = np.int32(-(1 << 31))


def _running_max(acc: np.ndarray, values: np.ndarray) -> None:
    """``acc = max(acc, values)`` in place; for floats ``np.fmax(values, acc)``: a NaN tap loses, as in
    ``std::max(acc, v) = (acc < v) ? v : acc`` (``acc`` starts at the lowest value and is never NaN). Only the sign of a
    zero result may differ from C++ (fmax's choice between +0.0 and -0.0 varies); :func:`_fix_zero_signs` repairs it.
    """
    if acc.dtype.kind == "f":
        np.fmax(values, acc, out=acc)
    else:
        np.maximum(acc, values, out=acc)


def _fix_zero_signs(best: np.ndarray, band: np.ndarray, data: PoolData, ys: int, xs: int) -> None:
    """Where the maximum is zero, C++ keeps the *first* zero tap in (ky, kx) order (later ties do not replace it)."""
    zero = best == 0
    if not zero.any():
        return
    decided = np.zeros(best.shape, dtype=bool)
    negative = np.zeros(best.shape, dtype=bool)
    for ky in range(data.filter_h):
        for kx in range(data.filter_w):
            tap = band[:, ky:ky + ys:data.stride_h, kx:kx + xs:data.stride_w]
            first = (tap == 0) & ~decided
            negative |= first & np.signbit(tap)
            decided |= first
    best[zero] = np.where(negative[zero], np.float32(-0.0), np.float32(0.0))


def pool_rows(data: PoolData, x: np.ndarray, x_row0: int, y0: int, y1: int) -> np.ndarray:
    """Output rows ``[y0, y1)`` (``[N, y1 - y0, out_w, C]``) from ``x`` = input rows starting at ``x_row0``."""
    is_float = data.type_name == "FLOAT32"
    lowest = FLT_LOWEST if is_float else QMIN[data.type_name]
    band = padded_band(data, x, x_row0, y0, y1, lowest, x.dtype)
    sh, sw = data.stride_h, data.stride_w
    ys, xs = (y1 - y0 - 1) * sh + 1, (data.out_w - 1) * sw + 1
    across = np.full(band[:, :, 0:xs:sw].shape, lowest, dtype=x.dtype)
    for kx in range(data.filter_w):
        _running_max(across, band[:, :, kx:kx + xs:sw])
    best = np.full(across[:, 0:ys:sh].shape, lowest, dtype=x.dtype)
    for ky in range(data.filter_h):
        _running_max(best, across[:, ky:ky + ys:sh])
    if is_float:
        if (band.view(np.int32) == _MINUS_ZERO_BITS).any():  # a -0.0 tap: make zero signs exact
            _fix_zero_signs(best, band, data, ys, xs)
        return clamp_float_(best, data.act_min, data.act_max)
    return np.clip(best, data.act_min, data.act_max)


KERNEL = MaxPool2D()
