"""SOFTMAX over the last axis: float32, int8 -> int8, int8 -> int16 and int16 -> int16, as TFLM computes them.

TFLM (``micro/kernels/softmax.cc``, ``softmax_common.cc``, ``kernels/internal/reference/softmax.h``):

* Prepare: 1 input (rank >= 1), 1 output. Output int16 needs input int8 or int16; otherwise input and output types
  are equal. int16 input: input and output zero point 0, output scale 1/32768 (+- 0.1 %). int8 -> int16: output zp
  -32768, scale 1/65536 (+- 0.1 %). int8 -> int8: output zp -128 and scale *exactly* 1/256 (float32 compare).
  Any other type pair fails (only FLOAT32 remains).
* int8 input (gemmlowp fixed point, no LUT): ``real = min(beta * s_in * 2^26, 2^31 - 1)`` (double) ->
  QuantizeMultiplierGreaterThanOne -> (M, ls) (TFLM aborts when real <= 1; refused here);
  ``diff_min = -floor(31 * 2^26 / 2^ls)``. Per row: ``d = x - max``; where ``d >= diff_min``:
  ``e = exp_on_negative_values(SRDHM(d * 2^ls, M))`` (input Q5.26, output Q0.31), ``sum += RDBPOT(e, 12)`` (Q12.19,
  int32 wrap). ``(recip, nbits) = GetReciprocal(sum, 12)``; ``E = nbits + 31 - bits(out)``;
  ``out = clamp(RDBPOT(SRDHM(recip, e), E) + type_min)``; elements with ``d < diff_min`` get ``type_min``.
* int16 input (two 513-entry LUTs built in Prepare with ``LUTPopulate<int16_t>`` in float32 and kept in persistent
  memory: exp on [-10, 0] and 1/(1+x) on [0, 1]): ``(M, s) = QuantizeMultiplier(s_in * beta / (10/65535))``;
  ``e = LUT_exp(clamp16(MBQM(x - max, M, s) + 32767))``; ``sum = sum(e)`` (int32); ``h = clz32(sum)``;
  ``r = LUT_recip(clamp16((((sum << (h-1)) + 2^13) >> 14) - 98304))``;
  ``out = clamp((e * r + 2^(30-h)) >> (31 - h), 0, 32767)``.
* float32: ``max`` from ``lowest()`` by ``std::max`` (a NaN never wins), ``e = expf((x - max) * float(beta))``,
  ``sum`` accumulated left to right in float32, ``out = e / sum`` (NaN operands as x86 picks them).
  ``expf`` is the C library's (see :mod:`microinterp.libm`), not NumPy's.

Speed: for int8 input ``d = x - max`` lies in [-255, 0], so Prepare tabulates ``e`` and its Q12 contribution for
those 256 differences (an OpData cache, no arena memory); Eval keeps only the per-row reciprocal and the final
SRDHM / RDBPOT per element. Likewise the int16 exp look-up is tabulated for all 65536 differences in [-65535, 0].
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy._core import umath as np_umath

from .. import libm
from ..errors import CheckFailed
from ..quant import (
    QMAX,
    QMIN,
    calculate_input_radius,
    clz32,
    exp_on_negative_values,
    get_reciprocal,
    lut_lookup_int16,
    lut_populate_int16,
    mbqm,
    quantize_multiplier,
    rdbpot,
    reciprocal_int,
    srdhm,
    wrap_int32,
)
from ._float_order import REDUCE_ROWS_IN_ORDER
from ._qutil import copyto, qparams
from ._x86_nan import QUIET
from .bands import ROW_NORMALISED
from .binary_common import FLT_LOWEST
from .contract import PURE, Kernel

_SCALED_DIFF_INTEGER_BITS = 5
_ACCUMULATION_INTEGER_BITS = 12
EXPONENT_ERROR = "softmax: reciprocal exponent out of [0, 31] (TFLITE_CHECK in TFLM)"


#: Rows shorter than this take the bound float softmax's transposed form (:func:`_bind_narrow`).
NARROW_ROWS = 17        # 16 wide: 25 rows 6.0 -> 5.6 us, 1000 rows 75 -> 46 (32 wide: mixed)
#: Rows per block of the bound float softmax's transposing copy (both sides of a block stay in cache).
TRANSPOSE_ROWS = 64


@dataclass(frozen=True)
class SoftmaxData:
    mode: str                       # "float", "int8" (int8 input, int8 or int16 output) or "int16"
    beta: float                     # float32 beta (float mode)
    input_multiplier: int
    input_left_shift: int
    diff_min: int
    output_bits: int                # 8 or 16 (int8 mode)
    exp_lut: np.ndarray | None      # int16 mode: persistent 513-entry LUTs
    one_over_one_plus_x_lut: np.ndarray | None
    exp_table: np.ndarray | None = None      # exp(d) for every d = x - max (index d + 255 / d + 65535)
    sum_table: np.ndarray | None = None      # int8 mode: its Q12 contribution to the sum (0 below diff_min)


def _near(value: float, target: float, tolerance: float) -> bool:
    """TF_LITE_ENSURE_NEAR in float32."""
    f32 = np.float32
    return not abs(f32(value) - f32(target)) > f32(tolerance)


def _one_over_one_plus_x_f32(v):
    return (np.float32(1.0) / (np.float32(1.0) + np.asarray(v, np.float32))).astype(np.float32)


def int16_softmax_luts() -> tuple[np.ndarray, np.ndarray]:
    """The two LUTs of the int16 softmax (they do not depend on the op's parameters)."""
    f32 = np.float32
    range_ = f32(65535)
    exp_lut = lut_populate_int16(libm.expf, f32(10.0) / range_, 32767, f32(2.0) / range_, 0)
    recip_lut = lut_populate_int16(_one_over_one_plus_x_f32, f32(1.0) / range_, -32768, f32(2.0) / range_, 0)
    return exp_lut, recip_lut


class Softmax(Kernel):
    ops = ("SOFTMAX",)
    traits = PURE
    op_class = "softmax"
    cost_family = "softmax"
    opdata = 'd iiiiiii ppppp'
    #: out of core: row bands (normalised along the last axis, within a row)
    bands = ROW_NORMALISED

    def prepare(self, ctx, op) -> SoftmaxData:
        ctx.check_io_count(op, 1, 1)
        x, y = ctx.require_input(op, 0), ctx.output(op, 0)
        if len(x.shape) < 1:
            raise ctx.fail(op, "input must have at least one dimension")
        if x.num_elements != y.num_elements or (x.shape and y.shape and x.shape[-1] != y.shape[-1]):
            # TFLM only DCHECKs MatchingFlatSize: a smaller output would be written out of bounds
            raise ctx.fail(op, f"input shape {x.shape} and output shape {y.shape} differ")
        beta = float(np.float32(op.options.get("beta", 1.0)))
        if y.type_name == "INT16":
            if x.type_name not in ("INT8", "INT16"):
                raise ctx.fail(op, f"INT16 output needs an INT8 or INT16 input, got {x.type_name}")
        elif x.type_name != y.type_name:
            raise ctx.fail(op, f"input type {x.type_name} differs from output type {y.type_name}")
        s_in, zp_in = qparams(x)
        s_out, zp_out = qparams(y)
        if x.type_name == "INT16":
            if zp_out != 0 or zp_in != 0:
                raise ctx.fail(op, "int16 softmax needs input and output zero point 0")
            if not _near(s_out, np.float32(1.0) / np.float32(32768), np.float32(0.001) / np.float32(32768)):
                raise ctx.fail(op, f"int16 softmax needs output scale 1/32768, got {s_out}")
            exp_lut, recip_lut = int16_softmax_luts()
            m, s = quantize_multiplier(float(np.float32(s_in)) * beta / (10.0 / 65535.0))
            diff = np.arange(-65535, 1, dtype=np.int64)
            exp_table = lut_lookup_int16(np.clip(mbqm(diff, m, s) + 32767, -32768, 32767), exp_lut)
            return SoftmaxData("int16", beta, m, s, 0, 16, ctx.persistent(exp_lut), ctx.persistent(recip_lut),
                               exp_table)
        if x.type_name == "INT8":
            if y.type_name == "INT16":
                if zp_out != -32768:
                    raise ctx.fail(op, f"int8->int16 softmax needs output zero point -32768, got {zp_out}")
                if not _near(s_out, np.float32(1.0) / np.float32(65536), np.float32(0.001) / np.float32(65536)):
                    raise ctx.fail(op, f"int8->int16 softmax needs output scale 1/65536, got {s_out}")
            else:
                if zp_out != -128:
                    raise ctx.fail(op, f"int8 softmax needs output zero point -128, got {zp_out}")
                if np.float32(s_out) != np.float32(1.0 / 256):
                    raise ctx.fail(op, f"int8 softmax needs output scale exactly 1/256, got {s_out}")
            real = min(beta * float(np.float32(s_in)) * float(1 << (31 - _SCALED_DIFF_INTEGER_BITS)),
                       float((1 << 31) - 1))
            if not real > 1.0:
                # TFLITE_CHECK_GT in QuantizeMultiplierGreaterThanOne aborts the process in TFLM.
                raise ctx.fail(op, f"beta * input_scale * 2^26 = {real} must exceed 1")
            m, ls = quantize_multiplier(real)
            diff_min = -calculate_input_radius(_SCALED_DIFF_INTEGER_BITS, ls)
            d = np.arange(-255, 1, dtype=np.int64)
            valid = d >= diff_min
            # d * 2^ls cannot overflow for valid d (|d| <= radius); invalid entries are never used.
            e = np.where(valid, exp_on_negative_values(srdhm(np.where(valid, d, 0) << ls, m),
                                                       _SCALED_DIFF_INTEGER_BITS), 0)
            # Rescale<12>(Q0.31) = RDBPOT(e, 12); elements below diff_min add nothing.
            contribution = np.where(valid, rdbpot(e, _ACCUMULATION_INTEGER_BITS), 0)
            return SoftmaxData("int8", beta, m, ls, diff_min, 16 if y.type_name == "INT16" else 8, None, None,
                               e, contribution)
        if x.type_name != "FLOAT32":
            raise ctx.fail(op, f"unsupported type {x.type_name}")
        return SoftmaxData("float", beta, 0, 0, 0, 32, None, None)

    def bind(self, ctx, op, data: SoftmaxData):
        """float32 on fixed contiguous views: what :func:`_softmax_float` computes into kept buffers -- the row
        maxima, ``(x - max) * beta``, ``expf`` into place, the sequential row sums, the division into the output
        (None otherwise)."""
        x, out = ctx.input(op, 0), ctx.output(op, 0)
        if data.mode != "float" or not x.size or not (x.flags.c_contiguous and out.flags.c_contiguous):
            return None
        rows = x.reshape(-1, x.shape[-1]) if x.ndim else x.reshape(1, 1)
        dst = out.reshape(rows.shape)
        beta, expf, lowest = np.array(data.beta, np.float32), libm.into("expf"), FLT_LOWEST
        scaled = data.beta != 1.0       # (x - max) * 1.f is x - max, NaN, -0.f and infinities included
        sums_by_row = len(rows) >= 2 and REDUCE_ROWS_IN_ORDER
        e_t = np.empty(rows.shape[::-1], np.float32)
        total = np.empty(rows.shape[0], np.float32)
        # a NaN total shows in the totals' dot product with ones (a total is a sum of e in [0, 1], or NaN)
        ones = np.ones(rows.shape[0], np.float32)
        if sums_by_row and rows.shape[1] < NARROW_ROWS:
            return _bind_narrow(rows, dst, e_t, total, beta if scaled else None, ones)
        if rows.shape[0] == 1:
            return _bind_one_row(rows[0], dst[0], beta if scaled else None)
        top = np.empty((rows.shape[0], 1), np.float32)
        e = np.empty(rows.shape, np.float32)
        running = np.empty(rows.shape, np.float32)
        # the transposing copy in blocks of rows whose two sides stay in cache (2048 x 128: 225 -> 88 us)
        blocks = [(e_t[:, r:r + TRANSPOSE_ROWS], e[r:r + TRANSPOSE_ROWS].T)
                  for r in range(0, rows.shape[0], TRANSPOSE_ROWS)]
        sums = total if sums_by_row else running[:, -1]
        divisor, sums_dot = sums[:, None], sums.dot     # the bound method: no dispatch through np.dot

        def call() -> None:       # under the runtime's quiet errstate
            np.fmax.reduce(rows, axis=1, keepdims=True, initial=lowest, out=top)     # std::max: NaN never wins
            np.subtract(rows, top, out=e)
            if scaled:
                np.multiply(e, beta, out=e)
            expf(e, e)
            if sums_by_row:       # the C loop's sequential float32 sums, all rows at once
                for block_t, block in blocks:
                    copyto(block_t, block)
                np.add.reduce(e_t, axis=0, out=total)
            else:                 # (NumPy not reducing rows in order) every row's running sums, the last the total
                np.cumsum(e, axis=1, dtype=np.float32, out=running)
            np.divide(e, divisor, out=dst)
            if math.isnan(sums_dot(ones)):
                nan_rows_as_x86(e, sums, dst)
        return call

    def invoke(self, ctx, op, data: SoftmaxData) -> None:
        x = ctx.input(op, 0)
        out = ctx.output(op, 0)
        rows = x.reshape(-1, x.shape[-1]) if x.ndim else x.reshape(1, 1)
        if data.mode == "float":
            result = _softmax_float(rows, data.beta)
        elif data.mode == "int8":
            result = _softmax_int8(rows, data)
        else:
            result = _softmax_int16(rows, data)
        out[...] = result.reshape(out.shape)                  # cast to the output type on assignment


def _bind_narrow(rows: np.ndarray, dst: np.ndarray, e_t: np.ndarray, total: np.ndarray, beta: np.ndarray | None,
                 ones: np.ndarray):
    """The bound float softmax of many short rows, on the transposed exponentials ``e_t`` (``[W, R]``): every
    operation's inner loop runs over the rows (a ``[R, 1]`` operand against rows of a few elements made NumPy loop
    per row), the reduction over ``e_t``'s rows is the C loop's sequential sums, the quotients are copied into the
    output seen transposed. The same operations on the same values as the general form."""
    rows_t, dst_t, e = rows.T, dst.T, e_t.T
    top, expf = np.empty(rows.shape[0], np.float32), libm.into("expf")
    # the maxima over the transposed copy's rows: an elementwise fmax row after row (1000 x 15: 45 -> 9 us against
    # a reduction along rows this short); a maximum's zero sign cannot matter: x - max is then a zero, and expf gives
    # 1 either way
    fmax_rows, lowest, total_dot = np_umath.fmax.reduce, np.array(FLT_LOWEST, np.float32), total.dot
    # the maxima and the totals spread over every row of a [W, R] buffer by an assignment before the subtraction
    # and the division (same-shaped operands take NumPy's plain loop, a broadcast [R] operand its general
    # iterator), the quotients into that buffer and copied into the output seen transposed (a ufunc writing a
    # transposed view costs more than the copy): 25 x 3 rows 3.9-4.2 -> 3.5-3.6 us
    spread = np.empty(e_t.shape, np.float32)

    def call() -> None:       # under the runtime's quiet errstate
        e_t[...] = rows_t
        fmax_rows(e_t, axis=0, initial=lowest, out=top)     # std::max from lowest(): NaN never wins
        spread[...] = top
        np.subtract(e_t, spread, out=e_t)
        if beta is not None:
            np.multiply(e_t, beta, out=e_t)
        expf(e_t, e_t)
        np.add.reduce(e_t, axis=0, out=total)
        spread[...] = total
        np.divide(e_t, spread, out=spread)
        dst_t[...] = spread
        if math.isnan(total_dot(ones)):
            nan_rows_as_x86(e, total, dst)
    return call


def _bind_one_row(row: np.ndarray, dst: np.ndarray, beta: np.ndarray | None):
    """The bound float softmax of a single row (a classifier's head): the same operations as the general form on
    1-D operands -- the maximum into a 0-d array (:func:`bind_row_max`), the running sums by ``add.accumulate`` (the
    C loop's sequential float32 sums; the last one the total), the division by a 0-d view of it -- with no
    ``[1, 1]`` or ``[1]`` operand for NumPy to broadcast (each such call cost twice a flat one on a short row)."""
    top, e, running = np.empty((), np.float32), np.empty(row.shape, np.float32), np.empty(row.shape, np.float32)
    total = running[-1, ...]        # a 0-d view: a 1-element [1] divisor to broadcast costs NumPy 0.35 us more
    expf, accumulate, isnan = libm.into("expf"), np_umath.add.accumulate, math.isnan
    row_max = bind_row_max(row, top)

    def call() -> None:       # under the runtime's quiet errstate
        row_max()
        np.subtract(row, top, out=e)
        if beta is not None:
            np.multiply(e, beta, out=e)
        expf(e, e)
        accumulate(e, out=running)
        np.divide(e, total, out=dst)
        if isnan(running[-1]):
            nan_rows_as_x86(e[None], running[-1:], dst[None])
    return call


#: Rows up to this long take their maximum in Python (:func:`bind_row_max`).
SHORT_ROW = 24


def bind_row_max(row: np.ndarray, top: np.ndarray) -> Callable[[], None]:
    """A call writing the maximum of the 1-D float32 ``row`` into the 0-d ``top`` as TFLM's softmax loops take it:
    ``max = std::max(max, x)`` from ``lowest()`` -- ``(max < x) ? x : max``, so a NaN never wins and an all-NaN row
    gives ``lowest()``. Up to :data:`SHORT_ROW` elements that very fold on the row's Python floats (exact: each is
    a float32 value; 3 elements 0.68 -> 0.14 us, 16 elements 0.68 -> 0.34), else one ``fmax`` reduction from
    ``lowest()`` (``fmax`` never returns a NaN against a number either)."""
    if row.size > SHORT_ROW:
        fmax_all = np_umath.fmax.reduce
        # (axis, dtype, out, keepdims, initial) positional: a partial's keywords cost a dict at every call
        return functools.partial(fmax_all, row, 0, None, top, False, FLT_LOWEST)
    values, lowest = row.tolist, float(FLT_LOWEST)

    def fold() -> None:
        m = lowest
        for v in values():
            if m < v:       # noqa: PLR1730 - std::max's own test, 5x cheaper than the max() builtin's call
                m = v
        top[()] = m
    return fold


def _softmax_float(rows: np.ndarray, beta: float) -> np.ndarray:
    with np.errstate(invalid="ignore", over="ignore"):
        top = np.fmax.reduce(rows, axis=1, keepdims=True, initial=FLT_LOWEST)
        v = ((rows - top) * np.float32(beta)).astype(np.float32)
        e = libm.expf(v)
        if len(rows) >= 2 and REDUCE_ROWS_IN_ORDER:     # the C loop's sequential float32 sums, all rows at once
            total = np.add.reduce(np.ascontiguousarray(e.T), axis=0)
        else:
            total = np.cumsum(e, axis=1, dtype=np.float32)[:, -1]
        out = (e / total[:, None]).astype(np.float32)
    nan_rows_as_x86(e, total, out)
    return out


def nan_rows_as_x86(e: np.ndarray, total: np.ndarray, out: np.ndarray) -> None:
    """Rows whose sum is NaN, as x86 computes them (``sum += e`` keeps the running sum's NaN, so the sum is the first
    NaN ``e`` quieted; ``e / sum`` keeps the dividend's NaN): every output is NaN, ``e``'s own where it is NaN, else
    the sum's. NumPy's vector remainders would pick the other operand's (see :mod:`._float_dot`)."""
    if not np.isnan(np.add.reduce(total)):
        return
    for r in np.flatnonzero(np.isnan(total)):
        bits = e[r].view(np.uint32) | QUIET
        nan = np.isnan(e[r])
        out[r].view(np.uint32)[...] = np.where(nan, bits, bits[np.argmax(nan)])


def _softmax_int8(rows: np.ndarray, data: SoftmaxData) -> np.ndarray:
    """Elements below ``diff_min`` have ``e = 0`` in the table, so they come out as ``type_min`` like in TFLM.

    The per-row scalars (sum, reciprocal, exponent) of a single row (a classifier's) are Python ints: cheaper than
    1-element arrays for the reciprocal's chain, the exponent check and the requantizer.
    """
    index = rows.astype(np.intp)
    index -= rows.max(axis=1, keepdims=True)
    index += 255                                                        # d + 255 = x - max + 255 in [0, 255]
    e = data.exp_table[index]
    totals = data.sum_table[index].sum(axis=1).astype(np.int32)        # the C loop adds in int32: wraps alike
    if len(rows) == 1:
        recip, num_bits_over_unit = reciprocal_int(int(totals[0]), _ACCUMULATION_INTEGER_BITS)
        exponent = num_bits_over_unit + 31 - data.output_bits
        valid = 0 <= exponent <= 31
    else:
        recip, num_bits_over_unit = get_reciprocal(totals, _ACCUMULATION_INTEGER_BITS)
        exponent = num_bits_over_unit + (31 - data.output_bits)
        valid = exponent.min() >= 0 and exponent.max() <= 31
        recip, exponent = recip[:, None], exponent[:, None]
    if not valid:
        raise CheckFailed(EXPONENT_ERROR)
    type_name = "INT16" if data.output_bits == 16 else "INT8"
    value = mbqm(e, recip, -exponent)                                  # RDBPOT(SRDHM(recip, e), exponent)
    value += QMIN[type_name]
    return np.minimum(np.maximum(value, QMIN[type_name]), QMAX[type_name])


def _softmax_int16(rows: np.ndarray, data: SoftmaxData) -> np.ndarray:
    x = rows.astype(np.int64)
    e = data.exp_table[x - x.max(axis=1, keepdims=True) + 65535]  # LUT_exp(clamp16(MBQM(x - max) + 32767))
    total = wrap_int32(e.sum(axis=1))
    headroom_plus_one = clz32(total)
    shifted = wrap_int32(((total << (headroom_plus_one - 1)) + (1 << 13)) >> 14)
    recip = lut_lookup_int16(np.clip(shifted - ((1 << 15) + (1 << 16)), -32768, 32767), data.one_over_one_plus_x_lut)
    right_shift = (31 - headroom_plus_one)[:, None]
    result = (e * recip[:, None] + (np.int64(1) << (right_shift - 1))) >> right_shift
    return np.clip(wrap_int32(result), 0, 32767)


KERNEL = Softmax()
