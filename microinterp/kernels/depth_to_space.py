"""DEPTH_TO_SPACE: move channel blocks into spatial blocks, NHWC, "DCR" order (``micro/kernels/depth_to_space.cc``,
``reference/depth_to_space.h``).

``out[b, h, w, d] = in[b, h / bs, w / bs, ((h % bs) * bs + w % bs) * C_out + d]`` with ``C_out = C_in / bs^2``.
Prepare (TFLM): one input and output, 4-D, FLOAT32 or INT8, same type, ``block_size > 0`` and ``C_in`` divisible
by ``bs^2``; it then *overwrites* the output dims with the computed ones -- here the model's output shape must be
exactly that shape (anything else would change the arena the model declares). Raw values are moved:
quantization parameters are not looked at.
"""

from __future__ import annotations

from dataclasses import dataclass

from ._space_depth import check_block_op, check_output_shape
from .contract import PURE, Kernel


@dataclass(frozen=True)
class DepthToSpaceData:
    block: int


class DepthToSpace(Kernel):
    ops = ("DEPTH_TO_SPACE",)
    traits = PURE
    def prepare(self, ctx, op) -> DepthToSpaceData:
        x, y, bs = check_block_op(ctx, op)
        n, h, w, c = x.shape
        if c % (bs * bs):
            raise ctx.fail(op, f"{c} channels are not divisible by block_size^2 = {bs * bs}")
        want = (n, h * bs, w * bs, c // (bs * bs))
        check_output_shape(ctx, op, y, want)
        return DepthToSpaceData(bs)

    def invoke(self, ctx, op, data: DepthToSpaceData) -> None:
        x, out = ctx.input(op, 0), ctx.output(op, 0)
        n, h, w, c = x.shape
        bs = data.block
        blocks = x.reshape(n, h, w, bs, bs, c // (bs * bs)).transpose(0, 1, 3, 2, 4, 5)
        out[...] = blocks.reshape(out.shape)


KERNEL = DepthToSpace()
