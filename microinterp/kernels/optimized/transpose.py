"""TRANSPOSE, optimized: the same data movement (``out = x.transpose(perm)``, see ``kernels/transpose.py``), copied
in an order that keeps NumPy's inner loop long.

NumPy copies into a C-contiguous output with the output's last axis innermost. When that axis is short and strided
in the input (NCHW -> NHWC with 3 channels: every inner loop moves 3 bytes that lie 50176 bytes apart), the copy
runs at a few bytes per loop. Copying one index of the output's last axis at a time (``out[..., k] = view[..., k]``)
makes the output's second-last axis the inner loop instead; prepare chooses that when the last axis has 2..16 entries
and the second-last at least 32 (measured over all 4-D permutations of a few shapes: 2-9x faster there, never slower;
mobilenet_v2's input transpose 6x). Otherwise the reference assignment runs. Pure data movement: exact either way.
"""

from __future__ import annotations

from dataclasses import dataclass

from .._qutil import bind_copies
from ..contract import Kernel
from ..transpose import KERNEL as REFERENCE
from ..transpose import TransposeData

SHORT_LAST = 16
LONG_INNER = 32


@dataclass(frozen=True)
class FastTransposeData:
    ref: TransposeData
    slices: int             # > 0: copy the output's last axis one index at a time


class FastTranspose(Kernel):
    ops = ("TRANSPOSE",)
    def bind(self, ctx, op, data: FastTransposeData):
        """On fixed views: the transposed view taken once; one copy, or one per index of a short last axis."""
        view, out = ctx.input(op, 0).transpose(data.ref.perm), ctx.output(op, 0)
        if not data.slices:
            return bind_copies([(out, view)])
        return bind_copies([(out[..., k], view[..., k]) for k in range(data.slices)])

    def prepare(self, ctx, op) -> FastTransposeData:
        ref = REFERENCE.prepare(ctx, op)
        shape = ctx.output(op, 0).shape
        rank = len(shape)
        peel = rank >= 2 and ref.perm[-1] != rank - 1 and 1 < shape[-1] <= SHORT_LAST and shape[-2] >= LONG_INNER
        return FastTransposeData(ref, shape[-1] if peel else 0)

    def invoke(self, ctx, op, data: FastTransposeData) -> None:
        if not data.slices:
            REFERENCE.invoke(ctx, op, data.ref)
            return
        view, out = ctx.input(op, 0).transpose(data.ref.perm), ctx.output(op, 0)
        for k in range(data.slices):
            out[..., k] = view[..., k]


KERNEL = FastTranspose()
