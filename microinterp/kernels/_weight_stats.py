"""Per-channel figures of an integer filter, computed a slice of channels at a time: what the kernels derive from the
weights at prepare (accumulator ranges, magnitude sums, the folded bias) without a weight-sized int64 copy, and the
weight-sized GEMM operands they keep, written slice by slice from the model's own int8 data (lean preparation: the
peak host memory of a prepare is the operand it keeps, not several temporaries of eight bytes per weight)."""

from __future__ import annotations

import numpy as np


def _sums(w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per channel (row) ``sum_k max(w, 0)`` and ``sum_k w`` in int64 (``w``: integers of at most 32 bits)."""
    return np.maximum(w, 0).sum(axis=1, dtype=np.int64), w.sum(axis=1, dtype=np.int64)


def accumulator_range(weights: np.ndarray, input_zero_point: int, bias: np.ndarray | None = None,
                      input_min: int = -128, input_max: int = 127) -> tuple[np.ndarray, np.ndarray]:
    """Per-channel ``(min, max)`` of TFLM's accumulator ``sum_k w[c,k] (x_k - zp_in) + bias[c]`` over all inputs
    ``x_k`` in ``[input_min, input_max]`` (int64 ``[C]`` each). ``weights`` is ``[C, K]`` (the values TFLM multiplies,
    filter offset applied). Skipped (padded) taps contribute 0, which lies inside every term's range."""
    w = np.asarray(weights).reshape(len(weights), -1)
    pos, total = _sums(w if w.dtype.itemsize <= 4 and w.dtype.kind in "iu" else w.astype(np.int64))
    return _range(pos, total - pos, input_zero_point, bias, input_min, input_max)


def _range(pos, neg, input_zero_point, bias, input_min, input_max):
    lo_x, hi_x = input_min - int(input_zero_point), input_max - int(input_zero_point)
    b = np.zeros(len(pos), np.int64) if bias is None else np.asarray(bias, np.int64).reshape(-1)
    return b + pos * lo_x + neg * hi_x, b + pos * hi_x + neg * lo_x


class ChannelStats:
    """Per-channel figures of a filter ``[C, K]`` (int64 ``[C]`` each): the accumulator range ``lo`` / ``hi``
    (:func:`accumulator_range`), ``abs_sum`` = ``sum_k |w|``, ``total`` = ``sum_k w``, and ``abs_max``, the largest
    ``|w|`` of the whole filter. Computed a slice of channels at a time, so the int64 copies stay small whatever
    the filter's size (out of core the filter is a memory-mapped view of the model). ``offset`` is added to every
    weight first (a per-tensor filter zero point); the inputs range over ``[input_min, input_max]``."""

    __slots__ = ("abs_max", "abs_sum", "hi", "lo", "total")

    def __init__(self, weights: np.ndarray, input_zero_point: int, bias: np.ndarray, offset: int = 0,
                 input_min: int = -128, input_max: int = 127) -> None:
        channels, k = weights.shape
        self.lo, self.hi, self.abs_sum, self.total = (np.empty(channels, np.int64) for _ in range(4))
        self.abs_max = 0
        step = max(1, (1 << 18) // max(k, 1))
        for c in range(0, channels, step):
            # int8 plus a filter offset: int32 is exact and half of int64's traffic (a hostile model's offset of
            # 2^31 takes int64)
            part = weights[c:c + step].astype(np.int32 if abs(offset) < (1 << 23) else np.int64)
            if offset:
                part += offset
            pos, total = _sums(part)
            neg = total - pos
            self.lo[c:c + step], self.hi[c:c + step] = _range(pos, neg, input_zero_point, bias[c:c + step],
                                                              input_min, input_max)
            self.abs_sum[c:c + step] = pos - neg
            self.total[c:c + step] = total
            if part.size:
                self.abs_max = max(self.abs_max, int(part.max()), -int(part.min()))


def fill_transposed(dst: np.ndarray, src: np.ndarray, offset: int = 0) -> None:
    """``dst[k, c] = src[c, k] + offset`` (``dst``: ``[K, C]`` float, ``src``: ``[C, K]`` integers, e.g. the model's
    int8 filter), blocks of channels at a time, each converted in the copy (no integer temporary)."""
    channels, k = src.shape
    step = max(64, (1 << 22) // max(k, 1))
    for c in range(0, channels, step):
        block = dst[:, c:c + step]
        block[...] = src[c:c + step].T
        if offset:
            block += offset
