"""The int8 requantization epilogue of the optimized CONV_2D / DEPTHWISE_CONV_2D / FULLY_CONNECTED kernels:
exact int32 accumulators (held in float32 or float64 arrays, channels last) ->
``clamp(MBQM(acc, M_c, shift_c) + zp_out, act_min, act_max)`` as int8, bit-exact with TFLM, in ~6 NumPy passes.

API (built once at prepare, called at every invoke)::

    rng = accumulator_range(weights_ck, input_zero_point, bias)      # per-channel (min, max) of the accumulator
    ep = Epilogue(multipliers, shifts, output_zero_point, act_min, act_max, rng)
    ep(acc, out)        # acc: float32/float64 [..., C] holding TFLM's exact accumulators (bias included, not
                        # wrapped to int32); out: int8 array of the same shape, written in place

``multipliers``/``shifts`` are the per-channel (or scalar) QuantizeMultiplier results; the last argument is the
per-channel ``(acc_min, acc_max)`` over every possible input, or a bound ``B`` meaning ``(-B, B)``.
``ep.kinds()`` counts the channels per path.

The merged rounding
-------------------
TFLM's MBQM rounds twice: ``s = SRDHM(x 2^L, M) = floor((x M' + 2^30) / 2^31)`` (``M' = M 2^L``, ``L = max(shift,
0)``; gemmlowp's nudge written as a floor, see :mod:`microinterp.quant`), then ``r = RDBPOT(s, R)`` (``R =
max(-shift, 0)``) ``= floor((s + 2^(R-1) - [s < 0]) / 2^R)`` for ``R >= 1``, ``s`` for ``R = 0``. Since
``floor((floor(u) + k) / 2^R) = floor((u + k) / 2^R)`` for integer ``k``, the two roundings are one floor::

    r = floor(x a + 1/2 + sigma c)      a = M' / 2^(31+R),  c = 2^-(R+1) (0 when R = 0),
                                        sigma = +1 if x M' + 2^30 >= 0 else -1

(``2^30 / 2^(31+R) + 2^(R-1) / 2^R = 1/2 + c``, and ``1/2 - c`` with the ``-[s < 0]`` term). sigma is the sign of
``x``: the one integer where they differ, ``x = -1`` with ``M' = 2^30``, gives ``r = 0`` either way. As ``M' >=
2^30``, ``|x a| >= a >= c`` for ``x != 0``, so ``sigma c = clip(x a, -c, c)`` exactly (``x = 0`` gives ``r = 0``
with any offset in ``(-1/2, 1/2]``); per-channel it is ``clip(x a, -eps, eps) * (c / eps)`` with ``eps = min c``
(``c / eps`` is a power of two).

In float64 the epilogue computes ``T = x a [+ sigma c] + (zp - act_min + 1/2)``, clips ``T`` to ``[0, act_max -
act_min]``, casts to uint8 (truncation = floor on non-negative values) and adds ``act_min`` modulo 256 (the int8 bit
pattern of ``v + act_min``); ``clamp(floor(T), lo, hi) = floor(clamp(T, lo, hi))`` for integer bounds. When
``act_min >= zp`` (RELU, RELU6) the clip for sigma is skipped and ``c`` joins the offset: for ``x < 0`` both ``r``
and ``floor(x a + 1/2 + c)`` are ``<= 0``, clamped to ``act_min`` alike.

Exactness conditions (per channel, checked at prepare)
------------------------------------------------------
A channel whose accumulator range ``[x_lo, x_hi]`` fits int32 after the left shift (``max|x| 2^L < 2^31``) has a
monotone requantization, so it is *constant* when the clamped outputs at ``x_lo`` and ``x_hi`` agree (pruned
filters: the bias alone decides); then ``a = 0`` and the offset is that value. Otherwise it is *merged* when

* ``M > 0``, ``R <= 21``, ``max|x| 2^L < 2^31`` (no int32 wrap of the accumulator or of ``x 2^L``), and
* ``X M' + 2^31 + |zp - act_min + 1/2| D < 2^53`` with ``D = 2^(31+R)``: all values above are integers over ``D``
  and float64 holds them exactly while the numerators stay below 2^53. ``X`` is the largest ``|x|`` of ``[x_lo,
  x_hi]`` inside the active window ``|x| <= ceil((max(act_max - zp, zp - act_min) + 1) D / M') + 1``: beyond it the
  true ``T`` lies at least one unit outside the clamp range, while the float64 error (``|T| < 2^32``) is far below
  one unit, so the clip still gives the right bound.

Every other channel takes the exact int64 path (:class:`microinterp.quant.Requantizer`, wrapping to int32 when the
range allows overflow); so does every channel of a layer whose output zero point lies outside ``[act_min,
act_max]`` or whose bounds leave int8 (no converter writes such layers). ``tests/kernels/optimized/test_epilogue.py`` checks every channel of every zoo layer at
+-3 around every rounding boundary against :func:`microinterp.quant.mbqm`.

Host-side work buffers come from a per-thread pool (:func:`._buffers.work_buffer`): they are not arena memory.
"""

from __future__ import annotations

import functools

import numpy as np

from ...quant import Requantizer, wrap_int32
from .._blas import matmul
from .._qutil import copyto
from .._weight_stats import fill_transposed
from ._buffers import work_buffer

try:    # the clip ufunc itself (np.clip adds a few microseconds of Python around it)
    from numpy._core.umath import clip as _clip
except ImportError:     # NumPy < 2
    from numpy.core.umath import clip as _clip

_LIMIT = 1 << 53
_F32_EXACT = 1 << 24
SMALL_GEMM = 1 << 15     # below this many multiply-adds, plain np.matmul (no BLAS thread-count calls)
_TILE = 512          # per-channel vectors are tiled to about this length so NumPy's inner loops are long

def gemm_weights(weights: np.ndarray, folded_bias: np.ndarray, ignored: np.ndarray | None = None) -> np.ndarray:
    """The ``[K + 1, C]`` GEMM operand for raw int8 inputs: ``weights`` (``[C, K]``, integers) transposed, the
    folded bias ``bias - zp_in sum_k w`` as the last row (it meets the inputs' constant 1.0 column). float32 when
    ``128 sum_k |w[c,k]| + |bias'_c| < 2^24`` for every channel — every partial sum of any summation order is then
    an integer below 2^24, exact in float32 (raw int8 values have ``|x| <= 128``) — else float64 (exact below 2^53).
    Channels in ``ignored`` (an epilogue's constant ones) get zero columns."""
    folded = np.concatenate([np.asarray(weights, np.int64).T, np.asarray(folded_bias, np.int64)[None, :]])
    if ignored is not None:
        folded[:, ignored] = 0
    bound = 128 * np.abs(folded[:-1]).sum(axis=0) + np.abs(folded[-1])
    return folded.astype(np.float32 if int(bound.max(initial=0)) < _F32_EXACT else np.float64)


def gemm_weights_from(src: np.ndarray, offset: int, abs_sum: np.ndarray, folded_bias: np.ndarray,
                      ignored: np.ndarray | None = None) -> np.ndarray:
    """:func:`gemm_weights` of ``src + offset`` (``src``: ``[C, K]`` integers, the model's filter) written a slice of
    channels at a time, the precision decided from the channels' ``abs_sum`` (``sum_k |w + offset|``) without a
    weight-sized int64 copy."""
    channels, k = src.shape
    bias = np.asarray(folded_bias, np.int64).reshape(-1)
    keep = np.ones(channels, bool)
    if ignored is not None:
        keep[ignored] = False
    bound = np.where(keep, 128 * abs_sum + np.abs(bias), 0)
    out = np.empty((k + 1, channels), np.float32 if int(bound.max(initial=0)) < _F32_EXACT else np.float64)
    fill_transposed(out[:k], src, offset)
    out[k] = bias
    if ignored is not None:
        out[:, ignored] = 0
    return out


def product_for(a: np.ndarray, b: np.ndarray):
    """The function that multiplies operands of these shapes: ``np.matmul`` for tiny products (below
    :data:`SMALL_GEMM` multiply-adds, no BLAS thread-count calls), else the single-threaded BLAS ``matmul``."""
    return np.matmul if a.shape[0] * a.shape[1] * b.shape[1] < SMALL_GEMM else matmul


def gemm(a: np.ndarray, b: np.ndarray, role: str) -> np.ndarray:
    """``a @ b`` into the work buffer ``role`` (:func:`product_for`)."""
    return product_for(a, b)(a, b, out=work_buffer(role, (a.shape[0], b.shape[1]), b.dtype))


class Epilogue:
    """Requantize exact accumulators ``[..., C]`` into int8 (see the module docstring for the algorithm)."""

    def __init__(self, multipliers, shifts, output_zero_point: int, act_min: int, act_max: int, acc_bound):
        if isinstance(acc_bound, tuple):
            x_lo, x_hi = (np.atleast_1d(np.asarray(v, np.int64)) for v in acc_bound)
        else:
            x_hi = np.atleast_1d(np.abs(np.asarray(acc_bound, np.int64)))
            x_lo = -x_hi
        m = np.atleast_1d(np.asarray(multipliers, np.int64))
        s = np.atleast_1d(np.asarray(shifts, np.int64))
        channels = max(m.size, s.size, x_lo.size, x_hi.size)
        m, s, x_lo, x_hi = (np.broadcast_to(v, (channels,)).copy() for v in (m, s, x_lo, x_hi))
        self.channels = channels
        zp, lo, hi = self.zp, self.lo, self.hi = int(output_zero_point), int(act_min), int(act_max)
        left, right = np.maximum(s, 0), np.maximum(-s, 0)
        big = np.maximum(np.abs(x_lo), np.abs(x_hi))
        no_wrap = (left <= 31) & (big < np.right_shift(1 << 31, np.minimum(left, 31)))
        if not -128 <= lo <= zp <= hi <= 127:    # odd quantization (zero point outside the clamp range): int64 path
            no_wrap[:] = False

        # constant channels: the (monotone) requantization agrees at both ends of the range
        ends = np.where(no_wrap, np.stack([x_lo, x_hi]), 0)
        y_ends = np.clip(Requantizer(m, s)(ends) + zp, lo, hi)
        const = no_wrap & (y_ends[0] == y_ends[1])

        # merged channels: the float64 numerators stay below 2^53 (module docstring)
        lin = no_wrap & ~const & (m > 0) & (right <= 21)
        right = np.where(lin, right, 0)
        mp = np.where(lin, m << np.where(lin, left, 0), 1 << 30)         # M' (< 2^62 where lin)
        d = np.int64(1) << (31 + right)                                  # D = 2^(31+R) <= 2^52
        x_act = -(-((max(hi - zp, zp - lo) + 1) * d) // mp) + 1          # ceil(span D / M') + 1
        x_max = np.where(lin, np.maximum(np.abs(np.maximum(x_lo, -x_act)), np.abs(np.minimum(x_hi, x_act))), 0)
        offset_numer = (2 * abs(zp - lo) + 1) * (d >> 1)
        lin &= x_max * mp + (1 << 31) + offset_numer < _LIMIT
        self.constant, self.merged = const, lin
        fast = const | lin
        self._any_fast = bool(fast.any())
        self._fallback = None if fast.all() else np.flatnonzero(~fast)
        self._wrap = self._fallback is not None and bool((big[~fast] >= (1 << 31)).any())
        self._requant = None if self._fallback is None else Requantizer(m[~fast], s[~fast])

        a = np.where(lin, np.ldexp(mp.astype(np.float64), -(31 + right).astype(np.int32)), 0.0)   # exact
        c = np.where(lin & (right >= 1), np.ldexp(1.0, -(right + 1).astype(np.int32)), 0.0)
        self._signed = lo < zp and bool((c > 0).any())
        self._eps = float(c[c > 0].min()) if self._signed else 0.0
        ratio = c / self._eps if self._signed else np.zeros(channels)
        offset = zp - lo + 0.5 + (0.0 if self._signed else c)
        offset = np.where(const, y_ends[1] - lo + 0.5, offset)
        if self._fallback is not None and self._any_fast:   # int64-path channels copy a fast channel's constants
            first = int(np.flatnonzero(fast)[0])
            a, ratio, offset = (np.where(fast, v, v[first]) for v in (a, ratio, offset))
        # the folded GEMM (:meth:`fold`): per-channel a and offset, and the numerators' scale M' (0 when a = 0), D
        self._fold_vectors = (a, offset, np.where(lin, mp, 0), d) if self._fallback is None else None
        self._uniform = bool((ratio[lin] == 1.0).all())     # then sigma * eps is already sigma * c
        # the passes' constants as 0-d arrays: a Python or NumPy scalar operand is converted at every ufunc call
        # (a clip of 169 values 0.48 us with float bounds, 0.24 with 0-d ones)
        self._sigma_bounds = (np.array(-self._eps), np.array(self._eps))
        self._clip_bounds = (np.array(0.0), np.array(float(hi - lo)))
        self._add = np.array(lo & 0xFF, np.uint8)
        self._scalar = channels > 0 and all(bool((v == v[0]).all()) for v in (a, ratio, offset))
        self._vectors = tuple(np.array(float(v[0])) for v in (a, ratio, offset)) if self._scalar else \
            (a, ratio, offset)
        self._tiles: dict[int, tuple] = {}

    def kinds(self) -> dict[str, int]:
        """How many channels take each path: merged float64 rounding, constant output, exact int64."""
        merged, const = int(self.merged.sum()), int(self.constant.sum())
        return {"merged": merged, "constant": const, "int64": self.channels - merged - const}

    @property
    def signed(self) -> bool:
        """True when the rounding needs the accumulator's sign (``act_min < zp``): a folded GEMM saves fewer
        passes then."""
        return self._signed

    def fold(self, operand: np.ndarray) -> np.ndarray | None:
        """The float64 GEMM operand that yields ``T`` itself instead of the accumulator: ``operand`` (integer ``[K +
        1, C]``, the folded bias ``bias'`` last, multiplying raw int8 inputs and a 1.0 column) with column ``c``
        scaled by ``a_c`` and, unless the rounding is signed, ``offset_c`` added to the bias row; then
        :meth:`finish` skips the cast and multiply passes (and the offset add). None unless every channel is
        merged or constant and, per channel, ``M' (128 sum_k |w| + |bias'|) + |offset| D < 2^53``: every term and
        partial sum, in any summation order, is then an integer over ``D = 2^(31+R)`` below 2^53 over ``D``
        (``a = M' / D``; ``w M'`` has at most 39 bits, times a raw value at most 47), exact in float64, so the GEMM
        returns the exact ``x a (+ offset)`` the merged rounding computes."""
        if self._fold_vectors is None:
            return None
        a, offset, mp, d = self._fold_vectors
        w = np.asarray(operand, np.int64)
        if w.ndim != 2 or w.shape[1] != self.channels:
            return None
        add = np.zeros(self.channels) if self._signed else offset
        magnitude = 128 * np.abs(w[:-1]).sum(axis=0) + np.abs(w[-1])
        numer_off = np.round(np.abs(add) * d).astype(np.int64)                 # exact: offset D is an integer
        if any(int(m) * int(v) + int(o) >= _LIMIT for m, v, o in zip(mp, magnitude, numer_off)):
            return None
        folded = w.astype(np.float64) * a                                       # exact: w M' < 2^39, a = M' / D
        folded[-1] += add
        return folded

    def finish(self, t: np.ndarray, out: np.ndarray) -> None:
        """Requantize the product of inputs and a :meth:`fold` operand (float64 ``[..., C]``, overwritten) into
        ``out``."""
        rows = t.size // self.channels if self.channels else 0
        if rows:
            self._merged(t, out, rows, folded=True)

    def bind(self, acc: np.ndarray, out: np.ndarray, folded: bool = False):
        """:meth:`__call__` (``folded``: :meth:`finish`) of the fixed buffers ``acc`` and ``out`` as a call without
        arguments: :meth:`_passes` on buffers of its own and views resolved once (small layers, where a call's
        Python costs as much as its passes); None when a channel takes the int64 path."""
        rows = acc.size // self.channels if self.channels else 0
        if self._fallback is not None or not self._any_fast or not rows or not acc.flags.c_contiguous:
            return None
        shape, a, ratio, offset = self._tiles.get(rows) or self._tiled(rows)
        src = acc.reshape(shape)
        t = src if folded else np.empty(shape, np.float64)
        tmp = np.empty(shape, np.float64) if self._signed else None
        return functools.partial(self._passes, src, t, tmp, out.reshape(shape).view(np.uint8), a, ratio, offset,
                                 folded)

    # -- invoke ------------------------------------------------------------------------------------------------------
    def _tiled(self, rows: int) -> tuple:
        """(shape, a, ratio, offset) for ``rows`` rows: the work shape ``(rows / k, k C)`` and the per-channel
        vectors repeated k times, k the largest divisor of ``rows`` with ``k C <= _TILE`` (scalars stay scalars)."""
        if self._scalar:
            k = 1
            vectors = self._vectors
        else:
            k = next(k for k in range(max(1, _TILE // self.channels), 0, -1) if rows % k == 0)
            vectors = tuple(np.tile(v, k) for v in self._vectors)
        hit = self._tiles[rows] = ((rows // k, k * self.channels), *vectors)
        return hit

    def __call__(self, acc: np.ndarray, out: np.ndarray) -> None:
        """Requantize ``acc`` (float32/float64 ``[..., C]``, exact integer accumulators) into the int8 ``out``
        (both C-contiguous)."""
        rows = acc.size // self.channels if self.channels else 0
        if rows == 0:
            return
        if self._any_fast:
            self._merged(acc, out, rows)
        if self._fallback is not None:
            self._int64(acc.reshape(rows, self.channels), out.reshape(rows, self.channels))

    def _merged(self, acc: np.ndarray, out: np.ndarray, rows: int, folded: bool = False) -> None:
        shape, a, ratio, offset = self._tiles.get(rows) or self._tiled(rows)
        src = acc.reshape(shape)
        t = src if folded else work_buffer("epilogue_t", shape, np.float64)
        tmp = work_buffer("epilogue_sigma", shape, np.float64) if self._signed else None
        self._passes(src, t, tmp, out.reshape(shape).view(np.uint8), a, ratio, offset, folded)

    def _passes(self, src: np.ndarray, t: np.ndarray, tmp: np.ndarray | None, u: np.ndarray, a, ratio, offset,
                folded: bool) -> None:
        """The merged rounding of ``src`` (the work shape, :meth:`_tiled`) into ``u`` (the output's bytes): ``T = x a
        [+ sigma c] + offset`` in ``t`` (float64; ``t`` is ``src`` when ``folded``: the product is already ``x a``,
        plus the offset unless the rounding is signed), then ``u = floor(clip(T, 0, act_max - act_min)) + act_min``
        modulo 256 (``tmp``: the signed rounding's sigma term)."""
        # (every output positional: a keyword costs a call 40 ns more, and a small layer's passes are its time)
        if not folded:
            if src.dtype == np.float64:
                np.multiply(src, a, t)
            else:
                copyto(t, src)                           # float32 -> float64 first: mixed ufuncs are slow
                np.multiply(t, a, t)
        if self._signed:
            _clip(t, *self._sigma_bounds, tmp)              # sigma * eps
            if not self._uniform:
                np.multiply(tmp, ratio, tmp)                # sigma * c  (ratio = c / eps: a power of two, or 0)
            np.add(t, tmp, t)
        if not folded or self._signed:                      # a fold without the sign put the offset in the product
            np.add(t, offset, t)
        _clip(t, *self._clip_bounds, t)
        u[...] = t                                          # truncation = floor (t >= 0)
        if self._add:
            np.add(u, self._add, u)                         # + act_min modulo 256

    def _int64(self, acc2: np.ndarray, out2: np.ndarray) -> None:
        fb = self._fallback
        x = acc2[:, fb].astype(np.int64)
        if self._wrap:
            x = wrap_int32(x)
        y = self._requant(x)
        y += self.zp
        np.clip(y, self.lo, self.hi, out=y)
        out2[:, fb] = y
