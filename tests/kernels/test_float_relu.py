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


@pytest.mark.parametrize("form", ["clip", "clip dropping -0", "bits"])
@pytest.mark.parametrize("six", [False, True])
@pytest.mark.parametrize("n", [1, 7, 16, 33, 1000])
def test_bound_relu_equals_the_c_expression(six, n, form, monkeypatch):
    """The bound form (the clip ufunc and the -0.f copy where the probe allows it, else the bits), over the same
    words with -0.f among them, on two invokes of new values; "clip dropping -0" stands for a NumPy whose clip
    turns -0.f into +0.f (the probe allows that), which the copy of the -0.f inputs repairs."""
    from types import SimpleNamespace

    from microinterp.kernels import _float_relu

    assert _float_relu.ufuncs_keep_nan_bits()      # this NumPy: the clip form is the one that runs
    if form == "bits":
        monkeypatch.setattr(_float_relu, "ufuncs_keep_nan_bits", lambda: False)
    if form == "clip dropping -0":
        def clip(v, lo, hi, out):
            np.clip(v, lo, hi, out=out)
            out[out == 0] = 0.0

        monkeypatch.setattr(_float_relu, "np_umath", SimpleNamespace(clip=clip))
    rng = np.random.default_rng(n + 7)
    x = np.empty(max(n, len(WORDS)), np.float32)
    out = np.empty_like(x)
    call = _float_relu.bind_relu(x, out, six)
    for _ in range(2):
        words = np.concatenate([np.array(WORDS, np.uint32), rng.integers(0, 2**32, n, dtype=np.uint32)])
        x.view(np.uint32)[...] = rng.permutation(words)[:x.size]
        call()
        expected = np.array([_c_relu(v, six) for v in x], np.float32)
        assert np.array_equal(out.view(np.uint32), expected.view(np.uint32))
