"""MIRROR_PAD: pad every dimension with a mirror image of the input (``micro/kernels/mirror_pad.cc``).

Prepare (TFLM): the padding matrix (INT32 or INT64) is 2-D with one row per input dimension; ``offset`` is 1 for
REFLECT (the edge is not repeated) and 0 for SYMMETRIC; two scratch buffers of ``rank * sizeof(int)`` bytes (the
per-dimension strides) are requested. Eval (FLOAT32, INT8) maps every output index, dimension by dimension, with
``GetInputDimension``: left of the input ``(left + offset - 1) - min(p, left - 1)``, right of it
``(dim - 1 - offset) - min(p - left - dim, dim - 1 - offset)``, else ``p - left``. The output shape comes from the
model; here it must be ``dim + left + right`` and every mapped index must fall inside the input (REFLECT pads of
at most ``dim - 1``, SYMMETRIC of at most ``dim``), checked at prepare for constant paddings, else at invoke.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import InvokeError
from .contract import PURE, Kernel

SUPPORTED_TYPES = ("FLOAT32", "INT8")
INT_BYTES = 4


@dataclass(frozen=True)
class MirrorPadData:
    offset: int
    index: tuple[np.ndarray, ...] | None     # np.ix_ gather index, None: built at invoke


def input_dimension(p: np.ndarray, left: int, dim: int, offset: int) -> np.ndarray:
    """TFLM's GetInputDimension for output positions ``p`` of one dimension."""
    orig_left = left + offset - 1
    in_left = orig_left - np.minimum(p, orig_left - offset)
    q = p - left - dim
    orig_right = dim - (1 + offset)
    in_right = orig_right - np.minimum(q, orig_right)
    return np.where(p < left, in_left, np.where(p - left >= dim, in_right, p - left))


def gather_index(x_shape, y_shape, pads: np.ndarray, offset: int) -> tuple[tuple[np.ndarray, ...] | None, str]:
    pads = np.asarray(pads, dtype=np.int64).reshape(len(x_shape), 2)
    axes = []
    for k, (dim, out_dim) in enumerate(zip(x_shape, y_shape)):
        left, right = int(pads[k, 0]), int(pads[k, 1])
        if left < 0 or right < 0 or dim + left + right != out_dim:
            return None, f"dimension {k}: {dim} + {left} + {right} != output {out_dim}"
        idx = input_dimension(np.arange(out_dim), left, dim, offset)
        if idx.size and (idx.min() < 0 or idx.max() >= dim):
            return None, f"dimension {k}: padding {left}, {right} reaches beyond the {dim} input values"
        axes.append(idx)
    return np.ix_(*axes), ""


class MirrorPad(Kernel):
    ops = ("MIRROR_PAD",)
    traits = PURE
    def prepare(self, ctx, op) -> MirrorPadData:
        ctx.check_io_count(op, 2, 1)
        x, pads, y = ctx.require_input(op, 0), ctx.require_input(op, 1), ctx.output(op, 0)
        if len(pads.shape) != 2 or pads.shape[0] != len(x.shape) or pads.shape[1] != 2:
            raise ctx.fail(op, f"paddings must be [{len(x.shape)}, 2], got {pads.shape}")
        if pads.type_name not in ("INT32", "INT64"):
            raise ctx.fail(op, f"paddings must be INT32 or INT64, got {pads.type_name}")
        if y.type_name not in SUPPORTED_TYPES or x.type_name != y.type_name:
            raise ctx.fail(op, f"FLOAT32 or INT8 in and out, got {x.type_name} -> {y.type_name}")
        if len(y.shape) != len(x.shape):
            raise ctx.fail(op, f"output rank {len(y.shape)} differs from input rank {len(x.shape)}")
        mode = op.options["mode"]
        if mode not in (0, 1):
            raise ctx.fail(op, f"unknown mirror padding mode {mode}")
        offset = 1 if mode == 0 else 0
        for _ in range(2):
            ctx.request_scratch(op, len(x.shape) * INT_BYTES)
        if pads.data is None:
            return MirrorPadData(offset, None)
        index, why = gather_index(x.shape, y.shape, pads.data, offset)
        if index is None:
            raise ctx.fail(op, why)
        return MirrorPadData(offset, index)

    def invoke(self, ctx, op, data: MirrorPadData) -> None:
        x, out = ctx.input(op, 0), ctx.output(op, 0)
        index = data.index
        if index is None:
            index, why = gather_index(x.shape, out.shape, ctx.input(op, 1), data.offset)
            if index is None:
                raise InvokeError(op.index, op.key, why)
        out[...] = x[index]


KERNEL = MirrorPad()
