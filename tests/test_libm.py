"""microinterp.libm against the C library it reproduces (glibc expf / expm1f / tanhf), via ctypes.

Skipped where the C library is not glibc or is a glibc whose float functions are not the fdlibm/optimized-routines
ones emulated here (glibc >= 2.41 may ship correctly rounded CORE-MATH versions of some of them; the gate is
conservative).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import platform

import numpy as np
import pytest

from microinterp import libm


def _glibc():
    if platform.system() != "Linux":
        return None
    libc_version = platform.libc_ver()
    if libc_version[0] != "glibc":
        return None
    major, minor = (int(p) for p in libc_version[1].split(".")[:2])
    if (major, minor) < (2, 28) or (major, minor) >= (2, 41):
        return None
    name = ctypes.util.find_library("m")
    return ctypes.CDLL(name) if name else None


LIBM = _glibc()
pytestmark = pytest.mark.skipif(LIBM is None, reason="needs glibc 2.28 .. 2.40 (the emulated algorithms)")


def _c_values(fn_name: str, x: np.ndarray) -> np.ndarray:
    fn = getattr(LIBM, fn_name)
    fn.restype = ctypes.c_float
    fn.argtypes = [ctypes.c_float]
    return np.array([fn(float(v)) for v in x], dtype=np.float32)


def _inputs(seed: int, n: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    bits = rng.integers(0, 1 << 32, size=n, dtype=np.uint64).astype(np.uint32).view(np.float32)
    ranges = [rng.uniform(lo, hi, size=n).astype(np.float32) for lo, hi in ((-20, 0), (-2, 2), (-110, 100),
                                                                            (-1e-3, 1e-3))]
    x = np.concatenate([bits, *ranges, np.array([0.0, -0.0, 1.0, -1.0, 22.0, -9.0, 16.619047, 88.72, -103.9,
                                                 np.inf, -np.inf], dtype=np.float32)])
    return x[np.isfinite(x) | np.isinf(x)]


def _same(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a.view(np.uint32) == b.view(np.uint32)) | (np.isnan(a) & np.isnan(b))


@pytest.mark.parametrize("name", ["expf", "expm1f", "tanhf"])
def test_matches_c_library(name):
    x = _inputs(sum(map(ord, name)), 40000)
    got = getattr(libm, name)(x)
    want = _c_values(name, x)
    bad = np.flatnonzero(~_same(got, want))
    assert bad.size == 0, f"{bad.size} mismatches, first x={x[bad[0]]!r}: {got[bad[0]]!r} != {want[bad[0]]!r}"


def test_expf_both_variants_on_softmax_range():
    """The FMA and plain variants of glibc expf round to the same float on these inputs (both emulated)."""
    x = np.random.default_rng(3).uniform(-30, 5, size=50000).astype(np.float32)
    want = _c_values("expf", x)
    saved = libm.EXPF_USES_FMA
    try:
        for variant in (True, False):
            libm.EXPF_USES_FMA = variant
            assert np.array_equal(libm.expf(x).view(np.uint32), want.view(np.uint32))
    finally:
        libm.EXPF_USES_FMA = saved
