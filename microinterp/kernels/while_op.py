"""WHILE: loop the ``body`` subgraph while the ``cond`` subgraph says so (``micro/kernels/while.cc``).

Prepare (TFLM): both subgraph indices exist; the op, the cond subgraph and the body subgraph take the same number
of inputs, the op has as many outputs as inputs and the body as many outputs as the op. Eval: copy the op's inputs
into cond's inputs and into the op's outputs (the loop variables), invoke cond; while its first output is true:
copy the op's outputs into body's inputs, invoke body, copy body's outputs into the op's outputs, copy those into
cond's inputs, invoke cond. Byte sizes of every copied pair must agree (TFLM: at Eval; here at prepare); cond's
first output must be BOOL (TFLM reads it as bool without checking).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..graph import copier
from ._subgraph_io import check_copy, copy_tensors, graph_of, subgraph_tensors
from .contract import CONTROL_FLOW, Kernel


@dataclass(frozen=True)
class WhileData:
    cond_index: int
    body_index: int
    graph: Any


class While(Kernel):
    ops = ("WHILE",)
    traits = CONTROL_FLOW
    def prepare(self, ctx, op) -> WhileData:
        graph = graph_of(ctx, op)
        cond_i, body_i = op.options["cond_subgraph_index"], op.options["body_subgraph_index"]
        n = len(op.inputs)
        if graph.num_inputs(cond_i) != n or graph.num_inputs(body_i) != n:
            raise ctx.fail(op, f"{n} inputs, the cond subgraph takes {graph.num_inputs(cond_i)} and the body "
                               f"{graph.num_inputs(body_i)}")
        if len(op.outputs) != n or graph.num_outputs(body_i) != n:
            raise ctx.fail(op, f"{n} inputs, {len(op.outputs)} outputs, the body has {graph.num_outputs(body_i)}")
        cond_out = subgraph_tensors(ctx, cond_i, "outputs")
        if not cond_out or cond_out[0].type_name != "BOOL":
            raise ctx.fail(op, f"the cond subgraph {cond_i} must output a BOOL first")
        ins = [ctx.require_input(op, k) for k in range(n)]
        outs = [ctx.output(op, k) for k in range(n)]
        check_copy(ctx, op, ins, outs, "loop variable")
        check_copy(ctx, op, ins, subgraph_tensors(ctx, cond_i, "inputs"), "cond input")
        check_copy(ctx, op, ins, subgraph_tensors(ctx, body_i, "inputs"), "body input")
        check_copy(ctx, op, subgraph_tensors(ctx, body_i, "outputs"), outs, "body output")
        return WhileData(cond_i, body_i, graph)

    def bind(self, ctx, op, data: WhileData):
        """:meth:`invoke` on fixed views: the copies' byte views taken once (the subgraphs' calls are read at each
        invoke: they are bound after this op)."""
        g = data.graph
        ins = [ctx.views[t] for t in op.inputs]
        outs = [ctx.views[t] for t in op.outputs]
        cond_in, body_in = g.subgraph_inputs(data.cond_index), g.subgraph_inputs(data.body_index)
        flag = g.subgraph_outputs(data.cond_index)[0].reshape(-1)
        start = copier(ins + ins, cond_in + outs)
        to_body = copier(outs, body_in)
        from_body = copier(g.subgraph_outputs(data.body_index), outs)
        to_cond = copier(outs, cond_in)
        cond_i, body_i, run = data.cond_index, data.body_index, g.invoke_subgraph

        def call() -> None:
            start()
            run(cond_i)
            while flag[0]:
                to_body()
                run(body_i)
                from_body()
                to_cond()
                run(cond_i)
        return call

    def invoke(self, ctx, op, data: WhileData) -> None:
        g = data.graph
        ins = [ctx.views[t] for t in op.inputs]
        outs = [ctx.views[t] for t in op.outputs]
        cond_in, body_in = g.subgraph_inputs(data.cond_index), g.subgraph_inputs(data.body_index)
        flag = g.subgraph_outputs(data.cond_index)[0]
        body_out = g.subgraph_outputs(data.body_index)
        copy_tensors(ins, cond_in)
        copy_tensors(ins, outs)
        g.invoke_subgraph(data.cond_index)
        while bool(flag.reshape(-1)[0]):
            copy_tensors(outs, body_in)
            g.invoke_subgraph(data.body_index)
            copy_tensors(body_out, outs)
            copy_tensors(outs, cond_in)
            g.invoke_subgraph(data.cond_index)


KERNEL = While()
