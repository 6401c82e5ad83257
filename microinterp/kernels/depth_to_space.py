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

SUPPORTED_TYPES = ("FLOAT32", "INT8")


@dataclass(frozen=True)
class DepthToSpaceData:
    block: int


class DepthToSpace:
    def prepare(self, ctx, op) -> DepthToSpaceData:
        ctx.check_io_count(op, 1, 1)
        x, y = ctx.require_input(op, 0), ctx.output(op, 0)
        if len(x.shape) != 4:
            raise ctx.fail(op, f"the input must be 4-D, got {x.shape}")
        if y.type_name not in SUPPORTED_TYPES or x.type_name != y.type_name:
            raise ctx.fail(op, f"FLOAT32 or INT8 in and out, got {x.type_name} -> {y.type_name}")
        bs = op.options["block_size"]
        if bs <= 0:
            raise ctx.fail(op, f"block_size must be positive, got {bs}")
        n, h, w, c = x.shape
        if c % (bs * bs):
            raise ctx.fail(op, f"{c} channels are not divisible by block_size^2 = {bs * bs}")
        want = (n, h * bs, w * bs, c // (bs * bs))
        if tuple(y.shape) != want:
            raise ctx.fail(op, f"output shape {tuple(y.shape)} is not the computed {want}")
        return DepthToSpaceData(bs)

    def invoke(self, ctx, op, data: DepthToSpaceData) -> None:
        x, out = ctx.input(op, 0), ctx.output(op, 0)
        n, h, w, c = x.shape
        bs = data.block
        blocks = x.reshape(n, h, w, bs, bs, c // (bs * bs)).transpose(0, 1, 3, 2, 4, 5)
        out[...] = blocks.reshape(out.shape)


KERNEL = DepthToSpace()
