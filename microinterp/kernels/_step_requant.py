"""Requantization as a step function: ``clamp(f(acc), lo, hi)`` evaluated with one ``searchsorted``.

Why: on the tiny tensors of MCU models (an FC with 16 outputs, one LSTM time step) the time goes into the number of
NumPy calls, not into arithmetic: MBQM + zero point + clamp is about ten array operations, each costing as much as a
small matrix product. This is one.

Why it is exact: the requantizations of the integer kernels are *non-decreasing* functions of the accumulator on the
ranges where nothing wraps: SRDHM with a multiplier ``M >= 0`` is the floor of an increasing linear function,
RDBPOT rounds (half away from zero, also non-decreasing), adding the zero point and clamping keep the order; the
single-rounding int64 MBQM of the 16x8 kernels likewise. (The int32 wrap-around of an accumulator or of MBQM's left
shift would break this, so callers pass an accumulator range ``[acc_min, acc_max]`` on which they have shown that
nothing wraps.) A non-decreasing map from integers onto the ``hi - lo + 1`` codes ``lo..hi`` is determined by the
``hi - lo`` accumulator values where it reaches each next code::

    t[v] = min{a in [acc_min, acc_max] : f(a) >= v}   (acc_max + 1 if there is none),   v = lo+1 .. hi
    clamp(f(acc), lo, hi) = lo + #{v : t[v] <= acc}    = lo + searchsorted(t, acc, side="right")

``t`` is found once, in prepare, by bisection on all levels at once, evaluating the exact ``f`` (typically a
:class:`~microinterp.quant.Requantizer`), and checked: ``f(t[v]) >= v > f(t[v] - 1)`` for every level.

Channels (per-channel multipliers, the four LSTM gates) have their own thresholds; they share one sorted array by
moving channel ``c`` to keys ``acc + c * span`` (``span = acc_max - acc_min + 2``), above every threshold of the
channels before it, each channel's thresholds preceded by one at its lowest key. The index ``searchsorted``
returns then identifies channel and code together, and one table ``values`` turns it into the result::

    index = searchsorted(thresholds, acc + key_offset[c], side="right") = c * (L + 1) + 1 + (code - lo),  L = hi - lo
    clamp(f(acc), lo, hi) = values[index]

Kernels may add ``key_offset`` to their accumulator early (inside a bias they add anyway; it is 0 for one channel)
and then call :meth:`StepRequantizer.index`; ``values`` can have the output's dtype, so that the result is stored
without a cast. :func:`requantization_steps` builds the step function of an MBQM + zero point + clamp after checking
that nothing wraps.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..quant import INT32_MAX, INT32_MIN, Requantizer, mbqm_int64

#: keys and thresholds must be exact in the table's dtype: integers below 2^53 for float64
_EXACT_LIMIT = {np.dtype(np.float64): 1 << 53, np.dtype(np.int64): 1 << 62}


class StepRequantizer:
    """``clamp(f(acc), lo, hi)`` for accumulators in ``[acc_min, acc_max]`` on which ``f`` is non-decreasing.

    ``f`` maps an int64 array ``[levels, channels]`` (channel along the last axis, so per-channel multipliers
    broadcast) to the requantized values before the clamp. ``repeat``: each channel covers that many consecutive
    columns of the accumulator's last axis (the LSTM's gates, ``S`` columns each). ``dtype``: float64 for
    accumulators that come out of a float64 matrix product (exact integers), int64 otherwise; keys passed to
    :meth:`codes` must have this dtype (a mixed ``searchsorted`` would convert the whole table on every call).
    """

    __slots__ = ("key_offset", "thresholds", "values")

    def __init__(self, f: Callable[[np.ndarray], np.ndarray], lo: int, hi: int, acc_min: int, acc_max: int,
                 channels: int = 1, repeat: int = 1, dtype=np.float64, values_dtype=np.int64):
        lo, hi, acc_min, acc_max = int(lo), int(hi), int(acc_min), int(acc_max)
        if hi < lo or acc_max < acc_min:
            raise ValueError(f"empty range: codes [{lo}, {hi}], accumulators [{acc_min}, {acc_max}]")
        t = _thresholds(f, lo, hi, acc_min, acc_max, channels)                       # [levels, channels]
        span = acc_max - acc_min + 2
        if not exact_keys(acc_min, acc_max, channels, dtype):
            raise ValueError(f"{channels} channels of {span} accumulator values are not exact in {np.dtype(dtype)}")
        shift = np.arange(channels, dtype=np.int64) * span                             # key = acc + shift[c]
        lowest_key = np.zeros((1, channels), dtype=np.int64) + acc_min                 # the channel separators
        self.thresholds = (np.concatenate([lowest_key, t]) + shift).T.reshape(-1).astype(dtype)
        self.key_offset = np.repeat(shift, repeat).astype(dtype)
        codes = np.arange(lo, hi + 1, dtype=np.int64)
        self.values = np.concatenate([[lo], np.tile(codes, channels)]).astype(values_dtype)   # values[0]: unused

    def index(self, keys: np.ndarray) -> np.ndarray:
        """``searchsorted`` of keys (``acc + key_offset``, of the thresholds' dtype): indices into ``values``."""
        return self.thresholds.searchsorted(keys, "right")

    def __call__(self, acc: np.ndarray) -> np.ndarray:
        """``clamp(f(acc), lo, hi)`` (channels along the last axis), of ``values``' dtype."""
        return self.values[self.index(np.add(acc, self.key_offset, dtype=self.thresholds.dtype))]

    def coded(self, bits: int, offset: int = 0) -> np.ndarray | None:
        """One channel's thresholds preceded by ``(lo - 1 + offset) mod 2^bits`` entries below every key, so that
        the ``searchsorted`` index (``code - lo + 1`` on the thresholds alone) stored into a ``bits``-bit integer
        -- C's narrowing cast, modulo ``2^bits`` -- is ``code + offset``: the store is the cast. None for several
        channels."""
        if self.values.size != self.thresholds.size + 1 or self.key_offset.any():
            return None
        lowest = -np.inf if self.thresholds.dtype.kind == "f" else np.iinfo(self.thresholds.dtype).min
        pad = (int(self.values[1]) - 1 + offset) % (1 << bits)
        return np.concatenate([np.full(pad, lowest, self.thresholds.dtype), self.thresholds])


def exact_keys(acc_min: int, acc_max: int, channels: int, dtype) -> bool:
    """Whether every key and threshold of ``channels`` channels over ``[acc_min, acc_max]`` is exact in ``dtype``."""
    span = acc_max - acc_min + 2
    return (channels - 1) * span + max(-acc_min, acc_max + 1) < _EXACT_LIMIT[np.dtype(dtype)]


def requantization_steps(multiplier, shift, zero_point: int, lo: int, hi: int, acc_min: int, acc_max: int, *,
                         int64_acc: bool = False, channels: int = 1, repeat: int = 1, dtype=np.float64,
                         values_dtype=np.int64) -> StepRequantizer | None:
    """``clamp(MBQM(acc) + zero_point, lo, hi)`` for accumulators in ``[acc_min, acc_max]`` as a step function
    (multiplier and shift per tensor, or per channel), or None where it is not one.

    MBQM is non-decreasing in ``acc`` for ``M >= 0`` unless something wraps: the int32 MBQM's left shift
    ``acc * 2^shift`` must stay in int32 (the accumulator range itself is the caller's to check), and the int64 MBQM
    of the 16x8 kernels (``int64_acc``) must not leave int32 before its wrap, nor overflow its int64 product.
    """
    m = np.asarray(multiplier, dtype=np.int64)
    s = np.asarray(shift, dtype=np.int64)
    if hi < lo or acc_max < acc_min:
        # an empty clamp range (an output zero point far outside the type: TFLM's max-then-min gives act_max
        # everywhere) is no step function; the caller's plain MBQM + clamp handles it
        return None
    if (m < 0).any() or not exact_keys(acc_min, acc_max, channels, dtype):
        return None
    if int64_acc:
        m16 = np.where(m < 0x7FFF0000, (m + (1 << 15)) >> 16, 0x7FFF)
        right = 15 - s
        if (right < 1).any() or max(-acc_min, acc_max) >= 1 << 47:      # TFLM's own precondition on int64 accs
            return None
        ends = [(a * m16 + (np.int64(1) << (right - 1))) >> right for a in (acc_min, acc_max)]
        if (ends[0] < INT32_MIN).any() or (ends[1] > INT32_MAX).any():
            return None

        def f(acc):
            return mbqm_int64(acc, m, s) + zero_point
    else:
        if acc_min < INT32_MIN or acc_max > INT32_MAX:
            return None
        left = np.maximum(s, 0) & 31         # as Requantizer shifts (x86's count modulo 32)
        if ((np.int64(acc_min) << left) < INT32_MIN).any() or ((np.int64(acc_max) << left) > INT32_MAX).any():
            return None
        requantize = Requantizer(m, s)

        def f(acc):
            return requantize(acc) + zero_point
    return StepRequantizer(f, lo, hi, acc_min, acc_max, channels, repeat, dtype, values_dtype)


def _thresholds(f, lo: int, hi: int, acc_min: int, acc_max: int, channels: int) -> np.ndarray:
    """``t[v, c] = min{a in [acc_min, acc_max] : f(a)[c] >= v}`` (``acc_max + 1`` if none), by bisection."""
    levels = np.arange(lo + 1, hi + 1, dtype=np.int64)[:, None]
    low = np.full((hi - lo, channels), acc_min, dtype=np.int64)
    high = np.full((hi - lo, channels), acc_max + 1, dtype=np.int64)
    while True:
        open_ = low < high
        if not open_.any():
            break
        mid = np.minimum((low + high) >> 1, acc_max)      # in [low, high - 1] wherever the interval is open
        reached = np.asarray(f(mid)) >= levels
        high = np.where(open_ & reached, mid, high)
        low = np.where(open_ & ~reached, mid + 1, low)
    _check(f, low, acc_min, acc_max, channels)
    return low


def _check(f, t: np.ndarray, acc_min: int, acc_max: int, channels: int) -> None:
    """Necessary conditions of a non-decreasing ``f`` (that it is one is the caller's proof; this catches a wrong
    range or a wrapping map in most cases): sorted thresholds, ``f(acc_min) <= f(t) <= f(acc_max)``."""
    ends = np.asarray(f(np.array([[acc_min] * channels, [acc_max] * channels], dtype=np.int64)))
    inside = np.minimum(t, acc_max)
    values = np.asarray(f(inside))
    if not (np.all(t[1:] >= t[:-1]) and np.all(ends[0] <= ends[1]) and np.all(values >= ends[0])
            and np.all(values <= ends[1])):
        raise AssertionError("requantization is not a step function on the given accumulator range")


class GridIndex:
    """``thresholds.searchsorted(keys, "right")`` for thresholds on a near-uniform grid, in a few elementwise NumPy
    calls instead of a binary search per key (which, on thousands of keys and a large table, costs more than all
    the arithmetic around it): a linear guess from the grid's spacing, then corrections against the thresholds
    themselves until every key is bracketed, ``t[k - 1] <= key < t[k]``. Exact for any sorted thresholds: the grid
    only decides how many correction rounds run (one to check, for an MBQM's step function), and after
    :data:`ROUNDS` the binary search finishes the job. The grid is fitted between the second finite threshold and
    the one before the last, so end markers (a lowest key, infinite padding, a sentinel above every key) do not
    bend it, and a guess below the grid starts just above those markers."""

    #: correction rounds before falling back to ``searchsorted``
    ROUNDS = 4

    __slots__ = ("base", "bounds", "count", "first", "inverse", "low", "thresholds")

    def __init__(self, thresholds: np.ndarray):
        t = np.asarray(thresholds)
        self.thresholds, self.count = t, len(t)
        if t.dtype.kind == "f":
            low, high = np.array([-np.inf], t.dtype), np.array([np.inf], t.dtype)
            finite = np.flatnonzero(np.isfinite(t))
        else:
            info = np.iinfo(t.dtype)
            low, high = np.array([info.min], t.dtype), np.array([info.max], t.dtype)
            finite = np.flatnonzero((t != info.min) & (t != info.max))
        self.bounds = np.concatenate([low, t, high])                  # bounds[k] = t[k - 1]: k brackets a key
        i0, i1 = (int(finite[0]) + 1, int(finite[-1]) - 1) if finite.size else (0, 0)
        span = float(t[i1]) - float(t[i0]) if i1 > i0 else 0.0
        self.inverse = (i1 - i0) / span if span > 0 else 0.0
        self.base, self.first = (float(t[i0]), i0 + 1) if self.inverse else (0.0, 0)
        # a key below the grid is at most one step above the markers before it (a lowest key, padding)
        self.low = max(i0 - 1, 0) if self.inverse else 0

    def __call__(self, keys: np.ndarray) -> np.ndarray:
        if not self.inverse:
            return self.thresholds.searchsorted(keys, "right")
        k = ((keys - self.base) * self.inverse).astype(np.intp)
        k += self.first
        np.clip(k, self.low, self.count, out=k)
        bounds = self.bounds
        for _ in range(self.ROUNDS):
            below = keys < bounds[k]                   # t[k - 1] > key: one lower
            above = keys >= bounds[k + 1]              # t[k] <= key: one higher
            if not (below.any() or above.any()):
                return k
            k -= below
            k += above
        return self.thresholds.searchsorted(keys, "right")


#: From this many keys a call on, :class:`GridIndex` beats one ``searchsorted`` (measured: a binary search per key
#: costs ~30 ns on a large table, the grid's eight calls ~1 us each plus ~2 ns per key).
GRID_KEYS = 512


def bracket(thresholds: np.ndarray, keys: int):
    """``searchsorted(thresholds, k, "right")`` as a call on arrays of ``keys`` keys: a :class:`GridIndex` for many
    keys, the binary search itself for a few."""
    if keys >= GRID_KEYS:
        return GridIndex(thresholds)
    search = np.asarray(thresholds).searchsorted
    return lambda k: search(k, "right")
