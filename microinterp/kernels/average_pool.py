"""AVERAGE_POOL_2D: TFLM ``micro/kernels/pooling.cc`` (AverageEval), ``reference/integer_ops/pooling.h``,
``reference/pooling.h``; Prepare, padding and banding in ``pooling_common.py``.

* int8/int16: ``acc`` = int32 sum of the *raw* values over the valid taps (the zero point is NOT subtracted; input
  and output share scale and zero point); ``n`` = number of valid taps;
  ``avg = acc > 0 ? (acc + n/2) / n : (acc - n/2) / n`` with C truncation (= round half away from zero);
  ``clamp(avg, act_min, act_max)``.
* float32: ``total = 0f; total += x`` over the valid taps in (ky outer, kx inner) order, in float32;
  ``clamp(total / float(n))`` with the float activation range.

Pitfall: if a window had no valid tap (only possible when the model's output is larger than the padding formula
gives) TFLM's AveragePool returns early and leaves the rest of the output unwritten; prepare refuses such models.
Integer sums are associative, so they are computed separably (x taps, then y taps); the float sum keeps TFLM's order.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
from numpy._core import umath as np_umath

from ._float_order import REDUCE_ROWS_IN_ORDER
from ._qutil import copyto
from .bands import Tiler
from .base import is_batch1_nhwc
from .binary_common import bind_clamp_into, clamp_float_
from .contract import PURE, Kernel
from .pooling_common import (
    PoolData,
    PoolTiler,
    band_geometry,
    filter_area,
    fixed_band,
    input_rows,
    padded_band,
    prepare_pooling,
    run_bands,
    tap_block,
)

__all__ = ["KERNEL", "AveragePool2D", "input_rows", "pool_rows"]


class AveragePoolReduce(Tiler):
    """Out of core, an AVERAGE_POOL_2D with one output row (a global pool over the rows), in mode ``reduce``: bands of
    input rows continue every output's running total -- the window's rows in ascending order, each row's taps left
    to right, as TFLM's loop visits them (float32: one add per tap; integers: exact sums) -- and the last band
    writes the averages. A one-row output in row bands would need every input row of its window at once."""

    mode = "reduce"
    row_inputs: ClassVar[dict[int, int]] = {0: 1}

    def __init__(self) -> None:
        self.total: np.ndarray | None = None

    def start(self, data: PoolData) -> None:
        self.total = None

    def compute(self, kernel, op, data: PoolData, band) -> None:
        x, row0 = band.inputs[0], band.row0[0]
        float_ = data.type_name == "FLOAT32"
        if self.total is None:
            self.total = np.zeros((x.shape[0], data.out_w, x.shape[3]), np.float32 if float_ else np.int64)
        lo, hi = max(row0, -data.pad_h, 0), min(row0 + x.shape[1], data.filter_h - data.pad_h, data.in_h)
        if lo >= hi:
            return
        (_, cols), (_, inside_c), (_, src_c) = band_geometry(data, 0, 1)
        rows = np.zeros((x.shape[0], hi - lo, cols, x.shape[3]), np.float32 if float_ else np.int64)
        rows[:, :, inside_c] = x[:, lo - row0:hi - row0, src_c]
        xs, sw = (data.out_w - 1) * data.stride_w + 1, data.stride_w
        for r in range(hi - lo):        # rows outer, the row's taps inner: TFLM's order
            for kx in range(data.filter_w):
                self.total += rows[:, r, kx:kx + xs:sw]

    def finish(self, data: PoolData, out: np.ndarray) -> None:
        count = data.count[0, :, None]
        total = self.total
        if data.type_name == "FLOAT32":
            total = total / count.astype(np.float32)
            out[:, 0] = clamp_float_(total, data.act_min, data.act_max)
            return
        total = total.astype(np.int32).astype(np.int64)     # TFLM's int32 accumulator (a sum of wraps wraps)
        avg = np.sign(total) * ((np.abs(total) + count // 2) // count)
        out[:, 0] = np.clip(avg, data.act_min, data.act_max).astype(out.dtype)


class AveragePoolBands(PoolTiler):
    """Row bands of :func:`pool_rows`; one output row: :class:`AveragePoolReduce`."""

    def for_op(self, op: Any, data: Any, inputs: Any, output: Any) -> Tiler | None:
        if not is_batch1_nhwc(inputs[0], output):
            return None
        return AveragePoolReduce() if data.out_h == 1 and data.in_h > 1 else self


class AveragePool2D(Kernel):
    ops = ("AVERAGE_POOL_2D",)
    traits = PURE
    geometry = "pool"
    op_class = "pool"
    cost_family = "pool"
    opdata = 32
    #: out of core: row bands of its own pool_rows; a single output row: running totals over bands of input rows
    bands = AveragePoolBands(lambda *a: pool_rows(*a))

    def macs(self, op, tensors, elements: int) -> int:
        """Output elements x filter area (adds)."""
        return elements * filter_area(op)

    def prepare(self, ctx, op) -> PoolData:
        data = prepare_pooling(ctx, op)
        if data.count.size and not data.count.all():
            raise ctx.fail(op, "an output window has no input taps (TFLM's AveragePool stops there and leaves the "
                               "rest of the output unwritten)")
        return data

    def bind(self, ctx, op, data: PoolData):
        """float32 on fixed views, when one band covers the output: the zero-filled padded band kept (its margins
        written once, :func:`.pooling_common.fixed_band`), the image copied in unless no tap leaves it, every tap
        gathered into one block (:func:`.pooling_common.tap_block`) and its rows summed in order from ``0.f`` -- or,
        for a block too large or a single output, one float32 add per tap into a kept total (what :func:`pool_rows`
        computes) --, the divide and the clamp."""
        x, out = ctx.input(op, 0), ctx.output(op, 0)
        if data.type_name != "FLOAT32" or not out.flags.c_contiguous or not out.size:
            return None
        fixed = fixed_band(data, x, 0.0)
        if fixed is None:
            return None
        band, dst, src = fixed
        sh, sw = data.stride_h, data.stride_w
        ys, xs = (data.out_h - 1) * sh + 1, (data.out_w - 1) * sw + 1
        taps = [band[:, ky:ky + ys:sh, kx:kx + xs:sw] for ky in range(data.filter_h) for kx in range(data.filter_w)]
        total = np.empty(out.shape, np.float32)
        count = data.count[:, :, None].astype(np.float32)
        if total.size <= 1 << 16:   # the divisors laid out over the channels: [oh, ow, 1] made NumPy loop per pixel
            count = np.ascontiguousarray(np.broadcast_to(count, total.shape))
        zero, clamp = np.array(0.0, np.float32), bind_clamp_into(total, data.act_min, data.act_max, out)
        block = tap_block(data, band) if REDUCE_ROWS_IN_ORDER else None
        if block is not None:
            buf, view = block
            rows, flat, add_rows = buf.reshape(len(taps), -1), total.reshape(-1), np_umath.add.reduce

            def gathered() -> None:     # under the runtime's quiet errstate
                if dst is not None:
                    dst[...] = src
                copyto(buf, view)
                # 0.f + tap (0, 0) + tap (0, 1) + ...: NumPy adds a C-contiguous block's rows one after the other
                # (the accumulator the first operand, as TFLM's total), _float_dot.REDUCE_ROWS_IN_ORDER
                add_rows(rows, axis=0, out=flat, initial=zero)
                np.divide(total, count, out=total)
                clamp()
            return gathered

        def call() -> None:       # under the runtime's quiet errstate
            if dst is not None:
                dst[...] = src
            np.add(taps[0], zero, out=total)    # 0.f + the first tap (a -0.0 becomes +0.0, a NaN is quieted)
            for tap in taps[1:]:  # y taps outer, x taps inner: one float32 add per tap, as TFLM
                np.add(total, tap, out=total)
            np.divide(total, count, out=total)
            clamp()
        return call

    def invoke(self, ctx, op, data: PoolData) -> None:
        run_bands(data, ctx.input(op, 0), ctx.output(op, 0), pool_rows)


def pool_rows(data: PoolData, x: np.ndarray, x_row0: int, y0: int, y1: int) -> np.ndarray:
    """Output rows ``[y0, y1)`` (``[N, y1 - y0, out_w, C]``) from ``x`` = input rows starting at ``x_row0``."""
    sh, sw, fh, fw = data.stride_h, data.stride_w, data.filter_h, data.filter_w
    ys, xs = (y1 - y0 - 1) * sh + 1, (data.out_w - 1) * sw + 1
    count = data.count[y0:y1, :, None]
    if data.type_name == "FLOAT32":
        band = padded_band(data, x, x_row0, y0, y1, 0.0, np.float32)
        total = np.zeros((x.shape[0], y1 - y0, data.out_w, x.shape[3]), dtype=np.float32)
        for ky in range(fh):  # y taps outer, x taps inner: one float32 add per tap, as TFLM
            for kx in range(fw):
                total += band[:, ky:ky + ys:sh, kx:kx + xs:sw]
        np.divide(total, count.astype(np.float32), out=total)
        return clamp_float_(total, data.act_min, data.act_max)
    band = padded_band(data, x, x_row0, y0, y1, 0, np.int32)
    across = band[:, :, 0:xs:sw].copy()
    for kx in range(1, fw):
        across += band[:, :, kx:kx + xs:sw]
    acc = across[:, 0:ys:sh].copy()
    for ky in range(1, fh):
        acc += across[:, ky:ky + ys:sh]
    acc = acc.astype(np.int64)
    avg = np.sign(acc) * ((np.abs(acc) + count // 2) // count)   # (acc +- n/2) / n with C truncation
    return np.clip(avg, data.act_min, data.act_max).astype(x.dtype)


KERNEL = AveragePool2D()
