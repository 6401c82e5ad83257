"""Small helpers of ``kernels/_qutil.py`` that the bound calls lean on."""

from __future__ import annotations

import numpy as np
import pytest

from microinterp.kernels._qutil import MINUS_ZERO_REDUCE_FROM, bind_minus_zero_test, count_nonzero


@pytest.mark.parametrize("size", [1, 7, MINUS_ZERO_REDUCE_FROM - 1, MINUS_ZERO_REDUCE_FROM, 3 * MINUS_ZERO_REDUCE_FROM])
def test_minus_zero_test_finds_exactly_a_minus_zero(size):
    """Both forms (a compare into a mask below MINUS_ZERO_REDUCE_FROM elements, a minimum reduction from it) on a
    fixed array rewritten between calls: +0.f, negative numbers, -inf and negative NaNs are not -0.f."""
    x = np.empty(size, np.float32)
    test = bind_minus_zero_test(x)
    x[...] = np.random.default_rng(size).normal(size=size)
    x[:min(3, size)] = [0.0, -np.inf, np.nan][:min(size, 3)]
    x.view(np.uint32)[-1] = 0xFFC00001          # a negative NaN: a large negative int32 above INT32_MIN
    assert not test()
    x[size // 2] = -0.0
    assert test()


def test_count_nonzero_is_numpys():
    m = np.zeros(10, bool)
    assert count_nonzero(m) == 0
    m[3] = True
    assert count_nonzero(m) == 1
