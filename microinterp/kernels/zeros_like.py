"""ZEROS_LIKE: an output of zeros (``micro/kernels/zeros_like.cc``).

Prepare (TFLM): one input, one output (whose type it sets to the input's). Eval: INT64, INT32, INT8 and FLOAT32
(INT16 and others fail there, here at prepare); the element count is ``MatchingFlatSize`` of input and output.
Refused here although TFLM would write it: an output whose type differs from the input's.
"""

from __future__ import annotations

from .contract import PURE, Kernel

SUPPORTED_TYPES = ("INT64", "INT32", "INT8", "FLOAT32")


class ZerosLike(Kernel):
    ops = ("ZEROS_LIKE",)
    traits = PURE
    def prepare(self, ctx, op) -> None:
        ctx.check_io_count(op, 1, 1)
        x, y = ctx.require_input(op, 0), ctx.output(op, 0)
        if x.type_name not in SUPPORTED_TYPES:
            raise ctx.fail(op, f"ZerosLike only currently supports int64, int32, int8 and float32, got {x.type_name}")
        if y.type_name != x.type_name:
            raise ctx.fail(op, f"output type {y.type_name} differs from input type {x.type_name}")
        if x.num_elements != y.num_elements:
            raise ctx.fail(op, f"input shape {x.shape} and output shape {y.shape} differ in size")

    def invoke(self, ctx, op, data: None) -> None:
        ctx.output(op, 0)[...] = 0


KERNEL = ZerosLike()
