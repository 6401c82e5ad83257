"""SignalRfft: the real FFT of each frame, KISS FFT as TFLM builds it (``signal/micro/kernels/rfft.cc``,
``signal/src/rfft_int16.cc`` / ``rfft_int32.cc`` / ``rfft_float.cc``; the algorithm in :mod:`._kiss_fft`).

Options: ``T`` (the schema's TensorType of the data: 7 INT16, 2 INT32, 0 FLOAT32) and ``fft_length`` (even, and
``fft_length / 2`` a product of 2, 3, 4 and 5 only: TFLM patches KISS FFT's allocator to return null, so the
generic butterfly for other primes -- and the radix-1 "FFT" of length 2 -- crashes the wheel; refused here).
Prepare (TFLM): one input and one output of type T and equal rank; a scratch buffer of ``fft_length`` samples (the
work area) is planned, and the KISS state lives in the tail. Eval, per frame (the last dim of the input): copy the
frame into the work area, zero it up to ``fft_length``, run ``kiss_fftr`` and write ``fft_length/2 + 1`` complex
bins (interleaved re, im) to the next output frame. Here the output's last dim must be ``fft_length + 2`` and a
frame at most ``fft_length`` samples (TFLM would write or zero past its buffers otherwise).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from .._qutil import copyto
from ..contract import PURE, Kernel
from ..streams import BIND
from . import _kiss_fft_vec
from ._common import options
from ._kiss_fft import factor, real_fft_plan
from ._kiss_fft_gather import BoundGatherRfft
from ._kiss_fft_vec import gather_rfft, rfft_frames, vector_plan

TENSOR_TYPES = {7: "INT16", 2: "INT32", 0: "FLOAT32"}


@dataclass(frozen=True)
class RfftData:
    type_name: str
    fft_length: int
    scratch: int


class Rfft(Kernel):
    ops = ("SignalRfft",)
    traits = PURE
    #: streams: its bound call (or invoke) transforms every frame of the last axis (:mod:`..streams`)
    streams = BIND

    def prepare(self, ctx, op) -> RfftData:
        o = options(ctx, op, ("T", "fft_length"))
        type_name = TENSOR_TYPES.get(int(o["T"]))
        n = int(o["fft_length"])
        if type_name is None:
            raise ctx.fail(op, f"T = {o['T']} is not INT16 (7), INT32 (2) or FLOAT32 (0)")
        if n < 2 or n % 2:
            raise ctx.fail(op, f"fft_length must be even and positive, got {n}")
        if any(p not in (2, 3, 4, 5) for p in factor(n // 2)[0::2]):
            raise ctx.fail(op, f"fft_length {n}: n/2 = {n // 2} has a prime factor above 5; TFLM builds KISS FFT "
                               "without an allocator, so its generic butterfly would write through a null pointer "
                               "(the wheel crashes)")
        ctx.check_io_count(op, 1, 1)
        x, y = ctx.require_input(op, 0), ctx.output(op, 0)
        if len(x.shape) < 1 or len(x.shape) != len(y.shape) or x.type_name != type_name or y.type_name != type_name:
            raise ctx.fail(op, f"input and output must be {type_name} of one rank, got {x.type_name} {x.shape} -> "
                               f"{y.type_name} {y.shape}")
        frame, bins = x.shape[-1], y.shape[-1]
        if frame > n or bins != n + 2 or (frame and x.num_elements // frame * bins != y.num_elements):
            raise ctx.fail(op, f"frames of {frame} samples into {bins // 2} bins do not fit fft_length {n}")
        itemsize = np.dtype(x.dtype).itemsize
        scratch = ctx.request_scratch(op, n * itemsize)
        # the KISS state's data: sub-FFT twiddles and buffer (n/2 complex each), super twiddles (n/4 complex)
        ctx.arena.allocate_persistent((n // 2 + n // 2 + n // 4) * 2 * itemsize)
        real_fft_plan(n, type_name)
        return RfftData(type_name, n, scratch)

    def bind(self, ctx, op, data: RfftData):
        """The invoke on fixed views: the frames zero-padded into a kept buffer (read in place when they fill
        ``fft_length``), the last one copied into the work area as :meth:`invoke` does, then the transform into the
        output -- :class:`._kiss_fft_gather.BoundGatherRfft` for a fixed-point build whose half-length FFT gathers
        (factors 2 and 4) over fewer than :data:`._kiss_fft_vec.GATHER_BELOW` frames, else :func:`rfft_frames`
        writing its bins straight into the output (streams: every stream's frame at once). None for views that are
        not C-contiguous or frames of no sample (:meth:`invoke`)."""
        x, out = ctx.input(op, 0), ctx.output(op, 0)
        n, frame = data.fft_length, x.shape[-1]
        if not frame or not (x.flags.c_contiguous and out.flags.c_contiguous):
            return None
        frames, rows = x.reshape(-1, frame), out.reshape(-1, n + 2)
        if not len(rows):
            return None
        padded = frames if frame == n else np.zeros((len(rows), n), x.dtype)
        head, last = padded[:, :frame], padded[-1]
        work = ctx.scratch(data.scratch).view(x.dtype)[:n]
        sub, _, _ = vector_plan(n, data.type_name)
        if sub.gather is not None and len(rows) < _kiss_fft_vec.GATHER_BELOW:
            transform = BoundGatherRfft(gather_rfft(n, data.type_name), padded, rows)
        else:
            transform = functools.partial(rfft_frames, padded, n, data.type_name, rows)

        def call() -> None:
            if padded is not frames:
                copyto(head, frames)
            copyto(work, last)
            transform()
        return call

    def invoke(self, ctx, op, data: RfftData) -> None:
        x, out = ctx.input(op, 0), ctx.output(op, 0)
        frame = x.shape[-1]
        work = ctx.scratch(data.scratch).view(x.dtype)[:data.fft_length]
        frames = x.reshape(-1, frame) if frame else np.zeros((0, 0), x.dtype)
        rows = out.reshape(-1, data.fft_length + 2)
        if not len(rows):
            return
        padded = np.zeros((len(rows), data.fft_length), x.dtype)     # each frame in the scratch, zero-padded
        padded[:, :frame] = frames
        work[...] = padded[-1]
        rfft_frames(padded, data.fft_length, data.type_name, rows)          # every frame's butterflies at once


KERNEL = Rfft()
