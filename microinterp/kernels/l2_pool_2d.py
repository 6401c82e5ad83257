"""L2_POOL_2D: ``sqrt(mean(x^2))`` over each pooling window, float32 only (``micro/kernels/l2_pool_2d.cc``,
``reference/pooling.h`` L2Pool).

Prepare (TFLM): 4-D input and output of one type (FLOAT32 -- checked there), padding from
``ComputePaddingHeightWidth``; the output dims are overwritten with the computed ones (here the model's output shape
must equal them). Eval per output: ``sum = 0f; sum += v * v`` over the window's valid taps (y outer, x inner, in
float32), ``sqrt(sum / count)`` (the C library's ``sqrtf``), clamped to the fused activation's float range. The
window geometry and the bands are :mod:`.pooling_common`'s (a tap outside the image is skipped, here added as
0 * 0, which leaves a float32 sum of squares unchanged).
"""

from __future__ import annotations

import numpy as np

from .. import libm
from .binary_common import clamp_float_
from .contract import PURE, Kernel
from .padding import compute_out_size
from .pooling_common import PoolData, PoolTiler, filter_area, padded_band, prepare_pooling, run_bands


class L2Pool2D(Kernel):
    ops = ("L2_POOL_2D",)
    traits = PURE
    op_class = "pool"
    #: out of core: row bands of its own pool_rows
    bands = PoolTiler(lambda *a: pool_rows(*a))

    def macs(self, op, tensors, elements: int) -> int:
        """Output elements x filter area."""
        return elements * filter_area(op)

    def prepare(self, ctx, op) -> PoolData:
        x, y = ctx.require_input(op, 0), ctx.output(op, 0)
        if x.type_name != "FLOAT32" or y.type_name != "FLOAT32":
            raise ctx.fail(op, f"L2_POOL_2D only supports float32 currently, got {x.type_name} -> {y.type_name}")
        data = prepare_pooling(ctx, op)
        o = op.options
        want = [compute_out_size(o["padding"], n, f, s) for n, f, s in
                ((x.shape[1], data.filter_h, data.stride_h), (x.shape[2], data.filter_w, data.stride_w))]
        if [y.shape[1], y.shape[2]] != want:
            raise ctx.fail(op, f"output height/width {y.shape[1:3]} differ from the computed {tuple(want)}")
        return data

    def invoke(self, ctx, op, data: PoolData) -> None:
        run_bands(data, ctx.input(op, 0), ctx.output(op, 0), pool_rows)


def pool_rows(data: PoolData, x: np.ndarray, x_row0: int, y0: int, y1: int) -> np.ndarray:
    """Output rows ``[y0, y1)`` from ``x`` = input rows starting at ``x_row0`` (the pager's band function)."""
    sh, sw = data.stride_h, data.stride_w
    ys, xs = (y1 - y0 - 1) * sh + 1, (data.out_w - 1) * sw + 1
    band = padded_band(data, x, x_row0, y0, y1, 0.0, np.float32)
    total = np.zeros((x.shape[0], y1 - y0, data.out_w, x.shape[3]), dtype=np.float32)
    with np.errstate(all="ignore"):
        for ky in range(data.filter_h):
            for kx in range(data.filter_w):
                tap = band[:, ky:ky + ys:sh, kx:kx + xs:sw]
                total += tap * tap
        np.divide(total, data.count[y0:y1, :, None].astype(np.float32), out=total)
        result = libm.sqrtf(total)
    return clamp_float_(result, data.act_min, data.act_max)


KERNEL = L2Pool2D()
