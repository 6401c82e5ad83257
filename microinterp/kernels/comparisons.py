"""EQUAL, NOT_EQUAL, GREATER, GREATER_EQUAL, LESS, LESS_EQUAL (``micro/kernels/comparisons.cc``,
``reference/comparisons.h``): element-wise comparisons with a BOOL output.

TFLM dispatches on input 1's type and reads input 2 as the same type:

* EQUAL / NOT_EQUAL: BOOL, FLOAT32, INT32, INT64, INT8; GREATER: FLOAT32, INT32, INT64, INT8 (and INT16, see
  below); GREATER_EQUAL, LESS, LESS_EQUAL: FLOAT32, INT32, INT64, INT8. Other types fail at Eval (here at prepare).
* Unquantized types compare raw values (float: IEEE, so any comparison with NaN is false except NOT_EQUAL).
* INT8 compares *rescaled* values (Prepare computes the parameters only for INT8): for each side
  ``v = MultiplyByQuantizedMultiplierSmallerThanOneExp((x - zp) * 2^8, M, shift)`` with ``(M, shift) =
  QuantizeMultiplierSmallerThanOneExp(scale)``, then ``F(v1, v2)`` on int32. Both scales must be below 1 (TFLM's
  DCHECK; a larger scale would take a negative rounding shift, undefined behaviour) -- refused here.
* INT16 GREATER is compiled in, but Prepare never fills its parameters, so the wheel compares with whatever the
  op's persistent buffer held (its outputs are not a comparison of the inputs): refused here as undefined.
* Equal shapes: flat element-wise (any rank). Otherwise ``Broadcast4DSlow*``: at most 4 dims, numpy broadcasting,
  the output shape must be the broadcast shape.

INT8 invoke looks both inputs up in 256-entry tables of their rescaled values (computed in prepare with the literal
formula) and compares the int32 results.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

import numpy as np

from ..quant import mbqm, quantize_multiplier_smaller_than_one_exp
from ._broadcast import laid_out, refreshed
from ._qutil import all_codes, check_flat_or_broadcast, lookup, qparams
from .bands import ROW_LOCAL
from .contract import PURE, Kernel

MAX_BROADCAST_RANK = 4
LEFT_SHIFT = 8


@dataclass(frozen=True)
class ComparisonData:
    broadcast: bool
    tables: tuple[np.ndarray, np.ndarray] | None = field(default=None, repr=False)


def rescaled_codes(scale: float, zero_point: int, type_name: str) -> np.ndarray:
    """The int32 value TFLM compares for every code of the input (an int64 table indexed like ``all_codes``)."""
    m, shift = quantize_multiplier_smaller_than_one_exp(scale)
    x = all_codes(type_name).astype(np.int64)
    return mbqm((x - zero_point) * (1 << LEFT_SHIFT), m, shift).astype(np.int64)


class Comparison(Kernel):
    """One kernel object per op: ``fn`` is the numpy comparison, ``types`` the input types TFLM's Eval takes."""
    traits = PURE
    #: out of core: row bands (a row of the output from the same row of its inputs)
    bands = ROW_LOCAL


    def __init__(self, name: str, fn: np.ufunc, types: tuple[str, ...]):
        self.name = name
        self.ops = (name,)
        self.fn = fn
        self.types = types

    def prepare(self, ctx, op) -> ComparisonData:
        ctx.check_io_count(op, 2, 1)
        a, b, y = ctx.require_input(op, 0), ctx.require_input(op, 1), ctx.output(op, 0)
        if a.type_name == "INT16" and self.name == "GREATER":
            raise ctx.fail(op, "int16 GREATER: TFLM's Prepare leaves the rescaling parameters unset, so the wheel "
                               "compares with uninitialised values (undefined behaviour)")
        if a.type_name not in self.types:
            raise ctx.fail(op, f"Type {a.type_name} is not supported by {self.name}")
        if b.type_name != a.type_name:
            raise ctx.fail(op, f"input types {a.type_name} and {b.type_name} differ")
        if y.type_name != "BOOL":
            raise ctx.fail(op, f"the output must be BOOL, got {y.type_name}")
        broadcast = check_flat_or_broadcast(ctx, op, a, b, y, MAX_BROADCAST_RANK)
        tables = None
        if a.type_name == "INT8":
            (s1, z1), (s2, z2) = qparams(a), qparams(b)
            for s, t in ((s1, a), (s2, b)):
                if not 0.0 < s < 1.0:
                    raise ctx.fail(op, f"int8 comparisons need input scales in (0, 1) (TFLM's "
                                       f"QuantizeMultiplierSmallerThanOneExp), {t.name!r} has {s}")
            tables = (rescaled_codes(s1, z1, "INT8"), rescaled_codes(s2, z2, "INT8"))
        return ComparisonData(broadcast, tables)

    def bind(self, ctx, op, data: ComparisonData):
        """Without tables (every type but int8): the comparison into the output view (None otherwise)."""
        a, b, out = ctx.input(op, 0), ctx.input(op, 1), ctx.output(op, 0)
        if data.tables is not None or not out.flags.c_contiguous:
            return None
        if not data.broadcast:
            a, b = a.reshape(out.shape), b.reshape(out.shape)
        y = out.reshape(np.broadcast_shapes(a.shape, b.shape))
        (a, b), y, refreshes = laid_out((a, b), y)     # a short broadcast inner loop made long
        # the output positional: a partial's keywords are merged into a new dict at every call (0.1 us)
        return refreshed(refreshes, functools.partial(self.fn, a, b, y))

    def invoke(self, ctx, op, data: ComparisonData) -> None:
        a, b, out = ctx.input(op, 0), ctx.input(op, 1), ctx.output(op, 0)
        if not data.broadcast:
            a, b = a.reshape(out.shape), b.reshape(out.shape)
        if data.tables is not None:
            a, b = lookup(data.tables[0], a), lookup(data.tables[1], b)
        out[...] = self.fn(a, b).reshape(out.shape)


_BASIC = ("FLOAT32", "INT32", "INT64", "INT8")
EQUAL = Comparison("EQUAL", np.equal, ("BOOL", *_BASIC))
NOT_EQUAL = Comparison("NOT_EQUAL", np.not_equal, ("BOOL", *_BASIC))
GREATER = Comparison("GREATER", np.greater, _BASIC)
GREATER_EQUAL = Comparison("GREATER_EQUAL", np.greater_equal, _BASIC)
LESS = Comparison("LESS", np.less, _BASIC)
LESS_EQUAL = Comparison("LESS_EQUAL", np.less_equal, _BASIC)

#: the kernels of this file (:mod:`.registry`)
KERNELS = (EQUAL, NOT_EQUAL, GREATER, GREATER_EQUAL, LESS, LESS_EQUAL)
