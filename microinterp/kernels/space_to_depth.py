"""SPACE_TO_DEPTH: move spatial blocks into channels, NHWC (``micro/kernels/space_to_depth.cc``,
``reference/space_to_depth.h``): ``out[b, h, w, (dh * bs + dw) * C_in + d] = in[b, h * bs + dh, w * bs + dw, d]``.

Prepare (TFLM): one input and output, 4-D, FLOAT32 or INT8, same type, H and W divisible by ``block_size``; it
overwrites the output dims with the computed ones (here the model's output shape must equal them). TFLM does not
check ``block_size > 0`` (it would divide by zero); refused here. Raw values are moved.
"""

from __future__ import annotations

from dataclasses import dataclass

from ._qutil import bind_copies
from ._space_depth import check_block_op, check_output_shape
from .contract import PURE, Kernel


@dataclass(frozen=True)
class SpaceToDepthData:
    block: int


class SpaceToDepth(Kernel):
    ops = ("SPACE_TO_DEPTH",)
    traits = PURE
    def prepare(self, ctx, op) -> SpaceToDepthData:
        x, y, bs = check_block_op(ctx, op)
        n, h, w, c = x.shape
        if h % bs or w % bs:
            raise ctx.fail(op, f"height {h} and width {w} must be divisible by block_size {bs}")
        want = (n, h // bs, w // bs, c * bs * bs)
        check_output_shape(ctx, op, y, want)
        return SpaceToDepthData(bs)

    def bind(self, ctx, op, data: SpaceToDepthData):
        """On fixed views: the blocks' view of the input taken once, one copy into the output viewed alike."""
        x, out = ctx.input(op, 0), ctx.output(op, 0)
        n, h, w, c = x.shape
        bs = data.block
        if not out.flags.c_contiguous or out.size != x.size:
            return None
        blocks = x.reshape(n, h // bs, bs, w // bs, bs, c).transpose(0, 1, 3, 2, 4, 5)
        return bind_copies([(out.reshape(blocks.shape), blocks)])

    def invoke(self, ctx, op, data: SpaceToDepthData) -> None:
        x, out = ctx.input(op, 0), ctx.output(op, 0)
        n, h, w, c = x.shape
        bs = data.block
        blocks = x.reshape(n, h // bs, bs, w // bs, bs, c).transpose(0, 1, 3, 2, 4, 5)
        out[...] = blocks.reshape(out.shape)


KERNEL = SpaceToDepth()
