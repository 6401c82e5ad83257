"""SignalStacker: stack ``left + 1 + right`` consecutive frames of ``num_channels`` features
(``signal/micro/kernels/stacker.cc``).

Options: ``num_channels``, ``stacker_left_context``, ``stacker_right_context``, ``stacker_step``. Prepare (TFLM):
1-D INT16 in and out, a 0-D BOOL "valid" output; a circular buffer of ``num_channels * (left + right + 1)`` samples
in the tail. Eval: write the frame; on the very first frame repeat it ``left`` more times; once the buffer holds a
full stack, copy it to the output, discard ``stacker_step`` frames and set valid, else clear valid (the output keeps
its previous contents). ``reset()`` empties the buffer and forgets the first frame.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..contract import STATEFUL, Kernel
from ._circular_buffer import CircularBuffer
from ._common import options

KEYS = ("num_channels", "stacker_left_context", "stacker_right_context", "stacker_step")


@dataclass(frozen=True)
class StackerData:
    channels: int
    left: int
    size: int
    step: int
    buffer: CircularBuffer = field(repr=False)
    first: list = field(default_factory=lambda: [False])


class Stacker(Kernel):
    ops = ("SignalStacker",)
    traits = STATEFUL
    def prepare(self, ctx, op) -> StackerData:
        o = {k: int(v) for k, v in options(ctx, op, KEYS).items()}
        ctx.check_io_count(op, 1, 2)
        x, y, valid = ctx.require_input(op, 0), ctx.output(op, 0), ctx.output(op, 1)
        if len(x.shape) != 1 or len(y.shape) != 1 or len(valid.shape) != 0:
            raise ctx.fail(op, "1-D input and output, 0-D valid flag")
        if x.type_name != "INT16" or y.type_name != "INT16" or valid.type_name != "BOOL":
            raise ctx.fail(op, "INT16 in and out, a BOOL valid flag")
        ch, left, right, step = (o[k] for k in KEYS)
        size = ch * (left + right + 1)
        if ch < 1 or left < 0 or right < 0 or not 1 <= step <= left + right + 1:
            raise ctx.fail(op, f"num_channels {ch}, contexts {left}/{right}, step {step} out of range")
        if x.num_elements < ch or y.num_elements < size:
            raise ctx.fail(op, f"input needs {ch} samples, output {size}")
        return StackerData(ch, left, size, step * ch, CircularBuffer(ctx.arena, size))

    def reset(self, ctx, op, data: StackerData) -> None:
        data.buffer.reset()
        data.first[0] = False

    def invoke(self, ctx, op, data: StackerData) -> None:
        x, out, valid = ctx.input(op, 0), ctx.output(op, 0), ctx.output(op, 1)
        data.buffer.write(x[:data.channels])
        if not data.first[0]:
            data.buffer.extend(data.channels, data.left)
            data.first[0] = True
        if data.buffer.available() >= data.size:
            out[:data.size] = data.buffer.get(data.size)
            data.buffer.discard(data.step)
            valid[...] = True
        else:
            valid[...] = False


KERNEL = Stacker()
