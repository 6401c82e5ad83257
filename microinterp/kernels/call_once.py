"""CALL_ONCE: invoke the ``init`` subgraph on the first invoke only (``micro/kernels/call_once.cc``).

Prepare (TFLM): no inputs, no outputs, the subgraph index exists; ``has_run`` starts false. Eval: if not yet run,
invoke the init subgraph and remember it. TFLM has no Reset for this op, so ``Interpreter.reset()`` does not make it
run again (the initialised resource variables are reset to their defaults all the same, as in TFLM).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ._subgraph_io import graph_of
from .contract import CONTROL_FLOW, Kernel


@dataclass(frozen=True)
class CallOnceData:
    init_index: int
    graph: Any
    has_run: list = field(default_factory=lambda: [False])  # mutable state, as TFLM's OpData::has_run


class CallOnce(Kernel):
    ops = ("CALL_ONCE",)
    traits = CONTROL_FLOW
    def prepare(self, ctx, op) -> CallOnceData:
        graph = graph_of(ctx, op)
        if op.inputs or op.outputs:
            raise ctx.fail(op, f"CALL_ONCE takes no inputs and no outputs, got {len(op.inputs)} and "
                               f"{len(op.outputs)}")
        return CallOnceData(op.options["init_subgraph_index"], graph)

    def invoke(self, ctx, op, data: CallOnceData) -> None:
        if data.has_run[0]:
            return
        data.graph.invoke_subgraph(data.init_index)
        data.has_run[0] = True


KERNEL = CallOnce()
