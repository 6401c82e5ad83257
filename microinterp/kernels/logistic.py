"""LOGISTIC (sigmoid): float32, int8 (gemmlowp fixed point) and int16 (sigmoid table), as TFLM computes them.

TFLM (``micro/kernels/logistic.cc``, ``logistic_common.cc``, ``reference/integer_ops/logistic.h``,
``reference/logistic.h``):

* Prepare: input and output types equal. int8: output zero point must be -128 (scale 1/256 assumed, not checked);
  ``(q, ls) = frexp(double(s_in) * 2^27)``, ``M = round(q * 2^31)`` (no QuantizeMultiplier fix-up);
  ``radius = floor(15 * 2^27 / 2^ls)``. int16: input and output zero point 0, output scale 2^-15 (CheckedLog2);
  input scale 2^-12 is the power-of-two case (multiplier 3, shift 0), otherwise ``m = s_in * 4096 * 3`` doubled
  (shift += 1) while ``m <= 32767/2`` and shift <= 30, multiplier ``int(m)``.
* int8: ``v = x - zp_in``; ``v <= -radius -> -128``; ``v >= radius -> 127``; else
  ``clamp(RDBPOT(logistic(MBQM(v, M, ls) as Q4.27), 23) - 128)``.
* int16: :func:`~microinterp.quant.logistic_int16` (``input = (x * M + round) >> shift`` in Q.9 of the 1/24-step
  table).
* float32: ``x > 16.619047 -> 1``; ``x < -9 -> expf(x)``; else ``1 / (1 + expf(-x))`` (float32, C library expf).
* Other types pass TFLM's Prepare and fail in Eval; here they are refused at prepare.

Speed: the int8 and int16 functions are element-wise and deterministic, so Prepare evaluates them once for every
possible input value (256 or 65536) and Eval is a table look-up (microinterp's own cache in OpData, not a TFLM
buffer, so it takes no arena memory).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from .. import libm
from ..quant import (
    QMAX,
    QMIN,
    calculate_input_radius,
    checked_log2,
    fixed_point_logistic,
    logistic_int16,
    mbqm,
    rdbpot,
)
from ._qutil import all_codes, bind_lookup, copyto, count_nonzero, lookup, qparams
from .bands import ROW_LOCAL
from .contract import ELEMENTWISE, Kernel

_INPUT_INTEGER_BITS = 4  # int8 path: input rescaled to Q4.27


@dataclass(frozen=True)
class LogisticData:
    mode: str               # "float", "int8" or "int16"
    input_zero_point: int
    input_range_radius: int
    input_multiplier: int
    input_left_shift: int
    table: np.ndarray | None = None  # int8 / int16: output for every input value, indexed by uint8/uint16 view


def int8_input_params(scale: float) -> tuple[int, int, int]:
    """(multiplier, left shift, radius) of the int8 LOGISTIC/TANH Prepare: frexp(s_in * 2^27), no fix-up."""
    q, shift = math.frexp(float(np.float32(scale)) * float(1 << (31 - _INPUT_INTEGER_BITS)))
    multiplier = math.floor(abs(q) * (1 << 31) + 0.5) * (1 if q >= 0 else -1)
    return multiplier, shift, calculate_input_radius(_INPUT_INTEGER_BITS, shift, 31)


def int16_input_params(ctx, op, x, y, pot_shifts: tuple[int, ...]) -> tuple[int, int]:
    """(multiplier, left shift) of the int16 LOGISTIC/TANH Prepare (multiplier 0 = power-of-two case)."""
    s_in, zp_in = qparams(x)
    s_out, zp_out = qparams(y)
    if zp_in != 0 or zp_out != 0:
        raise ctx.fail(op, "int16 input and output zero points must be 0")
    pot, log2_in = checked_log2(s_in)
    left_shift = (15 - 3) + log2_in
    if pot and left_shift in pot_shifts:
        multiplier = 0
    else:
        m = float(np.float32(s_in)) * 4096.0 * 3.0
        left_shift = 0
        while m <= 32767.0 / 2.0 and left_shift <= 30:
            left_shift += 1
            m *= 2.0
        multiplier = int(m)
    out_pot, log2_out = checked_log2(s_out)
    if not out_pot or log2_out != -15:
        raise ctx.fail(op, f"int16 output scale must be 2^-15, got {s_out}")
    return multiplier, left_shift


class Logistic(Kernel):
    ops = ("LOGISTIC",)
    traits = ELEMENTWISE
    op_class = "elementwise"
    cost_family = "elementwise"
    opdata = 16
    #: out of core: row bands (a row of the output from the same row of its inputs)
    bands = ROW_LOCAL

    def prepare(self, ctx, op) -> LogisticData:
        x, y = ctx.require_input(op, 0), ctx.output(op, 0)
        if x.type_name != y.type_name:
            raise ctx.fail(op, f"input type {x.type_name} differs from output type {y.type_name}")
        if x.shape != y.shape:
            raise ctx.fail(op, f"input shape {x.shape} and output shape {y.shape} differ (TFLM's Eval reads them with "
                               "MatchingFlatSize)")
        if x.type_name == "INT8":
            if qparams(y)[1] != -128:
                raise ctx.fail(op, f"int8 output zero point must be -128, got {qparams(y)[1]}")
            m, shift, radius = int8_input_params(qparams(x)[0])
            data = LogisticData("int8", qparams(x)[1], radius, m, shift)
            return replace(data, table=_logistic_int8(all_codes("INT8"), data))
        if x.type_name == "INT16":
            m, shift = int16_input_params(ctx, op, x, y, pot_shifts=(0,))
            return LogisticData("int16", 0, 0, m, shift, logistic_int16(all_codes("INT16"), m, shift))
        if x.type_name == "FLOAT32":
            return LogisticData("float", 0, 0, 0, 0)
        raise ctx.fail(op, f"unsupported type {x.type_name}")

    def bind(self, ctx, op, data: LogisticData):
        """float32 on fixed views: :func:`logistic_float` into a kept buffer and the output; int8 / int16: the
        table's lookup (:func:`._qutil.bind_lookup`)."""
        x, out = ctx.input(op, 0), ctx.output(op, 0)
        if not x.size:
            return None
        return bind_logistic_float(x, out) if data.mode == "float" else bind_lookup(data.table, x, out)

    def invoke(self, ctx, op, data: LogisticData) -> None:
        x = ctx.input(op, 0)
        out = ctx.output(op, 0)
        if data.mode == "float":
            out[...] = logistic_float(x)
        else:
            out[...] = lookup(data.table, x)


def int8_function(x: np.ndarray, data, fixed_point_fn, output_shift: int, output_offset: int) -> np.ndarray:
    """The int8 LOGISTIC/TANH Eval: ``v = x - zp_in``; ``v <= -radius -> -128``; ``v >= radius -> 127``; else
    ``clamp(RDBPOT(fixed_point_fn(MBQM(v, M, ls) as Q4.27), output_shift) + output_offset)``. ``data`` holds
    ``input_zero_point``, ``input_range_radius``, ``input_multiplier`` and ``input_left_shift``."""
    v = x.astype(np.int64) - data.input_zero_point
    q = fixed_point_fn(mbqm(v, data.input_multiplier, data.input_left_shift), _INPUT_INTEGER_BITS)
    value = np.clip(rdbpot(q, output_shift) + output_offset, QMIN["INT8"], QMAX["INT8"])
    return np.where(v <= -data.input_range_radius, QMIN["INT8"],
                    np.where(v >= data.input_range_radius, QMAX["INT8"], value)).astype(np.int8)


def _logistic_int8(x: np.ndarray, data: LogisticData) -> np.ndarray:
    """Result in Q0.8 (``>> 23``) with the output zero point -128 added."""
    return int8_function(x, data, fixed_point_logistic, 31 - 8, QMIN["INT8"])


def bind_logistic_float(x: np.ndarray, out: np.ndarray):
    """:func:`logistic_float` of the fixed float32 view ``x`` written into ``out`` (same shape) as a call without
    arguments, on kept buffers (also the float LSTM's gates); under the caller's errstate ignoring float errors."""
    t = np.empty(x.shape, np.float32)
    expf, one = libm.into("expf"), np.array(1.0, np.float32)    # 0-d operands: cheaper per call than scalars
    above, below = np.array(_SATURATE_ABOVE), np.array(_EXP_BELOW)
    high, low = np.empty(x.shape, bool), np.empty(x.shape, bool)

    def call() -> None:
        np.negative(x, t)
        expf(t, t)
        np.add(one, t, t)
        np.divide(one, t, out)
        if count_nonzero(np.greater(x, above, high)):
            copyto(out, one, where=high)
        if count_nonzero(np.less(x, below, low)):
            expf(x, t)
            copyto(out, t, where=low)
    return call


def logistic_float(x: np.ndarray) -> np.ndarray:
    """``reference_ops::Logistic`` (float32): 1 above 16.619047, ``expf(x)`` below -9, else ``1 / (1 + expf(-x))``
    (also the LSTM's gate sigmoid)."""
    x = np.asarray(x, dtype=np.float32)
    one = np.float32(1.0)
    with np.errstate(over="ignore", invalid="ignore"):
        mid = (one / (one + libm.expf(-x))).astype(np.float32)
        return np.where(x > _SATURATE_ABOVE, one, np.where(x < _EXP_BELOW, libm.expf(x), mid)).astype(np.float32)


_SATURATE_ABOVE = np.float32(16.619047164916992188)     # above: 1
_EXP_BELOW = np.float32(-9.0)                           # below: expf(x)


KERNEL = Logistic()
