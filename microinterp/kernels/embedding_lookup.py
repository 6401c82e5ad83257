"""EMBEDDING_LOOKUP: rows of a table picked by INT32 ids (``micro/kernels/embedding_lookup.cc``).

Prepare (TFLM): ids 1-D INT32; the table at least 2-D, FLOAT32 (output FLOAT32) or INT8 (output INT8: a raw copy,
or FLOAT32: the *hybrid* lookup, which needs the table's zero point 0); the output dims are overwritten with
``[len(ids), table.shape[1:]...]`` (here the model's output must have them). Eval: an id outside
``[0, rows)`` fails ("index out of bounds", :class:`~microinterp.errors.InvokeError` here); the hybrid lookup
multiplies each int8 value by the table scale in float32.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import InvokeError
from ._qutil import qparams
from .contract import MIXING, Kernel


@dataclass(frozen=True)
class EmbeddingData:
    scale: np.float32 | None     # hybrid: the table's scale


class EmbeddingLookup(Kernel):
    ops = ("EMBEDDING_LOOKUP",)
    traits = MIXING
    def prepare(self, ctx, op) -> EmbeddingData:
        ctx.check_io_count(op, 2, 1)
        ids, table, y = ctx.require_input(op, 0), ctx.require_input(op, 1), ctx.output(op, 0)
        if len(ids.shape) != 1 or ids.type_name != "INT32":
            raise ctx.fail(op, f"ids must be 1-D INT32, got {ids.type_name} {ids.shape}")
        if len(table.shape) < 2 or table.type_name not in ("FLOAT32", "INT8"):
            raise ctx.fail(op, f"the table must be FLOAT32 or INT8 with >= 2 dims, got {table.type_name} {table.shape}")
        allowed = ("FLOAT32",) if table.type_name == "FLOAT32" else ("FLOAT32", "INT8")
        if y.type_name not in allowed:
            raise ctx.fail(op, f"a {table.type_name} table cannot give a {y.type_name} output")
        want = (ids.shape[0], *table.shape[1:])
        if tuple(y.shape) != want:
            raise ctx.fail(op, f"output shape {tuple(y.shape)} is not {want}")
        if table.type_name == "INT8" and y.type_name == "FLOAT32":
            scale, zp = qparams(table)
            if zp != 0:
                raise ctx.fail(op, f"a hybrid lookup needs table zero point 0, got {zp}")
            return EmbeddingData(np.float32(scale))
        return EmbeddingData(None)

    def invoke(self, ctx, op, data: EmbeddingData) -> None:
        ids, table, out = ctx.input(op, 0), ctx.input(op, 1), ctx.output(op, 0)
        rows = table.shape[0]
        if rows == 0:
            return
        bad = (ids < 0) | (ids >= rows)
        if bad.any():
            raise InvokeError(op.index, op.key, f"EMBEDDING_LOOKUP: index out of bounds. Got "
                                                f"{int(ids[bad][0])}, and bounds are [0, {rows - 1}]")
        picked = table[ids]
        if data.scale is not None:
            picked = np.multiply(picked, data.scale, dtype=np.float32)
        out[...] = picked.reshape(out.shape)


KERNEL = EmbeddingLookup()
