"""GATHER_ND: gather slices of ``params`` addressed by the last axis of ``indices`` (``micro/kernels/gather_nd.cc``).

Prepare (TFLM): params FLOAT32 or INT8 (at least 1-D), indices INT32 (at least 1-D) whose last dim ``nd`` is at
most the params rank and at most 5; the output shape is ``indices.shape[:-1] + params.shape[nd:]`` (TFLM overwrites
the output dims with it; here the model's output must have it). Eval, per slice: ``from = sum(index_j *
stride_j)`` over the flat params; a slice starting below 0 or ending past the end fails ("gather_nd index out of
bounds", :class:`~microinterp.errors.InvokeError` here). TFLM checks the *flat* position only, so an index that
is out of range in its own dimension but lands inside the buffer is accepted and reads there; so it does here.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, replace

import numpy as np

from ..errors import InvokeError
from .contract import MIXING, Kernel

MAX_INDICES_ND = 5


@dataclass(frozen=True)
class GatherNdData:
    nd: int
    strides: tuple[int, ...]
    slice_size: int
    starts: np.ndarray | None = None    # constant indices inside the params: every slice's first element


class GatherNd(Kernel):
    ops = ("GATHER_ND",)
    traits = MIXING
    def prepare(self, ctx, op) -> GatherNdData:
        ctx.check_io_count(op, 2, 1)
        params, indices, y = ctx.require_input(op, 0), ctx.require_input(op, 1), ctx.output(op, 0)
        if params.type_name not in ("FLOAT32", "INT8"):
            raise ctx.fail(op, f"Params of type '{params.type_name}' are not supported by gather_nd.")
        if indices.type_name != "INT32":
            raise ctx.fail(op, f"Indices of type '{indices.type_name}' are not supported by gather_nd.")
        if len(params.shape) < 1 or len(indices.shape) < 1:
            raise ctx.fail(op, "Params and indices must be at least vectors.")
        nd = indices.shape[-1]
        if nd > len(params.shape) or nd > MAX_INDICES_ND:
            raise ctx.fail(op, f"Index innermost dimension length {nd} must be <= params rank and <= 5.")
        want = tuple(indices.shape[:-1]) + tuple(params.shape[nd:])
        if tuple(y.shape) != want or y.type_name != params.type_name:
            raise ctx.fail(op, f"output must be {params.type_name} {want}, got {y.type_name} {tuple(y.shape)}")
        strides, remain = [], params.num_elements
        for k in range(nd):
            remain = remain // params.shape[k] if params.shape[k] else 0
            strides.append(remain)
        data = GatherNdData(nd, tuple(strides), int(np.prod(params.shape[nd:], dtype=np.int64)))
        if indices.data is not None:
            start = _starts(np.asarray(indices.data), data)
            if not ((start < 0) | (start + data.slice_size > params.num_elements)).any():
                data = replace(data, starts=start)
        return data

    def bind(self, ctx, op, data: GatherNdData):
        """Constant indices (checked inside the params at prepare) on contiguous views: every output element's
        position in the flattened params computed once, one ``take`` per invoke (None otherwise)."""
        params, out = ctx.input(op, 0), ctx.output(op, 0)
        if data.starts is None or not (params.flags.c_contiguous and out.flags.c_contiguous) or not out.size:
            return None
        index = (data.starts[:, None] + np.arange(data.slice_size)).reshape(-1)
        # the method (no dispatch), "wrap": every position is valid, none checked (the default "raise" checks each)
        return functools.partial(params.reshape(-1).take, index, None, out.reshape(-1), "wrap")

    def invoke(self, ctx, op, data: GatherNdData) -> None:
        params, indices, out = ctx.input(op, 0), ctx.input(op, 1), ctx.output(op, 0)
        start = _starts(indices, data)
        if ((start < 0) | (start + data.slice_size > params.size)).any():
            raise InvokeError(op.index, op.key, "gather_nd index out of bounds")
        flat = params.reshape(-1)
        out[...] = flat[start[:, None] + np.arange(data.slice_size)].reshape(out.shape)


def _starts(indices: np.ndarray, data: GatherNdData) -> np.ndarray:
    """Every index tuple's first element in the flattened params."""
    idx = indices.reshape(-1, data.nd).astype(np.int64)
    return idx @ np.array(data.strides, dtype=np.int64) if data.nd else np.zeros(len(idx), np.int64)


KERNEL = GatherNd()
