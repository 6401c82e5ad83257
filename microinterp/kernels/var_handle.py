"""VAR_HANDLE: the id of a resource variable (``micro/kernels/var_handle.cc``).

Prepare (TFLM): ``CreateIdIfNoneFound(container, shared_name)`` in the interpreter's resource-variable table (the
same name in another op or subgraph gives the same id; a missing container matches any). The output tensor's data
is made to point at that id, which is how ASSIGN_VARIABLE's Prepare can see it. Here the id is recorded against the
output tensor at prepare, and written into the output at every invoke (TFLM re-points it at every Eval).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from ._qutil import copyto
from ._subgraph_io import graph_of
from .contract import RESOURCE, Kernel


@dataclass(frozen=True)
class VarHandleData:
    resource_id: int


class VarHandle(Kernel):
    ops = ("VAR_HANDLE",)
    traits = RESOURCE
    def prepare(self, ctx, op) -> VarHandleData:
        resources = graph_of(ctx, op).resources
        if len(op.outputs) != 1:
            raise ctx.fail(op, f"VAR_HANDLE has one output, got {len(op.outputs)}")
        out = ctx.output(op, 0)
        if out.nbytes != 4:
            raise ctx.fail(op, f"the handle tensor must hold one RESOURCE or INT32, got {out.type_name} {out.shape}")
        rid = resources.create_id(op.options["container"], op.options["shared_name"])
        resources.handles[(ctx.subgraph.index, op.outputs[0])] = rid
        return VarHandleData(rid)

    def bind(self, ctx, op, data: VarHandleData):
        """The id written into the fixed output view: one C copy of a kept int32 (the output's bytes seen as one)."""
        out = ctx.output(op, 0)
        if out is None or not out.flags.c_contiguous:
            return None
        return functools.partial(copyto, out.reshape(-1).view(np.uint8), np.array([data.resource_id], np.int32)
                                 .view(np.uint8))

    def invoke(self, ctx, op, data: VarHandleData) -> None:
        ctx.output(op, 0).reshape(-1)[0] = data.resource_id


KERNEL = VarHandle()
