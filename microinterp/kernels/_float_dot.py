"""TFLM's float32 dot products, exact and fast: ``total = 0.f; for k: total += x[k] * w[k]`` for many outputs at once.

TFLM's float reference kernels (``reference/conv.h``, ``fully_connected.h``) sum the taps of every output one after
the other in float32, each product rounded to float32 before it is added (no FMA), starting from ``0.f``. The result
depends on that order, so it cannot be a BLAS product. :func:`sequential_dot` computes it for ``N`` inputs x ``C``
filters over ``K`` taps:

* the products of a block of taps are formed in one vectorized multiply into rows ``1..n`` of a buffer whose row 0
  holds the running totals (``0.f`` at first, so a first product of ``-0.f`` gives ``+0.f`` as in TFLM);
* ``np.add.reduce(block, axis=0)`` then adds the rows in order: NumPy reduces a non-innermost axis of a C-contiguous
  array row by row (``out[m] = out[m] + block[k, m]``), the sequential order -- it sums pairwise only along the
  innermost axis, which is why every block has at least two columns. This is checked once at import
  (:data:`REDUCE_ROWS_IN_ORDER`); should a NumPy ever reduce otherwise, the tap loop below is used instead;
* with many more pixels than channels the blocks are laid out ``[C, taps, N]`` instead (:func:`_pixels_inner`), so
  NumPy's inner loops run over the pixels rather than a handful of channels;
* outputs too many for a block of a few taps (``N * C`` above :data:`WIDE`) go tap by tap: one multiply and one add
  over all outputs per tap, which streams the totals through the cache once per tap.

Blocks hold at most :data:`BLOCK_ELEMENTS` products (a few MB of host memory).

Faster still, and without blocks, where NumPy's ``einsum`` adds in that order (:data:`EINSUM_IN_ORDER`, checked at
import): ``einsum("kn,ck->cn")`` (pixels innermost) or ``einsum("kn,kc->nc")`` (channels innermost) zeroes the
totals, then its iterator runs the tap axis ``k`` outside the innermost output axis -- NumPy's ``nditer`` orders
axes by the operands' strides, and for contiguous operands every stride of ``k`` is the larger one -- and its inner
loop is ``out[i] = x * w[i] + out[i]`` (``sum_of_products_muladd``): each product rounded to float32, then added,
tap after tap. NumPy builds that loop from ``npyv_muladd_f32``, which is a fused multiply-add where the baseline
has FMA (AArch64, or x86 built for it); the probe at import then finds the fused roundings and the blocks are used.
The tap axis must never be the innermost one (NumPy would then sum it in vector lanes): it is not while the
innermost output axis is longer than 1 (:func:`einsum_layout`).

NaN: x86's SSE arithmetic returns the first operand's NaN (quieted) when both operands are NaN, and the "real
indefinite" NaN ``0xFFC00000`` for an invalid operation (``0 * inf``, ``inf - inf``). NumPy's vector loops agree except
in their remainder elements, which return the second operand's NaN; so every output that ends as NaN is computed
again one tap at a time with the hardware's rules (:func:`x86_nan_dot`) -- a cost only models that meet NaN pay.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any

import numpy as np
from numpy._core import umath as np_umath

from ._float_order import EINSUM_IN_ORDER, REDUCE_ROWS_IN_ORDER, c_einsum
from ._qutil import copyto
from ._x86_nan import add_bias_x86, nans_as_x86, repair_nans

#: Products formed at once (float32 elements) per block.
BLOCK_ELEMENTS = 1 << 18
_MINUS_ZERO = np.float32(-0.0)
_ZERO = np.float32(0.0)
#: Above this many outputs a block would hold only a few taps: tap by tap instead.
WIDE = 1 << 15



def einsum_layout(n: int, c: int, w: np.ndarray, w_t: np.ndarray | None) -> str | None:
    """The einsum for ``N`` inputs x ``C`` filters (:func:`_einsum_sums`): ``"kn,ck->cn"`` (pixels innermost, ``w``
    ``[C, K]`` C-contiguous) where there are at least as many pixels as channels and more than :data:`SMALL_NC`
    products, ``"kn,kc->nc"`` (``w_t`` ``[K, C]`` C-contiguous) otherwise; None when the innermost output axis would
    have length 1 (the taps would be summed in vector lanes), for a single output, or without
    :data:`EINSUM_IN_ORDER`."""
    if not EINSUM_IN_ORDER or n * c < 2:
        return None
    pixels = n > 1 and w.flags.c_contiguous
    channels = c > 1 and w_t is not None and w_t.flags.c_contiguous
    if pixels and (not channels or (n >= c and n * c * w.shape[-1] > SMALL_NC)):
        return "kn,ck->cn"
    return "kn,kc->nc" if channels else None


#: Products up to which :func:`einsum_layout` takes ``"kn,kc->nc"`` even with more pixels than channels: its totals
#: can be the output itself, and the copy of ``"kn,ck->cn"``'s transposed totals costs more than its slower inner
#: loop (K x N x C = 4 x 9 x 3: 1.33 -> 1.05 us, 28 x 4 x 6: 1.93 -> 1.37; 27 x 9 x 5 even; 28 x 25 x 3: 1.85 against
#: 3.55).
SMALL_NC = 1000


def _einsum_sums(cols_t: np.ndarray, w: np.ndarray, w_t: np.ndarray | None, skip_t: np.ndarray | None,
                 out: np.ndarray | None = None):
    """The sequential sums by einsum of these operands (``cols_t`` ``[K, N]``, ``w`` ``[C, K]``, ``w_t`` its
    ``[K, C]`` transpose or None) into kept totals, as ``(call, totals, result)``: the call returns them as
    ``[N, C]``, the view ``result`` (the ``"kn,kc->nc"`` output itself, or a kept transposed view of the
    ``"kn,ck->cn"`` one); None where a tap is left out, ``cols_t`` is not C-contiguous or :func:`einsum_layout`
    declines. ``out``: where the ``"kn,kc->nc"`` totals may go straight (a C-contiguous float32 ``[N, C]`` array no
    operand overlaps), or None for a buffer of their own."""
    n, c = cols_t.shape[1], w.shape[0]
    layout = einsum_layout(n, c, w, w_t) if skip_t is None and cols_t.flags.c_contiguous else None
    if layout is None:
        return None
    if layout == "kn,kc->nc":      # c_einsum returns its output: the [N, C] totals themselves
        direct = out is not None and out.shape == (n, c) and out.dtype == np.float32 and out.flags.c_contiguous \
            and not any(np.shares_memory(out, v) for v in (cols_t, w_t))
        totals = out if direct else np.empty((n, c), np.float32)
        return _einsum_into(layout, cols_t, w_t, totals), totals, totals
    totals = np.empty((c, n), np.float32)
    as_nc = totals.T

    def sums() -> np.ndarray:
        c_einsum(layout, cols_t, w, out=totals)
        return as_nc
    return sums, totals, as_nc


def _einsum_into(subscripts: str, a: np.ndarray, b: np.ndarray, totals: np.ndarray) -> Callable[[], np.ndarray]:
    """``c_einsum(subscripts, a, b, out=totals)`` as a call without arguments returning ``totals`` (a closure: a
    partial with ``out=`` merges its keywords into a new dict at every call, 0.07 us more)."""
    def sums() -> np.ndarray:
        return c_einsum(subscripts, a, b, out=totals)
    return sums


def _taps_einsum_sums(xs_t: np.ndarray, taps: np.ndarray, skip_t: np.ndarray | None):
    """The depthwise sums ``"knc,kc->nc"`` (channels innermost, pixels where there is one channel) into kept totals,
    as ``(call, totals, totals)`` (:func:`_einsum_sums`); None without :data:`EINSUM_IN_ORDER`, with a tap left
    out, a single output or operands not C-contiguous."""
    _, n, c = xs_t.shape
    if not (EINSUM_IN_ORDER and skip_t is None and n * c >= 2 and xs_t.flags.c_contiguous
            and taps.flags.c_contiguous):
        return None
    totals = np.empty((n, c), np.float32)
    return _einsum_into("knc,kc->nc", xs_t, taps, totals), totals, totals


def sequential_dot(cols: np.ndarray, w: np.ndarray, skip: np.ndarray | None = None,
                   nan_from: str = "total") -> np.ndarray:
    """``out[n, c] = 0.f + cols[n, 0] * w[c, 0] + cols[n, 1] * w[c, 1] + ...`` in float32, left to right (see the
    module docstring). ``cols``: ``[N, K]``, ``w``: ``[C, K]``, both float32; returns ``[N, C]`` float32.

    ``skip`` (``[N, K]`` bool, optional): taps TFLM leaves out (a convolution's taps outside the image). Their
    products become ``-0.f``, which leaves any total unchanged -- what leaving the tap out does; a zero input would
    not when the filter holds an infinity or a NaN (``0 * inf`` is NaN).

    ``nan_from``: which operand's NaN the compiled ``total += x * w`` keeps where both are NaN -- ``total`` (CONV_2D,
    DEPTHWISE_CONV_2D, FULLY_CONNECTED) or ``product`` (TRANSPOSE_CONV), measured against the wheel per kernel."""
    return sequential_dot_t(np.ascontiguousarray(cols.T), w, None if skip is None else np.ascontiguousarray(skip.T),
                            nan_from=nan_from)


def sequential_dot_t(cols_t: np.ndarray, w: np.ndarray, skip_t: np.ndarray | None = None,
                     w_t: np.ndarray | None = None, nan_from: str = "total") -> np.ndarray:
    """:func:`sequential_dot` with the taps first: ``cols_t`` ``[K, N]`` (one tap's inputs contiguous, what an
    im2col can write directly) and ``skip_t`` ``[K, N]``; ``w_t``: ``w`` transposed (``[K, C]``, contiguous), when
    the caller keeps it (a constant filter, prepared once)."""
    with np.errstate(over="ignore", invalid="ignore", under="ignore"):
        return sequential_dot_core(cols_t, w, skip_t, w_t, nan_from)


def sequential_dot_core(cols_t: np.ndarray, w: np.ndarray, skip_t: np.ndarray | None = None,
                        w_t: np.ndarray | None = None, nan_from: str = "total") -> np.ndarray:
    """:func:`sequential_dot_t` for callers already under an errstate that ignores float errors (the runtime's)."""
    k, n = cols_t.shape
    c = w.shape[0]
    m = n * c

    def inputs_of(i: int, j: int) -> tuple[np.ndarray, np.ndarray]:
        return cols_t[:, i], w[j]

    if m == 0 or k == 0:
        return np.zeros((n, c), np.float32)
    einsum = _einsum_sums(cols_t, w, w_t, skip_t)
    if einsum is not None:
        return nans_as_x86(einsum[0](), inputs_of, None, nan_from)
    if 2 <= m <= WIDE and REDUCE_ROWS_IN_ORDER and n >= 4 * c:
        # many pixels, few channels: pixels innermost (NumPy's inner loops are then long)
        step = max(1, min(k, BLOCK_ELEMENTS // m - 1))
        return nans_as_x86(_pixels_inner(cols_t, w, step, skip_t), inputs_of, skip_t, nan_from)
    if w_t is None:
        w_t = np.ascontiguousarray(w.T)

    def products(k0: int, k1: int, out: np.ndarray) -> None:
        np.multiply(cols_t[k0:k1, :, None], w_t[k0:k1, None, :], out=out)

    return nans_as_x86(_fold(k, n, c, products, skip_t), inputs_of, skip_t, nan_from)


class BoundDot:
    """:func:`sequential_dot_core` of fixed operands, as a call without arguments for kernels bound to the arena:
    ``cols_t`` (``[K, N]``, refreshed by the caller before each call), ``w`` (``[C, K]``), ``skip_t`` and ``nan_from``
    as there. With no tap left out: one einsum into kept totals (:func:`einsum_layout`), or for a single output
    its products accumulated in order; else, where one block of products holds every tap, the layout is chosen once
    and the block and the totals are kept buffers -- one multiply, one reduction from ``0.f`` and the NaN check per
    call, the same operations in the same order as :func:`_pixels_inner` / :func:`_fold` (``[C, K, N]`` when the
    pixels are many, ``[K, N, C]`` otherwise); anything else calls :func:`sequential_dot_core` (:meth:`taps`:
    :func:`sequential_taps_core`). Returns the ``[N, C]`` totals (a kept buffer or a view of one: use it before the
    next call). ``out``: an output the ``"kn,kc->nc"`` einsum may write straight into, its totals then
    (:func:`bind_finish`)."""

    def __init__(self, cols_t: np.ndarray, w: np.ndarray, skip_t: np.ndarray | None = None,
                 w_t: np.ndarray | None = None, nan_from: str = "total", out: np.ndarray | None = None):
        k, n = cols_t.shape
        c = w.shape[0]
        self.fallback = lambda: sequential_dot_core(cols_t, w, skip_t, w_t, nan_from)
        self.inputs_of = lambda i, j: (cols_t[:, i], w[j])
        self.skip_t, self.nan_from = skip_t, nan_from
        self.block = self.sums = None
        einsum = _einsum_sums(cols_t, w, w_t, skip_t, out)
        if einsum is not None:
            self._keep_sums(*einsum)
            return
        if n * c == 1 and k > 0 and skip_t is None:     # one output: its taps' products accumulated in order
            products, sums = np.zeros(k + 1, np.float32), np.empty(k + 1, np.float32)
            x, f = cols_t[:, 0], w[0]

            def one() -> np.ndarray:
                np.multiply(x, f, out=products[1:])
                return np_umath.add.accumulate(products, out=sums)[-1:].reshape(1, 1)
            self._keep_sums(one, sums[-1:], sums[-1:].reshape(1, 1))
            return
        if not _one_block(k, n, c):
            return
        if n >= 4 * c:
            self._keep(w[:, :, None], cols_t[None], (c, k, n), 1, None if skip_t is None else skip_t[None])
            self.result = self.totals.T
        else:
            # the filter transposed: the caller's copy of a constant one, else a view (a filter given at invoke)
            self._keep(cols_t[:, :, None], (w.T if w_t is None else w_t)[:, None, :], (k, n, c), 0,
                       None if skip_t is None else skip_t[:, :, None])

    @classmethod
    def taps(cls, xs_t: np.ndarray, taps: np.ndarray, skip_t: np.ndarray | None = None) -> BoundDot:
        """:func:`sequential_taps_core` of fixed operands (``xs_t`` ``[K, N, C]`` refreshed by the caller, ``taps``
        ``[K, C]``): every channel with its own filter taps."""
        self = cls.__new__(cls)
        k, n, c = xs_t.shape
        self.fallback = lambda: sequential_taps_core(xs_t, taps, skip_t)
        self.inputs_of = lambda i, j: (xs_t[:, i, j], taps[:, j])
        self.skip_t, self.nan_from, self.block, self.sums = skip_t, "total", None, None
        einsum = _taps_einsum_sums(xs_t, taps, skip_t)
        if einsum is not None:
            self._keep_sums(*einsum)
        elif _one_block(k, n, c):
            self._keep(xs_t, taps[:, None, :], (k, n, c), 0, None if skip_t is None else skip_t[:, :, None])
        return self

    @classmethod
    def taps_pixels_inner(cls, xs_cn: np.ndarray, taps: np.ndarray) -> BoundDot | None:
        """The depthwise sums by einsum with the pixels innermost (``"kcn,kc->cn"``): ``xs_cn`` ``[K, C, N]``
        (refreshed by the caller), ``taps`` ``[K, C]`` C-contiguous, no tap left out; returns the ``[N, C]`` totals
        as a view. None without :data:`EINSUM_IN_ORDER` or with fewer than two pixels (the taps would then be the
        innermost axis but one)."""
        _, c, n = xs_cn.shape
        if not EINSUM_IN_ORDER or n < 2 or not xs_cn.flags.c_contiguous or not taps.flags.c_contiguous:
            return None
        self = cls.__new__(cls)
        self.xs_cn = xs_cn
        self.inputs_of = lambda i, j: (xs_cn[:, j, i], taps[:, j])
        self.skip_t, self.nan_from, self.block = None, "total", None
        totals = np.empty((c, n), np.float32)
        self._keep_sums(lambda: c_einsum("kcn,kc->cn", xs_cn, taps, out=totals).T, totals, totals.T)
        return self

    def _keep_sums(self, sums, totals: np.ndarray, result: np.ndarray) -> None:
        """``sums()`` computes the totals into ``totals`` (a kept buffer; it returns them as ``[N, C]``, the view
        ``result`` of it); the NaN test reads the buffer flat."""
        self.sums, self.ones, self.totals, self.result = sums, np.ones(totals.size, np.float32), totals, result
        self.flat_dot = totals.reshape(-1).dot        # the bound method: no dispatch through np.dot

    def _keep(self, a: np.ndarray, b: np.ndarray, shape: tuple[int, int, int], axis: int,
              skip: np.ndarray | None) -> None:
        self.a, self.b, self.axis, self.skip = a, b, axis, skip
        self.block = np.empty(shape, np.float32)
        self.totals = np.empty(shape[:axis] + shape[axis + 1:], np.float32)
        self.result = self.totals

    def __call__(self) -> np.ndarray:
        """Under an errstate that ignores float errors (the runtime's). ``sums`` (einsum, or one output's
        accumulation) computes the totals without the NaN repair, for callers that know no NaN can arise."""
        if self.sums is not None:
            total = self.sums()
            if math.isnan(self.flat_dot(self.ones)):
                repair_nans(total, self.inputs_of, None, self.nan_from)     # a NaN somewhere (or inf - inf)
            return total
        if self.block is None:
            return self.fallback()
        np.multiply(self.a, self.b, out=self.block)
        if self.skip is not None:
            copyto(self.block, _MINUS_ZERO, where=self.skip)
        np.add.reduce(self.block, axis=self.axis, out=self.totals, initial=_ZERO)
        return nans_as_x86(self.result, self.inputs_of, self.skip_t, self.nan_from)


def _one_block(k: int, n: int, c: int) -> bool:
    """Whether one block of products holds every tap and the rows reduce in order (:func:`_fold`'s one-block case)."""
    return REDUCE_ROWS_IN_ORDER and k > 0 and 2 <= n * c <= WIDE and k * n * c <= BLOCK_ELEMENTS


def _fold(k: int, n: int, c: int, products, skip_t: np.ndarray | None) -> np.ndarray:
    """``0.f + p[0] + p[1] + ... + p[k-1]`` in float32, left to right, for ``[N, C]`` outputs; ``products(k0, k1,
    out)`` writes the products of taps ``[k0, k1)`` into ``out`` (``[k1 - k0, N, C]``); skipped taps' products
    become ``-0.f``. Blocks of taps reduced over rows (after the running totals, or from an initial ``0.f`` when one
    block holds every tap); tap by tap for one output, for outputs too many for a block, or should NumPy not reduce
    rows in order."""
    m = n * c
    total = np.zeros((n, c), np.float32)
    if m < 2 or m > WIDE or not REDUCE_ROWS_IN_ORDER:
        product = np.empty((1, n, c), np.float32)
        for j in range(k):
            products(j, j + 1, product)
            if skip_t is not None:
                copyto(product[0], _MINUS_ZERO, where=skip_t[j][:, None])
            np.add(total, product[0], out=total)
        return total
    step = max(1, min(k, BLOCK_ELEMENTS // m - 1))
    if step >= k:       # one block: the products alone, reduced from an initial 0.f
        block = np.empty((k, n, c), np.float32)
        products(0, k, block)
        if skip_t is not None:
            copyto(block, _MINUS_ZERO, where=skip_t[:, :, None])
        np.add.reduce(block, axis=0, out=total, initial=_ZERO)
        return total
    block = np.empty((step + 1, n, c), np.float32)
    for k0 in range(0, k, step):
        k1 = min(k, k0 + step)
        rows = block[:k1 - k0 + 1]
        rows[0] = total
        products(k0, k1, rows[1:])
        if skip_t is not None:
            copyto(rows[1:], _MINUS_ZERO, where=skip_t[k0:k1, :, None])
        np.add.reduce(rows, axis=0, out=total)
    return total


def _pixels_inner(cols_t: np.ndarray, w: np.ndarray, step: int, skip_t: np.ndarray | None = None) -> np.ndarray:
    """:func:`sequential_dot`'s blocks laid out ``[C, taps, N]`` (the same products, added in the same order)."""
    k, n = cols_t.shape
    c = w.shape[0]
    block = np.empty((c, step + 1, n), np.float32)
    total = np.zeros((c, n), np.float32)
    for k0 in range(0, k, step):
        k1 = min(k, k0 + step)
        rows = block[:, :k1 - k0 + 1]
        rows[:, 0] = total
        np.multiply(w[:, k0:k1, None], cols_t[None, k0:k1, :], out=rows[:, 1:])
        if skip_t is not None:
            copyto(rows[:, 1:], _MINUS_ZERO, where=skip_t[None, k0:k1, :])
        np.add.reduce(rows, axis=1, out=total)
    return np.ascontiguousarray(total.T)


def bias_as_tap(w: np.ndarray, bias: np.ndarray | None) -> tuple[np.ndarray, np.ndarray] | None:
    """TFLM's ``total + bias`` after the taps as one more tap, ``1.f * bias`` (exact), for a bound kernel whose
    inputs hold a row of ones after the taps: ``w`` ``[C, K]`` becomes ``[C, K + 1]`` and its ``[K + 1, C]``
    transpose, both contiguous. None without a bias or with a NaN in it (then which NaN the add keeps is the
    kernel's, :func:`add_bias_x86`); a NaN total plus a bias is then the total's NaN as x86 gives it, and the repair
    of NaN outputs (:func:`x86_nan_dot`) sees the bias tap as the last one."""
    if bias is None or np.isnan(bias).any():
        return None
    w_aug = np.ascontiguousarray(np.concatenate([np.asarray(w, np.float32).reshape(w.shape[0], -1),
                                                 np.asarray(bias, np.float32).reshape(-1, 1)], axis=1))
    return w_aug, np.ascontiguousarray(w_aug.T)


class BiasClamp:
    """The end of a bound float CONV_2D, DEPTHWISE_CONV_2D or FULLY_CONNECTED call, on the ``[N, C]`` totals:
    ``total + bias`` (where the constant bias holds a NaN, :func:`add_bias_x86` with the kernel's ``nan_from``) and
    the activation clamp into ``out``. A total from ``+0.f`` is never ``-0.f``, nor is it plus a bias, so NumPy's
    clip ufunc is ``std::min(std::max())`` here, zero bounds included."""

    def __init__(self, bias: np.ndarray | None, nan_from: str, lo: Any, hi: Any, out: np.ndarray):
        self.bias, self.nan_from, self.out = bias, nan_from, out
        self.bias_nan = bias is not None and bool(np.isnan(bias).any())     # a constant bias: known once
        self.lo, self.hi = np.array(lo, np.float32), np.array(hi, np.float32)   # 0-d arrays: the clip's cheapest

    def __call__(self, acc: np.ndarray) -> None:
        if self.bias_nan:
            add_bias_x86(acc, self.bias, self.nan_from)
        elif self.bias is not None:
            np.add(acc, self.bias, out=acc)
        np_umath.clip(acc, self.lo, self.hi, out=self.out)


def bind_finish(dot: BoundDot, bias: np.ndarray | None, nan_from: str, lo: Any, hi: Any, out: np.ndarray,
                shape: tuple[int, ...] | None = None) -> Callable[[], None]:
    """``dot``'s sums, the bias and the activation clamp into ``out`` as one call without arguments (``shape``: the
    shape the totals take to meet ``out``). Where the sums are an einsum's (or one output's) without a bias left over
    -- a constant bias rides as a last tap, :func:`bias_as_tap` --, the NaN test's sum of the totals also says
    whether the clamp has anything to do: when it is finite no total is +-inf or NaN, so the clamp to +-FLT_MAX
    (no activation) changes nothing and the totals are copied as they are (or were written into ``out`` by the
    einsum itself); otherwise NaN totals are repaired as :meth:`BoundDot.__call__` does and clipped -- in place on
    the contiguous buffer, then copied (NumPy's clip of a transposed view into ``out`` costs twice a copy).
    Anything else: :class:`BiasClamp` after ``dot()``."""
    result = None if dot.sums is None else dot.result if shape is None else dot.result.reshape(shape)
    if bias is not None or result is None or result.shape != out.shape or not np.shares_memory(dot.totals, result):
        finish = BiasClamp(bias, nan_from, lo, hi, out)
        if shape is None:
            return lambda: finish(dot())
        return lambda: finish(dot().reshape(shape))
    sums, test, ones, totals = dot.sums, dot.flat_dot, dot.ones, dot.totals
    repair = functools.partial(repair_nans, dot.result, dot.inputs_of, None, dot.nan_from)
    lo0, hi0 = np.array(lo, np.float32), np.array(hi, np.float32)
    clip, isfinite, isnan = np_umath.clip, math.isfinite, math.isnan
    direct = np.shares_memory(totals, out)       # the einsum wrote the output itself
    if lo0 <= -FLT_MAX and hi0 >= FLT_MAX:
        def free() -> None:
            sums()
            s = test(ones)
            if not isfinite(s):         # an infinity or a NaN among the totals (or a sum past FLT_MAX)
                if isnan(s):
                    repair()
                clip(totals, lo0, hi0, out=totals)
            if not direct:
                copyto(out, result)
        return free

    def bounded() -> None:
        sums()
        if isnan(test(ones)):
            repair()
        clip(totals, lo0, hi0, out=totals)
        if not direct:
            copyto(out, result)
    return bounded


#: float32's largest value: the clamp bounds of no activation are its negative and itself
FLT_MAX = np.float32(np.finfo(np.float32).max)


def sequential_taps(xs_t: np.ndarray, taps: np.ndarray, skip_t: np.ndarray | None = None) -> np.ndarray:
    """The depthwise form: ``out[n, c] = 0.f + xs_t[0, n, c] * taps[0, c] + xs_t[1, n, c] * taps[1, c] + ...`` in
    float32, left to right (TFLM's ``reference/depthwiseconv_float.h``), each channel with its own filter taps.
    ``xs_t``: ``[K, N, C]``, ``taps``: ``[K, C]``, ``skip_t``: ``[K, N]`` taps left out (see :func:`sequential_dot`)."""
    with np.errstate(over="ignore", invalid="ignore", under="ignore"):
        return sequential_taps_core(xs_t, taps, skip_t)


def sequential_taps_core(xs_t: np.ndarray, taps: np.ndarray, skip_t: np.ndarray | None = None) -> np.ndarray:
    """:func:`sequential_taps` for callers already under an errstate that ignores float errors (the runtime's)."""
    k, n, c = xs_t.shape

    def products(k0: int, k1: int, out: np.ndarray) -> None:
        np.multiply(xs_t[k0:k1], taps[k0:k1, None, :], out=out)

    if n * c == 0 or k == 0:
        return np.zeros((n, c), np.float32)
    einsum = _taps_einsum_sums(xs_t, taps, skip_t)
    total = einsum[0]() if einsum is not None else _fold(k, n, c, products, skip_t)
    return nans_as_x86(total, lambda i, j: (xs_t[:, i, j], taps[:, j]), skip_t)
