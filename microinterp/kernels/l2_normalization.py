"""L2_NORMALIZATION: ``x / max(||x||, eps)`` along the last axis (``micro/kernels/l2norm.cc``,
``reference/l2normalization.h``, ``reference/integer_ops/l2normalization.h``).

Prepare (TFLM): one input and output, at most 4-D, FLOAT32 or INT8 of one type, fused activation NONE.

* FLOAT32, per row: ``s = 0f; s += v * v`` in order (float32), ``n = max(sqrtf(s), 1e-6f)``, ``out = v / n``.
* INT8, per row: ``acc = sum((x - zp)^2)`` (int32); ``(M, e) = GetInvSqrtQuantizedMultiplierExp(acc, -1)``;
  ``out = clamp(MultiplyByQuantizedMultiplier(x - zp, M, e + 7), -128, 127)`` -- the result is in 1/128 units with
  zero point 0 whatever the output tensor's quantization says (TFLM does not look at it).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import libm
from ..quant import inv_sqrt_quantized_multiplier_exp, mbqm
from ._qutil import qparams
from .contract import PURE, Kernel

EPSILON = np.float32(1e-6)
OUTPUT_SHIFT = 7


@dataclass(frozen=True)
class L2NormData:
    zero_point: int


class L2Normalization(Kernel):
    ops = ("L2_NORMALIZATION",)
    traits = PURE
    def prepare(self, ctx, op) -> L2NormData:
        ctx.check_io_count(op, 1, 1)
        x, y = ctx.require_input(op, 0), ctx.output(op, 0)
        if len(x.shape) > 4 or len(x.shape) < 1:
            raise ctx.fail(op, f"the input must have 1 to 4 dims, got {x.shape}")
        if y.type_name not in ("FLOAT32", "INT8") or x.type_name != y.type_name:
            raise ctx.fail(op, f"FLOAT32 or INT8 in and out, got {x.type_name} -> {y.type_name}")
        if tuple(x.shape) != tuple(y.shape):
            raise ctx.fail(op, f"output shape {y.shape} differs from input shape {x.shape}")
        if op.options["fused_activation_function"] != "NONE":
            raise ctx.fail(op, f"fused activation must be NONE, got {op.options['fused_activation_function']}")
        return L2NormData(qparams(x)[1] if x.type_name == "INT8" else 0)

    def invoke(self, ctx, op, data: L2NormData) -> None:
        x, out = ctx.input(op, 0), ctx.output(op, 0)
        depth = x.shape[-1] if x.ndim else 1
        rows = x.reshape(-1, depth)
        if rows.size == 0:
            return
        if x.dtype == np.float32:
            with np.errstate(all="ignore"):
                sq = rows * rows
                sums = np.add.accumulate(sq, axis=1, dtype=np.float32)[:, -1] + np.float32(0.0)
                norm = libm.sqrtf(sums)
                norm = np.where(norm < EPSILON, EPSILON, norm).astype(np.float32)   # std::max(n, eps): NaN kept
                out[...] = (rows / norm[:, None]).reshape(out.shape)
            return
        d = rows.astype(np.int64) - data.zero_point
        acc = (d * d).sum(axis=1)
        m, e = inv_sqrt_quantized_multiplier_exp(acc, -1)
        r = mbqm(d, m[:, None], e[:, None] + OUTPUT_SHIFT)
        out[...] = np.clip(r, -128, 127).reshape(out.shape)


KERNEL = L2Normalization()
