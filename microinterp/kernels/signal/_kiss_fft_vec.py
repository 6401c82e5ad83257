"""KISS FFT (:mod:`._kiss_fft`) vectorized: every butterfly of a stage, of every frame, at once -- the same operations
on the same values, so the results are the scalar code's to the bit (``tests/kernels/signal/test_kiss_fft_vec.py``
compares them on random and extreme inputs for every supported size and build).

``kf_work`` recurses: a sub-FFT of ``p * m`` points first computes its ``p`` interleaved sub-FFTs of ``m`` points,
then runs one radix-``p`` butterfly for each ``k < m``. Flattened: the leaves are a fixed permutation of the input,
and the stage of factor ``p`` (deepest first) works on ``n / (p m)`` independent groups laid out ``[group, p, m]``,
with twiddles ``tw[j k fstride]`` (``fstride = n / (p m)``). Fixed-point values are held in int64 arrays: a
product of two scalars is exact there, and the ``wrap`` / ``sround`` of :class:`._kiss_fft._Fixed` become masks
and shifts; the float build is float32 arrays, each operation rounded as the scalar ``np.float32`` one.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from ._kiss_fft import KissFFT


class _VFixed:
    """:class:`._kiss_fft._Fixed` on int64 arrays."""

    def __init__(self, bits: int):
        self.bits, self.frac = bits, bits - 1
        self.max = (1 << (bits - 1)) - 1
        self.half_range, self.mask = 1 << (bits - 1), (1 << bits) - 1
        self.prod32 = bits == 16            # the int16 build's products are int32; the int32 build's int64 (native)
        self.round = 1 << (self.frac - 1)

    def wrap(self, v):
        return ((v + self.half_range) & self.mask) - self.half_range

    def wrap_prod(self, v):
        return ((v + (1 << 31)) & 0xFFFFFFFF) - (1 << 31) if self.prod32 else v

    def sround(self, x):
        return self.wrap(self.wrap_prod(x + self.round) >> self.frac)

    def s_mul(self, a, b):
        return self.sround(self.wrap_prod(a * b))

    def c_mul(self, ar, ai, br, bi):
        wp = self.wrap_prod
        return (self.sround(wp(wp(ar * br) - wp(ai * bi))), self.sround(wp(wp(ar * bi) + wp(ai * br))))

    def fixdiv(self, r, i, k):
        d = self.max // k
        return self.sround(self.wrap_prod(r * d)), self.sround(self.wrap_prod(i * d))

    def add(self, a, b):
        return self.wrap(a + b)

    @staticmethod
    def half(x):
        return x >> 1


class _VFloat:
    """:class:`._kiss_fft._Float` on float32 arrays (every operation rounded to float32)."""

    def wrap(self, v):
        return v

    def sround(self, x):
        return x

    def s_mul(self, a, b):
        return a * b

    def c_mul(self, ar, ai, br, bi):
        return ar * br - ai * bi, ar * bi + ai * br

    def fixdiv(self, r, i, k):
        return r, i

    def add(self, a, b):
        return a + b

    @staticmethod
    def half(x):
        return x * np.float32(0.5)


VARITH = {"INT16": _VFixed(16), "INT32": _VFixed(32), "FLOAT32": _VFloat()}


def _values(type_name: str, v):
    return np.asarray(v, np.float32 if type_name == "FLOAT32" else np.int64)


class VectorKissFFT:
    """``kiss_fft`` of ``nfft`` points on a batch of frames ``[F, nfft]`` (real and imaginary parts)."""

    def __init__(self, nfft: int, type_name: str, inverse: bool = False):
        scalar = KissFFT(nfft, type_name, inverse)
        self.n, self.inverse, self.type_name = nfft, inverse, type_name
        self.a = VARITH[type_name]
        self.tw_r = _values(type_name, [t[0] for t in scalar.tw])
        self.tw_i = _values(type_name, [t[1] for t in scalar.tw])
        factors = scalar.factors
        self.perm = np.empty(nfft, np.intp)
        self._leaves(factors, 0, 0, 1, 0)
        self.stages = []
        fstride = 1
        for pos in range(0, len(factors), 2):
            p, m = factors[pos], factors[pos + 1]
            k = np.arange(m)
            tws = [(self.tw_r[(j * k * fstride) % nfft], self.tw_i[(j * k * fstride) % nfft]) for j in range(p)]
            self.stages.append((p, m, fstride, tws))
            fstride *= p
        self.stages.reverse()           # deepest first, as the recursion finishes them

    def _leaves(self, factors, fo: int, f: int, fstride: int, pos: int) -> None:
        p, m = factors[pos], factors[pos + 1]
        for j in range(p):
            if m == 1:
                self.perm[fo + j] = f + j * fstride
            else:
                self._leaves(factors, fo + j * m, f + j * fstride, fstride * p, pos + 2)

    def __call__(self, zr: np.ndarray, zi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        frames = zr.shape[0]
        fr, fi = zr[:, self.perm], zi[:, self.perm]
        for p, m, groups, tws in self.stages:
            shape = (frames, groups, p, m)
            xr, xi = fr.reshape(shape), fi.reshape(shape)
            outs = {2: self._bfly2, 3: self._bfly3, 4: self._bfly4, 5: self._bfly5}[p](xr, xi, tws, m, groups)
            fr = np.stack([o[0] for o in outs], axis=2).reshape(frames, self.n)
            fi = np.stack([o[1] for o in outs], axis=2).reshape(frames, self.n)
        return fr, fi

    def _bfly2(self, xr, xi, tws, m, fstride):
        a = self.a
        r0, q0 = a.fixdiv(xr[:, :, 0], xi[:, :, 0], 2)
        r1, q1 = a.fixdiv(xr[:, :, 1], xi[:, :, 1], 2)
        tr, ti = a.c_mul(r1, q1, *tws[1])
        return [(a.add(r0, tr), a.add(q0, ti)), (a.add(r0, -tr), a.add(q0, -ti))]

    def _bfly4(self, xr, xi, tws, m, fstride):
        a = self.a
        v = [a.fixdiv(xr[:, :, j], xi[:, :, j], 4) for j in range(4)]
        s0 = a.c_mul(*v[1], *tws[1])
        s1 = a.c_mul(*v[2], *tws[2])
        s2 = a.c_mul(*v[3], *tws[3])
        s5 = (a.add(v[0][0], -s1[0]), a.add(v[0][1], -s1[1]))
        f0 = (a.add(v[0][0], s1[0]), a.add(v[0][1], s1[1]))
        s3 = (a.add(s0[0], s2[0]), a.add(s0[1], s2[1]))
        s4 = (a.add(s0[0], -s2[0]), a.add(s0[1], -s2[1]))
        out2 = (a.add(f0[0], -s3[0]), a.add(f0[1], -s3[1]))
        out0 = (a.add(f0[0], s3[0]), a.add(f0[1], s3[1]))
        if self.inverse:
            out1 = (a.add(s5[0], -s4[1]), a.add(s5[1], s4[0]))
            out3 = (a.add(s5[0], s4[1]), a.add(s5[1], -s4[0]))
        else:
            out1 = (a.add(s5[0], s4[1]), a.add(s5[1], -s4[0]))
            out3 = (a.add(s5[0], -s4[1]), a.add(s5[1], s4[0]))
        return [out0, out1, out2, out3]

    def _bfly3(self, xr, xi, tws, m, fstride):
        a = self.a
        epi3 = (self.tw_r[fstride * m], self.tw_i[fstride * m])
        v0 = a.fixdiv(xr[:, :, 0], xi[:, :, 0], 3)
        v1 = a.fixdiv(xr[:, :, 1], xi[:, :, 1], 3)
        v2 = a.fixdiv(xr[:, :, 2], xi[:, :, 2], 3)
        s1 = a.c_mul(*v1, *tws[1])
        s2 = a.c_mul(*v2, *tws[2])
        s3 = (a.add(s1[0], s2[0]), a.add(s1[1], s2[1]))
        s0 = (a.add(s1[0], -s2[0]), a.add(s1[1], -s2[1]))
        m_r, m_i = a.add(v0[0], -a.half(s3[0])), a.add(v0[1], -a.half(s3[1]))
        s0 = (a.s_mul(s0[0], epi3[1]), a.s_mul(s0[1], epi3[1]))
        return [(a.add(v0[0], s3[0]), a.add(v0[1], s3[1])), (a.add(m_r, -s0[1]), a.add(m_i, s0[0])),
                (a.add(m_r, s0[1]), a.add(m_i, -s0[0]))]

    def _bfly5(self, xr, xi, tws, m, fstride):
        a = self.a
        sm = a.s_mul
        ya = (self.tw_r[fstride * m], self.tw_i[fstride * m])
        yb = (self.tw_r[fstride * 2 * m], self.tw_i[fstride * 2 * m])
        v = [a.fixdiv(xr[:, :, j], xi[:, :, j], 5) for j in range(5)]
        s0 = v[0]
        s1, s2, s3, s4 = (a.c_mul(*v[j], *tws[j]) for j in range(1, 5))
        s7 = (a.add(s1[0], s4[0]), a.add(s1[1], s4[1]))
        s10 = (a.add(s1[0], -s4[0]), a.add(s1[1], -s4[1]))
        s8 = (a.add(s2[0], s3[0]), a.add(s2[1], s3[1]))
        s9 = (a.add(s2[0], -s3[0]), a.add(s2[1], -s3[1]))
        out0 = (a.add(s0[0], a.add(s7[0], s8[0])), a.add(s0[1], a.add(s7[1], s8[1])))
        s5 = (a.add(a.add(s0[0], sm(s7[0], ya[0])), sm(s8[0], yb[0])),
              a.add(a.add(s0[1], sm(s7[1], ya[0])), sm(s8[1], yb[0])))
        s6 = (a.wrap(sm(s10[1], ya[1]) + sm(s9[1], yb[1])), a.wrap(-sm(s10[0], ya[1]) - sm(s9[0], yb[1])))
        s11 = (a.add(a.add(s0[0], sm(s7[0], yb[0])), sm(s8[0], ya[0])),
               a.add(a.add(s0[1], sm(s7[1], yb[0])), sm(s8[1], ya[0])))
        s12 = (a.wrap(-sm(s10[1], yb[1]) + sm(s9[1], ya[1])), a.wrap(sm(s10[0], yb[1]) - sm(s9[0], ya[1])))
        return [out0, (a.add(s5[0], -s6[0]), a.add(s5[1], -s6[1])), (a.add(s11[0], s12[0]), a.add(s11[1], s12[1])),
                (a.add(s11[0], -s12[0]), a.add(s11[1], -s12[1])), (a.add(s5[0], s6[0]), a.add(s5[1], s6[1]))]


@lru_cache(maxsize=16)
def vector_plan(nfft: int, type_name: str, inverse: bool = False) -> tuple[VectorKissFFT, np.ndarray, np.ndarray]:
    """``kiss_fftr_alloc`` for frames: the half-length complex FFT and the super twiddles (real, imaginary)."""
    from ._kiss_fft import real_fft_plan

    _, super_tw = real_fft_plan(nfft, type_name, inverse)
    return (VectorKissFFT(nfft // 2, type_name, inverse), _values(type_name, [t[0] for t in super_tw]),
            _values(type_name, [t[1] for t in super_tw]))


def rfft_frames(frames: np.ndarray, nfft: int, type_name: str) -> np.ndarray:
    """:func:`._kiss_fft.rfft` of every row of ``frames`` (``[F, nfft]``): ``[F, nfft + 2]`` interleaved bins."""
    sub, sw_r, sw_i = vector_plan(nfft, type_name)
    a = sub.a
    x = frames.astype(np.float32 if type_name == "FLOAT32" else np.int64)
    tr, ti = sub(x[:, 0::2], x[:, 1::2])
    n = sub.n
    out_r = np.zeros((len(x), n + 1), tr.dtype)
    out_i = np.zeros((len(x), n + 1), tr.dtype)
    dc_r, dc_i = a.fixdiv(tr[:, 0], ti[:, 0], 2)
    out_r[:, 0], out_r[:, n] = a.add(dc_r, dc_i), a.add(dc_r, -dc_i)
    k = np.arange(1, n // 2 + 1)
    fpk = a.fixdiv(tr[:, k], ti[:, k], 2)
    fpnk = a.fixdiv(tr[:, n - k], a.wrap(-ti[:, n - k]), 2)
    f1k = (a.add(fpk[0], fpnk[0]), a.add(fpk[1], fpnk[1]))
    f2k = (a.add(fpk[0], -fpnk[0]), a.add(fpk[1], -fpnk[1]))
    tw = a.c_mul(*f2k, sw_r[k - 1], sw_i[k - 1])
    out_r[:, k], out_i[:, k] = a.wrap(a.half(f1k[0] + tw[0])), a.wrap(a.half(f1k[1] + tw[1]))
    # n - k after k: at k = n/2 both name one bin, and the scalar loop's second store wins
    out_r[:, n - k], out_i[:, n - k] = a.wrap(a.half(f1k[0] - tw[0])), a.wrap(a.half(tw[1] - f1k[1]))
    inter = np.empty((len(x), 2 * (n + 1)), frames.dtype)
    inter[:, 0::2], inter[:, 1::2] = out_r, out_i
    return inter


def irfft_frames(bins: np.ndarray, nfft: int, type_name: str) -> np.ndarray:
    """:func:`._kiss_fft.irfft` of every row of ``bins`` (``[F, nfft + 2]``): ``[F, nfft]`` samples."""
    sub, sw_r, sw_i = vector_plan(nfft, type_name, True)
    a = sub.a
    v = bins.astype(np.float32 if type_name == "FLOAT32" else np.int64)
    fr, fi = v[:, 0::2], v[:, 1::2]
    n = sub.n
    tr = np.zeros((len(v), n), v.dtype)
    ti = np.zeros((len(v), n), v.dtype)
    tr[:, 0], ti[:, 0] = a.fixdiv(a.add(fr[:, 0], fr[:, n]), a.add(fr[:, 0], -fr[:, n]), 2)
    k = np.arange(1, n // 2 + 1)
    fk = a.fixdiv(fr[:, k], fi[:, k], 2)
    fnkc = a.fixdiv(fr[:, n - k], a.wrap(-fi[:, n - k]), 2)
    fek = (a.add(fk[0], fnkc[0]), a.add(fk[1], fnkc[1]))
    tmp = (a.add(fk[0], -fnkc[0]), a.add(fk[1], -fnkc[1]))
    fok = a.c_mul(*tmp, sw_r[k - 1], sw_i[k - 1])
    tr[:, k], ti[:, k] = a.add(fek[0], fok[0]), a.add(fek[1], fok[1])
    tr[:, n - k], ti[:, n - k] = a.add(fek[0], -fok[0]), a.wrap(-a.add(fek[1], -fok[1]))
    out_r, out_i = sub(tr, ti)
    samples = np.empty((len(v), 2 * n), bins.dtype)
    samples[:, 0::2], samples[:, 1::2] = out_r, out_i
    return samples
