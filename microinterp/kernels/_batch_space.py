"""Shared by SPACE_TO_BATCH_ND and BATCH_TO_SPACE_ND (``micro/kernels/space_to_batch_nd.cc``,
``batch_to_space_nd.cc``; ``reference/space_to_batch_nd.h``, ``batch_to_space_nd.h``).

Both take an input of rank 3 or 4 (3-D ``NHC`` is treated as ``NH1C``: block width 1, no left padding or crop), an
INT32 ``block_shape`` and an INT32 ``paddings`` / ``crops`` matrix, and an output of the same rank and type; Eval
handles FLOAT32 and INT8. TFLM reads the block and the paddings at Eval and trusts the output shape the model
declares (a mismatch would read or write out of bounds): here the geometry is checked against the output shape --
at prepare when both are constants (the converter's case), else at every invoke (an
:class:`~microinterp.errors.InvokeError`).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from ..errors import InvokeError, ModelShapeWarning
from .contract import Kernel

SUPPORTED_TYPES = ("FLOAT32", "INT8")


@dataclass(frozen=True)
class BatchSpaceData:
    geometry: tuple[int, int, int, int] | None   # (block_h, block_w, top, left); None: read at invoke


class BatchSpaceOp(Kernel):
    """The flow both ops share: validate constant geometry at prepare, else at invoke, then ``compute``.

    ``problem`` refuses what TFLM cannot run (a block that is not positive, negative paddings or crops, an empty
    batch: its loops would divide by zero or read outside the input); ``mismatch`` names a stored output shape that
    disagrees with the op's arithmetic, which TFLM runs anyway over the stored shape -- so does ``compute``, and
    prepare warns (:class:`~microinterp.errors.ModelShapeWarning`)."""

    #: What the op calls its second matrix ("paddings" or "crops").
    PADS_WORD = ""
    #: Whether the batch the op's loops divide by is the input's (SPACE_TO_BATCH_ND) or the output's.
    DIVIDES_BY_INPUT_BATCH = True

    def problem(self, x_shape, y_shape, geo) -> str | None:
        bh, bw, top, left = geo
        batch = nhwc(x_shape if self.DIVIDES_BY_INPUT_BATCH else y_shape)[0]
        if bh <= 0 or bw <= 0 or top < 0 or left < 0:
            return f"block {bh}x{bw} must be positive and {self.PADS_WORD} {top}, {left} non-negative"
        if batch <= 0 or nhwc(x_shape)[3] != nhwc(y_shape)[3]:
            return f"input {tuple(x_shape)} and output {tuple(y_shape)} need a batch and the same depth"
        return None

    def mismatch(self, x_shape, y_shape, geo) -> str | None:
        raise NotImplementedError

    def compute(self, x: np.ndarray, out: np.ndarray, geo: tuple[int, int, int, int]) -> None:
        raise NotImplementedError

    def prepare(self, ctx, op) -> BatchSpaceData:
        x, block, pads, y = check_tensors(ctx, op)
        if block.data is None or pads.data is None:
            return BatchSpaceData(None)
        geo = geometry(x.shape, y.shape, block.data, pads.data)
        bad = self.problem(x.shape, y.shape, geo)
        if bad:
            raise ctx.fail(op, bad)
        odd = self.mismatch(x.shape, y.shape, geo)
        if odd:
            warnings.warn(f"op {op.index} ({op.key}): {odd}; it runs over the stored shape, as TFLM does",
                          ModelShapeWarning, stacklevel=2)
        return BatchSpaceData(geo)

    def invoke(self, ctx, op, data: BatchSpaceData) -> None:
        x, out = ctx.input(op, 0), ctx.output(op, 0)
        geo = data.geometry
        if geo is None:
            geo = geometry(x.shape, out.shape, ctx.input(op, 1), ctx.input(op, 2))
            bad = self.problem(x.shape, out.shape, geo)
            if bad:
                raise InvokeError(op.index, op.key, bad)
        self.compute(x, out, geo)


def check_tensors(ctx, op):
    """The Prepare checks both ops share; returns (input, block, pads, output) tensors."""
    ctx.check_io_count(op, 3, 1)
    x, block, pads, y = ctx.require_input(op, 0), ctx.require_input(op, 1), ctx.require_input(op, 2), \
        ctx.output(op, 0)
    if not (3 <= len(x.shape) <= 4 and 3 <= len(y.shape) <= 4 and len(x.shape) == len(y.shape)):
        raise ctx.fail(op, f"input and output must both be 3-D or 4-D, got {x.shape} and {y.shape}")
    if x.type_name != y.type_name or x.type_name not in SUPPORTED_TYPES:
        raise ctx.fail(op, f"FLOAT32 or INT8 in and out, got {x.type_name} -> {y.type_name}")
    spatial = len(x.shape) - 2
    if block.type_name != "INT32" or block.num_elements < spatial:
        raise ctx.fail(op, f"block_shape must be INT32 with {spatial} values, got {block.type_name} {block.shape}")
    if pads.type_name != "INT32" or pads.num_elements < 2 * spatial:
        raise ctx.fail(op, f"the paddings/crops must be INT32 [{spatial}, 2], got {pads.type_name} {pads.shape}")
    return x, block, pads, y


def geometry(x_shape, y_shape, block: np.ndarray, pads: np.ndarray) -> tuple[int, int, int, int]:
    """(block_h, block_w, pad_or_crop_top, pad_or_crop_left) with TFLM's 3-D rule."""
    block, pads = np.asarray(block).reshape(-1), np.asarray(pads).reshape(-1)
    four = len(x_shape) == 4
    return int(block[0]), int(block[1]) if four else 1, int(pads[0]), int(pads[2]) if four else 0


def nhwc(shape) -> tuple[int, ...]:
    """``ExtendShapeSpaceToBatch``: NHC -> NH1C."""
    return tuple(shape) if len(shape) == 4 else (shape[0], shape[1], 1, shape[2])
