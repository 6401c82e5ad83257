"""ABS, SIN, COS, LOG, SQRT, RSQRT, SQUARE, LOGICAL_NOT: TFLM's ``micro/kernels/elementwise.cc`` (one file there,
one here).

Prepare (TFLM): one input, one output of the same type. SIN, COS, LOG, SQRT and SQUARE take FLOAT32 only,
LOGICAL_NOT BOOL only, ABS and RSQRT FLOAT32/INT8/INT16 (the wheel checks types only in Eval,
where they fail; here at prepare).

* Float: ``std::sin/cos/log/sqrt/abs`` of a float (the C library's ``sinf``... -- :mod:`microinterp.libm`, NumPy's
  own float32 functions differ in the last bit), ``f * f`` for SQUARE, ``1.f / std::sqrt(f)`` for RSQRT.
* ABS, INT8 and quantized INT16 (INT16 needs zero points 0): ``v = |x - zp_in|``; when the two scales differ
  ``out = MBQM(v, M, shift) + zp_out`` with ``(M, shift) = QuantizeMultiplier(s_in / s_out)`` -- the wheel
  divides in double (the mirror's source divides the floats first; the wheel's results say otherwise), else
  ``out = v + zp_out``; clamped to the type. INT16 without quantization: plain ``std::abs`` (whose int result for
  -32768 is 32768, stored back as -32768).
* RSQRT, INT8 and INT16 (INT16 with zero points 0; Prepare: ``(M, shift) = QuantizeMultiplier(1 / (sqrt(s_in) *
  s_out))`` in double -- the wheel's results say so; the mirror's source multiplies in float):
  ``v = x - zp_in``; a negative ``v`` fails Eval ("Rsqrt is only defined for positive values" -- here
  :class:`~microinterp.errors.InvokeError`); ``v == 0`` gives the type's maximum; else
  ``(m, e) = GetInvSqrtQuantizedMultiplierExp(v, -1)``, ``d = MBQM(1, m, e + 20)``,
  ``out = MBQM(d, M, shift - 20) + zp_out``, clamped.

Quantized ops are evaluated in prepare for every input code; invoke is a table lookup (and, for RSQRT, a check that
no input lies below the zero point).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from .. import libm
from ..errors import InvokeError
from ..quant import QMAX, QMIN, inv_sqrt_quantized_multiplier_exp, mbqm, quantize_multiplier
from ._qutil import all_codes, check_scales, lookup, qparams
from .bands import ROW_LOCAL
from .contract import ELEMENTWISE, Kernel

RSQRT_SHIFT = 20


@dataclass(frozen=True)
class ElementwiseData:
    lut: np.ndarray | None = field(default=None, repr=False)
    #: RSQRT: the lowest input code it accepts (the input zero point)
    min_code: int | None = None


def _quantized(t) -> bool:
    return t.quantization is not None and t.quantization.scales.size > 0


def abs_table(s_in: float, zp_in: int, s_out: float, zp_out: int, type_name: str) -> np.ndarray:
    """AbsEvalQuantized over every code of ``type_name``."""
    v = np.abs(all_codes(type_name).astype(np.int64) - zp_in)
    if np.float32(s_in) != np.float32(s_out):
        m, shift = quantize_multiplier(float(s_in) / float(s_out))
        v = mbqm(v, m, shift)
    return np.clip(v + zp_out, QMIN[type_name], QMAX[type_name]).astype(np.dtype(type_name.lower()))


def rsqrt_table(s_in: float, zp_in: int, s_out: float, zp_out: int, type_name: str) -> np.ndarray:
    """RsqrtEvalQuantized over every code (codes below the zero point get 0; invoke refuses them)."""
    m, shift = quantize_multiplier(1.0 / (np.sqrt(float(s_in)) * float(s_out)))
    v = all_codes(type_name).astype(np.int64) - zp_in
    inv_m, inv_e = inv_sqrt_quantized_multiplier_exp(np.maximum(v, 0), -1)
    d = mbqm(np.ones_like(v), inv_m, inv_e + RSQRT_SHIFT)
    out = np.clip(mbqm(d, m, shift - RSQRT_SHIFT) + zp_out, QMIN[type_name], QMAX[type_name])
    out = np.where(v == 0, QMAX[type_name], np.where(v < 0, 0, out))
    return out.astype(np.dtype(type_name.lower()))


class Elementwise(Kernel):
    """One kernel object per op: ``types`` the input types TFLM accepts, ``fn`` the float (or bool) function."""
    traits = ELEMENTWISE
    #: out of core: row bands (a row of the output from the same row of its inputs)
    bands = ROW_LOCAL


    def __init__(self, name: str, types: tuple[str, ...], fn: Callable[[np.ndarray], np.ndarray],
                 into: Callable[[np.ndarray, np.ndarray], None]):
        self.name = name
        self.ops = (name,)
        self.types = types
        self.fn = fn
        self.into = into        # fn(x) written into out (float32 and bool): the bound call

    def prepare(self, ctx, op) -> ElementwiseData:
        ctx.check_io_count(op, 1, 1)
        x, y = ctx.require_input(op, 0), ctx.output(op, 0)
        if x.type_name != y.type_name:
            raise ctx.fail(op, f"output type {y.type_name} differs from input type {x.type_name}")
        if x.type_name not in self.types:
            raise ctx.fail(op, f"Input data type {x.type_name} is not supported by {self.name}")
        if x.num_elements != y.num_elements:
            raise ctx.fail(op, f"input shape {x.shape} and output shape {y.shape} differ in size")
        if x.type_name in ("FLOAT32", "BOOL") or (x.type_name == "INT16" and not _quantized(x)):
            return ElementwiseData()
        if not (_quantized(x) and _quantized(y)):
            raise ctx.fail(op, f"{x.type_name} {self.name} needs quantized input and output")
        check_scales(ctx, op, x, y)
        (s_in, zp_in), (s_out, zp_out) = qparams(x), qparams(y)
        if x.type_name == "INT16" and (zp_in or zp_out):
            raise ctx.fail(op, f"int16 {self.name} needs zero points 0, got {zp_in} and {zp_out}")
        if self.name == "ABS":
            return ElementwiseData(abs_table(s_in, zp_in, s_out, zp_out, x.type_name))
        return ElementwiseData(rsqrt_table(s_in, zp_in, s_out, zp_out, x.type_name), min_code=zp_in)

    def bind(self, ctx, op, data: ElementwiseData):
        """float32 and bool on fixed views: the function written into the output (no temporary); None for the
        tables and int16 ABS."""
        x, out = ctx.input(op, 0), ctx.output(op, 0)
        if data.lut is not None or x.dtype not in (np.float32, np.bool_) or not out.flags.c_contiguous:
            return None
        return functools.partial(self.into, x.reshape(out.shape), out)

    def invoke(self, ctx, op, data: ElementwiseData) -> None:
        x, out = ctx.input(op, 0), ctx.output(op, 0)
        if data.lut is None:
            out[...] = self.fn(x).reshape(out.shape)
            return
        if data.min_code is not None and x.size and int(x.min()) < data.min_code:
            raise InvokeError(op.index, op.key, "Rsqrt is only defined for positive values")
        out[...] = lookup(data.lut, x).reshape(out.shape)


def _float_abs(x: np.ndarray) -> np.ndarray:
    return np.abs(x) if x.dtype == np.float32 else np.abs(x.astype(np.int32)).astype(x.dtype)


def _square(x: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore", invalid="ignore"):
        return np.multiply(x, x, dtype=np.float32)


def _rsqrt(x: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.float32(1.0) / libm.sqrtf(x)


def _rsqrt_into(x: np.ndarray, out: np.ndarray) -> None:
    """``1.f / std::sqrt(x)`` into ``out`` (under the runtime's errstate, which ignores float errors)."""
    np.sqrt(x, out=out)
    np.divide(_ONE, out, out=out)


def _square_into(x: np.ndarray, out: np.ndarray) -> None:
    np.multiply(x, x, out=out)


_ONE = np.array(1.0, np.float32)      # 0-d: a scalar operand costs each call more


# SQRT: NumPy's float32 square root is the hardware's, correctly rounded as C's sqrtf (IEEE 754 requires it), with
# the same NaNs (a NaN's payload quieted, the default NaN for a negative input): equal bit for bit to libm.sqrtf
# over 4 million random words, and four times faster. ABS: NumPy's clears the sign bit, as fabsf does. A ufunc
# takes its output as its second positional argument: it is its own ``into``.
ABS = Elementwise("ABS", ("FLOAT32", "INT8", "INT16"), _float_abs, np.abs)
SIN = Elementwise("SIN", ("FLOAT32",), libm.sinf, libm.into("sinf"))
COS = Elementwise("COS", ("FLOAT32",), libm.cosf, libm.into("cosf"))
LOG = Elementwise("LOG", ("FLOAT32",), libm.logf, libm.into("logf"))
SQRT = Elementwise("SQRT", ("FLOAT32",), libm.sqrtf, np.sqrt)
RSQRT = Elementwise("RSQRT", ("FLOAT32", "INT8", "INT16"), _rsqrt, _rsqrt_into)
SQUARE = Elementwise("SQUARE", ("FLOAT32",), _square, _square_into)
LOGICAL_NOT = Elementwise("LOGICAL_NOT", ("BOOL",), np.logical_not, np.logical_not)

#: the kernels of this file (:mod:`.registry`)
KERNELS = (ABS, SIN, COS, LOG, SQRT, RSQRT, SQUARE, LOGICAL_NOT)
