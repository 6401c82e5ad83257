"""Hand a smaller plan back to TFLM: a model file whose ``OfflineMemoryAllocation`` metadata places every planned
tensor where :func:`~microinterp.planner.optimal.plan_optimal` put it.

TFLM honours that metadata (``micro_allocation_info.cc``): offline-planned tensors take their offsets as given and
only the scratch buffers are planned online, first fit, around them -- so the head the real runtime will report is
:func:`~microinterp.planner.greedy.plan_greedy` run on those requests, which :func:`optimize` computes and returns as
the prediction (``tests/test_optimize.py`` checks it against the wheel, and the outputs bit for bit).

The model is rewritten through the model builder (:func:`rebuild`): tensors (shapes, types, quantization, constant
data, variables), every subgraph's ops with their builtin or custom options and intermediates, and the metadata
are kept; SignatureDefs, tensor shape signatures and operator versions are not written (TFLM reads none of them to
run a model). Variable tensors and anything TFLM does not plan keep ``-1`` (an offline offset would move a variable
from the tail into the head).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from .errors import ModelError
from .model import Model, load_model
from .planner.greedy import plan_greedy, plan_size
from .planner.optimal import lower_bound, plan_optimal
from .testing.builder import ModelBuilder


@dataclass(frozen=True)
class Optimized:
    """What :func:`optimize` produced: the model bytes and the heads (bytes) before, predicted, and the bound."""

    data: bytes
    tflm_head: int
    predicted_head: int
    lower_bound: int
    offsets: tuple[int, ...]        # one per tensor of all subgraphs (-1: not offline-planned)

    @property
    def saved(self) -> int:
        return self.tflm_head - self.predicted_head


def rebuild(model: Model, metadata: dict[str, bytes] | None = None, *, shape_of: Any = None, data_of: Any = None,
            options_of: Any = None) -> ModelBuilder:
    """A :class:`~microinterp.testing.builder.ModelBuilder` holding ``model`` (see the module docstring); its
    metadata replaced by ``metadata`` where given (None values drop an entry). ``shape_of(subgraph, tensor)``,
    ``data_of(subgraph, tensor)`` and ``options_of(subgraph, op)`` may change what is written (the batching
    rewrite of :mod:`microinterp.batch` uses them)."""
    b = ModelBuilder(description=model.description)
    for sg in model.subgraphs:
        target = b if sg.index == 0 else b.add_subgraph(sg.name)
        if sg.index == 0:
            b.name = sg.name
        for t in sg.tensors:
            q = t.quantization
            has_q = q is not None and q.scales.size > 0
            shape = t.shape if shape_of is None else shape_of(sg, t)
            data = t.data if data_of is None else data_of(sg, t)
            target.add_tensor(t.name, shape, t.type_name, data=data,
                              scale=q.scales if has_q else None, zero_point=q.zero_points if has_q else None,
                              axis=q.axis if has_q else 0, is_variable=t.is_variable)
        for op in sg.operators:
            try:
                options = dict(op.options) if options_of is None else options_of(sg, op)
                target.add_op(op.name, op.inputs, op.outputs, custom_code=op.custom_code,
                              custom_options=op.custom_options, intermediates=op.intermediates, **options)
            except ValueError as e:
                raise ModelError(f"subgraph {sg.index} op {op.index} ({op.key}) cannot be rewritten: {e}") from None
        target.inputs, target.outputs = list(sg.inputs), list(sg.outputs)
    entries = dict(model.metadata)
    entries.update(metadata or {})
    for name, data in entries.items():
        if data is not None:
            b.add_metadata(name, data)
    return b


def optimize(model: Any, budget_s: float = 2.0) -> Optimized:
    """The model with the optimal offline plan (never worse than TFLM's own: when the search finds nothing
    smaller, the plan written is TFLM's greedy one, so the head stays the same)."""
    from .interpreter import Interpreter

    loaded = load_model(model)
    interp = Interpreter(loaded)
    infos, owners, requests = interp._plan["infos"], interp._plan["owners"], interp._plan["requests"]
    tflm = plan_size(requests, plan_greedy(requests))
    is_tensor = [infos[owner].kind == "tensor" for owner in owners]

    def as_offline(plan: list[int]) -> tuple[dict, int]:
        """The tensors' offsets of ``plan`` and the head TFLM gets with them fixed and the scratch buffers planned
        online around them."""
        fixed = [replace(r, offline_offset=plan[i]) if is_tensor[i] else r for i, r in enumerate(requests)]
        at = {(infos[o].subgraph, infos[o].index): plan[i] for i, o in enumerate(owners) if is_tensor[i]}
        return at, plan_size(fixed, plan_greedy(fixed))

    tensor_offsets, predicted = as_offline(plan_optimal(requests, budget_s=budget_s))
    if predicted > tflm:     # scratch placement undid the gain: keep TFLM's own plan, written out
        tensor_offsets, predicted = as_offline(plan_greedy(requests))
    offsets = tuple(tensor_offsets.get((sg.index, t.index), -1) for sg in loaded.subgraphs for t in sg.tensors)
    b = rebuild(loaded, {"OfflineMemoryAllocation": None})
    b.add_offline_plan(offsets)
    return Optimized(b.build(), tflm, predicted, lower_bound(requests), offsets)
