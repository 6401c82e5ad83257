"""REDUCE_MAX over constant or runtime axes: float32 and int8.

TFLM (``micro/kernels/reduce.cc`` + ``reduce_common.cc`` PrepareMaxHelper / EvalMaxHelper, ``reference/reduce.h``
ReduceGeneric): Prepare requests two planned scratch buffers, ``4*rank`` then ``4*num_axis_entries``. Eval folds
``current = in > current ? in : current`` from ``lowest`` in TFLM's visiting order:

* int8: requires exactly equal input/output scale (compared as double) and zero point, no requantization; start -128.
* float32: start at ``-FLT_MAX``. Consequences kept here: NaN never wins (``NaN > x`` is false), an all ``-inf`` row
  gives ``-FLT_MAX``, and among equal zeros the first one visited keeps its sign.
TFLM checks the types and the int8 quantization only at Eval; we refuse at prepare.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import reduce_common as rc
from .contract import PURE, Kernel

SUPPORTED = ("FLOAT32", "INT8")


@dataclass(frozen=True)
class ReduceMaxData:
    io: rc.ReduceIO


def float_max(r: np.ndarray, fn: np.ufunc = np.fmax, start: float = float(np.finfo(np.float32).min)) -> np.ndarray:
    """Row maxima with TFLM's semantics (``fmax`` ignores NaN; a zero maximum takes the first zero's sign); with
    ``fn=np.fmin, start=FLT_MAX`` the minima of REDUCE_MIN (the same two rules hold)."""
    m = fn.reduce(r, axis=1, initial=start).astype(np.float32)
    zero = m == 0
    if np.any(zero):
        first = np.argmax(r[zero] == 0, axis=1)
        m[zero] = r[zero][np.arange(first.size), first]
    return m


class ReduceMax(Kernel):
    """REDUCE_MAX; :mod:`.reduce_min` reuses it with the opposite fold."""
    ops = ("REDUCE_MAX",)
    traits = PURE
    opdata = 44

    name = "REDUCE_MAX"
    #: out of core: bands of rows for constant axes (:class:`.reduce_common.ReduceRows`)
    bands = rc.ReduceRows("fold")

    def macs(self, op, tensors, elements: int) -> int:
        """One add or compare per input element."""
        return tensors[op.inputs[0]].num_elements

    def fold(self, r: np.ndarray, type_name: str) -> np.ndarray:
        return float_max(r) if type_name == "FLOAT32" else np.max(r, axis=1, initial=-128)

    def prepare(self, ctx, op) -> ReduceMaxData:
        io = rc.prepare_reduce(ctx, op, SUPPORTED)
        if io.input_type == "INT8":
            x, y = ctx.require_input(op, 0), ctx.output(op, 0)
            if x.quantization is None or y.quantization is None:
                raise ctx.fail(op, f"INT8 {self.name} needs quantized input and output tensors")
            if x.quantization.scale != y.quantization.scale:
                raise ctx.fail(op, f"input scale {x.quantization.scale} differs from output scale "
                                   f"{y.quantization.scale}")
            if x.quantization.zero_point != y.quantization.zero_point:
                raise ctx.fail(op, f"input zero point {x.quantization.zero_point} differs from output zero point "
                                   f"{y.quantization.zero_point}")
        rc.request_scratch(ctx, op, io, with_sums=False)
        return ReduceMaxData(io)

    def invoke(self, ctx, op, data: ReduceMaxData) -> None:
        r = rc.rows(ctx.input(op, 0), rc.runtime_axes(ctx, op, data.io))
        ctx.output(op, 0).reshape(-1)[...] = self.fold(r, data.io.input_type)


KERNEL = ReduceMax()
