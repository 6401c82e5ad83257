"""TFLM's float RELU and RELU6 (``reference/activations.h``: ``val < 0 ? 0 : val``, and ``val > 6 ? 6 : ...``) on the
bits, exact and in a few integer passes: NaN (either sign, any payload) and ``-0.f`` pass through unchanged, which
``np.maximum`` / ``np.clip`` do not promise, and a masked ``copyto`` costs ten times more.

As unsigned 32-bit words, the floats below zero are exactly ``0x80000001 .. 0xFF800000`` (from the smallest negative
subnormal to ``-inf``; ``0x80000000`` is ``-0.f`` and larger words are negative NaNs), so ``(u - 0x80000001) <=
0x7F7FFFFF`` (wrapping) selects them, and multiplying the word by the negated mask zeroes them. Above six: the words
``0x40C00001 .. 0x7F800000`` (``+inf`` included, positive NaNs above it).
"""

from __future__ import annotations

import numpy as np

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
        np.copyto(kept, _SIX, where=big)
    out[...] = kept.view(np.float32).reshape(out.shape)
