"""Work of an op or of one tile of it: MACs (compares/adds for pooling and reductions) and output elements.

- CONV_2D / TRANSPOSE_CONV: output positions x channels x filter height x width x input depth per group;
- DEPTHWISE_CONV_2D: output elements x filter height x width;
- FULLY_CONNECTED: batches x output channels x accumulation depth;
- MAX_POOL_2D / AVERAGE_POOL_2D: output elements x filter area (compares or adds);
- MEAN / SUM / REDUCE_MAX: input elements (one add or compare each);
- everything else: no MACs, its output elements only.
"""

from __future__ import annotations

import math
from typing import Any


def op_work(op: Any, tensors: list[Any], rows: tuple[int, int] | None = None,
            channels: tuple[int, int] | None = None) -> tuple[int, int]:
    """``(macs, elements)`` of ``op``, restricted to output rows ``rows`` (axis 1) and output channels
    ``channels`` (last axis) when given."""
    outs = [tensors[i] for i in op.outputs if i >= 0]
    if not outs:
        return 0, 0
    out = outs[0]
    shape = list(out.shape)
    if rows is not None and len(shape) >= 2:
        shape[1] = rows[1] - rows[0]
    if channels is not None and shape:
        shape[-1] = channels[1] - channels[0]
    elements = math.prod(shape) + sum(t.num_elements for t in outs[1:])
    key = op.key
    ins = [tensors[i] if i >= 0 else None for i in op.inputs]
    if key in ("CONV_2D", "TRANSPOSE_CONV"):
        w = ins[1]
        return elements * math.prod(w.shape[1:]), elements
    if key == "DEPTHWISE_CONV_2D":
        w = ins[1]
        return elements * w.shape[1] * w.shape[2], elements
    if key == "FULLY_CONNECTED":
        return elements * ins[1].shape[-1], elements
    if key in ("MAX_POOL_2D", "AVERAGE_POOL_2D", "L2_POOL_2D"):
        o = op.options
        return elements * int(o.get("filter_height", 1)) * int(o.get("filter_width", 1)), elements
    if key in ("MEAN", "SUM", "REDUCE_MAX", "REDUCE_MIN", "REDUCE_PROD"):
        return ins[0].num_elements, elements
    return 0, elements
