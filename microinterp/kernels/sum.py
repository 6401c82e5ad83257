"""SUM (reduce_sum) over constant or runtime axes: float32, int8, int16.

TFLM (``micro/kernels/reduce.cc`` + ``reduce_common.cc`` PrepareMeanOrSumHelper / EvalSumHelper): Prepare is MEAN's
(same ``(M, s) = QuantizeMultiplier(double(s_in) / double(s_out))`` for int8/int16, same three planned scratch
requests ``[4*num_outputs (int8/int16 only), 4*rank, 4*num_axis_entries]``).

* int8/int16: QuantizedMeanOrSum with ``compute_sum``: no 1/N fold, ``out = clamp(MBQM(int32(sum - zp_in*N), M, s)
  + zp_out)`` (int32 wrapping sum, double-rounding int32 MBQM; M may exceed 1, i.e. shift > 0, which shifts the
  int32 value left with wrap-around before the high multiply).
* float32: ReduceGeneric with init 0.0 and ``current + in``: a sequential float32 fold in TFLM's visiting order.
Other types fail TFLM's Eval (output type must equal input type); we refuse them at prepare.
"""

from __future__ import annotations

from dataclasses import dataclass

from . import reduce_common as rc
from .contract import PURE, Kernel

SUPPORTED = ("FLOAT32", "INT8", "INT16")


@dataclass(frozen=True)
class SumData:
    io: rc.ReduceIO
    multiplier: int
    shift: int
    input_zp: int
    output_zp: int


class Sum(Kernel):
    ops = ("SUM",)
    traits = PURE
    op_class = "pool"
    opdata = 44
    #: out of core: bands of rows for constant axes (:class:`.reduce_common.ReduceRows`)
    bands = rc.ReduceRows("sum")

    def macs(self, op, tensors, elements: int) -> int:
        """One add or compare per input element."""
        return tensors[op.inputs[0]].num_elements

    def prepare(self, ctx, op) -> SumData:
        return SumData(*rc.prepare_mean_or_sum(ctx, op, SUPPORTED))

    def invoke(self, ctx, op, data: SumData) -> None:
        r = rc.rows(ctx.input(op, 0), rc.runtime_axes(ctx, op, data.io))
        if data.io.input_type == "FLOAT32":
            result = rc.float_sum(r)
        else:
            result = rc.requantize_sums(r, data.io.input_type, data.input_zp, data.multiplier, data.shift,
                                        data.output_zp)
        ctx.output(op, 0).reshape(-1)[...] = result


KERNEL = Sum()
