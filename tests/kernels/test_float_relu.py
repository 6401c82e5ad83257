"""The bit-level float RELU / RELU6 (``kernels/_float_relu.py``) against TFLM's C expressions, evaluated element by
element, over every kind of float32: NaNs of both signs and several payloads, +-0, subnormals, +-inf, 6 and its
neighbours."""

from __future__ import annotations

import numpy as np
import pytest

from microinterp.kernels._float_relu import relu6_float, relu_float

WORDS = [0x00000000, 0x80000000, 0x00000001, 0x80000001, 0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00000,
         0x7F800001, 0xFFFFFFFF, 0x40C00000, 0x40C00001, 0x40BFFFFF, 0xC0C00000, 0x3F800000, 0xBF800000, 0x7F7FFFFF,
         0xFF7FFFFF]


def _c_relu(v: np.float32, six: bool) -> np.float32:
    if six and v > 6:       # comparisons with NaN are false in C and in NumPy
        return np.float32(6)
    return np.float32(0) if v < 0 else v


@pytest.mark.parametrize("six", [False, True])
@pytest.mark.parametrize("n", [1, 7, 16, 33, 1000])
def test_bits_equal_the_c_expression(six, n):
    rng = np.random.default_rng(n)
    words = np.concatenate([np.array(WORDS, np.uint32), rng.integers(0, 2**32, n, dtype=np.uint32)])
    x = rng.permutation(words)[:max(n, len(WORDS))].view(np.float32)
    out = np.empty_like(x)
    (relu6_float if six else relu_float)(x, out)
    expected = np.array([_c_relu(v, six) for v in x], np.float32)
    assert np.array_equal(out.view(np.uint32), expected.view(np.uint32))
