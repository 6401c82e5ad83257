"""SPACE_TO_BATCH_ND: pad H and W, then move each ``block_h x block_w`` phase of the padded image into its own batch
(``reference/space_to_batch_nd.h``; see :mod:`._batch_space` for the shared checks).

``out[(sh * bw + sw) * B + b, oh, ow, :] = in[b, oh * bh + sh - top, ow * bw + sw - left, :]`` where that lies
inside the input, else the pad value. TFLM's pad value is ``params.output_offset`` from a persistent
``SpaceToBatchParams`` that its Prepare never fills, memset byte-wise: whatever byte the arena held there (the
wheel's output changes from run to run). Here the padding is 0 bytes -- 0.0 for float, 0 (not the zero point) for
int8 -- what a zero-initialised arena gives; only padded positions can differ from TFLM.

TFLM loops over the *stored* output shape (output batch ``ob`` reads input batch ``ob % B`` at phase
``divmod(ob // B, bw)``), so a model whose stored output disagrees with ``B_out = B * bh * bw`` -- a converter that
kept a dynamic batch of 1 -- runs all the same, on the phases the stored batches reach; so does this kernel, with a
warning at prepare.
"""

from __future__ import annotations

import numpy as np

from ._batch_space import BatchSpaceOp, nhwc
from .contract import MIXING


class SpaceToBatchND(BatchSpaceOp):
    ops = ("SPACE_TO_BATCH_ND",)
    traits = MIXING
    PADS_WORD = "paddings"
    DIVIDES_BY_INPUT_BATCH = True

    def mismatch(self, x_shape, y_shape, geo) -> str | None:
        bh, bw, top, left = geo
        b, h, w, _ = nhwc(x_shape)
        bo, ho, wo, _ = nhwc(y_shape)
        if bo != b * bh * bw or ho * bh < top + h or wo * bw < left + w:
            return f"the stored output shape {tuple(y_shape)} does not hold input {tuple(x_shape)} with block " \
                   f"{bh}x{bw}, padding top {top}, left {left}"
        return None

    def compute(self, x: np.ndarray, out: np.ndarray, geo: tuple[int, int, int, int]) -> None:
        bh, bw, top, left = geo
        b, h, w, c = nhwc(x.shape)
        bo, ho, wo, _ = nhwc(out.shape)
        if bo == b * bh * bw and ho * bh >= top + h and wo * bw >= left + w:
            padded = np.zeros((b, ho * bh, wo * bw, c), x.dtype)
            padded[:, top:top + h, left:left + w, :] = x.reshape(b, h, w, c)
            phases = padded.reshape(b, ho, bh, wo, bw, c).transpose(2, 4, 0, 1, 3, 5)
            out[...] = phases.reshape(out.shape)
            return
        ob = np.arange(bo)                  # TFLM's loop over the stored output shape
        shift_h, shift_w = divmod(ob // b, bw)
        ih = np.arange(ho)[None, :, None] * bh + shift_h[:, None, None] - top
        iw = np.arange(wo)[None, None, :] * bw + shift_w[:, None, None] - left
        inside = (ih >= 0) & (ih < h) & (iw >= 0) & (iw < w)
        src = x.reshape(b, h, w, c)[(ob % b)[:, None, None], np.clip(ih, 0, h - 1), np.clip(iw, 0, w - 1)]
        out[...] = np.where(inside[..., None], src, np.zeros((), x.dtype)).reshape(out.shape)


KERNEL = SpaceToBatchND()
