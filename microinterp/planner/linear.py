"""TFLM's LinearMemoryPlanner: buffers back to back in request order, lifetimes ignored (a baseline).

TFLM uses it when all tensors must be preserved (every intermediate stays readable after invoke). Offsets are the
running sum of the aligned sizes; offline offsets are not honoured (TFLM's linear planner ignores them too).
"""

from __future__ import annotations

from .lifetimes import BufferRequest


def plan_linear(requests: list[BufferRequest]) -> list[int]:
    offsets, total = [], 0
    for r in requests:
        offsets.append(total)
        total += r.size
    return offsets
