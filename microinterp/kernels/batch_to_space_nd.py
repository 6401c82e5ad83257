"""BATCH_TO_SPACE_ND: the inverse of SPACE_TO_BATCH_ND, then a crop (``reference/batch_to_space_nd.h``; see
:mod:`._batch_space` for the shared checks).

Input batch ``i`` goes to output batch ``i % B_out`` at phase ``(sh, sw) = divmod(i // B_out, bw)``:
``out[b, ih * bh + sh - top, iw * bw + sw - left, :] = in[(sh * bw + sw) * B_out + b, ih, iw, :]`` where that lands
inside the output. TFLM uses only the top and left crops and the model's output shape; required here:
``B_in = B_out * bh * bw`` and ``top + H_out <= H_in * bh``, ``left + W_out <= W_in * bw`` (so every output
element is written, as it is in any converter-made model).
"""

from __future__ import annotations

from ._batch_space import BatchSpaceOp, nhwc


class BatchToSpaceND(BatchSpaceOp):
    def problem(self, x_shape, y_shape, geo) -> str | None:
        bh, bw, top, left = geo
        b, h, w, _ = nhwc(x_shape)
        bo, ho, wo, _ = nhwc(y_shape)
        if bh <= 0 or bw <= 0 or top < 0 or left < 0:
            return f"block {bh}x{bw} must be positive and crops {top}, {left} non-negative"
        if b != bo * bh * bw or top + ho > h * bh or left + wo > w * bw:
            return f"output shape {tuple(y_shape)} does not fit input {tuple(x_shape)} with block {bh}x{bw}, " \
                   f"crop top {top}, left {left}"
        return None

    def compute(self, x, out, geo) -> None:
        bh, bw, top, left = geo
        _, h, w, c = nhwc(x.shape)
        bo, ho, wo, _ = nhwc(out.shape)
        full = x.reshape(bh, bw, bo, h, w, c).transpose(2, 3, 0, 4, 1, 5).reshape(bo, h * bh, w * bw, c)
        out[...] = full[:, top:top + ho, left:left + wo, :].reshape(out.shape)


KERNEL = BatchToSpaceND()
