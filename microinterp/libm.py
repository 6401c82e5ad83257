"""The C library's float32 ``expf`` and ``tanhf``, called for real and vectorized: what TFLM's float maths computes.

TFLM's float kernels (SOFTMAX, LOGISTIC, TANH, SVDF, UNIDIRECTIONAL_SEQUENCE_LSTM) and its int16 look-up tables
(``LUTPopulate``) call ``std::exp`` / ``std::tanh`` on floats, i.e. the C library's ``expf`` / ``tanhf``. Those are
not correctly rounded, so NumPy's own ``np.exp``/``np.tanh`` (or float64 maths rounded to float32) differ from them
in the last bit for some inputs. The wheel's ``_runtime.so`` links ``libm.so.6`` dynamically (``expf@GLIBC_2.27``,
``tanhf@GLIBC_2.2.5``), so calling the same functions of the same libm is exact by construction, on any glibc
version and whichever variant (FMA or not) glibc selects for the CPU.

Why this approach and not a NumPy re-implementation of glibc's algorithms (the project had one): a transcription is
only right for the glibc releases and CPU variants it copies (glibc 2.41+ replaces some float functions by
correctly rounded CORE-MATH versions; the FMA variant of ``expf`` rounds differently from the plain one) and it is
~100 lines per function to keep right. Calling libm element by element through ctypes is exact but slow
(~260 ns per element), so the functions are made into real NumPy ufuncs instead:

* NumPy's C API exports ``PyUFunc_f_f``, the generic inner loop that calls a ``float f(float)`` C function on every
  element, and ``PyUFunc_FromFuncAndData``, which builds a ufunc from such loops. Both are reached through the
  ``_UFUNC_API`` capsule (fixed slots 1 and 6 of NumPy's stable C-API table) and called with ctypes; the ufunc's
  data pointer is libm's own ``expf``/``tanhf``. The loop runs in C (a few ns per element, faster than the old
  NumPy transcription) and passes the float32 bits straight through (no conversion via Python floats, which would
  quiet signalling NaNs).
* Fallback where that is not available (no CPython C API, an unexpected NumPy): ``np.frompyfunc`` over the ctypes
  functions -- the same C results, slower. Without a loadable libm at all: float64 NumPy rounded to float32 (not
  bit-exact; the TFLM wheel itself only exists for Linux/glibc).

:data:`BACKEND` says which of the three is in use. Floating-point exception flags raised by libm (overflow of
``expf``) are ignored, as TFLM ignores them. ``tests/test_libm.py`` checks the ufuncs against scalar ctypes calls.
"""

from __future__ import annotations

import ctypes
import ctypes.util

import numpy as np

__all__ = ["BACKEND", "NAMES", "ceilf", "cosf", "expf", "expm1f", "floorf", "into", "logf", "roundf", "sinf", "sqrtf",
           "tanhf"]

_NPY_FLOAT = 11             # NPY_FLOAT type number (stable)
_PYUFUNC_NONE = -1          # identity: PyUFunc_None
_SLOT_FROM_FUNC_AND_DATA = 1
_SLOT_F_F = 6


def _load_libm():
    for candidate in ("libm.so.6", ctypes.util.find_library("m")):
        if not candidate:
            continue
        try:
            return ctypes.CDLL(candidate)
        except OSError:
            continue
    return None


def _c_function(lib, name: str):
    """``float name(float)`` of ``lib`` as a ctypes function (for scalar calls and the slow fallback)."""
    fn = getattr(lib, name)
    fn.restype = ctypes.c_float
    fn.argtypes = [ctypes.c_float]
    return fn


class _UfuncFactory:
    """Builds NumPy ufuncs whose inner loop (``PyUFunc_f_f``) calls a C ``float f(float)`` directly.

    NumPy may keep pointers to the loop, data, type and name arrays instead of copying them, so this object holds
    them for the life of the process (it is kept in a module global).
    """

    def __init__(self):
        try:
            from numpy._core import _multiarray_umath
        except ImportError:     # NumPy 1.x
            from numpy.core import _multiarray_umath

        get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
        get_pointer.restype = ctypes.c_void_p
        get_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
        table = ctypes.cast(get_pointer(_multiarray_umath._UFUNC_API, None), ctypes.POINTER(ctypes.c_void_p))
        self._from_func_and_data = ctypes.PYFUNCTYPE(
            ctypes.py_object, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int, ctypes.c_int,
            ctypes.c_int, ctypes.c_int, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_int,
        )(table[_SLOT_FROM_FUNC_AND_DATA])
        self._loop_f_f = table[_SLOT_F_F]
        self._keep: list = []

    def make(self, lib, name: str) -> np.ufunc:
        loops = (ctypes.c_void_p * 1)(self._loop_f_f)
        data = (ctypes.c_void_p * 1)(ctypes.cast(getattr(lib, name), ctypes.c_void_p).value)
        types = ctypes.create_string_buffer(bytes([_NPY_FLOAT, _NPY_FLOAT]), 2)
        cname = ctypes.create_string_buffer(name.encode())
        doc = ctypes.create_string_buffer(f"C library {name} (float32 -> float32)".encode())
        self._keep.append((loops, data, types, cname, doc))
        ufunc = self._from_func_and_data(ctypes.addressof(loops), ctypes.addressof(data), types, 1, 1, 1,
                                         _PYUFUNC_NONE, cname, doc, 0)
        if not isinstance(ufunc, np.ufunc):
            raise TypeError(f"PyUFunc_FromFuncAndData returned {type(ufunc)}")
        return ufunc


#: The C ``float f(float)`` functions exported here: what TFLM's float kernels call (``std::exp`` on a float is
#: ``expf``, and so on). sqrtf, floorf and ceilf are correctly rounded by IEEE 754, but going through libm keeps
#: one rule for all of them.
NAMES = ("expf", "tanhf", "logf", "sinf", "cosf", "expm1f", "sqrtf", "roundf", "floorf", "ceilf")

_NUMPY_FALLBACK = {"expf": np.exp, "tanhf": np.tanh, "logf": np.log, "sinf": np.sin, "cosf": np.cos,
                   "expm1f": np.expm1, "sqrtf": np.sqrt, "floorf": np.floor, "ceilf": np.ceil,
                   "roundf": lambda a: np.copysign(np.floor(np.abs(a) + 0.5), a)}


def _build():
    """(backend name, {name: float32 array -> float32 array}, what must stay alive)."""
    lib = _load_libm()
    if lib is None:
        return ("numpy-float64 (not bit-exact)",
                {n: (lambda a, f=f: f(a.astype(np.float64)).astype(np.float32)) for n, f in _NUMPY_FALLBACK.items()},
                None)
    try:
        factory = _UfuncFactory()
        ufuncs = {n: factory.make(lib, n) for n in NAMES}
        probe = ufuncs["expf"](np.array([1.0], np.float32))[0] == _c_function(lib, "expf")(1.0)
        if not probe:
            raise RuntimeError("libm ufunc disagrees with the scalar call")
        return ("libm-ufunc", ufuncs, factory)
    except (AttributeError, ImportError, OSError, RuntimeError, TypeError, ValueError, ctypes.ArgumentError):
        # no CPython C API / unexpected NumPy internals: call libm element by element
        slow = {n: np.frompyfunc(_c_function(lib, n), 1, 1) for n in NAMES}
        return ("libm-ctypes",
                {n: (lambda a, f=f: np.asarray(f(a), dtype=np.float32).reshape(a.shape)) for n, f in slow.items()},
                None)


#: "libm-ufunc" (C loop over libm), "libm-ctypes" (libm per element, slow) or "numpy-float64 (not bit-exact)".
BACKEND, _FUNCS, _KEEP_ALIVE = _build()


def _call(name: str, x) -> np.ndarray:
    x = np.asarray(x, dtype=np.float32)
    with np.errstate(all="ignore"):
        return np.asarray(_FUNCS[name](x), dtype=np.float32)


def expf(x) -> np.ndarray:
    """C ``expf`` of every element (float32 in -- other inputs are converted first --, float32 array out)."""
    return _call("expf", x)


def tanhf(x) -> np.ndarray:
    """C ``tanhf`` of every element."""
    return _call("tanhf", x)


def logf(x) -> np.ndarray:
    """C ``logf`` of every element."""
    return _call("logf", x)


def sinf(x) -> np.ndarray:
    """C ``sinf`` of every element."""
    return _call("sinf", x)


def cosf(x) -> np.ndarray:
    """C ``cosf`` of every element."""
    return _call("cosf", x)


def expm1f(x) -> np.ndarray:
    """C ``expm1f`` of every element."""
    return _call("expm1f", x)


def sqrtf(x) -> np.ndarray:
    """C ``sqrtf`` of every element (correctly rounded)."""
    return _call("sqrtf", x)


def roundf(x) -> np.ndarray:
    """C ``roundf`` of every element: halves away from zero (TFLM's ``TfLiteRound`` on floats)."""
    return _call("roundf", x)


def floorf(x) -> np.ndarray:
    """C ``floorf`` of every element."""
    return _call("floorf", x)


def ceilf(x) -> np.ndarray:
    """C ``ceilf`` of every element."""
    return _call("ceilf", x)


def into(name: str):
    """``f(x, out)``: the C function ``name`` of every element of the float32 array ``x`` written into the float32
    array ``out`` (the real ufunc itself where :data:`BACKEND` is ``libm-ufunc``, else a copy of the result),
    for kernels bound to fixed views; the caller ignores float errors (the runtime's errstate)."""
    fn = _FUNCS[name]
    if isinstance(fn, np.ufunc):
        return fn               # a ufunc takes its output as the second positional argument: no wrapper call

    def copy(x, out):
        out[...] = fn(np.asarray(x, np.float32))
    return copy
