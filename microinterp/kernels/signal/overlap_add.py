"""SignalOverlapAdd: overlap-add frames into a stream, ``frame_step`` samples out per frame
(``signal/micro/kernels/overlap_add.cc``, ``signal/src/overlap_add.cc``).

Options: ``T`` (7 INT16, 0 FLOAT32) and ``frame_step``. Prepare (TFLM): input of rank >= 2 (frames x frame_size per
outer index), output one rank less; a ``frame_size`` state buffer per outer index in the tail, zeroed. Eval per
frame: ``buffer += frame`` (int16: saturated to the int16 range; float32: added in float32), the first
``frame_step`` samples go out, the buffer shifts left by ``frame_step`` and its tail is zeroed. ``reset()`` zeroes
the buffers.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..contract import STATEFUL, Kernel
from ._common import options

TYPES = {7: "INT16", 0: "FLOAT32"}


@dataclass(frozen=True)
class OverlapAddData:
    step: int
    size: int
    n_frames: int
    buffers: list = field(repr=False)


class OverlapAdd(Kernel):
    ops = ("SignalOverlapAdd",)
    traits = STATEFUL
    def prepare(self, ctx, op) -> OverlapAddData:
        o = options(ctx, op, ("T", "frame_step"))
        type_name, step = TYPES.get(int(o["T"])), int(o["frame_step"])
        ctx.check_io_count(op, 1, 1)
        x, y = ctx.require_input(op, 0), ctx.output(op, 0)
        if type_name is None or x.type_name != type_name or y.type_name != type_name:
            raise ctx.fail(op, f"T {o['T']}: input and output must be INT16 (7) or FLOAT32 (0) of that type")
        if len(x.shape) < 2 or len(y.shape) != len(x.shape) - 1:
            raise ctx.fail(op, "the input needs rank >= 2 and the output one rank less")
        size, n_frames = x.shape[-1], x.shape[-2]
        outer = x.num_elements // (size * n_frames) if size * n_frames else 0
        if not 1 <= step <= size or y.num_elements != outer * n_frames * step:
            raise ctx.fail(op, f"frame_step {step} with frames of {size}: output {y.shape} does not fit")
        itemsize = np.dtype(x.dtype).itemsize
        buffers = [ctx.arena.allocate_persistent(size * itemsize).view(x.dtype) for _ in range(outer)]
        data = OverlapAddData(step, size, n_frames, buffers)
        self.reset(ctx, op, data)
        return data

    def reset(self, ctx, op, data: OverlapAddData) -> None:
        for b in data.buffers:
            b[...] = 0

    def invoke(self, ctx, op, data: OverlapAddData) -> None:
        x, out = ctx.input(op, 0), ctx.output(op, 0)
        frames = x.reshape(len(data.buffers), data.n_frames, data.size)
        outs = out.reshape(len(data.buffers), data.n_frames, data.step)
        for i, b in enumerate(data.buffers):
            for f in range(data.n_frames):
                if b.dtype == np.int16:
                    b[...] = np.clip(b.astype(np.int32) + frames[i, f], -32768, 32767)
                else:
                    b += frames[i, f]
                outs[i, f] = b[:data.step]
                b[:data.size - data.step] = b[data.step:].copy()
                b[data.size - data.step:] = 0


KERNEL = OverlapAdd()
