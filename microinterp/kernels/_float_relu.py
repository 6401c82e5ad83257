"""TFLM's float RELU and RELU6 (``reference/activations.h``: ``val < 0 ? 0 : val``, and ``val > 6 ? 6 : ...``) on the
bits, exact and in a few integer passes: NaN (either sign, any payload) and ``-0.f`` pass through unchanged, which
``np.maximum`` / ``np.clip`` do not promise, and a masked ``copyto`` costs ten times more.

As unsigned 32-bit words, the floats below zero are exactly ``0x80000001 .. 0xFF800000`` (from the smallest negative
subnormal to ``-inf``; ``0x80000000`` is ``-0.f`` and larger words are negative NaNs), so ``(u - 0x80000001) <=
0x7F7FFFFF`` (wrapping) selects them, and multiplying the word by the negated mask zeroes them. Above six: the words
``0x40C00001 .. 0x7F800000`` (``+inf`` included, positive NaNs above it).
"""

from __future__ import annotations

import functools

import numpy as np
from numpy._core import umath as np_umath

from ._qutil import bind_lookup, bind_minus_zero_test, copyto

_NEG_FIRST = np.uint32(0x80000001)
_NEG_SPAN = np.uint32(0xFF800000 - 0x80000001)
_SIX = np.uint32(0x40C00000)
_ABOVE_SIX_FIRST = np.uint32(0x40C00001)
_ABOVE_SIX_SPAN = np.uint32(0x7F800000 - 0x40C00001)


def _outside(u: np.ndarray, first: np.uint32, span: np.uint32) -> np.ndarray:
    """``u`` not in ``[first, first + span]`` (unsigned, wrapping)."""
    return np.greater(np.subtract(u, first), span)


def relu_float(x: np.ndarray, out: np.ndarray) -> None:
    """``out = x < 0 ? 0 : x`` (float32, same shape and element count)."""
    u = np.ascontiguousarray(x).reshape(-1).view(np.uint32)
    result = np.multiply(u, _outside(u, _NEG_FIRST, _NEG_SPAN), dtype=np.uint32)
    out[...] = result.view(np.float32).reshape(out.shape)


def relu6_float(x: np.ndarray, out: np.ndarray) -> None:
    """``out = x > 6 ? 6 : (x < 0 ? 0 : x)`` (float32)."""
    u = np.ascontiguousarray(x).reshape(-1).view(np.uint32)
    kept = np.multiply(u, _outside(u, _NEG_FIRST, _NEG_SPAN), dtype=np.uint32)
    big = ~_outside(kept, _ABOVE_SIX_FIRST, _ABOVE_SIX_SPAN)
    if big.any():
        copyto(kept, _SIX, where=big)
    out[...] = kept.view(np.float32).reshape(out.shape)


_MINUS_ZERO = np.int32(-(1 << 31))
_PROBE_WORDS = np.array([0x7FC00001, 0xFFC00002, 0x7F800003, 0xFF800004, 0x7FFFFFFF, 0xFFFFFFFF, 0x3F800000,
                         0xBF800000, 0x00000000, 0x40E00000, 0x00000001, 0x80000001, 0x7F800000, 0xFF800000],
                        np.uint32)


@functools.cache
def ufuncs_keep_nan_bits() -> bool:
    """Whether the clip ufunc to ``[0, inf]`` and ``[0, 6]`` gives TFLM's RELU / RELU6 bits for every float32 but
    ``-0.f`` (whose sign they may not keep): a NaN's bits unchanged (no quieting, either sign), below zero ``+0.f``,
    above six six. Probed once on arrays of many lengths and alignments, which choose NumPy's vector body and
    remainder loops."""
    zero, six, inf = np.array(0.0, np.float32), np.array(6.0, np.float32), np.array(np.inf, np.float32)
    for n in (1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65):
        for offset in range(4):
            raw = np.empty(n + offset, np.float32)[offset:]
            bits = raw.view(np.uint32)
            bits[...] = np.resize(np.roll(_PROBE_WORDS, n + offset), n)
            for top, want in ((inf, relu_float), (six, relu6_float)):
                got, expected = np.empty_like(raw), np.empty_like(raw)
                with np.errstate(all="ignore"):
                    np_umath.clip(raw, zero, top, out=got)
                want(raw, expected)
                if not np.array_equal(got.view(np.uint32), expected.view(np.uint32)):
                    return False
    return True


def bind_relu(x: np.ndarray, out: np.ndarray, six: bool):
    """RELU (``six``: RELU6) of the fixed view ``x`` into ``out`` as a call without arguments (both C-contiguous
    float32 of one size): the clip ufunc to ``[0, inf]`` / ``[0, 6]`` where :func:`ufuncs_keep_nan_bits` (NumPy's
    NaN-propagating ``maximum`` runs four times slower), then the ``-0.f`` inputs copied through (found by
    :func:`._qutil.bind_minus_zero_test`); else :func:`relu_float` / :func:`relu6_float`."""
    if not ufuncs_keep_nan_bits():
        fn = relu6_float if six else relu_float
        return lambda: fn(x, out)
    src, dst = x.reshape(-1), out.reshape(-1)
    bits, has_minus_zero = src.view(np.int32), bind_minus_zero_test(src)
    zero, top = np.array(0.0, np.float32), np.array(6.0 if six else np.inf, np.float32)
    clip = np_umath.clip

    def call() -> None:
        clip(src, zero, top, out=dst)
        if has_minus_zero():
            copyto(dst, src, where=bits == _MINUS_ZERO)
    return call


def bind_relu_op(x: np.ndarray, out: np.ndarray, lut: np.ndarray | None, six: bool):
    """The bound call of RELU (``six``: RELU6) on the op's views: the quantized kinds' table lookup
    (:func:`._qutil.bind_lookup`), float32 :func:`bind_relu` on contiguous views of one size (None otherwise)."""
    if lut is not None:
        return bind_lookup(lut, x, out)
    if not (x.flags.c_contiguous and out.flags.c_contiguous) or x.size != out.size:
        return None
    return bind_relu(x, out, six)
