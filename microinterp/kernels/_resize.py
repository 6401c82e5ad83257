"""Prepare-time checks shared by RESIZE_NEAREST_NEIGHBOR and RESIZE_BILINEAR (``micro/kernels/resize_*.cc``).

TFLM's Prepare of both ops: 2 inputs, 1 output; input 4-D (NHWC); ``size`` 1-D, INT32 and constant
("Non-constant >size< tensor is not supported"); nearest-neighbor also requires exactly 2 size elements (bilinear
reads the first two). Eval takes the output height/width from ``size`` and batch/depth from the input; it assumes
the output tensor is ``[N, size[0], size[1], C]`` and has the input's type (TFLM does not check either and would
write out of bounds or the wrong element size) -- refused here.
"""

from __future__ import annotations

import numpy as np


def prepare_resize(ctx, op, types: tuple[str, ...], exact_size_len: bool):
    """Validate a resize op; returns (input tensor, output tensor, out_height, out_width)."""
    ctx.check_io_count(op, 2, 1)
    x, size, y = ctx.require_input(op, 0), ctx.require_input(op, 1), ctx.output(op, 0)
    if len(x.shape) != 4:
        raise ctx.fail(op, f"input must be 4-D, got shape {x.shape}")
    if len(size.shape) != 1:
        raise ctx.fail(op, f"size must be 1-D, got shape {size.shape}")
    if size.type_name != "INT32":
        raise ctx.fail(op, f"size must be INT32, got {size.type_name}")
    if (size.shape[0] != 2) if exact_size_len else (size.shape[0] < 2):
        raise ctx.fail(op, f"size must have 2 elements, got shape {size.shape}")
    if size.data is None:
        raise ctx.fail(op, "Non-constant size tensor is not supported")
    if y.type_name != x.type_name:
        raise ctx.fail(op, f"output type {y.type_name} differs from input type {x.type_name}")
    if x.type_name not in types:
        raise ctx.fail(op, f"type {x.type_name} not supported (supported: {', '.join(types)})")
    out_h, out_w = (int(v) for v in np.ravel(size.data)[:2])
    if out_h < 1 or out_w < 1:
        raise ctx.fail(op, f"size must be positive, got {out_h}x{out_w}")
    want = (x.shape[0], out_h, out_w, x.shape[3])
    if tuple(y.shape) != want:
        raise ctx.fail(op, f"output shape {y.shape} is not {want} (input batch/depth, size {out_h}x{out_w})")
    if y.num_elements and (x.shape[1] < 1 or x.shape[2] < 1):
        raise ctx.fail(op, f"input {x.shape} has no pixels to resize from (TFLM would read outside the tensor)")
    return x, y, out_h, out_w
