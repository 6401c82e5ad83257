"""BATCH_MATMUL: ``out[..., m, n] = sum_k lhs[..., m, k] * rhs[..., k, n]`` with broadcast batch dims
(``micro/kernels/batch_matmul.cc``, ``batch_matmul_common.cc``, ``reference/batch_matmul.h``).

Prepare (TFLM): two inputs, one output, all FLOAT32, INT8 or INT16 of one type; ranks 2..5; ``adj_x`` / ``adj_y``
transpose the last two dims of lhs / rhs. Batch dims (both shapes extended to the larger rank) must be equal or 1 on
one side; the accumulation dims must match; the output dims are overwritten with ``broadcast(batch) + [M, N]`` (the
model's output needs that rank and element count). Persistent memory in the tail: a transposed copy of lhs when
``adj_x``, of rhs when *not* ``adj_y`` (TFLM's reference computes on ``[N, K]`` rows of rhs). INT8/INT16:
``(Mult, shift) = QuantizeMultiplier(double(s_lhs * s_rhs) / s_out)`` (the scale product in float), int16 zero
points 0, clamp to the type's range (no fused activation).

Eval, per output element (TFLM's loop order does not matter for integers):

* FLOAT32: ``total = 0f; total += l_k * r_k`` for k in order (float32 multiply, then add);
* INT8: ``total = sum((l_k - zp_l) * (r_k - zp_r))`` in int32 (wrapping), then
  ``clamp(MBQM(total, Mult, shift) + zp_out)``;
* INT16: the same in int64 with the 64-bit MultiplyByQuantizedMultiplier (one rounding, 16-bit multiplier).

The reference kernel transposes into its tail buffers as TFLM does, then computes the integer products exactly in
int64 and the float sums strictly in k order; :mod:`.optimized.batch_matmul` replaces the integer product by a
float64 BLAS product (exact, see there).

Out of core (:class:`MatMulRows`): an output of batch 1 and rank 3 (``[1, M, N]``) runs in bands of its M rows,
each from the same rows of lhs (``adj_x`` false) and the whole rhs; an output ``[1, B, M, N]`` runs in bands of
its B batches, each from the same batches of every operand that has them (an operand broadcast along B is passed
whole). Every output element is the same k-ordered sum over the same operands, so a band equals its rows of the
whole product.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..quant import QMAX, QMIN, mbqm, mbqm_int64, quantize_multiplier, wrap_int32
from ._qutil import check_scales, extend_shape, qparams
from .bands import Tiler
from .contract import MIXING, Kernel

SUPPORTED_TYPES = ("FLOAT32", "INT8", "INT16")


@dataclass(frozen=True)
class BatchMatMulData:
    type_name: str
    adj_x: bool
    adj_y: bool
    out_shape: tuple[int, ...]          # broadcast batch dims + (M, N), the shape TFLM writes
    multiplier: int = 0
    shift: int = 0
    zp_lhs: int = 0
    zp_rhs: int = 0
    zp_out: int = 0
    #: tail buffers for TFLM's transposed copies (lhs when adj_x, rhs when not adj_y), raw bytes
    lhs_buffer: np.ndarray | None = field(default=None, repr=False)
    rhs_buffer: np.ndarray | None = field(default=None, repr=False)


def _swap_last(shape: tuple[int, ...]) -> tuple[int, ...]:
    return (*shape[:-2], shape[-1], shape[-2])


class MatMulRows(Tiler):
    """Bands of axis 1 of a batch-1 output (see the module docstring): ``row_inputs`` are the activation operands
    with that axis; constants and broadcast operands are passed whole (a constant with the batch axis is sliced)."""

    mode = "rows"

    def __init__(self, row_inputs: dict[int, int], batch_axis: bool, ranks: tuple[int, int]):
        self.row_inputs = row_inputs
        self.batch_axis = batch_axis        # bands of B (rank-4 output), not of M
        self.ranks = ranks

    @classmethod
    def for_op(cls, op: Any, data: BatchMatMulData, inputs: Any, output: Any) -> Tiler | None:
        shape = tuple(output.shape)
        if shape != data.out_shape or len(shape) not in (3, 4) or shape[0] != 1 or shape[1] < 2:
            return None
        rows: dict[int, int] = {}
        for k, t in enumerate(inputs[:2]):
            if len(shape) == 3:         # bands of M: lhs (not transposed) in bands, rhs whole
                if k == 0 and (data.adj_x or t.data is not None or len(t.shape) != 3):
                    return None
                if k == 0:
                    rows[0] = 1
                continue
            ext = extend_shape(t.shape, 4)
            if ext[1] == 1:             # broadcast along B: whole
                continue
            if t.data is None:
                if len(t.shape) != 4:
                    return None         # its batch axis is not its axis 1
                rows[k] = 1
        if not rows:
            return None
        return cls(rows, len(shape) == 4, (len(inputs[0].shape), len(inputs[1].shape)))

    def compute(self, kernel: Any, op: Any, data: BatchMatMulData, band: Any) -> None:
        n = band.out.shape[1]
        ops = []
        for k in (0, 1):
            x = band.inputs[k]
            if self.batch_axis and k not in self.row_inputs:
                x = x.reshape(extend_shape(x.shape, 4))
                if x.shape[1] > 1:      # a constant with the batch axis: this band's batches
                    x = x[:, band.y0:band.y0 + n]
            ops.append(x)
        a = np.swapaxes(ops[0], -1, -2) if data.adj_x else ops[0]
        b = np.swapaxes(ops[1], -1, -2) if data.adj_y else ops[1]
        band.out[...] = kernel.product(data, a, b).reshape(band.out.shape)


class BatchMatMul(Kernel):
    ops = ("BATCH_MATMUL",)
    traits = MIXING
    op_class = "fc"
    #: out of core: bands of axis 1 of a batch-1 output (:class:`MatMulRows`)
    bands = MatMulRows

    def prepare(self, ctx, op) -> BatchMatMulData:
        ctx.check_io_count(op, 2, 1)
        lhs, rhs, y = ctx.require_input(op, 0), ctx.require_input(op, 1), ctx.output(op, 0)
        if lhs.type_name not in SUPPORTED_TYPES or not (lhs.type_name == rhs.type_name == y.type_name):
            raise ctx.fail(op, f"FLOAT32, INT8 or INT16 of one type, got {lhs.type_name}, {rhs.type_name} -> "
                               f"{y.type_name}")
        if not (2 <= len(lhs.shape) <= 5 and 2 <= len(rhs.shape) <= 5):
            raise ctx.fail(op, f"ranks must be 2..5, got {lhs.shape} and {rhs.shape}")
        adj_x, adj_y = bool(op.options["adj_x"]), bool(op.options["adj_y"])
        rank = max(len(lhs.shape), len(rhs.shape))
        el, er = extend_shape(lhs.shape, rank), extend_shape(rhs.shape, rank)
        batch = []
        for a, b in zip(el[:-2], er[:-2]):
            if a != b and a != 1 and b != 1:
                raise ctx.fail(op, f"batch dims {el[:-2]} and {er[:-2]} do not broadcast")
            batch.append(b if a == 1 else a)
        k_lhs = el[-2] if adj_x else el[-1]
        k_rhs = er[-1] if adj_y else er[-2]
        if k_lhs != k_rhs:
            raise ctx.fail(op, f"accumulation dims differ: {k_lhs} (lhs) and {k_rhs} (rhs)")
        out_shape = (*batch, el[-1] if adj_x else el[-2], er[-2] if adj_y else er[-1])
        if len(y.shape) < rank or y.num_elements != int(np.prod(out_shape, dtype=np.int64)):
            raise ctx.fail(op, f"output {tuple(y.shape)} cannot hold the result {out_shape}")
        lhs_buffer = ctx.arena.allocate_persistent(lhs.nbytes) if adj_x else None
        rhs_buffer = ctx.arena.allocate_persistent(rhs.nbytes) if not adj_y else None
        data = BatchMatMulData(lhs.type_name, adj_x, adj_y, out_shape, lhs_buffer=lhs_buffer, rhs_buffer=rhs_buffer)
        if lhs.type_name == "FLOAT32":
            return data
        check_scales(ctx, op, lhs, rhs, y)
        (s_l, zp_l), (s_r, zp_r), (s_o, zp_o) = qparams(lhs), qparams(rhs), qparams(y)
        if lhs.type_name == "INT16" and (zp_l or zp_r or zp_o):
            raise ctx.fail(op, f"int16 BATCH_MATMUL needs zero points 0, got {zp_l}, {zp_r}, {zp_o}")
        m, shift = quantize_multiplier(float(np.float32(s_l) * np.float32(s_r)) / float(s_o))
        return BatchMatMulData(lhs.type_name, adj_x, adj_y, out_shape, m, shift, zp_l, zp_r, zp_o, lhs_buffer,
                               rhs_buffer)

    def invoke(self, ctx, op, data: BatchMatMulData) -> None:
        a, b = operands(ctx, op, data)
        out = ctx.output(op, 0)
        out[...] = self.product(data, a, b).reshape(out.shape)

    def product(self, data: BatchMatMulData, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """The output of ``a`` ``[..., M, K]`` times ``b`` ``[..., K, N]`` (the operands after the adjoints)."""
        if data.type_name == "FLOAT32":
            return float_matmul(a, b)
        total = np.matmul(a.astype(np.int64) - data.zp_lhs, b.astype(np.int64) - data.zp_rhs)
        return requantize(total, data)


def operands(ctx, op, data: BatchMatMulData) -> tuple[np.ndarray, np.ndarray]:
    """``(lhs as [..., M, K], rhs as [..., K, N])``; the transposes TFLM makes go through its tail buffers."""
    lhs, rhs = ctx.input(op, 0), ctx.input(op, 1)
    if data.lhs_buffer is not None:          # adj_x: TFLM copies lhs^T into the tail
        t = data.lhs_buffer.view(lhs.dtype).reshape(_swap_last(lhs.shape))
        t[...] = np.swapaxes(lhs, -1, -2)
        lhs = t
    if data.rhs_buffer is not None:          # not adj_y: TFLM copies rhs^T ([N, K] rows) into the tail
        t = data.rhs_buffer.view(rhs.dtype).reshape(_swap_last(rhs.shape))
        t[...] = np.swapaxes(rhs, -1, -2)
        rhs = t
    return lhs, np.swapaxes(rhs, -1, -2)


def float_matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """TFLM's float loop: ``total += a[..., m, k] * b[..., k, n]`` for k in order, float32 throughout."""
    shape = np.broadcast_shapes(a.shape[:-2], b.shape[:-2]) + (a.shape[-2], b.shape[-1])
    total = np.zeros(shape, np.float32)
    with np.errstate(all="ignore"):
        for k in range(a.shape[-1]):
            total += a[..., :, k:k + 1] * b[..., k:k + 1, :]
    return total


def requantize(total: np.ndarray, data: BatchMatMulData) -> np.ndarray:
    """int8: ``MBQM(int32 total)``; int16: the 64-bit MBQM of the int64 total; then the zero point and clamp."""
    t = data.type_name
    if t == "INT8":
        r = mbqm(wrap_int32(total), data.multiplier, data.shift)
    else:
        r = mbqm_int64(total, data.multiplier, data.shift)
    return np.clip(r + data.zp_out, QMIN[t], QMAX[t])


KERNEL = BatchMatMul()
