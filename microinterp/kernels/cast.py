"""CAST: ``static_cast`` of every element to the output type (``micro/kernels/cast.cc``).

TFLM checks only the input and output counts; Eval takes INT8, INT16, INT32, UINT32, FLOAT32 and BOOL inputs and
INT8, INT16, INT32, UINT32, FLOAT32 and BOOL outputs (other types fail there, here at prepare), over
``MatchingFlatSize`` elements. Quantization parameters are not looked at: codes are cast as plain integers.

* integer -> narrower integer: the low bits (two's complement wrap, ``static_cast``); BOOL -> number: 0 or 1;
  number -> BOOL: ``!= 0`` (NaN is true);
* integer -> float: round to nearest even;
* float -> integer: *saturating* in the wheel (its CAST is newer than the mirror's plain ``static_cast``, whose
  out-of-range results would be undefined): truncation toward zero, clamped to the target's range, NaN -> 0.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from ._qutil import copyto
from .bands import ROW_LOCAL
from .contract import PURE, Kernel

INPUT_TYPES = ("INT8", "INT16", "INT32", "UINT32", "FLOAT32", "BOOL")
OUTPUT_TYPES = ("INT8", "INT16", "INT32", "UINT32", "FLOAT32", "BOOL")


@dataclass(frozen=True)
class CastData:
    source: str
    target: np.dtype


def cast_values(x: np.ndarray, source: str, target: np.dtype) -> np.ndarray:
    if target == np.bool_:
        return x != 0
    if source != "FLOAT32" or target == np.float32:
        return x.astype(target)
    info = np.iinfo(target)
    v = np.trunc(np.nan_to_num(x.astype(np.float64), nan=0.0, posinf=np.inf, neginf=-np.inf))
    return np.clip(v, info.min, info.max).astype(target)


class Cast(Kernel):
    ops = ("CAST",)
    traits = PURE
    converts_type = True
    cost_family = "elementwise"
    opdata = 0
    #: out of core: row bands (a row of the output from the same row of its inputs)
    bands = ROW_LOCAL

    def prepare(self, ctx, op) -> CastData:
        ctx.check_io_count(op, 1, 1)
        x, y = ctx.require_input(op, 0), ctx.output(op, 0)
        if x.type_name not in INPUT_TYPES:
            raise ctx.fail(op, f"Input type {x.type_name} not supported.")
        if y.type_name not in OUTPUT_TYPES:
            raise ctx.fail(op, f"Output type {y.type_name} not supported.")
        if x.num_elements != y.num_elements:
            raise ctx.fail(op, f"input shape {x.shape} and output shape {y.shape} differ in size")
        return CastData(x.type_name, y.dtype)

    def bind(self, ctx, op, data: CastData):
        """On fixed views, every cast but float -> integer (saturating: :meth:`invoke`) as one C cast into the
        output: NumPy's ``unsafe`` casting is C's conversion -- the low bits between integers, round to nearest even
        to float, ``!= 0`` to bool (NaN is true), 0 or 1 from bool."""
        x, out = ctx.input(op, 0), ctx.output(op, 0)
        if (data.source == "FLOAT32" and data.target not in (np.float32, np.bool_)) or not out.flags.c_contiguous \
                or not x.flags.c_contiguous:
            return None
        return functools.partial(copyto, out, x.reshape(out.shape), casting="unsafe")

    def invoke(self, ctx, op, data: CastData) -> None:
        out = ctx.output(op, 0)
        with np.errstate(all="ignore"):
            out[...] = cast_values(ctx.input(op, 0), data.source, data.target).reshape(out.shape)


KERNEL = Cast()
