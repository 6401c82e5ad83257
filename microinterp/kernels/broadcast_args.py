"""BROADCAST_ARGS: the broadcast shape of two shape vectors (``micro/kernels/broadcast_args.cc``,
``reference/broadcast_args.h``).

Prepare (TFLM): two 1-D INT32 or INT64 inputs and a 1-D output, all of one type. Eval walks the output from the
last element: each side's dim there (1 past its start), ``d1 == 1 ? d2 : d2 == 1 ? d1 : d1`` with a CHECK that
``d1 == d2`` (a failed CHECK aborts the wheel's process; here :class:`~microinterp.errors.InvokeError`, or a
PrepareError when both shapes are constants). Values pass through ``int`` on the way.
"""

from __future__ import annotations

import numpy as np

from ..errors import InvokeError
from .contract import PURE, Kernel


def broadcast_args(a: np.ndarray, b: np.ndarray, n: int) -> tuple[np.ndarray | None, str]:
    a, b = [int(v) for v in np.asarray(a).reshape(-1)], [int(v) for v in np.asarray(b).reshape(-1)]
    out = []
    for i in range(n):
        d1 = a[len(a) - 1 - i] if len(a) - 1 - i >= 0 else 1
        d2 = b[len(b) - 1 - i] if len(b) - 1 - i >= 0 else 1
        if d1 != 1 and d2 != 1 and d1 != d2:
            return None, f"dims {d1} and {d2} do not broadcast"
        out.append(d2 if d1 == 1 else d1)
    return np.array(out[::-1], dtype=np.int64), ""


class BroadcastArgs(Kernel):
    ops = ("BROADCAST_ARGS",)
    traits = PURE
    def prepare(self, ctx, op) -> None:
        ctx.check_io_count(op, 2, 1)
        a, b, y = ctx.require_input(op, 0), ctx.require_input(op, 1), ctx.output(op, 0)
        if a.type_name not in ("INT32", "INT64") or not (a.type_name == b.type_name == y.type_name):
            raise ctx.fail(op, f"INT32 or INT64 shapes of one type, got {a.type_name}, {b.type_name} -> "
                               f"{y.type_name}")
        if not (len(a.shape) == len(b.shape) == len(y.shape) == 1):
            raise ctx.fail(op, "the shapes and the output must be 1-D")
        if a.data is not None and b.data is not None:
            _, why = broadcast_args(a.data, b.data, y.num_elements)
            if why:
                raise ctx.fail(op, why)

    def invoke(self, ctx, op, data: None) -> None:
        out = ctx.output(op, 0)
        result, why = broadcast_args(ctx.input(op, 0), ctx.input(op, 1), out.size)
        if result is None:
            raise InvokeError(op.index, op.key, why)
        out[...] = result.astype(out.dtype)


KERNEL = BroadcastArgs()
