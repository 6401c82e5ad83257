"""Hand a smaller plan back to TFLM: a model file whose ``OfflineMemoryAllocation`` metadata places every planned
tensor where :func:`~microinterp.planner.optimal.plan_optimal` put it.

TFLM honours that metadata (``micro_allocation_info.cc``): offline-planned tensors take their offsets as given and
only the scratch buffers are planned online, first fit, around them -- so the head the real runtime will report is
:func:`~microinterp.planner.greedy.plan_greedy` run on those requests, which :func:`optimize` computes and returns as
the prediction (``tests/apps/test_optimize.py`` checks it against the wheel, and the outputs bit for bit).

The model is rewritten through the model builder (:func:`microinterp.rewrite.rebuild`): tensors (shapes, types, quantization, constant
data, variables), every subgraph's ops with their builtin or custom options and intermediates, and the metadata
are kept; SignatureDefs, tensor shape signatures and operator versions are not written (TFLM reads none of them to
run a model). Variable tensors and anything TFLM does not plan keep ``-1`` (an offline offset would move a variable
from the tail into the head).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from ..model import Model, load_model
from ..planner.greedy import plan_greedy, plan_size
from ..planner.optimal import lower_bound, plan_optimal
from ..rewrite import rebuild


@dataclass(frozen=True)
class Optimized:
    """What :func:`optimize` produced: the model bytes and the heads (bytes) before, predicted, and the bound."""

    data: bytes
    tflm_head: int
    predicted_head: int
    lower_bound: int
    offsets: tuple[int, ...]        # one per tensor of all subgraphs (-1: not offline-planned)
    order: tuple[int, ...] | None = None    # subgraph 0's op order when reordered (positions), else None

    @property
    def saved(self) -> int:
        return self.tflm_head - self.predicted_head


def optimize(model: Any, budget_s: float = 2.0, reorder: bool = True) -> Optimized:
    """The model with the optimal offline plan -- for the best op order found (``reorder``,
    :mod:`microinterp.planner.reorder`) when that lowers the head -- never worse than TFLM's own: when the search
    finds nothing smaller, the plan written is TFLM's greedy one in the original order, so the head stays the same."""
    from ..interpreter import Interpreter

    loaded = load_model(model)
    interp = Interpreter(loaded)
    tflm = plan_size(interp.runtime.plan["requests"], plan_greedy(interp.runtime.plan["requests"]))
    candidates = [None]
    if reorder:
        from ..planner.reorder import best_order

        order, _ = best_order(loaded, interp.runtime.plan["scratch"], interp.runtime.plan["unplanned"])
        if order != list(range(len(order))):
            candidates.append(order)
    best = None
    for order in candidates:
        found = _plan_for(loaded, interp, order, budget_s)
        if best is None or found[1] < best[1]:
            best = (*found, order)
    tensor_offsets, predicted, bound, order = best
    if predicted > tflm:     # scratch placement undid the gain: keep TFLM's own plan, written out
        tensor_offsets, predicted, bound = _plan_for(loaded, interp, None, budget_s, greedy=True)
        order = None
    offsets = tuple(tensor_offsets.get((sg.index, t.index), -1) for sg in loaded.subgraphs for t in sg.tensors)
    b = rebuild(loaded, {"OfflineMemoryAllocation": None}, op_order=order)
    b.add_offline_plan(offsets)
    return Optimized(b.build(), tflm, predicted, bound, offsets, tuple(order) if order else None)


def _plan_for(loaded: Model, interp: Any, order: list[int] | None, budget_s: float, greedy: bool = False
              ) -> tuple[dict, int, int]:
    """Tensor offsets (TFLM's greedy or the optimal search) for ``order`` (None: the model's), the head TFLM gets
    with the tensors fixed and the scratch buffers planned online around them, and the lower bound."""
    from ..planner.lifetimes import allocation_infos, buffer_requests
    from ..planner.reorder import requests_for_order

    handles, scratch = interp.runtime.plan["unplanned"], interp.runtime.plan["scratch"]
    if order is None:
        infos, owners, requests = interp.runtime.plan["infos"], interp.runtime.plan["owners"], interp.runtime.plan["requests"]
    else:
        requests = requests_for_order(loaded, order, scratch, handles)
        main = loaded.main
        permuted = replace(loaded, subgraphs=(replace(main, operators=tuple(main.operators[i] for i in order)),
                                              *loaded.subgraphs[1:]))
        infos = allocation_infos(permuted, scratch, handles)
        owners = buffer_requests(infos)[1]
    is_tensor = [infos[owner].kind == "tensor" for owner in owners]
    plan = plan_greedy(requests) if greedy else plan_optimal(requests, budget_s=budget_s)
    fixed = [replace(r, offline_offset=plan[i]) if is_tensor[i] else r for i, r in enumerate(requests)]
    at = {(infos[o].subgraph, infos[o].index): plan[i] for i, o in enumerate(owners) if is_tensor[i]}
    return at, plan_size(fixed, plan_greedy(fixed)), lower_bound(requests)
