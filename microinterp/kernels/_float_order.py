"""Probes, run once at import, of the summation order of the NumPy operations :mod:`._float_dot` relies on: whether
``np.add.reduce`` over rows and ``einsum`` add float32 products one after the other, as TFLM's float kernels do
(``total = 0.f; total += x[k] * w[k]``). Where a probe fails the kernels use their slower, always exact forms."""

from __future__ import annotations

import numpy as np


def _rows_reduce_in_order() -> bool:
    """Whether ``np.add.reduce(a, axis=0)`` adds the rows of a C-contiguous float32 array one after the other:
    ``0 + 1 + 1e8 + 1 + ... + 1`` in float32 loses every later 1 (the spacing at 1e8 is 8); summed pairwise, in
    blocks or in higher precision they would count."""
    rows = np.array([0.0, 1.0, 1e8] + [1.0] * 13, np.float32)
    block = np.repeat(rows[:, None], 2, axis=1)
    expected = np.float32(0.0)
    for v in rows:
        expected = np.float32(expected + v)
    got = np.add.reduce(block, axis=0)
    middle = np.add.reduce(np.repeat(block[None], 3, axis=0), axis=1)      # [C, K, N] reduced over K
    initial = np.add.reduce(block[1:], axis=0, initial=np.float32(0.0))    # the one-block form
    return bool(np.all(got == expected) and np.all(middle == expected) and np.all(initial == expected)) and \
        expected == np.float32(1e8)


#: NumPy reduces rows in order (checked at import); else :func:`sequential_dot` loops over the taps.
REDUCE_ROWS_IN_ORDER = _rows_reduce_in_order()

try:
    from numpy._core.multiarray import c_einsum
except ImportError:                 # another layout: the public function, without its path optimisation
    def c_einsum(subscripts: str, *operands: np.ndarray, out: np.ndarray) -> np.ndarray:
        return np.einsum(subscripts, *operands, out=out, optimize=False)


def _tap_by_tap(cols_t: np.ndarray, w_t: np.ndarray) -> np.ndarray:
    """The reference: ``total = 0.f; total = total + x[k] * w[k]`` tap after tap, one NumPy operation each."""
    total = np.zeros((cols_t.shape[1], w_t.shape[1]), np.float32)
    for k in range(cols_t.shape[0]):
        total = total + cols_t[k][:, None] * w_t[k][None, :]
    return total


def _einsum_in_order() -> bool:
    """Whether every einsum the kernels use (:func:`_einsum_sums`, the depthwise and gathered-filter forms) gives the
    tap-by-tap sums bit for bit: on ``0 + 1 + 1 + 1e8 + 1 + ...`` (``1e8`` in order; a reassociation counts the
    later ones), on ``-(1 + 2^-11) + (1 + 2^-12)^2`` (``0`` unfused, ``2^-24`` fused) and on random taps, with
    operands aligned and not."""
    rng = np.random.default_rng(0)
    k, n, c = 37, 19, 7
    cols_t = rng.normal(size=(k, n)).astype(np.float32)
    w_t = rng.normal(size=(k, c)).astype(np.float32)
    cols_t[:, :2] = 0.0
    cols_t[:16, 0] = [1.0, 1.0, 1e8] + [1.0] * 13
    w_t[:16, 0] = 1.0
    cols_t[:2, 1] = [-1.0, 1.0 + 2.0 ** -12]
    w_t[:2, 1] = [1.0 + 2.0 ** -11, 1.0 + 2.0 ** -12]
    want = _tap_by_tap(cols_t, w_t)
    if want[1, 1] != 0.0 or want[0, 0] != np.float32(1e8):
        return False            # NumPy's own elementwise arithmetic is not IEEE float32: nothing here is exact
    raw = np.empty(cols_t.nbytes + 4, np.uint8)
    unaligned = raw[1:1 + cols_t.nbytes].view(np.float32).reshape(cols_t.shape)
    unaligned[...] = cols_t
    with np.errstate(all="ignore"):
        for x in (cols_t, unaligned):
            cn = c_einsum("kn,ck->cn", x, np.ascontiguousarray(w_t.T), out=np.empty((c, n), np.float32))
            nc = c_einsum("kn,kc->nc", x, w_t, out=np.empty((n, c), np.float32))
            xs = np.broadcast_to(x[:, :, None], (k, n, c))       # the depthwise forms: one filter tap per channel
            taps_cn = c_einsum("kcn,kc->cn", np.ascontiguousarray(xs.transpose(0, 2, 1)), w_t,
                                out=np.empty((c, n), np.float32))
            taps_nc = c_einsum("knc,kc->nc", np.ascontiguousarray(xs), w_t, out=np.empty((n, c), np.float32))
            gathered = c_einsum("ckp,kp->cp", np.ascontiguousarray(np.broadcast_to(w_t.T[:, :, None], (c, k, n))),
                                 x, out=np.empty((c, n), np.float32))      # a filter per pixel (TRANSPOSE_CONV)
            if not all(np.array_equal(v, want) for v in (cn.T, nc, taps_cn.T, taps_nc, gathered.T)):
                return False
    return True


#: NumPy's einsum adds each rounded product to the running totals tap after tap (checked at import).
EINSUM_IN_ORDER = _einsum_in_order()
