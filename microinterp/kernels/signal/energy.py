"""SignalEnergy: ``re^2 + im^2`` of spectrum bins ``[start_index, end_index)`` (``signal/src/energy.cc``).

Options: ``end_index``, ``start_index``. Prepare (TFLM): one 1-D INT16 input (interleaved complex), one 1-D UINT32
output. Eval writes only the bins in range (int32 products, summed, stored as uint32); the others keep whatever the
output memory held, as in TFLM. Indices are checked here against both tensors (TFLM would read/write out of bounds).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._qutil import copyto
from ..contract import PURE, Kernel
from ..streams import BIND
from ._common import options


@dataclass(frozen=True)
class EnergyData:
    start: int
    end: int


class Energy(Kernel):
    ops = ("SignalEnergy",)
    traits = PURE
    #: streams: its bound call works along the last axis, on kept buffers (:mod:`..streams`)
    streams = BIND

    def prepare(self, ctx, op) -> EnergyData:
        o = options(ctx, op, ("end_index", "start_index"))
        ctx.check_io_count(op, 1, 1)
        x, y = ctx.require_input(op, 0), ctx.output(op, 0)
        if len(x.shape) != 1 or len(y.shape) != 1 or x.type_name != "INT16" or y.type_name != "UINT32":
            raise ctx.fail(op, "a 1-D INT16 spectrum in, a 1-D UINT32 energy out")
        start, end = int(o["start_index"]), int(o["end_index"])
        if start < 0 or (end > start and (2 * end > x.num_elements or end > y.num_elements)):
            raise ctx.fail(op, f"bins [{start}, {end}) do not fit input {x.shape} / output {y.shape}")
        return EnergyData(start, end)

    def bind(self, ctx, op, data: EnergyData):
        """On the fixed views (one spectrum, or a stream axis before it): the real and imaginary parts of the bins in
        range (strided views) squared in kept int32 buffers, summed (int32, wrapping as the C code's), stored as uint32
        (the same bits)."""
        if data.end <= data.start:
            return None
        x, out = ctx.input(op, 0), ctx.output(op, 0)
        re, im = x[..., 2 * data.start:2 * data.end:2], x[..., 2 * data.start + 1:2 * data.end:2]
        dst = out[..., data.start:data.end]
        a, b = np.empty(dst.shape, np.int32), np.empty(dst.shape, np.int32)

        def call() -> None:
            copyto(a, re)
            np.multiply(a, a, a)
            copyto(b, im)
            np.multiply(b, b, b)
            np.add(a, b, a)
            copyto(dst, a, casting="unsafe")
        return call

    def invoke(self, ctx, op, data: EnergyData) -> None:
        if data.end <= data.start:
            return
        x = ctx.input(op, 0)
        c = x[..., :2 * data.end].reshape(*x.shape[:-1], -1, 2)[..., data.start:data.end, :].astype(np.int32)
        np.multiply(c, c, c)
        e = np.add(c[..., 0], c[..., 1])                        # int32, wrapping as the C code's
        ctx.output(op, 0)[..., data.start:data.end] = e.view(np.uint32)     # stored as uint32: the same bits


KERNEL = Energy()
