"""SignalFilterBankSquareRoot: ``Sqrt64(x) >> scale_bits`` per channel (``signal/src/filter_bank_square_root.cc``).

Prepare (TFLM): a 1-D UINT64 input, a 0-D INT32 shift (FftAutoScale's), a 1-D UINT32 output. ``Sqrt64`` is the
bit-by-bit integer square root, rounded up when the remainder exceeds the root (:func:`._common.sqrt64`); the shift
is arithmetic on the uint32 result.
"""

from __future__ import annotations

import numpy as np

from .._qutil import copyto, count_nonzero
from ..contract import PURE, Kernel
from ..streams import INVOKE
from ._common import U32, options, sqrt64


class FilterBankSquareRoot(Kernel):
    ops = ("SignalFilterBankSquareRoot",)
    traits = PURE
    #: streams: its invoke works along the last axis, a shift per stream (:mod:`..streams`)
    streams = INVOKE

    def prepare(self, ctx, op) -> None:
        if op.custom_options is not None:
            options(ctx, op, ())
        ctx.check_io_count(op, 2, 1)
        x, s, y = ctx.require_input(op, 0), ctx.require_input(op, 1), ctx.output(op, 0)
        if len(x.shape) != 1 or len(s.shape) != 0 or len(y.shape) != 1:
            raise ctx.fail(op, "1-D input, 0-D shift, 1-D output")
        if x.type_name != "UINT64" or s.type_name != "INT32" or y.type_name != "UINT32":
            raise ctx.fail(op, "UINT64 in, INT32 shift, UINT32 out")
        if y.num_elements < x.num_elements:
            raise ctx.fail(op, f"output {y.shape} shorter than input {x.shape}")

    def bind(self, ctx, op, data: None):
        """On fixed views, kept buffers: ``Sqrt64`` as :func:`._common.sqrt64`'s fast case -- the float64 root's
        floor, plus one where the remainder exceeds it -- while every input is below 2^51 and no root is 2^16 - 1
        (tested by two compares a call; :func:`._common.sqrt64` itself otherwise), the shift and the uint32 cut."""
        x, shift_in, out = ctx.input(op, 0), ctx.input(op, 1), ctx.output(op, 0)
        n = x.shape[-1]
        out = out[:n]
        f, root, rest = np.empty(n, np.float64), np.empty(n, np.uint64), np.empty(n, np.uint64)
        mask = np.empty(n, bool)
        exact, limit, u32 = (np.array(v, np.uint64) for v in (1 << 51, 0xFFFF, U32))
        shifts = [np.array(bits, np.uint64) for bits in range(32)]     # (shift & 31) of the int32, as uint64

        def call() -> None:
            shift = shifts[int(shift_in) & 31]
            if count_nonzero(np.greater_equal(x, exact, mask)):
                copyto(root, sqrt64(x))
            else:
                copyto(f, x)
                np.sqrt(f, f)
                copyto(root, f, casting="unsafe")          # the floor: exact below 2^51
                if count_nonzero(np.equal(root, limit, mask)):
                    copyto(root, sqrt64(x))
                else:
                    np.multiply(root, root, rest)
                    np.subtract(x, rest, rest)
                    np.greater(rest, root, mask)
                    np.add(root, mask, root)
            np.right_shift(root, shift, root)
            np.bitwise_and(root, u32, root)
            copyto(out, root, casting="unsafe")
        return call

    def invoke(self, ctx, op, data: None) -> None:
        x, out = ctx.input(op, 0), ctx.output(op, 0)
        shift = (np.asarray(ctx.input(op, 1)).astype(np.int64) & 31).astype(np.uint64)
        out[..., :x.shape[-1]] = (sqrt64(x) >> shift[..., None]) & np.uint64(U32)


KERNEL = FilterBankSquareRoot()
