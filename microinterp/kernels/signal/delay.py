"""SignalDelay: delay every channel by ``delay_length`` samples (``signal/micro/kernels/delay.cc``).

Options: ``delay_length``. Prepare (TFLM): one INT16 input and output; per outer index (all dims but the last) a
circular buffer of ``frame + delay_length`` samples in the tail, pre-filled with ``delay_length`` zeros. Eval, per
outer index: write the frame, read ``frame`` samples into the output, discard them. ``reset()`` empties the buffers
and writes the zeros again.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..contract import STATEFUL, Kernel
from ._circular_buffer import CircularBuffer
from ._common import options


@dataclass(frozen=True)
class DelayData:
    delay: int
    frame: int
    buffers: list = field(repr=False)


class Delay(Kernel):
    ops = ("SignalDelay",)
    traits = STATEFUL
    def prepare(self, ctx, op) -> DelayData:
        delay = int(options(ctx, op, ("delay_length",))["delay_length"])
        ctx.check_io_count(op, 1, 1)
        x, y = ctx.require_input(op, 0), ctx.output(op, 0)
        if x.type_name != "INT16" or y.type_name != "INT16" or len(x.shape) < 1:
            raise ctx.fail(op, "INT16 in and out, at least 1-D")
        if delay < 0 or y.num_elements != x.num_elements:
            raise ctx.fail(op, f"delay_length {delay} must be >= 0 and the output as large as the input")
        frame = x.shape[-1]
        outer = x.num_elements // frame if frame else 0
        buffers = [CircularBuffer(ctx.arena, frame + delay) for _ in range(outer)]
        data = DelayData(delay, frame, buffers)
        self.reset(ctx, op, data)
        return data

    def reset(self, ctx, op, data: DelayData) -> None:
        for b in data.buffers:
            b.reset()
            b.write_zeros(data.delay)

    def invoke(self, ctx, op, data: DelayData) -> None:
        x, out = ctx.input(op, 0).reshape(-1, max(data.frame, 1)), ctx.output(op, 0).reshape(-1, max(data.frame, 1))
        for k, b in enumerate(data.buffers):
            b.write(x[k])
            out[k] = b.get(data.frame)
            b.discard(data.frame)


KERNEL = Delay()
