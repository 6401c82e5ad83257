"""microinterp.libm: NumPy ufuncs over the C library's float functions (expf, tanhf, logf, sinf, ...) against scalar ctypes calls of the same functions.

The scalar calls are an independent route to libm (one Python call per element), so these tests check the ufunc
plumbing: every element, every stride, shape and dtype conversion, special values. That the C library is what TFLM
computes is checked end to end by the float SOFTMAX/LOGISTIC/TANH/SVDF/LSTM differential tests against the wheel.
"""

from __future__ import annotations

import numpy as np
import pytest

from microinterp import libm

LIB = libm._load_libm()
pytestmark = pytest.mark.skipif(LIB is None, reason="no loadable C math library")
NAMES = list(libm.NAMES)


def _c_values(name: str, x: np.ndarray) -> np.ndarray:
    fn = libm._c_function(LIB, name)
    return np.array([fn(float(v)) for v in x.reshape(-1)], dtype=np.float32).reshape(x.shape)


def _inputs(seed: int, n: int) -> np.ndarray:
    """Random bit patterns (all exponents, NaNs, infinities) plus the ranges the kernels use and edge values."""
    rng = np.random.default_rng(seed)
    bits = rng.integers(0, 1 << 32, size=n, dtype=np.uint64).astype(np.uint32).view(np.float32)
    ranges = [rng.uniform(lo, hi, size=n).astype(np.float32) for lo, hi in ((-20, 0), (-2, 2), (-110, 100),
                                                                            (-1e-3, 1e-3))]
    edges = np.array([0.0, -0.0, 1.0, -1.0, 22.0, -9.0, 16.619047, 88.72, 88.73, -103.9, -104.0, 1e-30, -1e-45,
                      np.inf, -np.inf, np.nan], dtype=np.float32)
    return np.concatenate([bits, *ranges, edges])


def _assert_same_bits(got: np.ndarray, want: np.ndarray, x: np.ndarray) -> None:
    assert got.dtype == np.float32 and got.shape == want.shape
    same = (got.view(np.uint32) == want.view(np.uint32)) | (np.isnan(got) & np.isnan(want))
    bad = np.flatnonzero(~same.reshape(-1))
    assert bad.size == 0, (f"{bad.size} mismatches, first x={x.reshape(-1)[bad[0]]!r}: "
                           f"{got.reshape(-1)[bad[0]]!r} != {want.reshape(-1)[bad[0]]!r}")


def test_backend_is_the_vectorized_libm():
    assert libm.BACKEND == "libm-ufunc"


@pytest.mark.parametrize("name", NAMES)
def test_matches_scalar_c_calls(name):
    x = _inputs(sum(map(ord, name)), 40000)
    _assert_same_bits(getattr(libm, name)(x), _c_values(name, x), x)


@pytest.mark.parametrize("name", NAMES)
def test_shapes_strides_and_conversions(name):
    fn = getattr(libm, name)
    x = np.random.default_rng(1).uniform(-12, 12, size=(6, 7, 5)).astype(np.float32)
    want = _c_values(name, x)
    _assert_same_bits(fn(x), want, x)
    _assert_same_bits(fn(x[:, ::2, ::-1]), want[:, ::2, ::-1], x)         # non-contiguous views
    _assert_same_bits(fn(x.transpose(2, 0, 1)), want.transpose(2, 0, 1), x)
    _assert_same_bits(fn(x.astype(np.float64)), want, x)                   # converted to float32 first
    scalar = fn(np.float32(0.75))
    assert isinstance(scalar, np.ndarray) and scalar.shape == () and scalar == _c_values(name, np.float32([0.75]))[0]
    assert fn(np.zeros((0, 3), np.float32)).shape == (0, 3)


def test_overflow_raises_no_warning():
    with np.errstate(all="raise"):
        assert libm.expf(np.float32([100.0]))[0] == np.inf
        assert libm.expf(np.float32([-200.0]))[0] == 0.0


@pytest.mark.parametrize("name", NAMES)
def test_slow_fallback_computes_the_same(name):
    """The element-by-element fallback (used where NumPy's C API cannot be reached) gives the same bits."""
    x = _inputs(7, 2000)
    slow = np.frompyfunc(libm._c_function(LIB, name), 1, 1)
    with np.errstate(all="ignore"):
        want = np.asarray(slow(x), dtype=np.float32)
    _assert_same_bits(getattr(libm, name)(x), want, x)
