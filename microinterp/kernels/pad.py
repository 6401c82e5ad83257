"""PAD (and PADV2, which is the same TFLM kernel): copy the input into the middle, fill the border with a constant.

TFLM (``micro/kernels/pad.cc``, ``pad_common.cc`` PadPrepare, ``reference/pad.h``):

* inputs ``(input, paddings[, constant_values])``; types float32, int8, int16, int32 (others fail Eval); input and
  output types equal; rank <= 5; ``paddings`` must be a constant with ``2*rank(output)`` entries, and every output dim
  must equal ``in + before + after``; ``constant_values`` (PADV2) must have the input's type and one element.
* fill value: ``constant_values[0]`` when given (read at Eval, so it may be a runtime tensor), else the output zero
  point for int8 and 0 for float32/int16/int32. int8 with ``constant_values`` requires its zero point and scale to
  equal the output's; without it the output zero point must fit in int8. No requantization: input values are copied
  as they are, even when the input and output quantizations differ.
* the reference loop walks the output in row-major order; position ``o`` (per dim) is fill if ``o < before`` or
  ``o >= out_dim - after``, else it takes the *next* input element (a running pointer through the flat input). With
  paddings >= 0 that is ``input[o - before]``. Pitfall: TFLM does not refuse negative paddings, and then the kept
  box (smaller than the input) is filled with the input's first elements in flat order, not with a crop.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from .bands import Tiler
from .base import is_batch1_nhwc
from .contract import Kernel, Traits

SUPPORTED = ("FLOAT32", "INT8", "INT16", "INT32")
MAX_DIMS = 5


@dataclass(frozen=True)
class PadData:
    out_slices: tuple[slice, ...]   # the box of non-fill output positions
    box_shape: tuple[int, ...]      # its shape; it takes the first prod(box_shape) input elements in flat order
    fill: int | float | None        # None: read constant_values[0] at invoke


class PadTiler(Tiler):
    """PAD / PADV2 of a batch-1 NHWC tensor whose box is the input: a band of output rows from the input rows it
    copies (:func:`pad_rows`), the rest filled. The pager may instead build such a band inside its only reader's
    reads (a fused PAD) or fold it into a convolution's padding."""

    mode = "rows"
    row_inputs: ClassVar[dict[int, int]] = {0: 1}

    @classmethod
    def for_op(cls, op: Any, data: Any, inputs: Any, output: Any) -> Tiler | None:
        if is_batch1_nhwc(inputs[0], output) and data.box_shape == inputs[0].shape:
            return cls()
        return None

    def input_rows(self, data, k, y0, y1):
        return pad_input_rows(data, y0, y1)

    def compute(self, kernel, op, data, band):
        fill = data.fill if data.fill is not None else band.ctx.input(op, 2).reshape(-1)[0]
        pad_rows(data, band.inputs[0], band.row0[0], band.out, band.y0, fill)


class Pad(Kernel):
    traits = Traits(subgraphs=False, resources=False, stateful=False, mixes_batch=False, channelwise=True)
    geometry = "pad"
    cost_family = "pad"
    opdata = 56
    #: out of core: row bands (:class:`PadTiler`)
    bands = PadTiler

    def __init__(self, name: str = "PAD"):
        self.ops = (name,)

    def prepare(self, ctx, op) -> PadData:
        ctx.check_io_count(op, (2, 3), 1)
        x, y = ctx.require_input(op, 0), ctx.output(op, 0)
        paddings_t = ctx.require_input(op, 1)
        constant = ctx.input(op, 2)
        if x.type_name != y.type_name:
            raise ctx.fail(op, f"input type {x.type_name} differs from output type {y.type_name}")
        if len(x.shape) > MAX_DIMS:
            raise ctx.fail(op, f"input has {len(x.shape)} dims; TFLM's PAD supports at most {MAX_DIMS}")
        if constant is not None:
            if constant.type_name != x.type_name:
                raise ctx.fail(op, f"constant_values type {constant.type_name} differs from input type "
                                   f"{x.type_name}")
            if constant.num_elements != 1:
                raise ctx.fail(op, f"constant_values must be a scalar, has {constant.num_elements} elements")
        if paddings_t.num_elements != 2 * len(y.shape):
            raise ctx.fail(op, f"paddings has {paddings_t.num_elements} entries, expected 2 x output rank "
                               f"{len(y.shape)}")
        if paddings_t.data is None:
            raise ctx.fail(op, "Non-constant >paddings< tensor is not supported")
        if len(x.shape) != len(y.shape):
            raise ctx.fail(op, f"input rank {len(x.shape)} differs from output rank {len(y.shape)}")
        pads = np.asarray(paddings_t.data, dtype=np.int64).reshape(-1, 2)
        for i, (d_in, d_out) in enumerate(zip(x.shape, y.shape)):
            if d_out != d_in + pads[i, 0] + pads[i, 1]:
                raise ctx.fail(op, f"output dim {i} is {d_out}, expected {d_in} + {pads[i, 0]} + {pads[i, 1]}")
        fill = None
        if x.type_name == "INT8":
            yq, cq = y.quantization, (constant.quantization if constant is not None else None)
            out_zp = yq.zero_point if yq is not None else 0
            if constant is None:
                if not -128 <= out_zp <= 127:
                    raise ctx.fail(op, f"output zero point {out_zp} is outside the int8 range")
            else:
                c_zp = cq.zero_point if cq is not None else 0
                if c_zp != out_zp:
                    raise ctx.fail(op, f"constant_values zero point {c_zp} differs from output zero point {out_zp}")
                c_scale = cq.scale if cq is not None else 0.0
                y_scale = yq.scale if yq is not None else 0.0
                if c_scale != y_scale:
                    raise ctx.fail(op, f"constant_values scale {c_scale} differs from output scale {y_scale}")
            if constant is None:
                fill = out_zp
        elif x.type_name in SUPPORTED:
            if constant is None:
                fill = 0
        else:
            raise ctx.fail(op, f"type {x.type_name} not supported (TFLM supports {', '.join(SUPPORTED)}; it "
                               "refuses others when the op is invoked)")
        if constant is not None and constant.data is not None:
            fill = constant.data.reshape(-1)[0].item()
        out_slices = []
        for d_out, (before, after) in zip(y.shape, pads.tolist()):
            lo = max(before, 0)
            out_slices.append(slice(lo, max(min(d_out - after, d_out), lo)))
        box = tuple(s.stop - s.start for s in out_slices)
        return PadData(tuple(out_slices), box, fill)

    def invoke(self, ctx, op, data: PadData) -> None:
        out = ctx.output(op, 0)
        fill = data.fill if data.fill is not None else ctx.input(op, 2).reshape(-1)[0]
        x = unclobbered(ctx.input(op, 0), out)
        out[...] = fill
        n = int(np.prod(data.box_shape, dtype=np.int64))
        out[data.out_slices] = x.reshape(-1)[:n].reshape(data.box_shape)


def unclobbered(x: np.ndarray, out: np.ndarray) -> np.ndarray:
    """``x`` itself, or a copy of it when an offline plan placed the output over it (an in-place PAD,
    :mod:`microinterp.planner.aliases`): TFLM writes the output front to back and reads each input element before
    writing over it, so its result is the padded input; filling first, as here, would overwrite the input."""
    return x.copy() if np.may_share_memory(x, out) else x


def pad_rows(data: PadData, x: np.ndarray, x_row0: int, out: np.ndarray, y0: int, fill) -> None:
    """Output rows ``[y0, y0 + out.shape[1])`` of a 4-D PAD whose batch axis is not padded, from ``x`` = input rows
    starting at ``x_row0`` (the row band the out-of-core pager loaded): fill, then copy the input rows that land in
    the band. Same result as :meth:`Pad.invoke` restricted to those rows."""
    out[...] = fill
    top, rows = data.out_slices[1].start, data.box_shape[1]
    lo, hi = max(y0, top), min(y0 + out.shape[1], top + rows)
    if lo < hi:
        band = (slice(None), slice(lo - y0, hi - y0)) + data.out_slices[2:]
        out[band] = x[:, lo - top - x_row0:hi - top - x_row0]


def pad_input_rows(data: PadData, y0: int, y1: int) -> tuple[int, int]:
    """Input rows ``[lo, hi)`` that output rows ``[y0, y1)`` of a row-tiled PAD copy (``(0, 0)`` if none)."""
    top, rows = data.out_slices[1].start, data.box_shape[1]
    lo, hi = max(y0, top) - top, min(y1, top + rows) - top
    return (lo, hi) if lo < hi else (0, 0)


KERNEL = Pad()
