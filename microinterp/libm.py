"""Bit-exact float32 ``expf``, ``expm1f`` and ``tanhf`` of the C library the TFLM wheel calls (glibc on x86-64).

TFLM's float kernels (SOFTMAX, LOGISTIC, TANH) and its int16 look-up tables (``LUTPopulate``) call ``std::exp`` /
``std::tanh`` on floats, i.e. the C library's ``expf`` / ``tanhf``. Those are not correctly rounded, so NumPy's own
``np.exp``/``np.tanh`` (or float64 maths rounded to float32) differ from them in the last bit for some inputs. This
module re-implements the glibc algorithms with vectorized NumPy, operation for operation:

* ``expf`` (glibc >= 2.28, ARM optimized-routines ``e_expf.c``): ``x * 32/ln2 = k + r`` (k rounded to nearest),
  ``exp(x) = 2^(k/32) * (1 + C2 r + C1 r^2 + C0 r^3)`` in double with a 32-entry table of ``2^(i/32)`` bits, then one
  rounding to float. glibc picks an FMA-compiled variant at load time when the CPU has FMA and AVX2 (``ifunc``); the
  fused multiply-adds change the last bit for some inputs, so both variants are implemented (:data:`EXPF_USES_FMA`
  says which one matches this machine). FMAs are emulated exactly with Dekker's two-product (the final addition is
  rounded once from an error-free pair; it could only differ from a true FMA when the exact value lies within
  2^-100 relative of a rounding boundary).
* ``expm1f`` and ``tanhf`` (glibc <= 2.40, fdlibm ``s_expm1f.c``/``s_tanhf.c``): float32 arithmetic throughout;
  transcribed branch by branch, every branch evaluated on the whole array and selected with ``np.where``.

Inputs are float32 arrays (or scalars); outputs are float32 arrays. Verified against glibc 2.36 on every 211th
float32 bit pattern (20 M inputs per function, 0 mismatches, FMA and plain expf) and, in ``tests/test_libm.py``,
on 200 k sampled inputs per function (skipped where the C library is not a glibc with these algorithms: later glibc
releases replace some of them by correctly rounded CORE-MATH versions).
"""

from __future__ import annotations

import sys
from decimal import Decimal, getcontext

import numpy as np

__all__ = ["EXPF_USES_FMA", "expf", "expm1f", "tanhf"]


def _cpu_has_fma_avx2() -> bool:
    """glibc selects ``__expf_fma`` when FMA and AVX2 are usable (x86-64 Linux: read /proc/cpuinfo)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as f:
            for line in f:
                if line.startswith("flags"):
                    flags = set(line.split(":", 1)[1].split())
                    return "fma" in flags and "avx2" in flags
    except OSError:
        pass
    return False


#: True when this machine's glibc uses the FMA variant of expf (and so the emulation does too).
EXPF_USES_FMA: bool = _cpu_has_fma_avx2()

# -- expf ----------------------------------------------------------------------------------------------------------
_N = 32
_INV_LN2_N = float.fromhex("0x1.71547652b82fep+0") * _N
_SHIFT = float.fromhex("0x1.8p+52")
_C0 = float.fromhex("0x1.c6af84b912394p-5") / _N / _N / _N
_C1 = float.fromhex("0x1.ebfce50fac4f3p-3") / _N / _N
_C2 = float.fromhex("0x1.62e42ff0c52d6p-1") / _N


def _exp2_table() -> np.ndarray:
    """``bits(2^(i/32)) - (i << 47)`` for i < 32 (glibc ``__exp2f_data.tab``), from correctly rounded 2^(i/32)."""
    getcontext().prec = 60
    values = np.array([float(Decimal(2) ** (Decimal(i) / _N)) for i in range(_N)], dtype=np.float64)
    return values.view(np.uint64) - (np.arange(_N, dtype=np.uint64) << np.uint64(47))


_EXP2_TAB = _exp2_table()


def _two_prod(a, b):
    """Dekker: ``a * b == p + e`` exactly (no FMA needed; no overflow for our magnitudes)."""
    p = a * b
    ah, al = _split(a)
    bh, bl = _split(b)
    e = ((ah * bh - p) + ah * bl + al * bh) + al * bl
    return p, e


def _split(a):
    c = 134217729.0 * a  # 2^27 + 1
    hi = c - (c - a)
    return hi, a - hi


def _fma(a, b, c):
    """round(a * b + c) from the exact pair of a*b (see the module docstring for the residual caveat)."""
    p, e = _two_prod(np.asarray(a, np.float64), np.asarray(b, np.float64))
    s = p + c
    bb = s - p
    t = (p - (s - bb)) + (c - bb)
    return s + (t + e)


def expf(x) -> np.ndarray:
    """glibc ``expf`` (float32 in, float32 out), bit-exact; see the module docstring."""
    x = np.asarray(x, dtype=np.float32)
    with np.errstate(over="ignore", invalid="ignore", under="ignore"):
        xd = x.astype(np.float64)
        if EXPF_USES_FMA:
            p, e = _two_prod(np.float64(_INV_LN2_N), xd)
            k0 = np.rint(p)
            d = p - k0
            kd = k0 + np.where((np.abs(d) == 0.5) & (e * d > 0), np.sign(d), 0.0)  # round(p + e) to nearest even
            r = (p - kd) + e
            z = _fma(_C0, r, _C1)
            r2 = r * r
            y = _fma(r, _C2, 1.0)
            y = _fma(z, r2, y)
        else:
            z = _INV_LN2_N * xd
            kd = (z + _SHIFT) - _SHIFT
            r = z - kd
            y = _C2 * r + 1.0
            y = (_C0 * r + _C1) * (r * r) + y
        ki = kd.astype(np.int64)
        bits = _EXP2_TAB[ki & (_N - 1)] + (ki << 47).astype(np.uint64)
        s = bits.view(np.float64)
        out = (y * s).astype(np.float32)
        # |x| >= 88 (top 12 bits) or NaN: the special cases of glibc.
        abstop = (x.view(np.uint32) >> 20) & 0x7FF
        out = np.where(abstop >= 0x42B, _expf_special(x, out), out)
    return out.astype(np.float32)


def _expf_special(x, out):
    overflow = x > np.float32(float.fromhex("0x1.62e42ep6"))
    underflow = x < np.float32(float.fromhex("-0x1.9fe368p6"))
    res = np.where(overflow, np.float32(np.inf), np.where(underflow, np.float32(0.0), out))
    return np.where(np.isnan(x) | np.isinf(x), np.where(x == -np.inf, np.float32(0.0), x + x), res)


# -- expm1f / tanhf (fdlibm, float32) ------------------------------------------------------------------------------
_F = np.float32
_LN2_HI = _F(6.9313812256e-01)
_LN2_LO = _F(9.0580006145e-06)
_INVLN2 = _F(1.4426950216e+00)
_Q = [_F(-3.3333335072e-02), _F(1.5873016091e-03), _F(-7.9365076090e-05), _F(4.0082177293e-06),
      _F(-2.0109921195e-07)]
_O_THRESHOLD = _F(8.8721679688e+01)


def _add_exponent(y, k):
    """SET_FLOAT_WORD(y, GET_FLOAT_WORD(y) + (k << 23)): add k to y's binary exponent (int32 wrap)."""
    return (y.view(np.int32) + (k.astype(np.int32) << np.int32(23))).view(np.float32)


def expm1f(x) -> np.ndarray:
    """fdlibm/glibc ``expm1f`` (float32 arithmetic), bit-exact for finite inputs."""
    x = np.asarray(x, dtype=np.float32)
    one, half = _F(1.0), _F(0.5)
    with np.errstate(over="ignore", invalid="ignore", under="ignore", divide="ignore"):
        word = x.view(np.uint32)
        negative = (word & np.uint32(0x80000000)) != 0
        hx = word & np.uint32(0x7FFFFFFF)
        # Argument reduction: x = k ln2 + r, |r| <= 0.5 ln2.
        reduce = hx > 0x3EB17218
        near = hx < 0x3F851592  # |x| < 1.5 ln2: k = +-1
        k_far = (_INVLN2 * x + np.where(negative, -half, half).astype(np.float32)).astype(np.float32)
        k_far = np.trunc(np.clip(k_far, -2.0 ** 31, 2.0 ** 31 - 1)).astype(np.int32)
        t = k_far.astype(np.float32)
        hi = np.where(near, np.where(negative, x + _LN2_HI, x - _LN2_HI), x - t * _LN2_HI).astype(np.float32)
        lo = np.where(near, np.where(negative, -_LN2_LO, _LN2_LO), t * _LN2_LO).astype(np.float32)
        xr = (hi - lo).astype(np.float32)
        c = ((hi - xr) - lo).astype(np.float32)
        k = np.where(reduce, np.where(near, np.where(negative, -1, 1), k_far), 0).astype(np.int32)
        xr = np.where(reduce, xr, x).astype(np.float32)
        c = np.where(reduce, c, _F(0)).astype(np.float32)
        # x is now in the primary range.
        hfx = (half * xr).astype(np.float32)
        hxs = (xr * hfx).astype(np.float32)
        poly = _Q[4]
        for q in reversed(_Q[:4]):
            poly = (q + hxs * poly).astype(np.float32)
        r1 = (one + hxs * poly).astype(np.float32)
        t = (_F(3.0) - r1 * hfx).astype(np.float32)
        e = (hxs * ((r1 - t) / (_F(6.0) - xr * t))).astype(np.float32)
        result_k0 = (xr - (xr * e - hxs)).astype(np.float32)
        e = (xr * (e - c) - c).astype(np.float32)
        e = (e - hxs).astype(np.float32)
        result_km1 = (half * (xr - e) - half).astype(np.float32)
        result_k1 = np.where(xr < _F(-0.25), _F(-2.0) * (e - (xr + half)), one + _F(2.0) * (xr - e)).astype(np.float32)
        result_far = _add_exponent((one - (e - xr)).astype(np.float32), k) - one
        ksafe = np.clip(k, 0, 31)
        t_small = (np.int32(0x3F800000) - (np.int32(0x1000000) >> ksafe.astype(np.int32))).view(np.float32)
        result_small = _add_exponent((t_small - (e - xr)).astype(np.float32), k)
        t_big = ((np.int32(0x7F) - k) << np.int32(23)).astype(np.int32).view(np.float32)
        result_big = _add_exponent(((xr - (e + t_big)) + one).astype(np.float32), k)
        general = np.where((k <= -2) | (k > 56), result_far, np.where(k < 23, result_small, result_big))
        result = np.where(k == 0, result_k0, np.where(k == -1, result_km1, np.where(k == 1, result_k1, general)))
        # Tiny and huge arguments.
        result = np.where(hx < 0x33000000, x, result)
        huge = hx >= 0x4195B844
        result = np.where(huge & negative, _F(-1.0), result)
        result = np.where((hx >= 0x42B17218) & ~negative & (x > _O_THRESHOLD), _F(np.inf), result)
        result = np.where(np.isnan(x), x, result)
    return np.asarray(result, dtype=np.float32)


def tanhf(x) -> np.ndarray:
    """fdlibm/glibc ``tanhf``: ``1 - 2/(expm1f(2|x|) + 2)`` for |x| >= 1, ``-t/(t + 2)`` with
    ``t = expm1f(-2|x|)`` below; +-1 from |x| >= 22; ``x (1 + x)`` below 2^-55; sign restored at the end."""
    x = np.asarray(x, dtype=np.float32)
    one, two = _F(1.0), _F(2.0)
    with np.errstate(over="ignore", invalid="ignore", under="ignore", divide="ignore"):
        word = x.view(np.uint32)
        negative = (word & np.uint32(0x80000000)) != 0
        ix = word & np.uint32(0x7FFFFFFF)
        ax = np.abs(x)
        t_big = expm1f((two * ax).astype(np.float32))
        z_big = (one - two / (t_big + two)).astype(np.float32)
        t_small = expm1f((-two * ax).astype(np.float32))
        z_small = (-t_small / (t_small + two)).astype(np.float32)
        z = np.where(ix >= 0x3F800000, z_big, z_small)
        z = np.where(ix >= 0x41B00000, one, z)  # |x| >= 22 (one - tiny rounds to one)
        z = np.where(negative, -z, z).astype(np.float32)
        z = np.where(ix < 0x24000000, (x * (one + x)).astype(np.float32), z)
        z = np.where(ix == 0, x, z)
        z = np.where(np.isnan(x), x, z)
    return np.asarray(z, dtype=np.float32)
