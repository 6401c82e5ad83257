"""FULLY_CONNECTED's channel arithmetic: TFLM's sequential float32 sums (``sequential_dot_float32``, the in-memory
float path too) and, out of core, output channels computed tile by tile as the filter streams (:func:`fc_channels`,
:class:`FullyConnectedTiler`); TFLM ``micro/kernels/fully_connected.cc``, ``reference/fully_connected.h``,
``reference/integer_ops/fully_connected.h``. Each output channel is its own sum, so a tile of channels computes
exactly what the whole layer computes for them."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..quant import Requantizer, mbqm_int64, wrap_int32
from ._blas import matmul
from .bands import Tiler
from .binary_common import clamp_float_

#: float32 path: elements of the [batches, chunk, depth] product block formed at once.
_FLOAT_CHUNK = 1 << 20


def sequential_dot_float32(x: np.ndarray, weights: np.ndarray, bias: np.ndarray | None, lo, hi) -> np.ndarray:
    """TFLM's float FC: ``total = 0f; for k: total += x[b,k] * w[k,c]``, ``+ bias``, clamp; all in float32.

    Products of a chunk of ``k`` are formed at once into ``P[k, b, c]`` whose row 0 holds the running total, then
    ``np.add.reduce(P, axis=0)``: with the ``(b, c)`` block (>= 2 elements, padded if needed) as NumPy's inner loop the
    reduction adds row after row, i.e. exactly the C loop's order and roundings (never pairwise summation, which
    NumPy uses only when the reduced axis is the contiguous inner one). ``test_fully_connected`` checks this against
    a literal loop.
    """
    b, k = x.shape
    n = weights.shape[1]
    m = max(b * n, 2)
    step = max(1, _FLOAT_CHUNK // m)
    total = np.zeros(m, dtype=np.float32)
    xt = np.ascontiguousarray(x.T)
    with np.errstate(over="ignore", invalid="ignore", under="ignore"):
        for k0 in range(0, k, step):
            k1 = min(k, k0 + step)
            prods = np.zeros((k1 - k0 + 1, m), dtype=np.float32)
            prods[0] = total
            np.multiply(xt[k0:k1, :, None], weights[None, k0:k1].transpose(1, 0, 2),
                        out=prods[1:, :b * n].reshape(k1 - k0, b, n))
            total = np.add.reduce(prods, axis=0)
        out = total[:b * n].reshape(b, n)
        if bias is not None:
            out += bias
    return clamp_float_(out, lo, hi)


def fc_channels(data: Any, x: np.ndarray, w: np.ndarray, bias: np.ndarray | None, out: np.ndarray,
                c0: int) -> None:
    """Output channels ``[c0, c0 + w.shape[0])`` of a FULLY_CONNECTED from raw weight rows ``w`` (an out-of-core
    channel tile; ``bias`` holds the same channels), written into ``out[..., c0:c1]``. float32: TFLM's sequential
    sums of each channel (:func:`sequential_dot_float32`), the bias, the clamp.

    The same arithmetic as :meth:`FullyConnected.invoke`: ``acc = sum_k (w + w_off) * (x + x_off) + bias`` as an
    exact float64 product rounded to int64, wrapped to int32 unless the 16x8 int64 accumulator applies, then the
    output channels' MultiplyByQuantizedMultiplier, output offset and activation clamp.
    """
    c1 = c0 + w.shape[0]
    if data.type_name == "FLOAT32":         # TFLM's sequential float32 sums, channel by channel
        rows = w.reshape(w.shape[0], -1)[:, :data.accum]
        b = None if bias is None else bias.reshape(-1).astype(np.float32)
        out.reshape(-1)[c0:c1] = sequential_dot_float32(x.reshape(1, -1)[:, :data.accum], rows.T, b, data.act_min,
                                                        data.act_max).reshape(-1)
        return
    xq = x.reshape(-1)[:data.accum].astype(np.float64) + data.input_offset
    wq = w.reshape(w.shape[0], -1)[:, :data.accum].astype(np.float64) + data.filter_offset
    acc = matmul(xq[None, :], wq.T).astype(np.int64).reshape(-1)
    if bias is not None:
        acc += bias.reshape(-1).astype(np.int64)
    per_channel = np.ndim(data.multiplier) > 0
    mult = data.multiplier[c0:c1] if per_channel else data.multiplier
    shift = data.shift[c0:c1] if per_channel else data.shift
    if data.int64_acc:
        y = mbqm_int64(acc, mult, shift)
    else:
        y = Requantizer(mult, shift)(wrap_int32(acc))
    y += data.output_offset
    np.clip(y, data.act_min, data.act_max, out=y)
    out.reshape(-1)[c0:c1] = y


class FullyConnectedTiler(Tiler):
    """FULLY_CONNECTED (batch 1, float32 / int8 / int16) out of core: the input vector and the output resident, the
    filter streamed in output-channel tiles computed by :func:`fc_channels` (each output channel is its own sum)."""

    mode = "channels"
    channel_input = 1

    @classmethod
    def for_op(cls, op: Any, data: Any, inputs: Any, output: Any) -> Tiler | None:
        if getattr(data, "batches", 0) == 1 and data.type_name in ("FLOAT32", "INT8", "INT16") \
                and data.scratch is None:
            return cls()
        return None

    def compute(self, kernel, op, data, band):
        fc_channels(data, band.inputs[0], band.inputs[1], band.inputs.get(2), band.out, band.c0)
