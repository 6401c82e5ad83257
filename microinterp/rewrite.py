"""A loaded model written back as a new one, with some of it changed: :func:`rebuild`.

Tensors (shapes, types, quantization, constant data, variables), every subgraph's ops with their builtin or custom
options and intermediates, and the metadata are kept; SignatureDefs, tensor shape signatures and operator versions
are not written (TFLM reads none of them to run a model). Used by :mod:`microinterp.optimize` (an offline plan and op
order as metadata) and :mod:`microinterp.batch` (the batch dimension).
"""

from __future__ import annotations

from typing import Any

import numpy as np

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
            copy_tensor(target, t, shape=t.shape if shape_of is None else shape_of(sg, t),
                        data=t.data if data_of is None else data_of(sg, t))
        ops = sg.operators if sg.index or op_order is None else [sg.operators[i] for i in op_order]
        for op in ops:
            try:
                copy_op(target, op, options=None if options_of is None else options_of(sg, op))
            except ValueError as e:
                raise ModelError(f"subgraph {sg.index} op {op.index} ({op.key}) cannot be rewritten: {e}") from None
        target.inputs, target.outputs = list(sg.inputs), list(sg.outputs)
    entries = dict(model.metadata)
    entries.update(metadata or {})
    for name, data in entries.items():
        if data is not None:
            b.add_metadata(name, data)
    return b


#: ``copy_tensor(data=KEEP)``: the tensor's own data (None would make it non-constant)
KEEP: Any = object()


def copy_tensor(target: Any, t: Any, *, name: str | None = None, shape: Any = None, data: Any = KEEP,
                is_variable: bool | None = None, channels: tuple[int, int, int] | None = None) -> int:
    """Add tensor ``t`` (type, quantization, data, variable flag) to ``target`` (a
    :class:`~microinterp.model_writer.SubgraphBuilder`), with another name, shape, data or flag where given; return
    its index. ``channels=(axis, start, stop)`` keeps only that slice of a constant's data along ``axis``, and of its
    scales and zero points when it is quantized per channel along that axis."""
    q = t.quantization
    has_q = q is not None and q.scales.size > 0
    scales, zero_points = (q.scales, q.zero_points) if has_q else (None, None)
    if channels is not None:
        axis, start, stop = channels
        if t.data is not None and data is KEEP:
            data = np.take(t.data, range(start, stop), axis=axis)
        shape = list(t.shape if shape is None else shape)
        shape[axis] = stop - start
        if has_q and q.per_channel and q.axis == axis % len(t.shape):
            scales, zero_points = q.scales[start:stop], q.zero_points[start:stop]
    return target.add_tensor(t.name if name is None else name, t.shape if shape is None else shape, t.type_name,
                             data=t.data if data is KEEP else data, scale=scales, zero_point=zero_points,
                             axis=q.axis if has_q else 0,
                             is_variable=t.is_variable if is_variable is None else is_variable)


def copy_op(target: Any, op: Any, remap: Any = None, *, options: dict[str, Any] | None = None) -> int:
    """Add operator ``op`` to ``target`` with its tensors renumbered by ``remap`` (None: the same indices) and its
    builtin options (or ``options``); return its index."""
    tensors = (lambda ts: list(ts)) if remap is None else (lambda ts: [remap(t) for t in ts])
    return target.add_op(op.name, tensors(op.inputs), tensors(op.outputs), custom_code=op.custom_code,
                         custom_options=op.custom_options, intermediates=tensors(op.intermediates),
                         **(dict(op.options) if options is None else options))
