"""Shared by IF, WHILE and CALL_ONCE: the op's access to other subgraphs (``micro/kernels/kernel_util.cc``'s
``CopyOpInputsToSubgraphInputs`` / ``CopySubgraphOutputsToOpOutputs`` / ``CopyOpOutputsToSubgraphInputs`` /
``CopyOpInputsToOpOutputs``).

TFLM copies tensors with ``memcpy`` after ``ValidateAndGetTensorSizes`` (equal byte sizes, else the op fails at
Eval); here unequal sizes are refused at prepare for every pair the op can copy, so the copies need no check.
"""

from __future__ import annotations

from ..graph import copy_tensors

__all__ = ["check_copy", "copy_tensors", "graph_of", "subgraph_tensors"]


def graph_of(ctx, op):
    """The interpreter's :class:`~microinterp.graph.MicroGraph` (refuses the op where there is none)."""
    if ctx.graph is None:
        raise ctx.fail(op, f"{op.key} needs the interpreter's subgraphs (prepare it inside an Interpreter)")
    return ctx.graph


def check_copy(ctx, op, sources, targets, what: str) -> None:
    """Refuse pairs of tensors whose byte sizes differ (TFLM's ValidateAndGetTensorSizes fails at Eval)."""
    for k, (a, b) in enumerate(zip(sources, targets)):
        if a.nbytes != b.nbytes:
            raise ctx.fail(op, f"{what} {k}: {a.name!r} has {a.nbytes} bytes, {b.name!r} has {b.nbytes}")
        if b.is_constant:
            raise ctx.fail(op, f"{what} {k}: the copy target {b.name!r} is a constant tensor of the model (TFLM would "
                               "write into the flatbuffer)")


def subgraph_tensors(ctx, si: int, kind: str):
    sg = ctx.model.subgraphs[si]
    return [sg.tensors[t] for t in (sg.inputs if kind == "inputs" else sg.outputs)]
