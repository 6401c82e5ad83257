"""SignalIrfft: the inverse real FFT of each frame of bins, KISS FFT as TFLM builds it
(``signal/micro/kernels/irfft.cc``, ``signal/src/irfft_int16.cc`` / ``_int32`` / ``_float``; ``kiss_fftri`` in
:mod:`._kiss_fft`).

Options: ``T`` (7 INT16, 2 INT32, 0 FLOAT32) and ``fft_length`` (as SignalRfft: even, ``fft_length / 2`` a product
of 2, 3, 4, 5). Prepare (TFLM): one input and one output of type T and equal rank; the input's last dim holds
``fft_length / 2 + 1`` interleaved complex bins, the output's ``fft_length`` samples (checked here; TFLM would read or
write past the frames otherwise). The fixed-point builds are not normalised further (they scale down by 2 at every
stage, as the forward transform does); the float build divides every sample by ``fft_length`` (float32).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..contract import PURE, Kernel
from ._common import options
from ._kiss_fft import factor, real_fft_plan
from ._kiss_fft_vec import irfft_frames
from .rfft import TENSOR_TYPES


@dataclass(frozen=True)
class IrfftData:
    type_name: str
    fft_length: int


class Irfft(Kernel):
    ops = ("SignalIrfft",)
    traits = PURE
    def prepare(self, ctx, op) -> IrfftData:
        o = options(ctx, op, ("T", "fft_length"))
        type_name = TENSOR_TYPES.get(int(o["T"]))
        n = int(o["fft_length"])
        if type_name is None:
            raise ctx.fail(op, f"T = {o['T']} is not INT16 (7), INT32 (2) or FLOAT32 (0)")
        if n < 2 or n % 2 or any(p not in (2, 3, 4, 5) for p in factor(n // 2)[0::2]):
            raise ctx.fail(op, f"fft_length {n}: must be even with n/2 a product of 2, 3, 4, 5 (TFLM's KISS build "
                               "has no allocator for the generic butterfly)")
        ctx.check_io_count(op, 1, 1)
        x, y = ctx.require_input(op, 0), ctx.output(op, 0)
        if len(x.shape) < 1 or len(x.shape) != len(y.shape) or x.type_name != type_name or y.type_name != type_name:
            raise ctx.fail(op, f"input and output must be {type_name} of one rank")
        if x.shape[-1] != n + 2 or y.shape[-1] != n or x.num_elements // (n + 2) != y.num_elements // n:
            raise ctx.fail(op, f"frames of {x.shape[-1] // 2} bins into {y.shape[-1]} samples do not fit "
                               f"fft_length {n}")
        itemsize = np.dtype(x.dtype).itemsize
        ctx.arena.allocate_persistent((n // 2 + n // 2 + n // 4) * 2 * itemsize)
        real_fft_plan(n, type_name, True)
        return IrfftData(type_name, n)

    def invoke(self, ctx, op, data: IrfftData) -> None:
        x, out = ctx.input(op, 0), ctx.output(op, 0)
        rows = out.reshape(-1, data.fft_length)
        if not len(rows):
            return
        samples = irfft_frames(x.reshape(-1, data.fft_length + 2), data.fft_length, data.type_name)
        if data.type_name == "FLOAT32":       # irfft_float.cc divides by fft_length afterwards
            samples = (samples / np.float32(data.fft_length)).astype(np.float32)
        rows[...] = samples


KERNEL = Irfft()
