"""DIV: element-wise ``x / y`` with broadcasting and a fused activation (``micro/kernels/div.cc``,
``reference/div.h``).

Prepare (TFLM): input and output types equal; INT32 inputs must not be quantized. For INT8 the activation range
(``CalculateActivationRangeQuantized``) and ``(M, shift) = QuantizeMultiplier(s1 / (s2 * s_out))`` computed in
double -- the wheel's results say so (the mirror's source computes it in float, then widens). Eval takes FLOAT32, INT32 and INT8 (others fail there; here at prepare). Broadcasting:
``ProcessBroadcastShapes`` + ``BroadcastDivSlow`` with at most 5 dims.

* FLOAT32: ``clamp(x / y)`` in float32 to the activation range (NONE: [lowest, max], so inf becomes FLT_MAX).
* INT32: C division (truncation toward zero) clamped to the activation range. A zero divisor (or INT32_MIN / -1)
  traps the wheel's process (SIGFPE); here it is an :class:`~microinterp.errors.InvokeError`.
* INT8 (``DivElementwise``): ``a = x - zp1, b = y - zp2`` (negate both when ``b < 0``);
  ``(r, rs) = GetReciprocal(b, 31)``; ``h = CountLeadingSignBits(a)`` (GCC's ``__builtin_clrsb``, 31 for 0);
  ``q = MultiplyByQuantizedMultiplierGreaterThanOne(a, r, h)``;
  ``out = clamp(zp_out + MultiplyByQuantizedMultiplierSmallerThanOneExp(q, M, shift - rs - h))``. A zero ``b``
  is a DCHECK in TFLM (undefined behaviour in the wheel): refused at invoke, like the INT32 case. Prepare tabulates
  the formula over all 256 x 256 code pairs; invoke is one gather.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from numpy._core import umath as np_umath

from ..errors import InvokeError
from ..quant import (
    INT32_MIN,
    activation_range,
    clz32,
    get_reciprocal,
    mbqm_greater_than_one,
    quantize_multiplier,
    srdhm,
    wrap_int32,
)
from ._qutil import broadcast_shape, check_scales, copyto, qparams
from .bands import ROW_LOCAL
from .binary_common import (
    apply_int8_table,
    bind_float_binary,
    clamp_float_,
    float_activation_range,
    int32_activation_range,
)
from .contract import PURE, Kernel
from .streams import BIND

SUPPORTED_TYPES = ("FLOAT32", "INT32", "INT8")
MAX_BROADCAST_RANK = 5


@dataclass(frozen=True)
class DivData:
    type_name: str
    lo: float | int = 0
    hi: float | int = 0
    zero_code: int | None = None      # INT8: the divisor code meaning 0 (its zero point)
    table: np.ndarray | None = field(default=None, repr=False)


def count_leading_sign_bits(a: np.ndarray) -> np.ndarray:
    """GCC's ``__builtin_clrsb`` on int32 values (31 for 0 and -1)."""
    a = np.asarray(a, dtype=np.int64)
    return clz32(a ^ (a >> 63)) - 1


def rdbpot_x86(x: np.ndarray, exponent: np.ndarray) -> np.ndarray:
    """gemmlowp's RoundingDivideByPOT for int32 as the wheel's x86-64 build computes it for *any* exponent.

    For 0 <= e <= 31 this is :func:`~microinterp.quant.rdbpot`. DIV's per-element exponent can leave that range
    (a zero dividend has 31 bits of headroom, so e > 31; a large multiplier makes it negative): undefined
    behaviour in C++, which the compiled code evaluates with the shift count modulo the operand width:
    ``mask = int32((1 << (e & 63)) - 1)`` (a 64-bit shift), ``x >> (e & 31)`` (a 32-bit one).
    """
    x = np.asarray(x, dtype=np.int64)
    e = np.asarray(exponent, dtype=np.int64)
    mask = wrap_int32((np.int64(1) << (e & 63)) - 1)
    remainder = x & mask
    threshold = (mask >> 1) + (x < 0)
    return (x >> (e & 31)) + (remainder > threshold)


def div_int8_table(zp1: int, zp2: int, zp_out: int, m: int, shift: int, lo: int, hi: int) -> np.ndarray:
    """``DivElementwise`` over every (x, y) int8 pair; the row of the zero divisor is left 0 (refused at invoke)."""
    codes = np.arange(256, dtype=np.int64).astype(np.uint8).view(np.int8).astype(np.int64)
    a = np.repeat(codes - zp1, 256)
    b = np.tile(codes - zp2, 256)
    zero = b == 0
    b = np.where(zero, 1, b)
    neg = b < 0
    a, b = np.where(neg, -a, a), np.where(neg, -b, b)
    recip, recip_shift = get_reciprocal(b, 31)
    headroom = count_leading_sign_bits(a)
    quotient = mbqm_greater_than_one(a, recip, headroom)
    total = shift - recip_shift - headroom
    out = zp_out + rdbpot_x86(srdhm(quotient, m), -total)
    out = np.clip(wrap_int32(out), lo, hi)
    return np.where(zero, 0, out).astype(np.int8)


class Div(Kernel):
    ops = ("DIV",)
    traits = PURE
    cost_family = "elementwise"
    opdata = 28
    #: out of core: row bands (a row of the output from the same row of its inputs)
    bands = ROW_LOCAL
    #: streams: its bound call on the streams' views where it binds (an int32 division by a constant: three calls
    #: instead of the checked invoke's dozen), else its invoke (:mod:`.streams`)
    streams = BIND

    def prepare(self, ctx, op) -> DivData:
        ctx.check_io_count(op, 2, 1)
        a, b, y = ctx.require_input(op, 0), ctx.require_input(op, 1), ctx.output(op, 0)
        if not (a.type_name == b.type_name == y.type_name):
            raise ctx.fail(op, f"types must match, got {a.type_name}, {b.type_name} -> {y.type_name}")
        if y.type_name not in SUPPORTED_TYPES:
            raise ctx.fail(op, f"DIV only supports FLOAT32, INT32, quantized INT8 now, got type {y.type_name}")
        problem = broadcast_shape(a.shape, b.shape, y.shape, MAX_BROADCAST_RANK)
        if problem:
            raise ctx.fail(op, problem)
        activation = op.options["fused_activation_function"]
        if y.type_name == "FLOAT32":
            lo, hi = float_activation_range(activation)
            return DivData("FLOAT32", lo, hi)
        if y.type_name == "INT32":
            if a.quantization is not None or b.quantization is not None:
                raise ctx.fail(op, "INT32 DIV inputs must not be quantized")
            lo, hi = int32_activation_range(activation)
            return DivData("INT32", lo, hi)
        check_scales(ctx, op, a, b, y)
        (s1, zp1), (s2, zp2), (s_out, zp_out) = qparams(a), qparams(b), qparams(y)
        lo, hi = activation_range(activation, s_out, zp_out, "INT8")
        real = float(s1) / (float(s2) * float(s_out))    # double, as the wheel (the mirror's source: float)
        m, shift = quantize_multiplier(real)
        return DivData("INT8", lo, hi, zp2, div_int8_table(zp1, zp2, zp_out, m, shift, lo, hi))

    def bind(self, ctx, op, data: DivData):
        """FLOAT32 on fixed views (:func:`.binary_common.bind_float_binary`); INT32 with a constant divisor free of
        0 and -1 (:func:`_bind_int32`); None otherwise."""
        a, b, out = ctx.input(op, 0), ctx.input(op, 1), ctx.output(op, 0)
        shape = np.broadcast_shapes(a.shape, b.shape)
        if data.type_name == "FLOAT32":
            return bind_float_binary(np.divide, a, b, out, shape, data.lo, data.hi)
        if data.type_name == "INT32" and not b.flags.writeable and b.size and not np.isin(b, (0, -1)).any() \
                and out.flags.c_contiguous:
            return _bind_int32(a, b, out.reshape(shape), data.lo, data.hi)
        return None

    def invoke(self, ctx, op, data: DivData) -> None:
        a, b, out = ctx.input(op, 0), ctx.input(op, 1), ctx.output(op, 0)
        shape = np.broadcast_shapes(a.shape, b.shape)
        if data.type_name == "FLOAT32":
            y = out.reshape(shape)
            with np.errstate(all="ignore"):
                np.divide(a, b, out=y, dtype=np.float32)
            clamp_float_(y, data.lo, data.hi)
            return
        if data.type_name == "INT32":
            if (b == 0).any() or ((a == INT32_MIN) & (b == -1)).any():
                raise InvokeError(op.index, op.key, "integer division by zero (or INT32_MIN / -1) traps on the MCU")
            q = np.abs(a.astype(np.int64)) // np.abs(b.astype(np.int64))
            q = np.where((a < 0) != (b < 0), -q, q)
            out[...] = np.clip(q, data.lo, data.hi).reshape(out.shape)
            return
        if (b == data.zero_code).any():
            raise InvokeError(op.index, op.key, "int8 division by a zero-valued divisor (a DCHECK in TFLM)")
        apply_int8_table(data.table, a, b, out)


def _bind_int32(a: np.ndarray, b: np.ndarray, y: np.ndarray, lo: int, hi: int):
    """C's int32 division (truncation toward zero) by a constant divisor without 0 or -1 (nothing traps), clamped:
    ``trunc(a / b)`` in float64 is the exact quotient -- a quotient ``k - 1/|b|`` just below an integer stays below
    it, since ``1/|b| > |k| 2^-52`` whenever ``|a| = |k b| < 2^52`` -- and a whole number, so the store into int32
    is exact (the clamp to the activation range comes first). The store's C cast truncates toward zero itself,
    and truncation commutes with a clamp to whole bounds (it is monotone and keeps them), so no ``trunc`` call."""
    q = np.empty(y.shape, np.float64)
    lo_hi = (np.array(lo, np.float64), np.array(hi, np.float64))     # 0-d bounds for the clip ufunc itself

    def call() -> None:
        np.divide(a, b, out=q)
        np_umath.clip(q, *lo_hi, out=q)
        copyto(y, q, casting="unsafe")
    return call


KERNEL = Div()
