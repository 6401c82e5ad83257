"""Shared by DEPTH_TO_SPACE and SPACE_TO_DEPTH (``micro/kernels/depth_to_space.cc``, ``space_to_depth.cc``): the
Prepare checks both make -- one 4-D input and output, FLOAT32 or INT8 of one type, a positive ``block_size`` (TFLM's
SPACE_TO_DEPTH does not check it and would divide by zero) -- and the rule that the model's output shape must be the
one TFLM computes and writes into the output's dims.
"""

from __future__ import annotations

SUPPORTED_TYPES = ("FLOAT32", "INT8")


def check_block_op(ctx, op):
    """(input, output, block_size) after the shared checks."""
    ctx.check_io_count(op, 1, 1)
    x, y = ctx.require_input(op, 0), ctx.output(op, 0)
    if len(x.shape) != 4:
        raise ctx.fail(op, f"the input must be 4-D, got {x.shape}")
    if y.type_name not in SUPPORTED_TYPES or x.type_name != y.type_name:
        raise ctx.fail(op, f"FLOAT32 or INT8 in and out, got {x.type_name} -> {y.type_name}")
    bs = op.options["block_size"]
    if bs <= 0:
        raise ctx.fail(op, f"block_size must be positive, got {bs}")
    return x, y, bs


def check_output_shape(ctx, op, y, want: tuple[int, ...]) -> None:
    if tuple(y.shape) != want:
        raise ctx.fail(op, f"output shape {tuple(y.shape)} is not the computed {want}")
