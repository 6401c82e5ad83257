"""CONCATENATION: join up to 10 tensors along an axis, without requantization.

TFLM (``micro/kernels/concatenation.cc``): Prepare requires ``fused_activation_function == NONE``; input type in
{float32, int8, int16, int32, int64, bool}, every input and the output of that same type; at most 10 inputs; rank <= 6
(``RuntimeShape::kMaxSmallSize``); int8: every input must have *exactly* the output's scale (compared as double) and
zero point (TFLM never rescales, unlike LiteRT); int16: every input and the output have zero point 0 (scales are not
compared). ``axis < 0`` gets ``+= output rank``. Eval copies, for each outer index, each input's
``dim[axis] * inner`` chunk in turn (reference ``Concatenation``). We also refuse shapes that do not concatenate.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import numpy as np

from ._qutil import concatenate, qparams
from .bands import RowLocalTiler, Tiler
from .base import is_batch1_nhwc
from .contract import Kernel, Traits

SUPPORTED = ("FLOAT32", "INT8", "INT16", "INT32", "INT64", "BOOL")
MAX_INPUTS = 10
MAX_DIMS = 6


@dataclass(frozen=True)
class ConcatenationData:
    axis: int


class ConcatBands:
    """CONCATENATION along another axis than the rows (of batch-1 NHWC tensors): a band of output rows is the same
    rows of every input, joined by ``invoke`` on the band views; a constant input with more than one row runs it
    whole."""

    @staticmethod
    def for_op(op: Any, data: Any, inputs: Any, output: Any) -> Tiler | None:
        if not is_batch1_nhwc(output, *inputs) or data.axis % 4 == 1 or inputs[0].is_constant:
            return None
        if any(t.data is not None and t.shape[1] > 1 for t in inputs):
            return None
        return RowLocalTiler({k: 1 for k, t in enumerate(inputs) if t.data is None})


class Concatenation(Kernel):
    ops = ("CONCATENATION",)
    traits = Traits(subgraphs=False, resources=False, stateful=False, mixes_batch=True, pointwise=True)
    geometry = "concat"
    opdata = 'ipp iii'
    opdata_compression = "iiiiiiiiii"
    #: out of core: row bands when joined along another axis (:class:`ConcatBands`)
    bands = ConcatBands()

    def batch_safe(self, op, tensors) -> bool:
        """Along an axis other than the batch axis (two branches of a CNN joined along channels) each sample's own
        rows are joined."""
        if not op.outputs or op.outputs[0] < 0:
            return False
        rank = len(tensors[op.outputs[0]].shape)
        axis = int(op.options.get("axis", 0))
        return rank > 1 and (axis % rank if -rank <= axis < rank else 0) != 0

    def prepare(self, ctx, op) -> ConcatenationData:
        if len(op.inputs) < 1 or len(op.outputs) != 1:
            raise ctx.fail(op, f"expected at least 1 input and 1 output, got {len(op.inputs)} and {len(op.outputs)}")
        x0, y = ctx.require_input(op, 0), ctx.output(op, 0)
        act = op.options.get("fused_activation_function", "NONE")
        if act != "NONE":
            raise ctx.fail(op, f"fused activation {act} not supported (must be NONE)")
        if x0.type_name not in SUPPORTED:
            raise ctx.fail(op, f"type {x0.type_name} not supported (TFLM supports {', '.join(SUPPORTED)})")
        if y.type_name != x0.type_name:
            raise ctx.fail(op, f"output type {y.type_name} differs from input type {x0.type_name}")
        if len(op.inputs) > MAX_INPUTS:
            raise ctx.fail(op, f"{len(op.inputs)} inputs; TFLM supports at most {MAX_INPUTS}")
        out_scale, out_zp = qparams(y)
        for k in range(len(op.inputs)):
            t = ctx.require_input(op, k)
            if t.type_name != x0.type_name:
                raise ctx.fail(op, f"input {k} type {t.type_name} differs from input 0 type {x0.type_name}")
            if len(t.shape) > MAX_DIMS:
                raise ctx.fail(op, f"input {k} has {len(t.shape)} dims; TFLM supports at most {MAX_DIMS}")
            scale, zp = qparams(t)
            if t.type_name == "INT8" and (scale != out_scale or zp != out_zp):
                raise ctx.fail(op, f"input {k} quantization (scale {scale}, zp {zp}) differs from the output's "
                                   f"(scale {out_scale}, zp {out_zp}); TFLM's int8 CONCATENATION never rescales")
            if t.type_name == "INT16" and zp != 0:
                raise ctx.fail(op, f"input {k} zero point {zp} must be 0 for INT16")
        if y.type_name == "INT16" and out_zp != 0:
            raise ctx.fail(op, f"output zero point {out_zp} must be 0 for INT16")
        rank = len(y.shape)
        axis = int(op.options.get("axis", 0))
        if axis < 0:
            axis += rank
        if not 0 <= axis < rank:
            raise ctx.fail(op, f"axis {op.options.get('axis', 0)} out of range for output rank {rank}")
        total = 0
        for k in range(len(op.inputs)):
            s = ctx.require_input(op, k).shape
            if len(s) != rank or any(s[i] != y.shape[i] for i in range(rank) if i != axis):
                raise ctx.fail(op, f"input {k} shape {s} does not concatenate into {y.shape} along axis {axis}")
            total += s[axis]
        if total != y.shape[axis]:
            raise ctx.fail(op, f"inputs add up to {total} along axis {axis}, the output has {y.shape[axis]}")
        return ConcatenationData(axis)

    def bind(self, ctx, op, data: ConcatenationData):
        """The same concatenation on the fixed views, as a call without arguments."""
        parts = tuple(ctx.input(op, k) for k in range(len(op.inputs)))
        # arguments positional: a partial's keywords are merged into a new dict at every call (0.1 us)
        return functools.partial(concatenate, parts, data.axis, ctx.output(op, 0))

    def invoke(self, ctx, op, data: ConcatenationData) -> None:
        parts = [ctx.input(op, k) for k in range(len(op.inputs))]
        np.concatenate(parts, axis=data.axis, out=ctx.output(op, 0))

    def invoke_streams(self, ctx, op, data: ConcatenationData, state: None) -> None:
        """Streams (:mod:`.streams`): along the axis after the stream axis, constants repeated for every stream."""
        out = ctx.output(op, 0)
        rank = out.ndim - 1
        parts = [ctx.input(op, k) for k in range(len(op.inputs))]
        parts = [p if p.ndim > rank else np.broadcast_to(p, (out.shape[0], *p.shape)) for p in parts]
        np.concatenate(parts, axis=data.axis + 1, out=out)


KERNEL = Concatenation()
