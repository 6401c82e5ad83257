"""READ_VARIABLE: copy a resource variable into the output (``micro/kernels/read_variable.cc``).

Prepare (TFLM): one input (the handle, RESOURCE, one element) and one output -- DCHECKs only; refused here when
they do not hold. Eval: ``memcpy`` the variable's buffer into the output; an unknown id or a variable without a
buffer (never assigned by a prepared ASSIGN_VARIABLE) fails (:class:`~microinterp.errors.InvokeError`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..errors import InvokeError
from ._subgraph_io import graph_of
from .contract import RESOURCE, Kernel


@dataclass(frozen=True)
class ReadData:
    resources: Any


class ReadVariable(Kernel):
    ops = ("READ_VARIABLE",)
    traits = RESOURCE
    def prepare(self, ctx, op) -> ReadData:
        resources = graph_of(ctx, op).resources
        ctx.check_io_count(op, 1, 1)
        handle = ctx.require_input(op, 0)
        if handle.type_name not in ("RESOURCE", "INT32") or handle.num_elements != 1:
            raise ctx.fail(op, f"the handle must be one RESOURCE, got {handle.type_name} {handle.shape}")
        return ReadData(resources)

    def bind(self, ctx, op, data: ReadData):
        """On a contiguous output: :meth:`~microinterp.graph.ResourceVariables.bind_read` (None otherwise)."""
        out = ctx.output(op, 0)
        if not out.flags.c_contiguous:
            return None
        return data.resources.bind_read(ctx.input(op, 0), out, lambda rule: InvokeError(op.index, op.key, rule))

    def invoke(self, ctx, op, data: ReadData) -> None:
        rid = int(ctx.input(op, 0).reshape(-1)[0])
        data.resources.read(rid, ctx.output(op, 0), lambda rule: InvokeError(op.index, op.key, rule))


KERNEL = ReadVariable()
