"""Float32 transcendental functions exactly as TFLM's float kernels compute them.

The wheel's float kernels call the C library (``std::tanh(float)`` -> ``tanhf``, ``std::exp(float)`` ->
``expf``; its ``_runtime.so`` links ``libm.so.6`` dynamically), and glibc's ``tanhf`` is not correctly
rounded: NumPy's float32 ``tanh`` and a float64 ``tanh`` rounded to float32 both differ from it by one ulp on
a large share of inputs. So these helpers call libm itself, element by element (slow, but float models with
these functions are small); without a loadable libm they fall back to float64 evaluation rounded to float32.
"""

from __future__ import annotations

import ctypes
import ctypes.util

import numpy as np


def _libm_function(name: str):
    for candidate in ("libm.so.6", ctypes.util.find_library("m")):
        if not candidate:
            continue
        try:
            fn = getattr(ctypes.CDLL(candidate), name)
        except (OSError, AttributeError):
            continue
        fn.restype = ctypes.c_float
        fn.argtypes = [ctypes.c_float]
        return np.frompyfunc(fn, 1, 1)
    return None


_TANHF = _libm_function("tanhf")
_EXPF = _libm_function("expf")


def tanhf(a) -> np.ndarray:
    """C ``tanhf`` on every element of a float32 array."""
    a = np.asarray(a, dtype=np.float32)
    if _TANHF is None:
        return np.tanh(a.astype(np.float64)).astype(np.float32)
    return np.asarray(_TANHF(a), dtype=np.float32).reshape(a.shape)


def expf(a) -> np.ndarray:
    """C ``expf`` on every element of a float32 array."""
    a = np.asarray(a, dtype=np.float32)
    if _EXPF is None:
        return np.exp(a.astype(np.float64)).astype(np.float32)
    with np.errstate(over="ignore"):
        return np.asarray(_EXPF(a), dtype=np.float32).reshape(a.shape)
