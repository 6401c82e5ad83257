"""LOG_SOFTMAX along the last axis (``micro/kernels/log_softmax.cc``, ``reference/log_softmax.h``).

Prepare (TFLM): one input, one output of the same type and shape. INT8 needs output scale exactly 16/256 and zero
point 127; ``(M, ls)`` from ``PreprocessSoftmaxScaling(beta = 1, s_in, 5)`` (``min(s_in * 2^26, 2^31 - 1)`` through
QuantizeMultiplierGreaterThanOne), ``(R, rs) = QuantizeMultiplierSmallerThanOneExp(2^(31 - ls) / M)`` and
``diff_min = -CalculateInputRadius(5, ls)``.

* FLOAT32, per row: ``max`` by ``std::max`` from lowest (NaN never wins), ``sum += expf(x - max)`` in order,
  ``out = (x - max) - logf(sum)``, all float32.
* INT8 (``LogSoftmaxQuantized``), per row: ``d = x - max``; for ``d >= diff_min`` add
  ``Rescale<12>(exp_on_negative_values(MBQM(d, M, ls) as Q5))`` to a Q12 sum; ``L = log_x(sum)`` in Q5 (see
  :func:`microinterp.quant.log_x_for_x_greater_than_or_equal_to_1`); ``adj = max(diff_min - 1, MBQM(L + INT32_MIN,
  R, rs))``; elements with ``d > adj`` get ``clamp(RDBPOT(MBQM(d, M, ls) - L, 22) + 127)``, the others -128.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from numpy._core import umath as np_umath

from .. import libm
from ..quant import (
    INT32_MIN,
    calculate_input_radius,
    exp_on_negative_values,
    log_x_for_x_greater_than_or_equal_to_1,
    mbqm,
    quantize_multiplier,
    quantize_multiplier_smaller_than_one_exp,
    rdbpot,
    wrap_int32,
)
from ._qutil import check_scales, qparams
from .bands import ROW_NORMALISED
from .contract import PURE, Kernel
from .softmax import bind_row_max

INPUT_INTEGER_BITS = 5
ACCUMULATION_INTEGER_BITS = 12
OUTPUT_INTEGER_BITS = 4
OUTPUT_SCALE = np.float32(16.0 / 256)
OUTPUT_ZERO_POINT = 127


@dataclass(frozen=True)
class LogSoftmaxData:
    multiplier: int = 0
    left_shift: int = 0
    reverse_multiplier: int = 0
    reverse_shift: int = 0
    diff_min: int = 0
    #: INT8: for every d in [-255, 0], MBQM(d, M, ls) (index d + 255) and its Q12 exp contribution
    scaled: np.ndarray | None = field(default=None, repr=False)
    contribution: np.ndarray | None = field(default=None, repr=False)


class LogSoftmax(Kernel):
    ops = ("LOG_SOFTMAX",)
    traits = PURE
    op_class = "softmax"
    #: out of core: row bands (normalised along the last axis, within a row)
    bands = ROW_NORMALISED

    def prepare(self, ctx, op) -> LogSoftmaxData:
        ctx.check_io_count(op, 1, 1)
        x, y = ctx.require_input(op, 0), ctx.output(op, 0)
        if x.type_name != y.type_name or tuple(x.shape) != tuple(y.shape):
            raise ctx.fail(op, f"output {y.type_name} {y.shape} differs from input {x.type_name} {x.shape}")
        if x.type_name not in ("FLOAT32", "INT8"):
            raise ctx.fail(op, f"LOG_SOFTMAX only supports float32 and int8, got {x.type_name}")
        if len(x.shape) < 1:
            raise ctx.fail(op, "the input needs at least one dimension")
        if x.type_name == "FLOAT32":
            return LogSoftmaxData()
        check_scales(ctx, op, x, y)
        (s_in, _), (s_out, zp_out) = qparams(x), qparams(y)
        if np.float32(s_out) != OUTPUT_SCALE or zp_out != OUTPUT_ZERO_POINT:
            raise ctx.fail(op, f"int8 LOG_SOFTMAX needs output scale 16/256 and zero point 127, got {s_out}, {zp_out}")
        real = min(1.0 * float(s_in) * float(1 << (31 - INPUT_INTEGER_BITS)), float((1 << 31) - 1))
        if not real > 1.0:
            raise ctx.fail(op, f"input_scale * 2^26 = {real} must exceed 1 (QuantizeMultiplierGreaterThanOne)")
        m, ls = quantize_multiplier(real)
        rev_m, rev_s = quantize_multiplier_smaller_than_one_exp((1 << (31 - ls)) / float(m))
        diff_min = -calculate_input_radius(INPUT_INTEGER_BITS, ls)
        d = np.arange(-255, 1, dtype=np.int64)
        valid = d >= diff_min
        scaled = mbqm(np.where(valid, d, 0), m, ls)
        contribution = np.where(valid, rdbpot(exp_on_negative_values(scaled, INPUT_INTEGER_BITS),
                                              ACCUMULATION_INTEGER_BITS), 0)
        return LogSoftmaxData(m, ls, rev_m, rev_s, diff_min, scaled.astype(np.int64), contribution.astype(np.int64))

    def bind(self, ctx, op, data: LogSoftmaxData):
        """float32 on fixed contiguous views: what :meth:`invoke` computes, into kept buffers (None otherwise)."""
        x, out = ctx.input(op, 0), ctx.output(op, 0)
        if data.scaled is not None or not x.size or not (x.flags.c_contiguous and out.flags.c_contiguous):
            return None
        rows = x.reshape(-1, x.shape[-1])
        dst = out.reshape(rows.shape)
        top = np.empty((rows.shape[0], 1), np.float32)
        diff, running = np.empty(rows.shape, np.float32), np.empty(rows.shape, np.float32)
        log_total = np.empty((rows.shape[0], 1), np.float32)
        lowest, expf, logf = np.float32(np.finfo(np.float32).min), libm.into("expf"), libm.into("logf")
        accumulate = np_umath.add.accumulate
        if rows.shape[1] == 1 and rows.shape[0] > 1:
            # rows of one element: the maximum is the element (lowest where it is NaN or below), the sum its
            # exponential -- every step on same-shaped flat operands (a [R, 1] column to broadcast cost twice)
            flat, dst, diff, e = rows.reshape(-1), dst.reshape(-1), diff.reshape(-1), running.reshape(-1)
            top, log_e, fmax = np.empty(flat.shape, np.float32), np.empty(flat.shape, np.float32), np_umath.fmax
            floor = np.array(lowest, np.float32)

            def singles() -> None:    # under the runtime's quiet errstate
                fmax(flat, floor, out=top)           # std::max(lowest, x): NaN never wins
                np.subtract(flat, top, out=diff)
                expf(diff, e)
                logf(e, log_e)
                np.subtract(diff, log_e, out=dst)
            return singles
        if rows.shape[0] == 1:      # one row: 1-D operands, nothing for NumPy to broadcast ([1, 1] ones cost more)
            row, dst, diff, running = rows[0], dst[0], diff[0], running[0]
            # 0-d operands (a 1-element [1] operand to broadcast costs NumPy 0.35 us more a call)
            top, log_total = np.empty((), np.float32), np.empty((), np.float32)
            total, row_max = running[-1, ...], bind_row_max(row, top)

            def one_row() -> None:    # under the runtime's quiet errstate
                row_max()
                np.subtract(row, top, out=diff)
                expf(diff, running)
                accumulate(running, out=running)        # left to right, as the C loop
                logf(total, log_total)
                np.subtract(diff, log_total, out=dst)
            return one_row

        def call() -> None:       # under the runtime's quiet errstate
            np.fmax.reduce(rows, axis=1, keepdims=True, initial=lowest, out=top)
            np.subtract(rows, top, out=diff)
            expf(diff, running)
            accumulate(running, axis=1, out=running)        # left to right, as the C loop
            logf(running[:, -1:], log_total)
            np.subtract(diff, log_total, out=dst)
        return call

    def invoke(self, ctx, op, data: LogSoftmaxData) -> None:
        x, out = ctx.input(op, 0), ctx.output(op, 0)
        depth = x.shape[-1]
        rows = x.reshape(-1, depth)
        if rows.size == 0:
            return
        if data.scaled is None:
            with np.errstate(all="ignore"):
                lowest = np.float32(np.finfo(np.float32).min)
                row_max = np.fmax.reduce(rows, axis=1, initial=lowest).astype(np.float32)
                diff = (rows - row_max[:, None]).astype(np.float32)
                total = np.add.accumulate(libm.expf(diff), axis=1, dtype=np.float32)[:, -1]
                out[...] = (diff - libm.logf(total)[:, None]).astype(np.float32).reshape(out.shape)
            return
        d = rows.astype(np.int64) - rows.max(axis=1, keepdims=True)
        sums = wrap_int32(data.contribution[d + 255].sum(axis=1))
        log_sum = log_x_for_x_greater_than_or_equal_to_1(sums, ACCUMULATION_INTEGER_BITS, INPUT_INTEGER_BITS)
        adjusted = np.maximum(data.diff_min - 1,
                              mbqm(wrap_int32(log_sum + INT32_MIN), data.reverse_multiplier, data.reverse_shift))
        value = rdbpot(data.scaled[d + 255] - log_sum[:, None], 31 - INPUT_INTEGER_BITS - OUTPUT_INTEGER_BITS) \
            + OUTPUT_ZERO_POINT
        result = np.where(d > adjusted[:, None], np.clip(value, -128, 127), -128)
        out[...] = result.reshape(out.shape)


KERNEL = LogSoftmax()
