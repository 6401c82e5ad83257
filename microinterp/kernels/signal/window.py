"""SignalWindow: ``out = saturate_int16((x * w) >> shift)`` (``signal/micro/kernels/window.cc``,
``signal/src/window.cc``).

Options: ``shift``. Prepare (TFLM): two inputs (the signal, at least 1-D; the 1-D window), one output of the
signal's rank, all INT16. Eval applies the window to each consecutive chunk of ``len(window)`` samples of the
flattened input (here the input size must be a multiple of it: TFLM would read past the window otherwise). The
product is int32, the shift arithmetic.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy._core import umath as np_umath

from .._qutil import copyto
from ..contract import PURE, Kernel
from ..streams import BIND
from ._common import options


@dataclass(frozen=True)
class WindowData:
    shift: int


class Window(Kernel):
    ops = ("SignalWindow",)
    traits = PURE
    #: streams: its bound call windows every row of the last axis, on kept buffers (:mod:`..streams`)
    streams = BIND

    def prepare(self, ctx, op) -> WindowData:
        shift = options(ctx, op, ("shift",))["shift"]
        ctx.check_io_count(op, 2, 1)
        x, w, y = ctx.require_input(op, 0), ctx.require_input(op, 1), ctx.output(op, 0)
        if len(x.shape) < 1 or len(w.shape) != 1 or len(y.shape) != len(x.shape):
            raise ctx.fail(op, f"input {x.shape}, window {w.shape}, output {y.shape}: ranks do not fit")
        if not (x.type_name == w.type_name == y.type_name == "INT16"):
            raise ctx.fail(op, "input, window and output must be INT16")
        if w.shape[0] == 0 or x.num_elements % w.shape[0] or y.num_elements != x.num_elements:
            raise ctx.fail(op, f"the input size {x.num_elements} must be a multiple of the window {w.shape[0]}")
        if not 0 <= int(shift) < 32:
            raise ctx.fail(op, f"shift {shift} out of range")
        return WindowData(int(shift))

    def bind(self, ctx, op, data: WindowData):
        """On the fixed views: the int32 products into a kept buffer, the shift, the saturation, the store. The
        samples are copied to int32 and the window is kept as int32 in the frames' shape (one given at invoke is
        copied there at each call), so that the product has operands of one type and shape (a mixed-type or
        broadcast product costs twice as much)."""
        x, w, out = ctx.input(op, 0), ctx.input(op, 1), ctx.output(op, 0)
        if not (x.flags.c_contiguous and out.flags.c_contiguous) or w.ndim != 1:
            return None             # (a window given at invoke over streams: one per stream, :meth:`invoke`)
        rows, dst = x.reshape(-1, w.shape[0]), out.reshape(-1, w.shape[0])
        raw = np.empty(rows.shape, np.int32)
        # 0-d operands and the clip ufunc itself: np.clip's Python wrapper and scalar operands cost more than the
        # passes on one window
        shift, lo, hi = np.array(data.shift, np.int32), np.array(-32768, np.int32), np.array(32767, np.int32)
        clip = np_umath.clip
        wide, window = np.empty(rows.shape, np.int32), np.empty(rows.shape, np.int32)
        given = w.flags.writeable       # a window given at invoke: read at every call, else laid out once
        if not given:
            copyto(window, w)

        def call() -> None:
            if given:
                copyto(window, w)
            copyto(wide, rows)
            np.multiply(wide, window, raw)
            np.right_shift(raw, shift, raw)
            clip(raw, lo, hi, raw)
            copyto(dst, raw, casting="unsafe")
        return call

    def invoke(self, ctx, op, data: WindowData) -> None:
        """Every frame times the window; over streams (:mod:`..streams`) a window given at invoke has a stream axis
        too, and each stream's frames take their own."""
        x, w, out = ctx.input(op, 0), ctx.input(op, 1), ctx.output(op, 0)
        size = w.shape[-1]
        rows = x.reshape(-1, size) if w.ndim == 1 else x.reshape(w.shape[0], -1, size)
        weights = w if w.ndim == 1 else w[:, None, :]
        raw = (rows.astype(np.int32) * weights.astype(np.int32)) >> data.shift
        out[...] = np.clip(raw, -32768, 32767).astype(np.int16).reshape(out.shape)


KERNEL = Window()
