"""Broadcast layouts NumPy runs fast: long inner loops for the bound calls of element-wise ops.

NumPy's iterator coalesces adjacent axes only where every operand steps through them alike, so a broadcast whose
trailing axes are short -- a ``[1, 1, 1, 3]`` per-channel operand against a ``[1, 384, 384, 3]`` image, a common
normalisation -- runs an inner loop of 3 elements 147 456 times: 430 us where the same subtraction without the
broadcast takes 35. :func:`long_inner` lays such a call out again once, at bind:

* the output shape ``S`` is cut at the axis ``k`` where the trailing elements first reach :data:`MIN_RUN`; axis ``k``
  itself may be split into ``(S[k] / m, m)`` by the smallest divisor ``m`` that reaches it, so the cut lands close;
* every operand broadcast anywhere behind the cut is materialised there: a buffer of its outer shape times the
  trailing shape, written once for a constant operand, refreshed before each call for one given at invoke (a copy
  of at most :data:`MAX_COPY` elements);
* every other view is reshaped (no copy), so all of them share one contiguous trailing run of at least
  :data:`MIN_RUN` elements.

The element-wise results are the same operations on the same values in the same places; only the loop order
differs, which an element-wise op does not see (each output element is computed from its two inputs alone). Which
NaN an op keeps where two meet is decided by the caller on the original shapes (``binary_common.nan_operand``) and
checked on these views (``binary_common.numpy_keeps``).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence

import numpy as np

from ._qutil import copyto

#: Elements an inner loop should reach before a layout is worth changing.
MIN_RUN = 1024
#: Outputs smaller than this keep NumPy's own layout (the refresh would cost more than the loop saves).
MIN_SIZE = 4 * MIN_RUN
#: The most elements a materialised operand may hold (a constant one is kept; one given at invoke is copied).
MAX_COPY = 1 << 16


def inner_run(shapes: Sequence[tuple[int, ...]], out_shape: tuple[int, ...]) -> int:
    """The length of the inner loop NumPy runs for operands of ``shapes`` (padded to the output's rank, contiguous)
    broadcast to ``out_shape``: the trailing axes on which each operand is broadcast or not alike."""
    run, last = 1, None
    for i in range(len(out_shape) - 1, -1, -1):
        if out_shape[i] == 1:
            continue
        pattern = tuple(s[i] == 1 for s in shapes)
        if last is not None and pattern != last:
            break
        last = pattern
        run *= out_shape[i]
    return run


def long_inner(operands: Sequence[np.ndarray], out: np.ndarray
               ) -> tuple[list[np.ndarray], np.ndarray, list[Callable[[], None]]] | None:
    """Views of ``operands`` and ``out`` (the op's output, shaped as the broadcast) whose shared inner loop holds at
    least :data:`MIN_RUN` elements, and the refreshes to call before each use (one per materialised operand given at
    invoke); None where NumPy's own layout is already long, the output small, an operand not contiguous or a
    materialised operand would exceed :data:`MAX_COPY`. A read-only operand is taken for a constant."""
    shape = tuple(out.shape)
    r = len(shape)
    if out.size < MIN_SIZE or not out.flags.c_contiguous or any(x.ndim > r for x in operands):
        return None
    padded = [(1,) * (r - x.ndim) + tuple(x.shape) for x in operands]
    if inner_run(padded, shape) >= MIN_RUN or not all(x.flags.c_contiguous for x in operands):
        return None
    k = r - 1
    while math.prod(shape[k:]) < MIN_RUN:
        k -= 1
    tail = math.prod(shape[k + 1:])
    m = next(d for d in range(1, shape[k] + 1) if shape[k] % d == 0 and d * tail >= MIN_RUN)
    cut = shape[:k] + (shape[k] // m, m) + shape[k + 1:]
    views, refreshes = [], []
    for x, s in zip(operands, padded):
        split = s[:k] + ((1, 1) if s[k] == 1 else (shape[k] // m, m)) + s[k + 1:]
        view = x.reshape(split)
        if all(a == b for a, b in zip(split[k + 1:], cut[k + 1:])):
            views.append(view)
            continue
        whole = split[:k + 1] + cut[k + 1:]
        if math.prod(whole) > MAX_COPY:
            return None
        source = np.broadcast_to(view, whole)
        if not x.flags.writeable:
            views.append(np.ascontiguousarray(source))
            continue
        buffer = np.empty(whole, x.dtype)
        refreshes.append(functools.partial(copyto, buffer, source))
        views.append(buffer)
    return views, out.reshape(cut), refreshes


def laid_out(operands: Sequence[np.ndarray], out: np.ndarray
             ) -> tuple[list[np.ndarray], np.ndarray, list[Callable[[], None]]]:
    """:func:`long_inner`'s views and refreshes; else, for an output below :data:`MIN_SIZE`, every constant
    (read-only) operand of another shape materialised in the output's shape, read-only still (a broadcast costs a
    ufunc call on a few dozen values about 0.5 us: a ``[1, 5]`` plus a ``[5]`` 0.75 against 0.27); else the operands
    and ``out`` as they are (no refresh)."""
    wide = long_inner(operands, out)
    if wide is not None:
        return wide
    if out.size >= MIN_SIZE or not out.flags.c_contiguous:
        return list(operands), out, []
    return [_materialised(x, out.shape) if not x.flags.writeable and x.shape != out.shape else x
            for x in operands], out, []


def _materialised(x: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """The constant ``x`` broadcast to ``shape`` as a C-contiguous read-only copy (``x`` itself where it does not
    broadcast there: the op's own check refuses such shapes)."""
    try:
        whole = np.ascontiguousarray(np.broadcast_to(x, shape))
    except ValueError:
        return x
    whole.flags.writeable = False
    return whole


def refreshed(refreshes: Sequence[Callable[[], None]], call: Callable[[], None]) -> Callable[[], None]:
    """``call`` after ``refreshes`` (the copies of operands given at invoke); ``call`` itself when there are none."""
    if not refreshes:
        return call

    def run() -> None:
        for refresh in refreshes:
            refresh()
        call()
    return run
