"""REDUCE_ALL: logical AND over constant or runtime axes, BOOL only (``micro/kernels/reduce.cc``,
``reduce_common.cc`` PrepareAllHelper / EvalAllHelper).

Prepare (TFLM): the input is BOOL, the axis INT32; scratch requests ``4*rank`` then ``4*num_axis_entries`` (as
REDUCE_MAX). Eval folds ``in && current`` from ``true`` (an empty reduction gives true). Axes follow
:mod:`.reduce_common` (duplicates dropped, negative axes wrapped, the output in the input's row-major order).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import reduce_common as rc
from .contract import PURE, Kernel


@dataclass(frozen=True)
class ReduceAllData:
    io: rc.ReduceIO


class ReduceAll(Kernel):
    ops = ("REDUCE_ALL",)
    traits = PURE
    def prepare(self, ctx, op) -> ReduceAllData:
        io = rc.prepare_reduce(ctx, op, ("BOOL",))
        rc.request_scratch(ctx, op, io, with_sums=False)
        return ReduceAllData(io)

    def invoke(self, ctx, op, data: ReduceAllData) -> None:
        r = rc.rows(ctx.input(op, 0), rc.runtime_axes(ctx, op, data.io))
        ctx.output(op, 0).reshape(-1)[...] = np.all(r, axis=1)


KERNEL = ReduceAll()
