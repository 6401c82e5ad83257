"""SQUEEZE: drop size-1 dims; the data are copied byte for byte (any element type).

TFLM (``micro/kernels/squeeze.cc``): one input, one output, input rank <= 8. With no ``squeeze_dims`` every size-1
dim is dropped; otherwise each listed dim (negative ones ``+= rank``) must be in range and have size 1. The output
shape comes from the model (TFLM only checks it is large enough); Eval requires equal byte sizes and memcpys the
input (STRING is refused). We also refuse an output shape that is not the squeezed input shape.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from ._qutil import copyto
from .contract import VIEW, Kernel
from .streams import INVOKE

MAX_DIMS = 8


@dataclass(frozen=True)
class SqueezeData:
    num_elements: int


def copy_bytes(out: np.ndarray, x: np.ndarray) -> None:
    """memcpy of the input's bytes into the output (skipped when both are the same memory)."""
    if not np.shares_memory(out, x):
        out.reshape(-1)[...] = x.reshape(-1)


def bind_copy(out: np.ndarray, x: np.ndarray):
    """:func:`copy_bytes` on fixed views as a call without arguments (the interpreter's ``bind``): whether both are
    the same memory is decided once; else one ``copyto`` of the flat views (None where a flat view would copy)."""
    if np.shares_memory(out, x):
        return _nothing
    dst, src = out.reshape(-1), x.reshape(-1)
    if not np.shares_memory(dst, out):
        return None
    return functools.partial(copyto, dst, src)


def _nothing() -> None:
    """The copy of a tensor onto itself."""


class Squeeze(Kernel):
    ops = ("SQUEEZE",)
    traits = VIEW
    cost_family = "view"
    opdata = 0
    #: streams: a byte copy, whatever the leading axes (:mod:`.streams`)
    streams = INVOKE

    def prepare(self, ctx, op) -> SqueezeData:
        ctx.check_io_count(op, 1, 1)
        x, y = ctx.require_input(op, 0), ctx.output(op, 0)
        rank = len(x.shape)
        if rank > MAX_DIMS:
            raise ctx.fail(op, f"input has {rank} dims; TFLM's SQUEEZE supports at most {MAX_DIMS}")
        dims = op.options.get("squeeze_dims", ())
        if not dims:
            squeeze = {i for i, d in enumerate(x.shape) if d == 1}
        else:
            squeeze = set()
            for d in dims:
                cur = d + rank if d < 0 else d
                if not (0 <= cur < rank and x.shape[cur] == 1):
                    raise ctx.fail(op, f"squeeze dim {d} is out of range or not of size 1 in {x.shape}")
                squeeze.add(cur)
        expected = tuple(d for i, d in enumerate(x.shape) if i not in squeeze)
        if y.shape != expected:
            raise ctx.fail(op, f"output shape {y.shape} differs from the squeezed input shape {expected}")
        if x.type_name != y.type_name or x.dtype is None:
            raise ctx.fail(op, f"input type {x.type_name} and output type {y.type_name} must be the same "
                               "fixed-size type")
        return SqueezeData(x.num_elements)

    def bind(self, ctx, op, data: SqueezeData):
        return bind_copy(ctx.output(op, 0), ctx.input(op, 0))

    def invoke(self, ctx, op, data: SqueezeData) -> None:
        copy_bytes(ctx.output(op, 0), ctx.input(op, 0))


KERNEL = Squeeze()
