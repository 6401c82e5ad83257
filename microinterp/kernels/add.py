"""ADD (and the shared ADD/SUB machinery SUB reuses): TFLM ``micro/kernels/add.cc``, ``add_common.cc``,
``reference/add.h``, ``reference/integer_ops/add.h``.

Quantized int8/int16 (general rescaling path; int16 does *not* take the power-of-two shortcut)::

    L  = 20 (int8) or 15 (int16)
    T  = 2 * max(s1, s2)                              (double)
    m1 = s1 / T,  m2 = s2 / T,  mo = T / (2^L * s_out)  each QuantizeMultiplierSmallerThanOneExp -> (M, shift <= 0)
    a  = STOE((x1 - zp1) * 2^L, m1)                   STOE(x, M, s) = RDBPOT(SRDHM(x, M), -s); * 2^L wraps in int32
    b  = STOE((x2 - zp2) * 2^L, m2)
    y  = clamp(STOE(a + b, mo) + zp_out, act_min, act_max)       (SUB: a - b)

``QuantizeMultiplierSmallerThanOneExp`` aborts the process in TFLM when a multiplier is >= 1 (``TFLITE_CHECK``);
here prepare refuses such models (e.g. an output scale far below the input scales). The fused activation range is
quantized with float32 ``roundf`` (``quant.activation_range``).

int8 is a pure function of the two input bytes: prepare tabulates it (256 x 256) and invoke is a single gather.
int16: prepare tabulates each input's half ``a``/``b`` over all 65536 codes (literal formula); invoke looks them up on
the unbroadcast inputs and applies the output rescale on the broadcast sum.

float32: ``y = clamp(x1 + x2)`` with ``CalculateActivationRange<float>`` (NONE clamps to +-FLT_MAX, so ``inf`` becomes
FLT_MAX). int32 (unquantized only): ADD wraps and ignores the fused activation (TFLM passes the full int32 range);
SUB applies ``CalculateActivationRange<int32_t>``.

Broadcasting (numpy rules) up to rank 6, see ``binary_common``. Pitfall: TFLM never checks that the input and output
types agree (Eval dispatches on the output type); a mismatch is refused here because TFLM would read garbage.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ..quant import QMAX, QMIN, activation_range, mbqm_smaller_than_one_exp, quantize_multiplier, wrap_int32
from ._qutil import all_codes
from .bands import ROW_LOCAL
from .binary_common import (
    apply_int8_table,
    bind_float_binary,
    bind_int32_binary,
    check_broadcast,
    check_quantized,
    float_activation_range,
    float_binary,
    int8_table,
    int32_activation_range,
    int32_binary,
)
from .contract import POINTWISE, Kernel

SUPPORTED = ("FLOAT32", "INT32", "INT8", "INT16")


@dataclass(frozen=True)
class AddSubData:
    type_name: str
    out_shape: tuple[int, ...]                  # broadcast shape the result is computed in
    act_min: Any                                # int, or np.float32 for FLOAT32
    act_max: Any
    left_shift: int = 0
    in1: tuple[int, int, int] = (0, 0, 0)       # (zero point, multiplier, shift)
    in2: tuple[int, int, int] = (0, 0, 0)
    out: tuple[int, int, int] = (0, 0, 0)
    table: np.ndarray | None = None             # int8: 65536-entry lookup table of the whole function
    halves: tuple[np.ndarray, np.ndarray] | None = None     # int16: a(x1), b(x2) per uint16 code (int64)


def _smaller_than_one(ctx, op, real: float, what: str) -> tuple[int, int]:
    """QuantizeMultiplierSmallerThanOneExp; TFLM aborts (TFLITE_CHECK) when real >= 1 or the shift comes out > 0."""
    m, shift = quantize_multiplier(real)
    if not 0.0 < real < 1.0 or shift > 0:
        raise ctx.fail(op, f"{what} multiplier {real!r} is not in (0, 1) (TFLM aborts in "
                           "QuantizeMultiplierSmallerThanOneExp)")
    return m, shift


def quantized_half(x: np.ndarray, left_shift: int, zp_mult_shift: tuple[int, int, int]) -> np.ndarray:
    """One input's rescale: ``STOE((x - zp) * 2^L [int32 wrap], M, shift)`` as int64."""
    zp, m, shift = zp_mult_shift
    shifted = wrap_int32((np.asarray(x, dtype=np.int64) - zp) << left_shift)
    return mbqm_smaller_than_one_exp(shifted, m, shift)


def quantized_add_sub(x1: np.ndarray, x2: np.ndarray, d: AddSubData, sign: int) -> np.ndarray:
    """The literal TFLM per-element function (broadcasts ``x1`` against ``x2``); returns clamped int64 values."""
    a = quantized_half(x1, d.left_shift, d.in1)
    b = quantized_half(x2, d.left_shift, d.in2)
    raw = wrap_int32(a + b if sign > 0 else a - b)
    _, m, shift = d.out
    y = mbqm_smaller_than_one_exp(raw, m, shift) + d.out[0]
    return np.clip(y, d.act_min, d.act_max)


class AddSub(Kernel):
    """ADD (``sign=+1``) or SUB (``sign=-1``)."""
    traits = POINTWISE
    op_class = "elementwise"
    cost_family = "elementwise"
    #: out of core: row bands (a row of the output from the same row of its inputs)
    bands = ROW_LOCAL


    def __init__(self, sign: int, name: str):
        self.sign = sign
        self.name = name
        self.ops = (name,)
        self.opdata = 60 if name == "ADD" else 52   # OpDataAdd / OpDataSub

    def prepare(self, ctx, op) -> AddSubData:
        ctx.check_io_count(op, 2, 1)
        a, b, out = ctx.require_input(op, 0), ctx.require_input(op, 1), ctx.output(op, 0)
        t = out.type_name
        if t not in SUPPORTED:
            raise ctx.fail(op, f"type {t} not supported (TFLM {self.name} supports {', '.join(SUPPORTED)})")
        if a.type_name != t or b.type_name != t:
            raise ctx.fail(op, f"input types {a.type_name}/{b.type_name} differ from the output type {t}")
        check_broadcast(ctx, op, a, b, out)
        shape = tuple(np.broadcast_shapes(a.shape, b.shape))
        act = op.options.get("fused_activation_function", "NONE")
        if t == "FLOAT32":
            lo, hi = float_activation_range(act)
            return AddSubData(t, shape, lo, hi)
        if t == "INT32":
            if a.quantization is not None or b.quantization is not None:
                raise ctx.fail(op, "int32 inputs must not be quantized (TFLM supports only unquantized int32)")
            if self.sign < 0:
                if out.quantization is not None:
                    raise ctx.fail(op, "int32 output must not be quantized (TFLM supports only unquantized int32)")
                lo, hi = int32_activation_range(act)
            else:
                lo, hi = QMIN["INT32"], QMAX["INT32"]
            return AddSubData(t, shape, lo, hi)
        check_quantized(ctx, op, a, b, out)
        left_shift = 15 if t == "INT16" else 20
        s1, s2, so = float(a.quantization.scale), float(b.quantization.scale), float(out.quantization.scale)
        twice_max = 2.0 * max(s1, s2)
        m1 = _smaller_than_one(ctx, op, s1 / twice_max, "input1")
        m2 = _smaller_than_one(ctx, op, s2 / twice_max, "input2")
        mo = _smaller_than_one(ctx, op, twice_max / ((1 << left_shift) * so), "output")
        lo, hi = activation_range(act, out.quantization.scale, out.quantization.zero_point, t)
        data = AddSubData(t, shape, lo, hi, left_shift, (a.quantization.zero_point, *m1),
                          (b.quantization.zero_point, *m2), (out.quantization.zero_point, *mo))
        if t == "INT8":
            table = int8_table(lambda v1, v2: quantized_add_sub(v1, v2, data, self.sign))
            data = replace(data, table=table)
        else:
            codes = all_codes("INT16")
            data = replace(data, halves=(quantized_half(codes, left_shift, data.in1),
                                         quantized_half(codes, left_shift, data.in2)))
        return data

    def bind(self, ctx, op, data: AddSubData):
        """float32 and int32: one call on the fixed views (:func:`.binary_common.bind_float_binary`,
        :func:`.binary_common.bind_int32_binary`); None otherwise."""
        binder = {"FLOAT32": bind_float_binary, "INT32": bind_int32_binary}.get(data.type_name)
        if binder is None:
            return None
        return binder(np.add if self.sign > 0 else np.subtract, ctx.input(op, 0), ctx.input(op, 1),
                      ctx.output(op, 0), data.out_shape, data.act_min, data.act_max)

    def invoke(self, ctx, op, data: AddSubData) -> None:
        x1, x2, out = ctx.input(op, 0), ctx.input(op, 1), ctx.output(op, 0)
        t = data.type_name
        if t == "INT8":
            apply_int8_table(data.table, x1, x2, out)
        elif t == "INT16":
            a = data.halves[0].take(x1.view(np.uint16))
            b = data.halves[1].take(x2.view(np.uint16))
            raw = a + b if self.sign > 0 else a - b          # |a|, |b| < 2^30: no int32 overflow
            zp, m, shift = data.out
            y = mbqm_smaller_than_one_exp(raw, m, shift)
            y += zp
            out[...] = np.clip(y, data.act_min, data.act_max).reshape(out.shape)
        elif t == "FLOAT32":
            float_binary(np.add if self.sign > 0 else np.subtract, x1, x2, out, data.out_shape, data.act_min,
                         data.act_max)
        else:  # INT32: wrap-around arithmetic, then the activation clamp
            int32_binary(np.add if self.sign > 0 else np.subtract, x1, x2, out, data.act_min, data.act_max)

KERNEL = AddSub(+1, "ADD")
