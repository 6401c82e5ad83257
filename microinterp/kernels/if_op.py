"""IF: run the ``then`` or the ``else`` subgraph on the op's inputs 1.. (``micro/kernels/if.cc``).

Prepare (TFLM): at least one input; input 0 (the condition) is BOOL with exactly one element; both subgraph indices
exist; the op has as many inputs after the condition as the *then* subgraph has inputs, and as many outputs as it
has outputs (the *else* subgraph is not checked). Eval: read the condition, copy inputs 1.. into the chosen
subgraph's inputs, invoke it, copy its outputs into the op's outputs (a subgraph without outputs copies nothing).
Byte sizes of every pair that can be copied must agree (TFLM checks at Eval; here at prepare).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ._subgraph_io import check_copy, copy_tensors, graph_of, subgraph_tensors
from .contract import CONTROL_FLOW, Kernel


@dataclass(frozen=True)
class IfData:
    then_index: int
    else_index: int
    graph: Any


class If(Kernel):
    ops = ("IF",)
    traits = CONTROL_FLOW
    def prepare(self, ctx, op) -> IfData:
        graph = graph_of(ctx, op)
        if len(op.inputs) == 0:
            raise ctx.fail(op, "IF needs the condition input")
        cond = ctx.require_input(op, 0)
        if cond.type_name != "BOOL" or cond.num_elements != 1:
            raise ctx.fail(op, f"the condition must be one BOOL, got {cond.type_name} {cond.shape}")
        then_i, else_i = op.options["then_subgraph_index"], op.options["else_subgraph_index"]
        if len(op.inputs) - 1 != graph.num_inputs(then_i):
            raise ctx.fail(op, f"{len(op.inputs) - 1} inputs after the condition, the then-subgraph {then_i} has "
                               f"{graph.num_inputs(then_i)}")
        if len(op.outputs) != graph.num_outputs(then_i):
            raise ctx.fail(op, f"{len(op.outputs)} outputs, the then-subgraph {then_i} has "
                               f"{graph.num_outputs(then_i)}")
        ins = [ctx.require_input(op, k) for k in range(1, len(op.inputs))]
        outs = [ctx.output(op, k) for k in range(len(op.outputs))]
        for si in (then_i, else_i):
            check_copy(ctx, op, ins, subgraph_tensors(ctx, si, "inputs"), f"input into subgraph {si}")
            if graph.num_outputs(si):
                check_copy(ctx, op, subgraph_tensors(ctx, si, "outputs"), outs, f"output of subgraph {si}")
        return IfData(then_i, else_i, graph)

    def invoke(self, ctx, op, data: IfData) -> None:
        si = data.then_index if bool(ctx.input(op, 0).reshape(-1)[0]) else data.else_index
        g = data.graph
        copy_tensors([ctx.views[t] for t in op.inputs[1:]], g.subgraph_inputs(si))
        g.invoke_subgraph(si)
        if g.num_outputs(si):
            copy_tensors(g.subgraph_outputs(si), [ctx.views[t] for t in op.outputs])


KERNEL = If()
