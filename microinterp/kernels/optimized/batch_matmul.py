"""BATCH_MATMUL, optimized: the reference prepare and OpData (``kernels/batch_matmul.py``), the integer product as
one float64 BLAS ``matmul``.

Exactness: every product ``(l - zp_l) * (r - zp_r)`` is an integer of magnitude at most 2^16 (int8) or 2^32
(int16), so with ``K`` terms every partial sum is an integer below ``2^16 K`` / ``2^32 K``. While that is below
2^53, float64 holds every partial sum exactly whatever order or fused multiply-adds the BLAS uses, and the result
equals the int64 sum; int8 then wraps to int32 exactly as TFLM's int32 accumulator would. Beyond the bound (int16
with K >= 2^20) the reference runs. TFLM's transposed copies in the tail are internal scratch: the BLAS reads the
operands through strided views instead. FLOAT32 keeps the reference's k-ordered float32 loop (a BLAS would sum in
another order and round differently).
"""

from __future__ import annotations

import numpy as np

from ..batch_matmul import KERNEL as REFERENCE
from ..batch_matmul import BatchMatMulData, MatMulRows, requantize
from ..contract import Kernel

EXACT_BITS = 53


class FastBatchMatMul(Kernel):
    ops = ("BATCH_MATMUL",)
    #: out of core: the reference's bands, each computed with :meth:`product`
    bands = MatMulRows

    def prepare(self, ctx, op) -> BatchMatMulData:
        return REFERENCE.prepare(ctx, op)

    def invoke(self, ctx, op, data: BatchMatMulData) -> None:
        if data.type_name == "FLOAT32":
            REFERENCE.invoke(ctx, op, data)
            return
        lhs, rhs = ctx.input(op, 0), ctx.input(op, 1)
        a = np.swapaxes(lhs, -1, -2) if data.adj_x else lhs
        b = np.swapaxes(rhs, -1, -2) if data.adj_y else rhs
        out = ctx.output(op, 0)
        out[...] = self.product(data, a, b).reshape(out.shape)

    def product(self, data: BatchMatMulData, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """The reference's :meth:`~..batch_matmul.BatchMatMul.product`, integers by a float64 BLAS product."""
        k = a.shape[-1]
        bits = 16 if data.type_name == "INT8" else 32
        if data.type_name == "FLOAT32" or (k and (k.bit_length() + bits) >= EXACT_BITS):
            return REFERENCE.product(data, a, b)
        af = a.astype(np.float64)
        bf = b.astype(np.float64)
        if data.zp_lhs:
            af -= data.zp_lhs
        if data.zp_rhs:
            bf -= data.zp_rhs
        return requantize(np.matmul(af, bf).astype(np.int64), data)


KERNEL = FastBatchMatMul()
