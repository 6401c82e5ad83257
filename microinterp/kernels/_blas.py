"""``matmul`` for the integer kernels: NumPy's float64 GEMM, run with OpenBLAS limited to one thread.

Why: the convolution kernels compute integer dot products as float64 GEMMs (exact while partial sums stay below
2^53). The matrices of MCU-sized models are small; a multi-threaded OpenBLAS spends more time synchronising its
threads than computing, and on a loaded machine each GEMM can wait a scheduler tick for a descheduled worker (measured
on 2 cores: person_detect's convolutions 2 ms single-threaded vs 15-90 ms threaded). One thread is also what TFLM
runs with, which keeps timings comparable.

How: on Linux the OpenBLAS library NumPy loaded is found in ``/proc/self/maps`` and its ``*_get/set_num_threads*``
entry points are called through ctypes around each GEMM (the previous setting is restored). Anywhere this is not
possible the plain ``np.matmul`` runs. Not thread-safe with respect to other code changing the BLAS thread count
concurrently (the count is process-global); results are exact either way.
"""

from __future__ import annotations

import ctypes
import threading

import numpy as np

_GET_NAMES = ("scipy_openblas_get_num_threads64_", "scipy_openblas_get_num_threads", "openblas_get_num_threads64_",
              "openblas_get_num_threads")
_lock = threading.Lock()
_api: tuple | None = None
_searched = False


def _find_openblas() -> tuple | None:
    """(get_num_threads, set_num_threads) of the OpenBLAS NumPy uses, or None."""
    try:
        with open("/proc/self/maps") as f:
            paths = sorted({line.split()[-1] for line in f if "openblas" in line.split()[-1]})
    except OSError:
        return None
    for path in paths:
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for get_name in _GET_NAMES:
            set_name = get_name.replace("_get_", "_set_")
            if hasattr(lib, get_name) and hasattr(lib, set_name):
                get, put = getattr(lib, get_name), getattr(lib, set_name)
                get.restype, get.argtypes = ctypes.c_int, []
                put.restype, put.argtypes = None, [ctypes.c_int]
                return get, put
    return None


def matmul(a: np.ndarray, b: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """``np.matmul(a, b, out=out)`` with OpenBLAS on one thread (when it can be found)."""
    global _api, _searched
    if not _searched:
        with _lock:
            if not _searched:
                np.matmul(np.ones((2, 2)), np.ones((2, 2)))     # make sure the BLAS library is loaded
                _api = _find_openblas()
                _searched = True
    if _api is None:
        return np.matmul(a, b, out=out)
    get, put = _api
    before = get()
    if before == 1:
        return np.matmul(a, b, out=out)
    put(1)
    try:
        return np.matmul(a, b, out=out)
    finally:
        put(before)
