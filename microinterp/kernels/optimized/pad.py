"""PAD / PADV2, optimized: fill only the border, then one copy of the input into the kept box.

The reference (``kernels/pad.py``, which states TFLM's algorithm and its negative-padding pitfall) fills the whole
output with the constant and then copies the input over the middle: the middle is written twice. Here prepare
partitions the fill region (the output minus the box) into disjoint slabs, one before and one after the box per
dimension: slab ``d`` spans the box's range in dims ``< d``, the part outside the box in dim ``d``, and everything in
dims ``> d`` (each fill position lies in exactly one slab: the one of its first dim outside the box). Empty slabs are
dropped, so the usual NHWC spatial padding is four small fills plus the copy. The copy is the reference's (the box
takes the first ``prod(box)`` input elements in flat order), done as a plain view assignment when the box has the
input's shape (all paddings >= 0).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._qutil import bind_copies
from ..contract import Kernel
from ..pad import KERNEL as REFERENCE
from ..pad import PadData, unclobbered

#: Outputs of at most this many elements are filled whole before the copy (two calls); larger ones slab by slab.
WHOLE_FILL_BELOW = 4096


@dataclass(frozen=True)
class FastPadData:
    ref: PadData
    slabs: tuple[tuple[slice, ...], ...]    # disjoint regions that get the fill value
    whole_input: bool                       # the box has the input's shape: copy the input view as it is
    count: int                              # elements of the box
    out_shape: tuple[int, ...] = ()         # the output tensor's


def border_slabs(out_shape: tuple[int, ...], box: tuple[slice, ...]) -> tuple[tuple[slice, ...], ...]:
    """Disjoint slabs covering ``out_shape`` minus ``box`` (non-empty ones only)."""
    slabs = []
    for d, dim in enumerate(out_shape):
        for part in (slice(0, box[d].start), slice(box[d].stop, dim)):
            region = box[:d] + (part,) + tuple(slice(0, n) for n in out_shape[d + 1:])
            if all(s.stop > s.start for s in region):
                slabs.append(region)
    return tuple(slabs)


class FastPad(Kernel):
    def __init__(self, reference=REFERENCE):
        self.reference = reference
        self.ops = reference.ops

    def prepare(self, ctx, op) -> FastPadData:
        ref = self.reference.prepare(ctx, op)
        x, y = ctx.input(op, 0), ctx.output(op, 0)
        count = int(np.prod(ref.box_shape, dtype=np.int64))
        return FastPadData(ref, border_slabs(y.shape, ref.out_slices), ref.box_shape == x.shape, count,
                           tuple(y.shape))

    def bind(self, ctx, op, data: FastPadData):
        """On fixed views with a constant fill and the box the input's shape: the fill and the copy as NumPy's own
        ``copyto`` calls on views taken once -- a small output filled whole (two calls), a larger one slab by slab
        (None otherwise, and for views of some rows: a phased segment's)."""
        x, out = ctx.input(op, 0), ctx.output(op, 0)
        if data.ref.fill is None or not data.whole_input or out.shape != data.out_shape \
                or x.shape != data.ref.box_shape or np.may_share_memory(x, out):
            return None
        fill = np.array(data.ref.fill, out.dtype)
        regions = [out] if out.size <= WHOLE_FILL_BELOW else [out[slab] for slab in data.slabs]
        return bind_copies([(region, np.broadcast_to(fill, region.shape)) for region in regions]
                           + [(out[data.ref.out_slices], x)])

    def invoke(self, ctx, op, data: FastPadData) -> None:
        out = ctx.output(op, 0)
        fill = data.ref.fill if data.ref.fill is not None else ctx.input(op, 2).reshape(-1)[0]
        x = unclobbered(ctx.input(op, 0), out)
        for slab in data.slabs:
            out[slab] = fill
        if data.whole_input:
            out[data.ref.out_slices] = x
        else:
            out[data.ref.out_slices] = x.reshape(-1)[:data.count].reshape(data.ref.box_shape)


KERNEL = FastPad()
