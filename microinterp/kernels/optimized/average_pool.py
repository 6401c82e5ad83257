"""AVERAGE_POOL_2D, optimized int8/int16 path: exact window sums in float, TFLM's rounding division in float.

TFLM (see ``kernels/average_pool.py``): ``acc`` = int32 sum of the raw values over the valid taps of the window,
``n`` = their number, ``avg = acc > 0 ? (acc + n/2) / n : (acc - n/2) / n`` (C division), clamped.

Exactness, decided at prepare: with ``V = 2^(bits-1)`` every partial sum is an integer of magnitude at most
``B = fh * fw * V``, and ``|acc +- n/2| <= B + fh * fw``. When that is below 2^24 float32 holds every step exactly,
in any summation order (else float64, exact below 2^53; when ``B >= 2^31`` the int32 accumulator could wrap and the
reference invoke runs). The rounding division is then ``trunc((acc + copysign(n/2, acc)) / n)``: the float quotient
``q`` is correctly rounded, and for ``|acc| < 2^24`` (2^53) the rounding cannot carry ``q`` across an integer (the
distance from ``acc / n`` to the next integer is at least ``1 / n``, the rounding error at most ``|acc / n| * 2^-24``),
so the truncation equals C's. ``acc = 0`` gives 0 either way. The clamp to the activation range is applied to ``q``
before the float -> int cast (which truncates toward zero); clamping to integer bounds commutes with truncation.

Two ways to get ``acc``:

* **global pool** (one output position whose window covers the whole image, the common classifier head): one
  ``np.add.reduce`` over H and W in the float type.
* **general**: a preallocated zero-bordered float buffer covering every tap position of every window (zeros add
  nothing, exactly like skipped taps); each invoke copies the image into its interior, then sums separably: ``fw``
  strided column slices into a row-sum buffer, ``fh`` strided row slices of that into the window sums.

``n/2`` and ``n`` are per output position (``[out_h, out_w, 1]`` float arrays) when windows are clipped, else scalars.
float32 runs the reference invoke (its float sums follow TFLM's tap order).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .._qutil import copyto
from ..average_pool import KERNEL as REFERENCE
from ..contract import Kernel
from ..pooling_common import PoolData, band_geometry

_F32_EXACT = 1 << 24
_INT32_LIMIT = 1 << 31


@dataclass(frozen=True)
class FastPoolData(PoolData):
    """The reference OpData (so the band API ``pool_rows``/``input_rows`` still takes it) plus the fast path's."""

    mode: str = "reference"             # "global", "general" or "reference"
    half: Any = None                    # n // 2: float scalar or [out_h, out_w, 1] array
    count_f: Any = None                 # n: likewise
    padded: np.ndarray | None = None    # general: zero-bordered copy of the image (float)
    interior: tuple[slice, slice] | None = None     # where the image rows/cols land in ``padded``
    source: tuple[slice, slice] | None = None       # which image rows/cols are copied there
    rows: np.ndarray | None = None      # general: [N, Hp, out_w, C] sums over the x taps
    acc: np.ndarray | None = None       # [N, out_h, out_w, C] window sums
    tmp: np.ndarray | None = None       # like acc (the signed n/2)


def _per_position(values: np.ndarray, dtype) -> Any:
    """A float scalar when all windows agree, else a ``[out_h, out_w, 1]`` array."""
    if (values == values.flat[0]).all():
        return dtype(values.flat[0])
    return values[:, :, None].astype(dtype)


class FastAveragePool2D(Kernel):
    ops = ("AVERAGE_POOL_2D",)
    def prepare(self, ctx, op) -> FastPoolData:
        d = REFERENCE.prepare(ctx, op)
        x, y = ctx.input(op, 0), ctx.output(op, 0)
        taps = d.filter_h * d.filter_w
        bound = taps * (128 if d.type_name == "INT8" else 32768)
        if d.type_name == "FLOAT32" or d.count.size == 0 or bound >= _INT32_LIMIT:
            return FastPoolData(**vars(d))
        dtype = np.float32 if bound + taps < _F32_EXACT else np.float64
        n, c = x.shape[0], x.shape[3]
        half, count = _per_position(d.count // 2, dtype), _per_position(d.count, dtype)
        acc = np.empty(y.shape, dtype)
        if d.out_h == d.out_w == 1 and d.count[0, 0] == d.in_h * d.in_w:
            return FastPoolData(**vars(d), mode="global", half=half, count_f=count, acc=acc, tmp=np.empty_like(acc))
        (rows, cols), interior, source = band_geometry(d, 0, d.out_h)
        return FastPoolData(**vars(d), mode="general", half=half, count_f=count,
                            padded=np.zeros((n, rows, cols, c), dtype), interior=interior, source=source,
                            rows=np.empty((n, rows, d.out_w, c), dtype), acc=acc, tmp=np.empty_like(acc))

    def bind(self, ctx, op, data: FastPoolData):
        """float32 (the reference mode): the reference kernel's bound call."""
        return REFERENCE.bind(ctx, op, data) if data.mode == "reference" else None

    def invoke(self, ctx, op, data: FastPoolData) -> None:
        if data.mode == "reference":
            REFERENCE.invoke(ctx, op, data)
            return
        x, out, acc = ctx.input(op, 0), ctx.output(op, 0), data.acc
        if data.mode == "global":
            np.add.reduce(x, axis=(1, 2), dtype=acc.dtype, out=acc, keepdims=True)
        else:
            _window_sums(data, x)
        np.copysign(data.half, acc, out=data.tmp)
        acc += data.tmp
        acc /= data.count_f
        np.maximum(acc, data.act_min, out=acc)
        np.minimum(acc, data.act_max, out=acc)
        copyto(out, acc, casting="unsafe")       # float -> int truncates toward zero


def _window_sums(data: FastPoolData, x: np.ndarray) -> None:
    """``data.acc`` = sum over the taps of every window, from the zero-bordered buffer."""
    d, padded, rows, acc = data, data.padded, data.rows, data.acc
    padded[:, data.interior[0], data.interior[1]] = x[:, data.source[0], data.source[1]]
    xs, ys = (d.out_w - 1) * d.stride_w + 1, (d.out_h - 1) * d.stride_h + 1
    _strided_sum(rows, [padded[:, :, k:k + xs:d.stride_w] for k in range(d.filter_w)])
    _strided_sum(acc, [rows[:, k:k + ys:d.stride_h] for k in range(d.filter_h)])


def _strided_sum(out: np.ndarray, terms: list[np.ndarray]) -> None:
    if len(terms) == 1:
        copyto(out, terms[0])
        return
    np.add(terms[0], terms[1], out=out)
    for t in terms[2:]:
        out += t


KERNEL = FastAveragePool2D()
