"""MEAN (reduce_mean) over constant or runtime axes: float32, int8, int16.

TFLM (``micro/kernels/reduce.cc`` + ``reduce_common.cc`` PrepareMeanOrSumHelper / EvalMeanHelper,
``reference/reduce.h`` Mean and QuantizedMeanOrSum):

* Prepare: int8/int16 get ``(M, s) = QuantizeMultiplier(double(s_in) / double(s_out))`` and request three planned
  scratch buffers in this order: ``4*num_outputs`` (int32 sums), ``4*rank``, ``4*num_axis_entries``; float32 requests
  only the last two. The sizes and the order decide the arena head (mobilenet_v2's head depends on them).
* int8/int16 (always the requantizing path, even when input and output quantization are equal): per output the int32
  sum of its N reduced elements (wrapping), then the 1/N factor is folded into the multiplier:
  ``k = min(floor(log2 N), 32, 31 + s)``, ``M' = (M << k) // N`` (int64), ``s' = s - k``, and
  ``out = clamp(MBQM(int32(sum - zp_in*N), M', s') + zp_out)`` with the double-rounding int32 MBQM. Pitfall: this is
  not ``round(mean)`` and not a per-element requantization; the truncating ``// N`` loses low bits of M on purpose.
* float32: sequential float32 sum from +0.0 in TFLM's visiting order, then ``sum / float(N)`` (the 4-D keep_dims
  axes-{1,2} special case computes the same sequence).
Types other than these fail TFLM's Eval; we refuse them at prepare.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from . import reduce_common as rc
from ._float_order import REDUCE_ROWS_IN_ORDER
from ._qutil import copyto
from .contract import PURE, Kernel
from .reduce_common import fold_mean_multiplier

SUPPORTED = ("FLOAT32", "INT8", "INT16")


@dataclass(frozen=True)
class MeanData:
    io: rc.ReduceIO
    multiplier: int              # QuantizeMultiplier(s_in / s_out), before the 1/N fold
    shift: int
    folded: tuple[int, int] | None  # (M', s') when the axes are constant
    input_zp: int
    output_zp: int


class Mean(Kernel):
    ops = ("MEAN",)
    traits = PURE
    op_class = "pool"
    opdata = 44
    #: out of core: bands of rows for constant axes (:class:`.reduce_common.ReduceRows`)
    bands = rc.ReduceRows("mean")

    def macs(self, op, tensors, elements: int) -> int:
        """One add or compare per input element."""
        return tensors[op.inputs[0]].num_elements

    def prepare(self, ctx, op) -> MeanData:
        io, multiplier, shift, in_zp, out_zp = rc.prepare_mean_or_sum(ctx, op, SUPPORTED)
        folded = None
        if io.input_type != "FLOAT32" and io.axes is not None:
            folded = fold_mean_multiplier(multiplier, shift, max(rc.reduced_count(io.input_shape, io.axes), 1))
        return MeanData(io, multiplier, shift, folded, in_zp, out_zp)

    def bind(self, ctx, op, data: MeanData):
        """float32 over constant axes into two or more outputs, on fixed views: the input copied reduced-axes-first
        into a kept ``[N, outputs]`` buffer (read in place where it is laid out so already), its rows added in order
        from ``+0.f`` (outputs that end NaN folded again one by one, as x86 picks NaN operands), the division by
        ``N`` into the output (None otherwise)."""
        x, out = ctx.input(op, 0), ctx.output(op, 0)
        axes = data.io.axes
        if data.io.input_type != "FLOAT32" or axes is None or not x.size or not out.flags.c_contiguous \
                or out.size < 2 or not REDUCE_ROWS_IN_ORDER:
            return None
        kept = [d for d in range(x.ndim) if d not in axes]
        reduced = sorted(axes)
        n = rc.reduced_count(x.shape, axes)
        src = x.transpose(reduced + kept)
        if src.flags.c_contiguous:      # the reduced axes lead already (the mean over a sequence): no copy
            t, t_view = src.reshape(n, out.size), None
        else:
            t = np.empty((n, out.size), np.float32)
            t_view = t.reshape([x.shape[d] for d in reduced] + [x.shape[d] for d in kept])
        total, flat = np.empty(out.size, np.float32), out.reshape(-1)
        zero, count = np.float32(0.0), np.array(n, np.float32)
        total_dot, ones = total.dot, np.ones(out.size, np.float32)     # NaN where a total is (or inf - inf)

        def call() -> None:       # under the runtime's quiet errstate
            if t_view is not None:
                copyto(t_view, src)
            np.add.reduce(t, axis=0, out=total, initial=zero)
            if math.isnan(total_dot(ones)):
                bad = np.flatnonzero(np.isnan(total))
                total[bad] = rc.float_sum(np.ascontiguousarray(t[:, bad].T))
            np.divide(total, count, out=flat)
        return call

    def invoke(self, ctx, op, data: MeanData) -> None:
        axes = rc.runtime_axes(ctx, op, data.io)
        r = rc.rows(ctx.input(op, 0), axes)
        out = ctx.output(op, 0)
        if data.io.input_type == "FLOAT32":
            result = rc.float_sum(r) / np.float32(max(r.shape[1], 1))
        else:
            m, s = data.folded or fold_mean_multiplier(data.multiplier, data.shift, max(r.shape[1], 1))
            result = rc.requantize_sums(r, data.io.input_type, data.input_zp, m, s, data.output_zp)
        out.reshape(-1)[...] = result


KERNEL = Mean()
