"""BATCH_TO_SPACE_ND: the inverse of SPACE_TO_BATCH_ND, then a crop (``reference/batch_to_space_nd.h``; see
:mod:`._batch_space` for the shared checks).

Input batch ``i`` goes to output batch ``i % B_out`` at phase ``(sh, sw) = divmod(i // B_out, bw)``:
``out[b, ih * bh + sh - top, iw * bw + sw - left, :] = in[(sh * bw + sw) * B_out + b, ih, iw, :]`` where that lands
inside the output. TFLM uses only the top and left crops and the model's output shape, and loops over the input:
when the stored output disagrees with ``B_in = B_out * bh * bw`` (``top + H_out <= H_in * bh``,
``left + W_out <= W_in * bw``) it still writes every input element that lands inside the stored output and leaves
the rest of the output as the arena held it. So does this kernel (in memory the arena is laid out as TFLM's), with
a warning at prepare.
"""

from __future__ import annotations

import numpy as np

from ._batch_space import BatchSpaceOp, nhwc
from .contract import MIXING


class BatchToSpaceND(BatchSpaceOp):
    ops = ("BATCH_TO_SPACE_ND",)
    traits = MIXING
    PADS_WORD = "crops"
    DIVIDES_BY_INPUT_BATCH = False

    def mismatch(self, x_shape, y_shape, geo) -> str | None:
        bh, bw, top, left = geo
        b, h, w, _ = nhwc(x_shape)
        bo, ho, wo, _ = nhwc(y_shape)
        if b != bo * bh * bw or top + ho > h * bh or left + wo > w * bw:
            return f"the stored output shape {tuple(y_shape)} does not fit input {tuple(x_shape)} with block " \
                   f"{bh}x{bw}, crop top {top}, left {left}"
        return None

    def compute(self, x, out, geo) -> None:
        bh, bw, top, left = geo
        b, h, w, c = nhwc(x.shape)
        bo, ho, wo, _ = nhwc(out.shape)
        if b == bo * bh * bw and top + ho <= h * bh and left + wo <= w * bw:
            full = x.reshape(bh, bw, bo, h, w, c).transpose(2, 3, 0, 4, 1, 5).reshape(bo, h * bh, w * bw, c)
            out[...] = full[:, top:top + ho, left:left + wo, :].reshape(out.shape)
            return
        dst, src = out.reshape(bo, ho, wo, c), x.reshape(b, h, w, c)
        for ib in range(b):                 # TFLM's loop over the input, in its order (later batches win)
            sh, sw = divmod(ib // bo, bw)
            oh = np.arange(h) * bh + sh - top
            ow = np.arange(w) * bw + sw - left
            rows, cols = np.flatnonzero((oh >= 0) & (oh < ho)), np.flatnonzero((ow >= 0) & (ow < wo))
            if rows.size and cols.size:
                dst[ib % bo, oh[rows][:, None], ow[cols][None, :]] = src[ib][rows[:, None], cols[None, :]]


KERNEL = BatchToSpaceND()
