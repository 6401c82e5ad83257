"""MUL: TFLM ``micro/kernels/mul.cc``, ``mul_common.cc``, ``reference/integer_ops/mul.h``, ``reference/mul.h``.

Quantized int8/int16::

    (M, shift) = QuantizeMultiplier(double(s1) * double(s2) / double(s_out))   may be > 1 (shift > 0)
    y = clamp(zp_out + MBQM((x1 - zp1) * (x2 - zp2), M, shift), act_min, act_max)

MBQM is TFLM's double-rounding MultiplyByQuantizedMultiplier; a positive shift multiplies the int32 product by
``2^shift`` first (wrapping in int32, as the C code does). int16 requires all three zero points to be 0 (Prepare
fails otherwise). int8 is tabulated over all 256 x 256 input pairs at prepare; invoke is one gather.

float32: ``clamp(x1 * x2)`` with ``CalculateActivationRange<float>`` (NONE clamps to +-FLT_MAX). int32: wrap-around
product clamped to ``CalculateActivationRange<int32_t>``. TFLM requires ``input1.type == input2.type``; the output
must have the same type too (TFLM's Eval writes the input type). Broadcasting up to rank 6 (``binary_common``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..quant import activation_range, mbqm, quantize_multiplier
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
class MulData:
    type_name: str
    out_shape: tuple[int, ...]
    act_min: Any
    act_max: Any
    zero_points: tuple[int, int, int] = (0, 0, 0)     # input1, input2, output
    multiplier: int = 0
    shift: int = 0
    table: np.ndarray | None = None


def quantized_mul(x1: np.ndarray, x2: np.ndarray, d: MulData) -> np.ndarray:
    """The literal TFLM per-element function (broadcasting); returns clamped int64 values."""
    z1, z2, zo = d.zero_points
    prod = (np.asarray(x1, dtype=np.int64) - z1) * (np.asarray(x2, dtype=np.int64) - z2)
    return np.clip(mbqm(prod, d.multiplier, d.shift) + zo, d.act_min, d.act_max)


class Mul(Kernel):
    ops = ("MUL",)
    traits = POINTWISE
    op_class = "elementwise"
    cost_family = "elementwise"
    opdata = 36
    #: out of core: row bands (a row of the output from the same row of its inputs)
    bands = ROW_LOCAL

    def prepare(self, ctx, op) -> MulData:
        ctx.check_io_count(op, 2, 1)
        a, b, out = ctx.require_input(op, 0), ctx.require_input(op, 1), ctx.output(op, 0)
        if a.type_name != b.type_name:
            raise ctx.fail(op, f"input types differ: {a.type_name} vs {b.type_name}")
        t = a.type_name
        if t not in SUPPORTED:
            raise ctx.fail(op, f"type {t} not supported (TFLM MUL supports {', '.join(SUPPORTED)})")
        if out.type_name != t:
            raise ctx.fail(op, f"output type {out.type_name} differs from the input type {t}")
        check_broadcast(ctx, op, a, b, out)
        shape = tuple(np.broadcast_shapes(a.shape, b.shape))
        act = op.options.get("fused_activation_function", "NONE")
        if t == "FLOAT32":
            return MulData(t, shape, *float_activation_range(act))
        if t == "INT32":
            return MulData(t, shape, *int32_activation_range(act))
        check_quantized(ctx, op, a, b, out)
        qa, qb, qo = a.quantization, b.quantization, out.quantization
        lo, hi = activation_range(act, qo.scale, qo.zero_point, t)
        m, shift = quantize_multiplier(float(qa.scale) * float(qb.scale) / float(qo.scale))
        zps = (qa.zero_point, qb.zero_point, qo.zero_point)
        if t == "INT16" and any(zps):
            raise ctx.fail(op, f"int16 MUL requires zero points 0, got {zps}")
        data = MulData(t, shape, lo, hi, zps, m, shift)
        if t == "INT8":
            data = MulData(t, shape, lo, hi, zps, m, shift, int8_table(lambda v1, v2: quantized_mul(v1, v2, data)))
        return data

    def bind(self, ctx, op, data: MulData):
        """float32 and int32: one call on the fixed views (:func:`.binary_common.bind_float_binary`,
        :func:`.binary_common.bind_int32_binary`); None otherwise."""
        binder = {"FLOAT32": bind_float_binary, "INT32": bind_int32_binary}.get(data.type_name)
        if binder is None:
            return None
        return binder(np.multiply, ctx.input(op, 0), ctx.input(op, 1), ctx.output(op, 0), data.out_shape,
                      data.act_min, data.act_max)

    def invoke(self, ctx, op, data: MulData) -> None:
        x1, x2, out = ctx.input(op, 0), ctx.input(op, 1), ctx.output(op, 0)
        t = data.type_name
        if t == "INT8":
            apply_int8_table(data.table, x1, x2, out)
        elif t == "INT16":  # zero points are 0 (checked at prepare)
            prod = np.multiply(x1, x2, dtype=np.int64)
            y = mbqm(prod, data.multiplier, data.shift)
            y += data.zero_points[2]
            out[...] = np.clip(y, data.act_min, data.act_max).reshape(out.shape)
        elif t == "FLOAT32":
            float_binary(np.multiply, x1, x2, out, data.out_shape, data.act_min, data.act_max)
        else:  # INT32: wrap-around product, then the activation clamp
            int32_binary(np.multiply, x1, x2, out, data.act_min, data.act_max)

KERNEL = Mul()
