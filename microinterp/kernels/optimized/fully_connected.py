"""FULLY_CONNECTED, optimized: the reference kernel's prepare and results; large int8 layers run as one float32 (or
float64) GEMM on raw int8 values plus the merged requantization epilogue (:mod:`._epilogue`). Bit-exact with
:mod:`microinterp.kernels.fully_connected`.

Fast path (int8 input, constant filter and bias, as prepared by the reference: ``data.weights`` holds ``w + w_off``
as float64 ``[accum, depth]``, ``data.bias`` the bias with the input zero point folded in, ``bias - zp_in sum_k
w'``): the input rows are copied into a float buffer ``[batches, accum + 1]`` whose last column is 1.0, the weight
matrix gets the folded bias as its last row, and the GEMM returns TFLM's exact accumulators. float32 when ``128
max_c sum_k |w'[c,k]| + |bias'_c| < 2^24`` (every partial sum exact), else float64. The epilogue gets each
channel's exact accumulator range (weights, int8 input range, bias).

Layers keep the reference (its bound call, see :meth:`FullyConnected.bind`) when it has its step-function
requantization and is faster than the GEMM plus epilogue (whose fixed cost is about 8 us): per-tensor int8 layers,
whose search index is the output code, below 1536 outputs (measured: 1x1280->1000 96 us against 107 us, 8x256->256
53 us against 40 us); per-channel layers below 512 outputs and 2^17 multiply-adds (a per-channel 1280->1000 layer:
120 us against 240 us); layers with one input value per batch (the reference's exhaustive table). int16x8 and
float32 layers, and anything not constant, also run the reference. With int4 weights the unpack scratch stays in the
arena plan; the fast path does not refill it on every invoke (the weights were unpacked at prepare).
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from functools import partial

import numpy as np

from ..fully_connected import KERNEL as REFERENCE
from ..fully_connected import FullyConnectedData
from ..fully_connected_bound import code_padding
from ._epilogue import Epilogue, accumulator_range, gemm, gemm_weights

#: smaller layers keep the reference when it has per-channel step-function requantization: measured on the zoo,
#: the GEMM + epilogue wins from about 512 outputs or 2^17 multiply-adds on
_MIN_OUTPUTS = 512
_MIN_PRODUCT = 1 << 17
#: ... and below this many outputs when the step index is the int8 code itself (one channel of steps): a search per
#: output against the epilogue's fixed cost (measured: 1x1280->1000 96 us vs 107 us, 8x256->256 53 us vs 40 us)
_MIN_CODE_OUTPUTS = 1536


@dataclass(frozen=True)
class FastFullyConnectedData(FullyConnectedData):
    """The reference OpData (every field, so reference helpers accept it) plus the fast path's plan."""

    plan: FullyConnectedPlan | None = None      # None: the reference invoke runs


class FullyConnectedPlan:
    """Column buffer, GEMM weights and epilogue of one layer, built at prepare."""

    __slots__ = ("accum", "cols", "epilogue", "inputs", "weights")

    def __init__(self, data: FullyConnectedData, bias: np.ndarray | None):
        accum, depth = data.weights.shape
        w = data.weights.T.astype(np.int64)                                   # [depth, accum], w + w_off
        bias64 = np.zeros(depth, np.int64) if bias is None else bias.reshape(-1)[:depth].astype(np.int64)
        self.epilogue = Epilogue(data.multiplier, data.shift, data.output_offset, int(data.act_min),
                                 int(data.act_max), accumulator_range(w, -data.input_offset, bias64))
        self.weights = gemm_weights(w, data.bias, self.epilogue.constant)
        self.accum = accum
        self.inputs = data.batches * accum
        self.cols = np.ones((data.batches, accum + 1), self.weights.dtype)

    def run(self, x: np.ndarray, out: np.ndarray) -> None:
        """``out``: the output tensor (``batches * depth`` values, C-contiguous)."""
        np.copyto(self.cols[:, :self.accum], x.reshape(-1)[:self.inputs].reshape(len(self.cols), self.accum))
        self.epilogue(gemm(self.cols, self.weights, "fc_acc"), out)


def _plan(ctx, op, data: FullyConnectedData) -> FullyConnectedPlan | None:
    if data.type_name != "INT8" or data.int64_acc or data.weights is None or data.table is not None:
        return None
    outputs = data.batches * data.depth
    if data.steps is not None:
        if code_padding(data) is not None:
            if outputs < _MIN_CODE_OUTPUTS:
                return None
        elif outputs < _MIN_OUTPUTS and outputs * data.accum < _MIN_PRODUCT:
            return None
    bias = ctx.input(op, 2)
    if bias is not None and bias.data is None:
        return None
    return FullyConnectedPlan(data, None if bias is None else bias.data)


class FullyConnected:
    def prepare(self, ctx, op) -> FastFullyConnectedData:
        data = REFERENCE.prepare(ctx, op)
        return FastFullyConnectedData(**{f.name: getattr(data, f.name) for f in fields(FullyConnectedData)},
                                      plan=_plan(ctx, op, data))

    def invoke(self, ctx, op, data: FastFullyConnectedData) -> None:
        if data.plan is None:
            REFERENCE.invoke(ctx, op, data)
            return
        data.plan.run(ctx.input(op, 0), ctx.output(op, 0))

    def bind(self, ctx, op, data: FastFullyConnectedData):
        """The interpreter's flat invoke loop: the plan on the op's fixed views, else the reference's call."""
        if data.plan is None:
            return REFERENCE.bind(ctx, op, data)
        return partial(data.plan.run, ctx.input(op, 0), ctx.output(op, 0))


KERNEL = FullyConnected()
