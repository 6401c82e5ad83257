"""TRANSPOSE: permute the axes of a tensor of at most 5 dims (float32, int8, int16).

TFLM (``micro/kernels/transpose.cc``, ``transpose_common.cc`` TransposePrepare, ``reference/transpose.h``): two inputs
``(input, perm)``; rank <= 5; input and output types equal; ``perm`` must be a constant 1-D tensor with one entry per
input dim, each in ``[0, rank)``. Eval is a pure data movement ``out[i_0..i_n] = in[i_perm...]``, no requantization;
only float32, int8 and int16 are accepted at Eval (we refuse other types at prepare). TFLM does not check that
``perm`` is a permutation or that the output shape matches; we refuse such (malformed) models.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .bands import Tiler, invoke_on_band
from .base import is_batch1_nhwc
from .contract import Kernel, Traits

SUPPORTED = ("FLOAT32", "INT8", "INT16")
MAX_DIMS = 5


@dataclass(frozen=True)
class TransposeData:
    perm: tuple[int, ...]


class TransposeTiler(Tiler):
    """A 4-D transpose keeping the batch axis: output rows ``[y0, y1)`` are input indices ``[y0, y1)`` along axis
    ``perm[1]``, transposed by ``invoke`` on the band views."""

    mode = "rows"

    def __init__(self, axis: int):
        self.row_inputs = {0: axis}

    @classmethod
    def for_op(cls, op: Any, data: Any, inputs: Any, output: Any) -> Tiler | None:
        if is_batch1_nhwc(inputs[0], output) and data.perm[0] == 0:
            return cls(int(data.perm[1]))
        return None

    def compute(self, kernel, op, data, band):
        invoke_on_band(kernel, op, data, band)


class Transpose(Kernel):
    ops = ("TRANSPOSE",)
    traits = Traits(subgraphs=False, resources=False, stateful=False, mixes_batch=True, pointwise=True)
    geometry = "transpose"
    cost_family = "transpose"
    opdata = 0
    #: out of core: row bands (:class:`TransposeTiler`)
    bands = TransposeTiler

    def prepare(self, ctx, op) -> TransposeData:
        ctx.check_io_count(op, 2, 1)
        x, perm_t, y = ctx.require_input(op, 0), ctx.require_input(op, 1), ctx.output(op, 0)
        rank = len(x.shape)
        if rank > MAX_DIMS:
            raise ctx.fail(op, "Transpose op only supports 1D-5D input arrays.")
        if x.type_name != y.type_name:
            raise ctx.fail(op, f"input type {x.type_name} differs from output type {y.type_name}")
        if perm_t.data is None:
            raise ctx.fail(op, "Non-constant >perm< tensor is not supported")
        if len(perm_t.shape) != 1 or perm_t.shape[0] != rank:
            raise ctx.fail(op, f"perm must be 1-D with {rank} entries, has shape {perm_t.shape}")
        perm = tuple(int(p) for p in np.asarray(perm_t.data).reshape(-1))
        if any(not 0 <= p < rank for p in perm):
            raise ctx.fail(op, "Transpose op permutations array is out of bounds.")
        if x.type_name not in SUPPORTED:
            raise ctx.fail(op, f"type {x.type_name} not supported (TFLM supports {', '.join(SUPPORTED)}; it "
                               "refuses others when the op is invoked)")
        if sorted(perm) != list(range(rank)):
            raise ctx.fail(op, f"perm {list(perm)} is not a permutation")
        expected = tuple(x.shape[p] for p in perm)
        if y.shape != expected:
            raise ctx.fail(op, f"output shape {y.shape} differs from the permuted input shape {expected}")
        return TransposeData(perm)

    def invoke(self, ctx, op, data: TransposeData) -> None:
        ctx.output(op, 0)[...] = np.transpose(ctx.input(op, 0), data.perm)


KERNEL = Transpose()
