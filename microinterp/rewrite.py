"""A loaded model written back as a new one, with some of it changed: :func:`rebuild`.

Tensors (shapes, types, quantization, constant data, variables), every subgraph's ops with their builtin or custom
options and intermediates, and the metadata are kept; SignatureDefs, tensor shape signatures and operator versions
are not written (TFLM reads none of them to run a model). Used by :mod:`microinterp.optimize` (an offline plan and op
order as metadata) and :mod:`microinterp.batch` (the batch dimension).
"""

from __future__ import annotations

from typing import Any

from .errors import ModelError
from .model import Model
from .model_writer import ModelBuilder


def rebuild(model: Model, metadata: dict[str, bytes] | None = None, *, shape_of: Any = None, data_of: Any = None,
            options_of: Any = None, op_order: list[int] | None = None) -> ModelBuilder:
    """A :class:`~microinterp.model_writer.ModelBuilder` holding ``model`` (see the module docstring); its
    metadata replaced by ``metadata`` where given (None values drop an entry). ``shape_of(subgraph, tensor)``,
    ``data_of(subgraph, tensor)`` and ``options_of(subgraph, op)`` may change what is written (the batching
    rewrite of :mod:`microinterp.batch` uses them); ``op_order`` runs subgraph 0's ops in that order (positions in
    its op list; :mod:`microinterp.planner.reorder`)."""
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
        ops = sg.operators if sg.index or op_order is None else [sg.operators[i] for i in op_order]
        for op in ops:
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
