"""ASSIGN_VARIABLE: copy a tensor into a resource variable (``micro/kernels/assign_variable.cc``).

Prepare (TFLM): two inputs, no outputs; input 0 (the handle) is RESOURCE or INT32 with one element. If the handle's
value is known at prepare -- the output of a VAR_HANDLE prepared before this op, or a constant -- the variable's
buffer is allocated now (first time only) in the tail with the byte size of input 1 and filled with its default
(see :mod:`microinterp.graph`). Eval: ``memcpy`` input 1 into the buffer; a variable without a buffer, an unknown id
or a different byte size fails (TFLM: error or DCHECK at Eval; here :class:`~microinterp.errors.InvokeError`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..errors import InvokeError
from ._subgraph_io import graph_of
from .contract import RESOURCE, Kernel


@dataclass(frozen=True)
class AssignData:
    resources: Any


def handle_id(ctx, op, resources) -> int | None:
    """The resource id input 0 holds at prepare (TFLM's non-null ``data.i32``), or None."""
    known = resources.handles.get((ctx.subgraph.index, op.inputs[0]))
    if known is not None:
        return known
    t = ctx.input(op, 0)
    if t is not None and t.data is not None and t.type_name == "INT32":
        return int(t.data.reshape(-1)[0])
    return None


class AssignVariable(Kernel):
    ops = ("ASSIGN_VARIABLE",)
    traits = RESOURCE
    def prepare(self, ctx, op) -> AssignData:
        resources = graph_of(ctx, op).resources
        ctx.check_io_count(op, 2, 0)
        handle, value = ctx.require_input(op, 0), ctx.require_input(op, 1)
        if handle.type_name not in ("RESOURCE", "INT32") or handle.num_elements != 1:
            raise ctx.fail(op, f"the handle must be one RESOURCE or INT32, got {handle.type_name} {handle.shape}")
        rid = handle_id(ctx, op, resources)
        if rid is not None:
            if not 0 <= rid < len(resources.names):
                raise ctx.fail(op, f"resource variable {rid} does not exist")
            resources.allocate(rid, ctx.arena, value)
        return AssignData(resources)

    def bind(self, ctx, op, data: AssignData):
        """On a contiguous value: :meth:`~microinterp.graph.ResourceVariables.bind_assign` (None otherwise)."""
        value = ctx.input(op, 1)
        if not value.flags.c_contiguous:
            return None
        return data.resources.bind_assign(ctx.input(op, 0), value, lambda rule: InvokeError(op.index, op.key, rule))

    def invoke(self, ctx, op, data: AssignData) -> None:
        rid = int(ctx.input(op, 0).reshape(-1)[0])
        data.resources.assign(rid, ctx.input(op, 1), lambda rule: InvokeError(op.index, op.key, rule))


KERNEL = AssignVariable()
