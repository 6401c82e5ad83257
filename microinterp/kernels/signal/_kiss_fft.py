"""KISS FFT v1.3.0 as TFLM builds it for the signal library (``signal/src/kiss_fft_wrappers``: ``kiss_fft.c`` and
``tools/kiss_fftr.c`` compiled with ``FIXED_POINT=16``, ``FIXED_POINT=32`` or in float), reproduced operation by
operation so that every rounding and every wrap-around is the C code's.

Scalar arithmetic of the fixed-point builds (``_kiss_fft_guts.h``), ``B`` = 15 (int16) or 31 (int32):

* ``smul(a, b)`` = the product in the double-width type; ``sround(x) = (scalar)((x + 2^(B-1)) >> B)``;
* ``C_MUL``: ``sround(a.r b.r - a.i b.i)``, ``sround(a.r b.i + a.i b.r)``; ``S_MUL(a, b) = sround(a b)``;
* ``C_FIXDIV(c, k)``: each part ``sround(x * (SAMP_MAX / k))`` (integer division), applied at the top of every
  butterfly; ``HALF_OF(x) = x >> 1``; additions are in ``int`` and stored back to the scalar type (wrapping);
* twiddles ``floor(0.5 + SAMP_MAX * cos/sin(phase))`` in double, ``phase = -2 pi i / nfft``.

The float build uses float32 for every operation (no C_FIXDIV; ``HALF_OF(x) = x * 0.5f``; twiddles ``(float)
cos(phase)``). Factorisation (``kf_factor``): powers of 4 first, then 2, then odd numbers, the recursion
(``kf_work``) and radix-2/3/4/5/generic butterflies as in the C source. :func:`rfft` is ``kiss_fftr``: an
``nfft/2``-point complex FFT of the samples taken as (real, imaginary) pairs, then the split into the real spectrum
with the "super twiddles" ``exp(-i pi ((k + 1) / (nfft/2) + 1/2))``.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np


class _Fixed:
    """The fixed-point scalar type of one build (int16 or int32)."""

    def __init__(self, bits: int):
        self.frac = bits - 1
        self.max = (1 << (bits - 1)) - 1
        self.bits = bits
        self.prod_bits = 2 * bits

    def wrap(self, v: int) -> int:
        m = 1 << self.bits
        v &= m - 1
        return v - m if v >> (self.bits - 1) else v

    def wrap_prod(self, v: int) -> int:
        m = 1 << self.prod_bits
        v &= m - 1
        return v - m if v >> (self.prod_bits - 1) else v

    def sround(self, x: int) -> int:
        return self.wrap(self.wrap_prod(x + (1 << (self.frac - 1))) >> self.frac)

    def s_mul(self, a: int, b: int) -> int:
        return self.sround(self.wrap_prod(a * b))

    def c_mul(self, ar, ai, br, bi):
        return (self.sround(self.wrap_prod(self.wrap_prod(ar * br) - self.wrap_prod(ai * bi))),
                self.sround(self.wrap_prod(self.wrap_prod(ar * bi) + self.wrap_prod(ai * br))))

    def fixdiv(self, r, i, k):
        d = self.max // k
        return self.sround(self.wrap_prod(r * d)), self.sround(self.wrap_prod(i * d))

    def add(self, a, b):
        return self.wrap(a + b)

    def half(self, x):
        return x >> 1

    def twiddle(self, phase: float) -> tuple[int, int]:
        return (self.wrap(math.floor(0.5 + self.max * math.cos(phase))),
                self.wrap(math.floor(0.5 + self.max * math.sin(phase))))


class _Float:
    """The float build: every operation rounded to float32, no fixed-point division."""

    f = np.float32

    def wrap(self, v):
        return np.float32(v)

    def s_mul(self, a, b):
        return np.float32(a * b)

    def c_mul(self, ar, ai, br, bi):
        return np.float32(np.float32(ar * br) - np.float32(ai * bi)), np.float32(np.float32(ar * bi) +
                                                                                  np.float32(ai * br))

    def fixdiv(self, r, i, k):
        return r, i

    def add(self, a, b):
        return np.float32(a + b)

    def half(self, x):
        return np.float32(x * np.float32(0.5))

    def twiddle(self, phase: float):
        return np.float32(math.cos(phase)), np.float32(math.sin(phase))

    def sround(self, x):
        return np.float32(x)


ARITH = {"INT16": _Fixed(16), "INT32": _Fixed(32), "FLOAT32": _Float()}


def factor(n: int) -> list[int]:
    """kf_factor: [p1, m1, p2, m2, ...]: fours first, then twos, then odd factors (the rest once past sqrt(n))."""
    out, p = [], 4
    floor_sqrt = math.floor(math.sqrt(n))
    while True:
        while n % p:
            p = 2 if p == 4 else 3 if p == 2 else p + 2
            if p > floor_sqrt:
                p = n
        n //= p
        out += [p, n]
        if n <= 1:
            return out


class KissFFT:
    """A forward complex FFT of ``nfft`` points in one build's arithmetic (``kiss_fft_alloc`` + ``kiss_fft``)."""

    def __init__(self, nfft: int, type_name: str, inverse: bool = False):
        self.n = nfft
        self.a = ARITH[type_name]
        self.inverse = inverse
        sign = 1 if inverse else -1
        self.tw = [self.a.twiddle(sign * 2 * math.pi * i / nfft) for i in range(nfft)]
        self.factors = factor(nfft)

    def __call__(self, re: list, im: list) -> tuple[list, list]:
        out_r, out_i = [0] * self.n, [0] * self.n
        self._work(out_r, out_i, 0, re, im, 0, 1, 0)
        return out_r, out_i

    def _work(self, fr, fi, fo, xr, xi, f, fstride, pos):
        p, m = self.factors[pos], self.factors[pos + 1]
        if m == 1:
            for j in range(p):
                fr[fo + j], fi[fo + j] = xr[f + j * fstride], xi[f + j * fstride]
        else:
            for j in range(p):
                self._work(fr, fi, fo + j * m, xr, xi, f + j * fstride, fstride * p, pos + 2)
        {2: self._bfly2, 3: self._bfly3, 4: self._bfly4, 5: self._bfly5}.get(p, self._generic)(fr, fi, fo, fstride,
                                                                                               m, p)

    def _bfly2(self, fr, fi, fo, fstride, m, p):
        a, tw = self.a, self.tw
        for k in range(m):
            i0, i1 = fo + k, fo + k + m
            r0, q0 = a.fixdiv(fr[i0], fi[i0], 2)
            r1, q1 = a.fixdiv(fr[i1], fi[i1], 2)
            tr, ti = a.c_mul(r1, q1, *tw[k * fstride])
            fr[i1], fi[i1] = a.add(r0, -tr), a.add(q0, -ti)
            fr[i0], fi[i0] = a.add(r0, tr), a.add(q0, ti)

    def _bfly4(self, fr, fi, fo, fstride, m, p):
        a, tw = self.a, self.tw
        for k in range(m):
            idx = [fo + k + j * m for j in range(4)]
            v = [a.fixdiv(fr[i], fi[i], 4) for i in idx]
            s0 = a.c_mul(*v[1], *tw[k * fstride])
            s1 = a.c_mul(*v[2], *tw[2 * k * fstride])
            s2 = a.c_mul(*v[3], *tw[3 * k * fstride])
            s5 = (a.add(v[0][0], -s1[0]), a.add(v[0][1], -s1[1]))
            f0 = (a.add(v[0][0], s1[0]), a.add(v[0][1], s1[1]))
            s3 = (a.add(s0[0], s2[0]), a.add(s0[1], s2[1]))
            s4 = (a.add(s0[0], -s2[0]), a.add(s0[1], -s2[1]))
            fr[idx[2]], fi[idx[2]] = a.add(f0[0], -s3[0]), a.add(f0[1], -s3[1])
            fr[idx[0]], fi[idx[0]] = a.add(f0[0], s3[0]), a.add(f0[1], s3[1])
            if self.inverse:
                fr[idx[1]], fi[idx[1]] = a.add(s5[0], -s4[1]), a.add(s5[1], s4[0])
                fr[idx[3]], fi[idx[3]] = a.add(s5[0], s4[1]), a.add(s5[1], -s4[0])
            else:
                fr[idx[1]], fi[idx[1]] = a.add(s5[0], s4[1]), a.add(s5[1], -s4[0])
                fr[idx[3]], fi[idx[3]] = a.add(s5[0], -s4[1]), a.add(s5[1], s4[0])

    def _bfly3(self, fr, fi, fo, fstride, m, p):
        a, tw = self.a, self.tw
        epi3 = tw[fstride * m]
        for k in range(m):
            i0, i1, i2 = fo + k, fo + k + m, fo + k + 2 * m
            v0 = a.fixdiv(fr[i0], fi[i0], 3)
            v1 = a.fixdiv(fr[i1], fi[i1], 3)
            v2 = a.fixdiv(fr[i2], fi[i2], 3)
            s1 = a.c_mul(*v1, *tw[k * fstride])
            s2 = a.c_mul(*v2, *tw[2 * k * fstride])
            s3 = (a.add(s1[0], s2[0]), a.add(s1[1], s2[1]))
            s0 = (a.add(s1[0], -s2[0]), a.add(s1[1], -s2[1]))
            m_r, m_i = a.add(v0[0], -a.half(s3[0])), a.add(v0[1], -a.half(s3[1]))
            s0 = (a.s_mul(s0[0], epi3[1]), a.s_mul(s0[1], epi3[1]))
            fr[i0], fi[i0] = a.add(v0[0], s3[0]), a.add(v0[1], s3[1])
            fr[i2], fi[i2] = a.add(m_r, s0[1]), a.add(m_i, -s0[0])
            fr[i1], fi[i1] = a.add(m_r, -s0[1]), a.add(m_i, s0[0])

    def _bfly5(self, fr, fi, fo, fstride, m, p):
        a, tw = self.a, self.tw
        ya, yb = tw[fstride * m], tw[fstride * 2 * m]
        sm = a.s_mul
        for u in range(m):
            idx = [fo + u + j * m for j in range(5)]
            v = [a.fixdiv(fr[i], fi[i], 5) for i in idx]
            s0 = v[0]
            s1 = a.c_mul(*v[1], *tw[u * fstride])
            s2 = a.c_mul(*v[2], *tw[2 * u * fstride])
            s3 = a.c_mul(*v[3], *tw[3 * u * fstride])
            s4 = a.c_mul(*v[4], *tw[4 * u * fstride])
            s7 = (a.add(s1[0], s4[0]), a.add(s1[1], s4[1]))
            s10 = (a.add(s1[0], -s4[0]), a.add(s1[1], -s4[1]))
            s8 = (a.add(s2[0], s3[0]), a.add(s2[1], s3[1]))
            s9 = (a.add(s2[0], -s3[0]), a.add(s2[1], -s3[1]))
            fr[idx[0]] = a.add(s0[0], a.add(s7[0], s8[0]))
            fi[idx[0]] = a.add(s0[1], a.add(s7[1], s8[1]))
            s5 = (a.add(a.add(s0[0], sm(s7[0], ya[0])), sm(s8[0], yb[0])),
                  a.add(a.add(s0[1], sm(s7[1], ya[0])), sm(s8[1], yb[0])))
            s6 = (a.wrap(sm(s10[1], ya[1]) + sm(s9[1], yb[1])), a.wrap(-sm(s10[0], ya[1]) - sm(s9[0], yb[1])))
            fr[idx[1]], fi[idx[1]] = a.add(s5[0], -s6[0]), a.add(s5[1], -s6[1])
            fr[idx[4]], fi[idx[4]] = a.add(s5[0], s6[0]), a.add(s5[1], s6[1])
            s11 = (a.add(a.add(s0[0], sm(s7[0], yb[0])), sm(s8[0], ya[0])),
                   a.add(a.add(s0[1], sm(s7[1], yb[0])), sm(s8[1], ya[0])))
            s12 = (a.wrap(-sm(s10[1], yb[1]) + sm(s9[1], ya[1])), a.wrap(sm(s10[0], yb[1]) - sm(s9[0], ya[1])))
            fr[idx[2]], fi[idx[2]] = a.add(s11[0], s12[0]), a.add(s11[1], s12[1])
            fr[idx[3]], fi[idx[3]] = a.add(s11[0], -s12[0]), a.add(s11[1], -s12[1])

    def _generic(self, fr, fi, fo, fstride, m, p):
        a, tw, n = self.a, self.tw, self.n
        for u in range(m):
            scratch = [a.fixdiv(fr[fo + u + q * m], fi[fo + u + q * m], p) for q in range(p)]
            for q1 in range(p):
                k = u + q1 * m
                acc_r, acc_i = scratch[0]
                twidx = 0
                for q in range(1, p):
                    twidx += fstride * k
                    if twidx >= n:
                        twidx -= n
                    tr, ti = a.c_mul(*scratch[q], *tw[twidx])
                    acc_r, acc_i = a.add(acc_r, tr), a.add(acc_i, ti)
                fr[fo + k], fi[fo + k] = acc_r, acc_i


@lru_cache(maxsize=16)
def real_fft_plan(nfft: int, type_name: str, inverse: bool = False) -> tuple[KissFFT, list]:
    """``kiss_fftr_alloc``: the half-length complex FFT and the super twiddles (phase sign flipped for inverse)."""
    sub = KissFFT(nfft // 2, type_name, inverse)
    half = nfft // 2
    sign = 1 if inverse else -1
    super_tw = [sub.a.twiddle(sign * math.pi * ((i + 1) / half + 0.5)) for i in range(half // 2)]
    return sub, super_tw


def rfft(samples: np.ndarray, nfft: int, type_name: str) -> np.ndarray:
    """kiss_fftr of ``nfft`` real samples: ``nfft/2 + 1`` complex bins as an interleaved (re, im) array."""
    sub, super_tw = real_fft_plan(nfft, type_name)
    a = sub.a
    vals = samples.tolist()
    if type_name == "FLOAT32":
        vals = [np.float32(v) for v in vals]
    tr, ti = sub(vals[0::2], vals[1::2])
    n = sub.n
    out_r, out_i = [0] * (n + 1), [0] * (n + 1)
    dc_r, dc_i = a.fixdiv(tr[0], ti[0], 2)
    out_r[0], out_r[n] = a.add(dc_r, dc_i), a.add(dc_r, -dc_i)
    out_i[0] = out_i[n] = a.wrap(0)
    for k in range(1, n // 2 + 1):
        fpk = a.fixdiv(tr[k], ti[k], 2)
        fpnk = a.fixdiv(tr[n - k], a.wrap(-ti[n - k]), 2)
        f1k = (a.add(fpk[0], fpnk[0]), a.add(fpk[1], fpnk[1]))
        f2k = (a.add(fpk[0], -fpnk[0]), a.add(fpk[1], -fpnk[1]))
        tw = a.c_mul(*f2k, *super_tw[k - 1])
        out_r[k], out_i[k] = a.wrap(a.half(f1k[0] + tw[0])), a.wrap(a.half(f1k[1] + tw[1]))
        out_r[n - k], out_i[n - k] = a.wrap(a.half(f1k[0] - tw[0])), a.wrap(a.half(tw[1] - f1k[1]))
    inter = np.empty(2 * (n + 1), dtype=samples.dtype)
    inter[0::2], inter[1::2] = out_r, out_i
    return inter


def irfft(bins: np.ndarray, nfft: int, type_name: str) -> np.ndarray:
    """kiss_fftri: ``nfft/2 + 1`` interleaved complex bins back to ``nfft`` real samples (unnormalised)."""
    sub, super_tw = real_fft_plan(nfft, type_name, True)
    a = sub.a
    vals = bins.tolist()
    if type_name == "FLOAT32":
        vals = [np.float32(v) for v in vals]
    fr, fi = vals[0::2], vals[1::2]
    n = sub.n
    tr, ti = [a.wrap(0)] * n, [a.wrap(0)] * n
    tr[0], ti[0] = a.fixdiv(a.add(fr[0], fr[n]), a.add(fr[0], -fr[n]), 2)
    for k in range(1, n // 2 + 1):
        fk = a.fixdiv(fr[k], fi[k], 2)
        fnkc = a.fixdiv(fr[n - k], a.wrap(-fi[n - k]), 2)
        fek = (a.add(fk[0], fnkc[0]), a.add(fk[1], fnkc[1]))
        tmp = (a.add(fk[0], -fnkc[0]), a.add(fk[1], -fnkc[1]))
        fok = a.c_mul(*tmp, *super_tw[k - 1])
        tr[k], ti[k] = a.add(fek[0], fok[0]), a.add(fek[1], fok[1])
        tr[n - k], ti[n - k] = a.add(fek[0], -fok[0]), a.add(fek[1], -fok[1])
        ti[n - k] = a.wrap(-ti[n - k])
    out_r, out_i = sub(tr, ti)
    samples = np.empty(2 * n, dtype=bins.dtype)
    samples[0::2], samples[1::2] = out_r, out_i
    return samples
