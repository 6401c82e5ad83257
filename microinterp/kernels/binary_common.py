"""Shared pieces of the element-wise binary kernels ADD, SUB and MUL (TFLM ``add_common.cc``/``sub_common.cc``/
``mul_common.cc`` and the ``Broadcast*Slow`` reference functions).

* **Broadcasting**: numpy rules (shapes right-aligned, size-1 dims stretch). TFLM keeps shapes in a ``RuntimeShape``
  of at most 6 dims; higher ranks overrun it (undefined behaviour: wrong results or a crash in the wheel), so they are
  refused at prepare. The output shape comes from the model (TFLM never resizes); it must be the broadcast shape.
* **Float activation range** (``CalculateActivationRange<float>``): NONE clamps to ``[-FLT_MAX, FLT_MAX]``, so an
  overflow to ``inf`` comes out as ``FLT_MAX``; RELU is ``[0, FLT_MAX]``. The clamp is ``std::min(std::max(x, lo),
  hi)`` (``std::max(-0.0, 0.0)`` keeps ``-0.0``; NaN passes through).
* **int8 lookup table**: every per-tensor int8 binary op is a pure function of the two raw bytes, so prepare tabulates
  the literal TFLM formula over all 256 x 256 pairs and invoke is one gather.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable

import numpy as np
from numpy._core import umath as np_umath

from ..quant import INT32_MAX, INT32_MIN, activation_range_float
from ._broadcast import laid_out, refreshed
from ._float_dot import FLT_MAX
from ._qutil import broadcast_shape
from ._qutil import copyto as _copyto
from ._x86_nan import QUIET

FLT_LOWEST = np.float32(-FLT_MAX)

#: TFLM's RuntimeShape holds at most this many dims (kMaxSmallSize).
MAX_RANK = 6


def float_activation_range(activation: str) -> tuple[np.float32, np.float32]:
    """CalculateActivationRange<float> as float32 scalars: NONE is [lowest, max] of float32, not +-inf."""
    lo, hi = activation_range_float(activation)
    return np.float32(lo), np.float32(hi)


def int32_activation_range(activation: str) -> tuple[int, int]:
    """CalculateActivationRange<int32_t> (unquantized int32 SUB/MUL)."""
    if activation == "RELU":
        return 0, INT32_MAX
    if activation == "RELU6":
        return 0, 6
    if activation == "RELU_N1_TO_1":
        return -1, 1
    return INT32_MIN, INT32_MAX


def clamp_float_(x: np.ndarray, lo: np.float32, hi: np.float32) -> np.ndarray:
    """In place ``std::min(std::max(x, lo), hi)`` with C++ semantics (signed zeros kept, NaN passes): the masked
    copy of ``lo``, then a nonzero ``hi`` by the clip ufunc with ``-inf`` below (it only moves values past a
    nonzero bound, keeping NaN bits and ``-0.f``), a zero one by a second masked copy. The bounds as 0-d arrays:
    a scalar costs the masked copy three times its work on small tensors."""
    lo0, hi0 = np.array(lo, np.float32), np.array(hi, np.float32)
    _copyto(x, lo0, where=x < lo0)
    if hi != 0:
        np_umath.clip(x, _NEG_INF, hi0, out=x)
    else:
        _copyto(x, hi0, where=hi0 < x)
    return x


def bind_clamp(x: np.ndarray, lo: np.float32, hi: np.float32) -> Callable[[], None]:
    """:func:`clamp_float_` of the fixed array ``x`` as a call without arguments: its mask and bounds kept (without
    a zero bound, the clip ufunc alone: see :func:`bind_clamp_into`)."""
    if x.size == 1:
        return _bind_clamp_one(x.reshape(-1), np.float32(lo), np.float32(hi))
    lo0, hi0, mask = np.array(lo, np.float32), np.array(hi, np.float32), np.empty(x.shape, bool)
    clip, less = np_umath.clip, np_umath.less
    if lo != 0 and hi != 0:         # a partial with positional arguments: no Python frame, no keyword dict
        return functools.partial(clip, x, lo0, hi0, x)
    if hi != 0:
        def low() -> None:
            less(x, lo0, out=mask)
            _copyto(x, lo0, where=mask)
            clip(x, _NEG_INF, hi0, out=x)
        return low

    def both() -> None:
        less(x, lo0, out=mask)
        _copyto(x, lo0, where=mask)
        less(hi0, x, out=mask)
        _copyto(x, hi0, where=mask)
    return both


def _bind_clamp_one(flat: np.ndarray, lo: np.float32, hi: np.float32) -> Callable[[], None]:
    """:func:`bind_clamp` of a single element (a control-flow scalar, a classifier's one output): ``std::max(v,
    lo)`` is ``v < lo ? lo : v`` and ``std::min(m, hi)`` is ``hi < m ? hi : m`` compared as float32 scalars (a NaN
    compares false and stays, ``-0.f`` equals ``0.f`` and stays) -- NumPy's clip of a one-element array cost
    0.7 us, three times a longer one's."""
    def one() -> None:
        v = flat[0]
        if v < lo:
            flat[0] = lo
        elif hi < v:
            flat[0] = hi
    return one


def bind_clamp_into(x: np.ndarray, lo: np.float32, hi: np.float32, out: np.ndarray) -> Callable[[], None]:
    """``out = std::min(std::max(x, lo), hi)`` (float32) of fixed arrays as a call without arguments: NumPy's clip
    ufunc where neither bound is zero -- exact there, it only moves values past a bound and keeps every NaN's bits
    and ``-0.f`` --, else :func:`bind_clamp` in place and a copy (``std::max(-0.f, 0.f)`` keeps ``-0.f``, which
    clip does not promise)."""
    if lo != 0 and hi != 0 and x.size != 1:
        clip, lo0, hi0 = np_umath.clip, np.array(lo, np.float32), np.array(hi, np.float32)
        return functools.partial(clip, x, lo0, hi0, out)     # positional: no Python frame, no keyword dict
    clamp = bind_clamp(x, lo, hi)

    def into() -> None:
        clamp()
        _copyto(out, x)
    return into


_NEG_INF = np.array(-np.inf, np.float32)


def check_broadcast(ctx, op, a, b, out) -> None:
    """Validate ranks and shapes of a binary op (tensors ``a``, ``b`` -> ``out``, at most :data:`MAX_RANK` dims,
    see :func:`._qutil.broadcast_shape`); raises ``ctx.fail``."""
    problem = broadcast_shape(a.shape, b.shape, out.shape, MAX_RANK)
    if problem:
        raise ctx.fail(op, problem)


def check_quantized(ctx, op, *tensors) -> None:
    """int8/int16 binary ops read ``params.scale``/``zero_point``: every tensor needs per-tensor quantization."""
    for t in tensors:
        q = t.quantization
        if q is None or q.scale == 0.0:
            raise ctx.fail(op, f"{t.type_name} tensor {t.name!r} has no quantization (scale) parameters")


def int8_table(fn: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> np.ndarray:
    """Tabulate ``fn(x1, x2)`` (int64 arrays of int8 values -> int values) over all 256 x 256 raw-byte pairs.

    The table is indexed by ``raw1 * 256 + raw2`` where ``raw`` is the unsigned byte of the int8 value.
    """
    raw = np.arange(256, dtype=np.int64)
    vals = raw.astype(np.uint8).view(np.int8).astype(np.int64)
    return np.ascontiguousarray(fn(vals[:, None], vals[None, :]).astype(np.int8).reshape(-1))


def apply_int8_table(table: np.ndarray, x1: np.ndarray, x2: np.ndarray, out: np.ndarray) -> None:
    """``out[...] = table[raw(x1) * 256 + raw(x2)]`` with numpy broadcasting of ``x1`` and ``x2``."""
    idx = (x1.view(np.uint8).astype(np.intp) << 8) + x2.view(np.uint8)
    target = out.reshape(idx.shape)
    if np.shares_memory(target, out):
        table.take(idx, None, target, "wrap")      # every index is valid: no buffered bounds check
    else:  # non-contiguous output view: reshape copied
        out[...] = table[idx].reshape(out.shape)


def nan_operand(ufunc: np.ufunc, shape1: tuple[int, ...], shape2: tuple[int, ...]) -> int | None:
    """Where both operands of a float ADD or MUL are NaN, the one (0 or 1) whose NaN TFLM keeps: its compiled loops
    put the operands in different orders (measured against the wheel on 164 shape pairs). Same shapes (the
    elementwise loop): ADD the first, MUL the second. Broadcast: the first when the second operand is constant along
    the output's innermost axis and that axis is longer than 1, else the second. None for SUB and DIV, whose NumPy
    loops keep the first NaN as x86 does."""
    if ufunc is not np.add and ufunc is not np.multiply:
        return None
    if tuple(shape1) == tuple(shape2):
        return 0 if ufunc is np.add else 1
    inner1, inner2 = (shape1[-1] if shape1 else 1), (shape2[-1] if shape2 else 1)
    return 0 if inner2 == 1 and max(inner1, inner2) > 1 else 1


def both_nan_as_x86(k: int | None, x1: np.ndarray, x2: np.ndarray, y: np.ndarray) -> None:
    """Where ``x1`` and ``x2`` (broadcast to ``y``) are both NaN, ``y`` gets operand ``k``'s NaN quieted
    (:func:`nan_operand`; NumPy's choice differs, in its vector remainders at least); only when ``y`` holds a NaN."""
    if k is None or not math.isnan(np.add.reduce(y, axis=None)):
        return
    a, b = np.broadcast_arrays(x1, x2)
    both = np.isnan(a) & np.isnan(b)
    if both.any():
        y.view(np.uint32)[both] = (a, b)[k].view(np.uint32)[both] | QUIET


def numpy_keeps(ufunc: np.ufunc, x1: np.ndarray, x2: np.ndarray, y: np.ndarray, k: int) -> bool:
    """Whether NumPy's loop for this very call keeps operand ``k``'s NaN wherever both operands are NaN: the ufunc
    run once on probes laid out like ``x1``, ``x2`` and ``y`` (same shapes, C order, same addresses modulo 64, which
    is all its choice of vector and remainder code depends on) holding NaNs of distinct payloads."""
    views = (x1, x2, y)
    if not all(v.flags.c_contiguous and v.dtype == np.float32 for v in views):
        return False
    probes = [_probe_like(v) for v in views]
    for sign, probe in zip((0, 1), probes[:2]):
        bits = probe.reshape(-1).view(np.uint32)
        bits[...] = np.uint32(0x7FC00000) | np.uint32(sign << 31) | (np.arange(1, bits.size + 1) % (1 << 20))
    with np.errstate(all="ignore"):
        ufunc(probes[0], probes[1], out=probes[2])
    want = np.broadcast_to(probes[k], y.shape)
    return bool(np.array_equal(probes[2].view(np.uint32), want.view(np.uint32)))


def _probe_like(v: np.ndarray) -> np.ndarray:
    """A fresh C-ordered float32 array of ``v``'s shape at ``v``'s address modulo 64."""
    raw = np.empty(v.nbytes + 64, np.uint8)
    offset = (v.ctypes.data - raw.ctypes.data) % 64
    return raw[offset:offset + v.nbytes].view(np.float32).reshape(v.shape)


def float_binary(ufunc: np.ufunc, x1: np.ndarray, x2: np.ndarray, out: np.ndarray, shape: tuple[int, ...],
                 lo: np.float32, hi: np.float32) -> None:
    """``out = clamp(ufunc(x1, x2))`` in float32 (overflow to inf is expected and then clamped to FLT_MAX; two NaN
    operands as :func:`both_nan_as_x86`). ``shape`` is the prepared broadcast shape; a band of rows (out of core) or
    views with a stream axis (:mod:`microinterp.streams`) compute in their own."""
    if out.size != math.prod(shape) or max(x1.ndim, x2.ndim) > len(shape):     # a band, or streams
        shape = np.broadcast_shapes(x1.shape, x2.shape)
    y = out.reshape(shape)
    with np.errstate(over="ignore", invalid="ignore", under="ignore"):
        ufunc(x1, x2, out=y)
        both_nan_as_x86(nan_operand(ufunc, x1.shape, x2.shape), x1, x2, y)
    clamp_float_(y, lo, hi)
    if not np.shares_memory(y, out):  # non-contiguous output view: reshape copied
        out[...] = y.reshape(out.shape)


def bind_float_binary(ufunc: np.ufunc, x1: np.ndarray, x2: np.ndarray, out: np.ndarray, shape: tuple[int, ...],
                      lo: np.float32, hi: np.float32) -> Callable[[], None] | None:
    """:func:`float_binary` as a call without arguments on fixed views (the interpreter's ``bind``), or None when the
    output is not a contiguous view of the broadcast shape. The clamp is :func:`bind_clamp`: without an activation
    (``lo, hi = -+FLT_MAX``) NumPy's clip ufunc in place, exact there: it only maps +-inf to +-FLT_MAX and keeps every
    NaN's bits; with a zero bound (RELU, RELU6) the masked copy, which keeps ``-0.f`` as ``std::max`` does."""
    if not out.size:
        return _nothing             # an empty output: nothing to compute
    y = out.reshape(shape)
    if not np.shares_memory(y, out) or not out.flags.c_contiguous:
        return None
    k = nan_operand(ufunc, x1.shape, x2.shape)
    if k == 1:          # ADD and MUL commute: NumPy's loops mostly keep the first operand's NaN, so put TFLM's first
        x1, x2, k = x2, x1, 0
    never_both = any(not v.flags.writeable and not np.isnan(v).any() for v in (x1, x2))
    (x1, x2), y, refreshes = laid_out((x1, x2), y)     # a short broadcast inner loop made long
    if never_both or (k is not None and numpy_keeps(ufunc, x1, x2, y, k)):
        k = None        # two NaNs never meet (a constant operand without any), or NumPy keeps the right one
    # both_nan_as_x86's NaN test, cheaper: a contiguous output's dot with itself is NaN exactly where the output
    # holds a NaN (squares are never negative: no inf - inf)
    flat = y.reshape(-1) if y.flags.c_contiguous else None
    squares = None if flat is None else flat.dot
    clamp = bind_clamp(y, lo, hi)
    if k is not None and squares is not None and lo <= FLT_LOWEST and hi >= FLT_MAX:
        # no activation: the clamp only maps +-inf to +-FLT_MAX, so the NaN test's sum of squares -- finite exactly
        # when no output is +-inf or NaN (or when they sum past FLT_MAX) -- also says whether it has anything to do
        # (without the NaN test, the clip alone costs what the dot product does)
        isfinite, isnan = math.isfinite, math.isnan

        def free() -> None:
            ufunc(x1, x2, out=y)
            s = squares(flat)
            if not isfinite(s):
                if isnan(s):
                    both_nan_as_x86(k, x1, x2, y)
                clamp()
        return refreshed(refreshes, free)

    def call() -> None:         # under the runtime's errstate (it ignores float errors once per invoke)
        ufunc(x1, x2, out=y)
        if k is not None and (squares is None or math.isnan(squares(flat))):
            both_nan_as_x86(k, x1, x2, y)
        clamp()
    return refreshed(refreshes, call)


def _nothing() -> None:
    """The bound call of an op with an empty output."""


def bind_int32_binary(ufunc: np.ufunc, x1: np.ndarray, x2: np.ndarray, out: np.ndarray, shape: tuple[int, ...],
                      lo: int, hi: int) -> Callable[[], None] | None:
    """:func:`int32_binary` as a call without arguments on fixed views (NumPy's int32 array arithmetic wraps as C's
    does), or None when the output is not a contiguous view of the broadcast shape; without an activation there is
    no clamp."""
    if not out.size:
        return _nothing
    y = out.reshape(shape)
    if not np.shares_memory(y, out) or not out.flags.c_contiguous:
        return None
    (x1, x2), y, refreshes = laid_out((x1, x2), y)     # a short broadcast inner loop made long
    if lo <= INT32_MIN and hi >= INT32_MAX:
        # the output positional: a partial's keywords are merged into a new dict at every call (0.1 us)
        return refreshed(refreshes, functools.partial(ufunc, x1, x2, y))
    clip = np_umath.clip

    def call() -> None:
        ufunc(x1, x2, out=y)
        clip(y, lo, hi, out=y)
    return refreshed(refreshes, call)


def int32_binary(ufunc: np.ufunc, x1: np.ndarray, x2: np.ndarray, out: np.ndarray, lo: int, hi: int) -> None:
    """``out = clamp(ufunc(x1, x2))`` with C int32 wrap-around."""
    with np.errstate(over="ignore"):
        y = np.asarray(ufunc(x1, x2, dtype=np.int32))
    out[...] = np.clip(y, lo, hi).reshape(out.shape)
