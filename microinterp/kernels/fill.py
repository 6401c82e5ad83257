"""FILL: an output filled with one scalar value (``micro/kernels/fill.cc``, ``reference/fill.h``).

Prepare (TFLM): the value is a scalar (0-D) of the output's type; the dims input is a constant 1-D INT8, INT16,
INT32 or INT64 vector equal to the output's dims. Eval: FLOAT32, INT32 and INT8 values (others fail there, here at
prepare).
"""

from __future__ import annotations

from .contract import PURE, Kernel

SUPPORTED_TYPES = ("FLOAT32", "INT32", "INT8")


class Fill(Kernel):
    ops = ("FILL",)
    traits = PURE
    def prepare(self, ctx, op) -> None:
        ctx.check_io_count(op, 2, 1)
        dims, value, y = ctx.require_input(op, 0), ctx.require_input(op, 1), ctx.output(op, 0)
        if len(value.shape) != 0:
            raise ctx.fail(op, f"the value must be a scalar, got shape {value.shape}")
        if value.type_name != y.type_name:
            raise ctx.fail(op, f"value type {value.type_name} differs from output type {y.type_name}")
        if dims.data is None:
            raise ctx.fail(op, "Non-constant >dims< tensor is not supported")
        if dims.type_name not in ("INT8", "INT16", "INT32", "INT64") or len(dims.shape) != 1:
            raise ctx.fail(op, f"dims must be a 1-D integer vector, got {dims.type_name} {dims.shape}")
        if [int(v) for v in dims.data] != list(y.shape):
            raise ctx.fail(op, f"dims {dims.data.tolist()} differ from the output shape {tuple(y.shape)}")
        if y.type_name not in SUPPORTED_TYPES:
            raise ctx.fail(op, f"Fill only currently supports float32, int32 and int8, got {y.type_name}")

    def invoke(self, ctx, op, data: None) -> None:
        ctx.output(op, 0)[...] = ctx.input(op, 1).reshape(())


KERNEL = Fill()
