"""Work of an op or of one tile of it: MACs (compares/adds for pooling and reductions) and output elements.

The MACs are the op's kernel's declaration (``Kernel.macs``: the convolutions, FULLY_CONNECTED, the pools and the
reductions declare theirs); every other op does no MACs, its output elements only.
"""

from __future__ import annotations

import math
from typing import Any

from ..resolver import declaration_of


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
    return declaration_of(op.key).macs(op, tensors, elements), elements
