"""An instrumented kernel: counts how often an op is prepared and invoked, and delegates to another kernel."""

from __future__ import annotations

from typing import Any

from microinterp import Kernel
from microinterp.kernels import REFERENCE_KERNELS


class CountingKernel(Kernel):
    """Wraps ``inner`` (by default the reference kernel of ``op_name``); ``prepares``/``invokes`` count the calls."""

    def __init__(self, op_name: str, inner: Any = None):
        self.op_name = op_name
        self.inner = inner if inner is not None else REFERENCE_KERNELS[op_name]
        self.prepares = 0
        self.invokes = 0

    def prepare(self, ctx, op) -> Any:
        self.prepares += 1
        return self.inner.prepare(ctx, op)

    def invoke(self, ctx, op, data) -> None:
        self.invokes += 1
        self.inner.invoke(ctx, op, data)
