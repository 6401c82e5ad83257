"""DYNAMIC_UPDATE_SLICE: write ``update`` into a copy of ``operand`` at start indices given at run time
(``micro/kernels/dynamic_update_slice.cc``) -- the KV-cache write of transformer decoders.

Prepare (TFLM): three inputs, one output; operand and update of one type and rank, every update dim at most the
operand's; start indices a 1-D INT32 or INT64 vector with one value per dim. Eval (FLOAT32, INT8, INT16, INT32):
equal element counts copy the update whole; otherwise the operand is copied to the output and the update written at
``clamp(start_i, 0, operand_i - update_i)`` per dim (indices are clamped, never refused). The output takes the
operand's type and shape.
"""

from __future__ import annotations

import numpy as np

from .contract import MIXING, Kernel

SUPPORTED_TYPES = ("FLOAT32", "INT8", "INT16", "INT32")


class DynamicUpdateSlice(Kernel):
    ops = ("DYNAMIC_UPDATE_SLICE",)
    traits = MIXING
    def prepare(self, ctx, op) -> None:
        ctx.check_io_count(op, 3, 1)
        operand, update, start, y = (ctx.require_input(op, 0), ctx.require_input(op, 1), ctx.require_input(op, 2),
                                     ctx.output(op, 0))
        if operand.type_name != update.type_name:
            raise ctx.fail(op, f"operand {operand.type_name} and update {update.type_name} types differ")
        if start.type_name not in ("INT32", "INT64") or len(start.shape) != 1 or \
                start.shape[0] != len(operand.shape):
            raise ctx.fail(op, f"start indices must be INT32/INT64 [{len(operand.shape)}], got {start.type_name} "
                               f"{start.shape}")
        if len(update.shape) != len(operand.shape) or any(u > o for u, o in zip(update.shape, operand.shape)):
            raise ctx.fail(op, f"update {update.shape} does not fit operand {operand.shape}")
        if operand.type_name not in SUPPORTED_TYPES:
            raise ctx.fail(op, f"DYNAMIC_UPDATE_SLICE: Operand type {operand.type_name} not supported.")
        if y.type_name != operand.type_name or tuple(y.shape) != tuple(operand.shape):
            raise ctx.fail(op, f"output {y.type_name} {y.shape} differs from operand {operand.type_name} "
                               f"{operand.shape}")

    def invoke(self, ctx, op, data: None) -> None:
        operand, update, start, out = (ctx.input(op, 0), ctx.input(op, 1), ctx.input(op, 2), ctx.output(op, 0))
        if operand.size == update.size:
            out[...] = update.reshape(out.shape)
            return
        if out is not operand:
            out[...] = operand
        if update.size == 0:
            return
        begin = np.clip(start.astype(np.int64), 0, np.array(operand.shape) - np.array(update.shape))
        out[tuple(slice(int(b), int(b) + u) for b, u in zip(begin, update.shape))] = update


KERNEL = DynamicUpdateSlice()
