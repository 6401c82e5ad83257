"""SignalFramer: cut each row of samples into overlapping frames (``signal/micro/kernels/framer.cc``).

Options: ``frame_size``, ``frame_step``, ``prefill``. Prepare (TFLM): INT16 input, INT16 output with one more dim,
a 0-D BOOL valid flag; the input's last dim is a multiple of ``frame_step`` (``n_frames`` steps per invoke); per
outer index a circular buffer of ``ceil(frame_size / frame_step) * frame_step`` samples in the tail, pre-filled with
``frame_size - frame_step`` zeros when ``prefill``. Eval, per outer index and step: write ``frame_step`` samples; if
a whole frame is buffered, copy it out and discard ``frame_step``, else clear valid (that output frame keeps its
previous contents). ``reset()`` restores the initial state.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..contract import STATEFUL, Kernel
from ._circular_buffer import CircularBuffer
from ._common import options


@dataclass(frozen=True)
class FramerData:
    size: int
    step: int
    prefill: bool
    n_frames: int
    buffers: list = field(repr=False)


class Framer(Kernel):
    ops = ("SignalFramer",)
    traits = STATEFUL
    def prepare(self, ctx, op) -> FramerData:
        o = options(ctx, op, ("frame_size", "frame_step", "prefill"))
        size, step, prefill = int(o["frame_size"]), int(o["frame_step"]), bool(o["prefill"])
        ctx.check_io_count(op, 1, 2)
        x, y, valid = ctx.require_input(op, 0), ctx.output(op, 0), ctx.output(op, 1)
        if len(x.shape) < 1 or len(y.shape) != len(x.shape) + 1 or len(valid.shape) != 0:
            raise ctx.fail(op, "the output has one dim more than the input; a 0-D valid flag")
        if x.type_name != "INT16" or y.type_name != "INT16" or valid.type_name != "BOOL":
            raise ctx.fail(op, "INT16 in and out, a BOOL valid flag")
        inner = x.shape[-1]
        if step < 1 or size < step or inner < step or inner % step:
            raise ctx.fail(op, f"frame_size {size}, frame_step {step}, input rows of {inner}: do not fit")
        outer = x.num_elements // inner
        n_frames = inner // step
        if y.num_elements != outer * n_frames * size:
            raise ctx.fail(op, f"output {y.shape} is not {outer * n_frames} frames of {size}")
        capacity = (size + step - 1) // step * step
        data = FramerData(size, step, prefill, n_frames, [CircularBuffer(ctx.arena, capacity) for _ in range(outer)])
        self.reset(ctx, op, data)
        return data

    def reset(self, ctx, op, data: FramerData) -> None:
        for b in data.buffers:
            b.reset()
            if data.prefill:
                b.write_zeros(data.size - data.step)

    def invoke(self, ctx, op, data: FramerData) -> None:
        x, out, valid = ctx.input(op, 0), ctx.output(op, 0), ctx.output(op, 1)
        rows = x.reshape(len(data.buffers), -1)
        frames = out.reshape(len(data.buffers), data.n_frames, data.size)
        ok = True
        for i, b in enumerate(data.buffers):
            for f in range(data.n_frames):
                b.write(rows[i, f * data.step:(f + 1) * data.step])
                if b.available() >= data.size:
                    frames[i, f] = b.get(data.size)
                    b.discard(data.step)
                else:
                    ok = False
        valid[...] = ok


KERNEL = Framer()
