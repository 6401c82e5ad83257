"""QUANTIZE: float -> int8/int16 affine quantization, and int -> int requantization.

TFLM (``micro/kernels/quantize_common.cc``, ``reference/quantize.h``, ``reference/requantize.h``):

* Prepare: 1 input, 1 output; the output must carry per-tensor affine quantization (exactly one scale); input type
  in {FLOAT32, INT32, INT16, INT8, UINT8}, output type in {INT8, INT16, INT32, UINT8}. For the int -> int pairs
  ``(M, shift) = QuantizeMultiplier(double(s_in) / double(s_out))``.
* Eval supports only these pairs (any other pair fails at Eval in TFLM; here already at prepare)::

      FLOAT32 -> INT8, INT16          INT8  -> INT8, UINT8, INT16, INT32
      UINT8   -> INT8                 INT16 -> INT8, INT16, INT32          INT32 -> INT8, INT16

* float -> int (``AffineQuantize``): ``clamp(int32(roundf(x / (float)s_out)) + zp_out)`` -- the division is in
  float32, rounding half away from zero. Pitfall: the float->int32 conversion is x86 ``cvttss2si``, so NaN, +-inf
  and anything beyond +-2^31 become INT32_MIN *before* the (wrapping) zero-point add; with zp_out < 0 that wraps to
  a huge positive number and saturates at the top code (the wheel does exactly this).
* int -> int (``Requantize``): ``clamp(MBQM(x - zp_in, M, shift) + zp_out)`` in int32 (double-rounding MBQM).
  Special case: when the effective scale is exactly 1 (``M == 2^30 and shift == 1``) and the op is INT8 -> UINT8
  with ``zp_in - zp_out == -128`` or UINT8 -> INT8 with ``+128``, the output is ``x ^ 0x80`` (numerically the same).
* Input quantization: only ``params`` (the first scale / zero point) is used, also for per-channel inputs.

8/16-bit inputs: the requantization is evaluated once in prepare for every input code and invoke is a lookup.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace

import numpy as np
from numpy._core import umath as np_umath

from ..quant import QMAX, QMIN, mbqm, quantize_multiplier, round_half_away, wrap_int32
from ._qutil import all_codes, bind_lookup, check_scales, copyto, lookup, qparams, to_int32_x86
from .bands import ROW_LOCAL
from .contract import ELEMENTWISE, Kernel

#: Eval's supported (input, output) type pairs.
SUPPORTED = {
    "FLOAT32": ("INT8", "INT16"),
    "INT8": ("INT8", "UINT8", "INT16", "INT32"),
    "UINT8": ("INT8",),
    "INT16": ("INT8", "INT16", "INT32"),
    "INT32": ("INT8", "INT16"),
}
_OUTPUT_TYPES = ("INT8", "INT16", "INT32", "UINT8")


@dataclass(frozen=True)
class QuantizeData:
    mode: str               # "float", "lut" (8/16-bit input) or "requantize" (int32 input)
    output_scale: float     # float path: x / float32(output_scale)
    input_zero_point: int
    output_zero_point: int
    multiplier: int
    shift: int
    qmin: int
    qmax: int
    lut: np.ndarray | None = field(default=None, repr=False)
    to_int32: Callable[[np.ndarray], np.ndarray] = field(default=to_int32_x86, repr=False)  # the build's cast


def requantize(x: np.ndarray, d: QuantizeData) -> np.ndarray:
    """TFLM ``Requantize``: ``clamp(MBQM(x - zp_in, M, shift) + zp_out)`` with int32 wrap-around."""
    v = wrap_int32(x.astype(np.int64) - d.input_zero_point)
    return np.clip(wrap_int32(mbqm(v, d.multiplier, d.shift) + d.output_zero_point), d.qmin, d.qmax)


def quantize_float(x: np.ndarray, d: QuantizeData) -> np.ndarray:
    """TFLM ``AffineQuantize``: ``clamp(int32(roundf(x / (float)s_out)) + zp_out)`` (the build's float -> int32
    conversion for NaN, infinities and values beyond int32: x86's or a Cortex-M's; int32 wrap-around)."""
    with np.errstate(over="ignore", invalid="ignore"):
        r = round_half_away(x / np.float32(d.output_scale))  # float64 holding integers
    bound = np.maximum(-r.min(), r.max()) if r.size else 0.0  # NaN if any NaN
    if not bound + abs(d.output_zero_point) < 2 ** 31:
        # NaN, +-inf or int32 overflow somewhere: the exact C semantics (INT32_MIN, wrapping zero-point add).
        with np.errstate(invalid="ignore"):
            return np.clip(wrap_int32(d.to_int32(r) + d.output_zero_point), d.qmin, d.qmax)
    r += d.output_zero_point  # exact in float64, no overflow possible
    return np.clip(r, d.qmin, d.qmax, out=r)


def _bind_float(x: np.ndarray, out: np.ndarray, data: QuantizeData):
    """:func:`quantize_float` on kept buffers: the float32 quotient, ``roundf`` as ``trunc(q + copysign(0.5, q))``
    in float64 (exact for a float32 ``q``: half away from zero), then -- where every rounded value is within
    int32 after the zero point, which the sum of their squares shows (NaN, infinities and huge values fail it) --
    the zero point, the clamp and the store; else :func:`quantize_float` itself (the build's conversion of what
    int32 cannot hold)."""
    q, r, half_signed = np.empty(x.shape, np.float32), np.empty(x.shape, np.float64), np.empty(x.shape, np.float64)
    scale, half = np.array(data.output_scale, np.float32), np.array(0.5)
    zp, lo, hi = (np.array(float(v)) for v in (data.output_zero_point, data.qmin, data.qmax))
    limit = (2.0 ** 31 - abs(data.output_zero_point) - 1) ** 2

    def call() -> None:
        np.divide(x, scale, out=q)                  # x / (float)s_out, in float32
        copyto(r, q)
        np.copysign(half, r, out=half_signed)
        np.add(r, half_signed, out=r)
        np.trunc(r, out=r)                          # roundf
        if not r.dot(r) < limit:                    # (False for NaN)
            out[...] = quantize_float(x, data)
            return
        np.add(r, zp, out=r)
        np_umath.clip(r, lo, hi, out=r)
        copyto(out, r, casting="unsafe")
    return call


class Quantize(Kernel):
    ops = ("QUANTIZE",)
    traits = ELEMENTWISE
    converts_type = True
    cost_family = "elementwise"
    opdata = 32
    #: out of core: row bands (a row of the output from the same row of its inputs)
    bands = ROW_LOCAL

    def prepare(self, ctx, op) -> QuantizeData:
        ctx.check_io_count(op, 1, 1)
        x, y = ctx.require_input(op, 0), ctx.output(op, 0)
        q = y.quantization
        if q is None or q.scales.size != 1:
            raise ctx.fail(op, "output must have per-tensor affine quantization (exactly one scale)")
        if x.type_name not in SUPPORTED:
            raise ctx.fail(op, f"input type {x.type_name} not supported (FLOAT32, INT32, INT16, INT8, UINT8)")
        if y.type_name not in _OUTPUT_TYPES:
            raise ctx.fail(op, f"output type {y.type_name} not supported (INT8, INT16, INT32, UINT8)")
        if y.type_name not in SUPPORTED[x.type_name]:
            raise ctx.fail(op, f"Input {x.type_name}, output {y.type_name} not supported")
        if x.num_elements != y.num_elements:
            raise ctx.fail(op, f"input shape {x.shape} and output shape {y.shape} differ in size")
        check_scales(ctx, op, y)
        s_in, zp_in = qparams(x)
        s_out, zp_out = qparams(y)
        qrange = (QMIN[y.type_name], QMAX[y.type_name])
        if x.type_name == "FLOAT32":
            return QuantizeData("float", s_out, zp_in, zp_out, 0, 0, *qrange, to_int32=ctx.float_to_int32)
        m, shift = quantize_multiplier(s_in / s_out)  # Python floats are doubles: double(s_in)/double(s_out)
        data = QuantizeData("requantize", s_out, zp_in, zp_out, m, shift, *qrange)
        if x.type_name == "INT32":
            return data
        codes = all_codes(x.type_name)
        pair = (x.type_name, y.type_name)
        if m == 1 << 30 and shift == 1 and ((pair == ("INT8", "UINT8") and zp_in - zp_out == -128)
                                            or (pair == ("UINT8", "INT8") and zp_in - zp_out == 128)):
            lut = (codes.view(np.uint8) ^ np.uint8(0x80)).view(y.dtype)
        else:
            lut = requantize(codes, data).astype(y.dtype)
        return replace(data, mode="lut", lut=lut)

    def bind(self, ctx, op, data: QuantizeData):
        """On fixed views: an 8/16-bit input's table look-up (:func:`._qutil.bind_lookup`); a float input on
        contiguous views :func:`_bind_float`; None otherwise."""
        x, out = ctx.input(op, 0), ctx.output(op, 0)
        if data.mode == "lut":
            return bind_lookup(data.lut, x, out)
        if data.mode == "float" and x.flags.c_contiguous and out.flags.c_contiguous:
            return _bind_float(x.reshape(-1), out.reshape(-1), data)
        return None

    def invoke(self, ctx, op, data: QuantizeData) -> None:
        x = ctx.input(op, 0)
        out = ctx.output(op, 0)
        if data.mode == "lut":
            result = lookup(data.lut, x)
        elif data.mode == "float":
            result = quantize_float(x, data)
        else:
            result = requantize(x, data)
        out[...] = result.reshape(out.shape)


KERNEL = Quantize()
