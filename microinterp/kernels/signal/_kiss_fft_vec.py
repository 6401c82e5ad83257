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
from ._kiss_fft_gather import GatherRfft, GatherStages


class _Ring:
    """Sums, differences and negations of values: NumPy's own operators, in the value type (wrapping as the
    scalar code's ``wrap`` for the integer builds, rounded to float32 for the float one)."""

    @staticmethod
    def add(a, b, out=None):
        return np.add(a, b, out)

    @staticmethod
    def sub(a, b, out=None):
        return np.subtract(a, b, out)

    @staticmethod
    def neg(a):
        return -a


class _VFixed(_Ring):
    """:class:`._kiss_fft._Fixed` on NumPy's own integer types: values in ``int16`` (``int32``), products and the C
    ``int`` sums around them in ``int32`` (``int64``). NumPy's integer arithmetic wraps as two's complement, so a
    sum or difference stored into the value type is the scalar ``wrap``, a product of a value and a twiddle (held in
    the product type) is exact, and ``sround`` is an add and an arithmetic shift in the product type and a cast."""

    def __init__(self, bits: int):
        self.bits, self.frac = bits, bits - 1
        self.max = (1 << (bits - 1)) - 1
        self.dtype = np.dtype(np.int16 if bits == 16 else np.int32)
        self.prod = np.dtype(np.int32 if bits == 16 else np.int64)
        self.round = self.prod.type(1 << (self.frac - 1))

    def values(self, v):
        return np.asarray(v).astype(self.dtype)

    def factors(self, v):
        """Twiddles and other multipliers, in the product type (a value times one is exact there)."""
        return np.asarray(v).astype(self.prod)

    def wrap(self, v):
        return v.astype(self.dtype)

    def _rounded(self, x):
        """``(x + round) >> frac`` in place, in the product type (``sround`` before its store)."""
        x += self.round
        x >>= self.frac
        return x

    def sround(self, x):
        return self._rounded(x).astype(self.dtype)

    def s_mul(self, a, b):
        return self.sround(a * b)

    def c_mul(self, ar, ai, br, bi):
        r = ar * br
        r -= ai * bi
        i = ar * bi
        i += ai * br
        return self.sround(r), self.sround(i)

    def fixdiv(self, r, i, k):
        wr, wi = self.fixdiv_wide(r, i, k)
        return self.wrap(wr), self.wrap(wi)

    def fixdiv_wide(self, r, i, k):
        """:meth:`fixdiv` left in the product type: ``|x (max // k)| >> frac`` fits the value type for ``k >= 2``,
        so the store's cast changes nothing, and the twiddle products after it multiply operands of one type."""
        d = self.prod.type(self.max // k)
        return self._rounded(r * d), self._rounded(i * d)

    def unit_after_fixdiv(self, p: int, tw_r, tw_i) -> bool:
        """Whether ``C_MUL`` by the twiddle ``(tw_r, tw_i)`` returns every ``C_FIXDIV(x, p)`` unchanged: the twiddle
        is ``(max, 0)`` (``tw[0]``, the one of every ``k = 0`` butterfly), so ``sround(v max) = v + ((round - v) >>
        frac)``, which is ``v`` for ``-round < v <= round`` -- the range of ``sround(x (max // p))`` for ``p >= 2``."""
        if int(tw_r) != self.max or int(tw_i) != 0:
            return False
        d, r = self.max // p, int(self.round)
        lo, hi = ((x * d + r) >> self.frac for x in (-self.max - 1, self.max))
        return -r < lo and hi <= r

    def half_sum(self, a, b, sign: int = 1):
        """``wrap((a +- b) >> 1)``: the sum in the product type (C's ``int``) before the shift."""
        w = a.astype(self.prod)
        w = w + b if sign > 0 else w - b
        w >>= 1
        return w.astype(self.dtype)

    @staticmethod
    def half(x):
        return x >> 1


class _VFloat(_Ring):
    """:class:`._kiss_fft._Float` on float32 arrays (every operation rounded to float32)."""

    dtype = prod = np.dtype(np.float32)

    def values(self, v):
        return np.asarray(v).astype(np.float32)

    factors = values

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

    fixdiv_wide = fixdiv

    @staticmethod
    def unit_after_fixdiv(p: int, tw_r, tw_i) -> bool:
        """Never: ``x * 1.f - y * 0.f`` is not ``x`` when ``y`` is infinite or NaN, nor when ``x`` is ``-0.f``."""
        return False

    def half_sum(self, a, b, sign: int = 1):
        return (a + b if sign > 0 else a - b) * np.float32(0.5)

    @staticmethod
    def half(x):
        return x * np.float32(0.5)


VARITH = {"INT16": _VFixed(16), "INT32": _VFixed(32), "FLOAT32": _VFloat()}

#: Fixed-point transforms of fewer frames than this run as :mod:`._kiss_fft_gather` (radix 2 and 4): a stage in a
#: dozen NumPy calls instead of forty, 2.4x faster on one frame; on many frames the gathers cost more than the
#: calls they save (512 points, per frame: 62 against 151 us on one, 9.5 against 10.7 on 32, 13 against 7.6 on 64).
GATHER_BELOW = 32

#: From this many frames the stages keep the frames innermost in memory (``[n, frames]``): a stage whose butterflies
#: are m points apart otherwise runs loops of m elements (512 points on 256 frames: 3.5 against 6.3 us a frame).
FRAMES_LAST = 16


class VectorKissFFT:
    """``kiss_fft`` of ``nfft`` points on a batch of frames ``[F, nfft]`` (real and imaginary parts, in the build's
    value type)."""

    def __init__(self, nfft: int, type_name: str, inverse: bool = False):
        scalar = KissFFT(nfft, type_name, inverse)
        self.n, self.inverse, self.type_name = nfft, inverse, type_name
        a = self.a = VARITH[type_name]
        self.tw_r = a.factors([t[0] for t in scalar.tw])
        self.tw_i = a.factors([t[1] for t in scalar.tw])
        factors = scalar.factors
        self.perm = np.empty(nfft, np.intp)
        self._leaves(factors, 0, 0, 1, 0)
        self.stages = []
        self.unit_stages: set[int] = set()  # factors of a one-point stage (every twiddle tw[0]) whose C_MUL is exact
        fstride = 1
        for pos in range(0, len(factors), 2):
            p, m = factors[pos], factors[pos + 1]
            k = np.arange(m)
            index = (np.arange(p)[:, None] * k[None, :] * fstride) % nfft          # tw[j k fstride], [p, m]
            self.stages.append((p, m, fstride, (self.tw_r[index], self.tw_i[index])))
            if m == 1 and a.unit_after_fixdiv(p, self.tw_r[0], self.tw_i[0]):
                self.unit_stages.add(p)
            fstride *= p
        self.stages.reverse()           # deepest first, as the recursion finishes them
        self.bfly = {2: self._bfly2, 3: self._bfly3, 4: self._bfly4, 5: self._bfly5}
        self.gather = GatherStages(a, self.stages, inverse) if GatherStages.applies(a, self.stages) else None

    def _leaves(self, factors, fo: int, f: int, fstride: int, pos: int) -> None:
        p, m = factors[pos], factors[pos + 1]
        for j in range(p):
            if m == 1:
                self.perm[fo + j] = f + j * fstride
            else:
                self._leaves(factors, fo + j * m, f + j * fstride, fstride * p, pos + 2)

    def __call__(self, zr: np.ndarray, zi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        frames = zr.shape[0]
        if self.gather is not None and frames < GATHER_BELOW:     # a dozen NumPy calls a stage
            z = np.empty((frames, 2, self.n), self.a.dtype)
            zr.take(self.perm, 1, z[:, 0], "wrap")
            zi.take(self.perm, 1, z[:, 1], "wrap")
            z = self.gather(z)
            return z[:, 0], z[:, 1]
        last = frames >= FRAMES_LAST
        # from FRAMES_LAST frames on, the frames innermost in memory ([n, frames]), seen as [frames, groups, p, m]:
        # every operation's inner loop runs over the frames, however short m is; fewer keep [frames, n]
        fr, fi = (zr.T[self.perm], zi.T[self.perm]) if last else (zr[:, self.perm], zi[:, self.perm])
        for p, m, groups, tws in self.stages:
            out_r, out_i = np.empty_like(fr), np.empty_like(fi)
            vr, vi, vo_r, vo_i = (v.reshape(groups, p, m, frames).transpose(3, 0, 1, 2) if last
                                  else v.reshape(frames, groups, p, m) for v in (fr, fi, out_r, out_i))
            self.bfly[p](vr, vi, tws, m, groups, vo_r, vo_i)
            fr, fi = out_r, out_i
        return (fr.T, fi.T) if last else (fr, fi)

    def _twiddled(self, xr, xi, tws, p):
        """Every component divided by ``p`` (``C_FIXDIV``), and components ``1 ..`` times their twiddles (none on a
        one-point stage whose twiddle leaves them unchanged: :meth:`_VFixed.unit_after_fixdiv`): ``(v0r, v0i, sr,
        si)``, component 0 divided and the others twiddled, in the value type. The division stays in the product
        type until stored (:meth:`_VFixed.fixdiv_wide`)."""
        a = self.a
        wr, wi = a.fixdiv_wide(xr, xi, p)
        v0r, v0i = a.wrap(wr[:, :, 0]), a.wrap(wi[:, :, 0])
        if xr.shape[-1] == 1 and p in self.unit_stages:
            return v0r, v0i, a.wrap(wr[:, :, 1:]), a.wrap(wi[:, :, 1:])
        sr, si = a.c_mul(wr[:, :, 1:], wi[:, :, 1:], tws[0][1:], tws[1][1:])
        return v0r, v0i, sr, si

    def _bfly2(self, xr, xi, tws, m, fstride, out_r, out_i):
        a = self.a
        r0, q0, tr, ti = self._twiddled(xr, xi, tws, 2)
        tr, ti = tr[:, :, 0], ti[:, :, 0]
        out_r[:, :, 0], out_i[:, :, 0] = a.add(r0, tr), a.add(q0, ti)
        out_r[:, :, 1], out_i[:, :, 1] = a.sub(r0, tr), a.sub(q0, ti)

    def _bfly4(self, xr, xi, tws, m, fstride, out_r, out_i):
        a = self.a
        v0r, v0i, sr, si = self._twiddled(xr, xi, tws, 4)
        s0r, s1r, s2r = sr[:, :, 0], sr[:, :, 1], sr[:, :, 2]
        s0i, s1i, s2i = si[:, :, 0], si[:, :, 1], si[:, :, 2]
        s5r, s5i = a.sub(v0r, s1r), a.sub(v0i, s1i)
        f0r, f0i = a.add(v0r, s1r), a.add(v0i, s1i)
        s3r, s3i = a.add(s0r, s2r), a.add(s0i, s2i)
        s4r, s4i = a.sub(s0r, s2r), a.sub(s0i, s2i)
        # every output stored by its operation (out=): no temporary to copy
        one, three = (3, 1) if self.inverse else (1, 3)     # the inverse turns the other way
        a.sub(f0r, s3r, out_r[:, :, 2])
        a.sub(f0i, s3i, out_i[:, :, 2])
        a.add(f0r, s3r, out_r[:, :, 0])
        a.add(f0i, s3i, out_i[:, :, 0])
        a.add(s5r, s4i, out_r[:, :, one])
        a.sub(s5i, s4r, out_i[:, :, one])
        a.sub(s5r, s4i, out_r[:, :, three])
        a.add(s5i, s4r, out_i[:, :, three])

    def _bfly3(self, xr, xi, tws, m, fstride, out_r, out_i):
        a = self.a
        epi3 = self.tw_i[fstride * m]
        v0r, v0i, sr, si = self._twiddled(xr, xi, tws, 3)
        s3r, s3i = a.add(sr[:, :, 0], sr[:, :, 1]), a.add(si[:, :, 0], si[:, :, 1])
        s0r, s0i = a.sub(sr[:, :, 0], sr[:, :, 1]), a.sub(si[:, :, 0], si[:, :, 1])
        m_r, m_i = a.sub(v0r, a.half(s3r)), a.sub(v0i, a.half(s3i))
        s0r, s0i = a.s_mul(s0r, epi3), a.s_mul(s0i, epi3)
        out_r[:, :, 0], out_i[:, :, 0] = a.add(v0r, s3r), a.add(v0i, s3i)
        out_r[:, :, 1], out_i[:, :, 1] = a.sub(m_r, s0i), a.add(m_i, s0r)
        out_r[:, :, 2], out_i[:, :, 2] = a.add(m_r, s0i), a.sub(m_i, s0r)

    def _bfly5(self, xr, xi, tws, m, fstride, out_r, out_i):
        a = self.a
        sm = a.s_mul
        ya = (self.tw_r[fstride * m], self.tw_i[fstride * m])
        yb = (self.tw_r[fstride * 2 * m], self.tw_i[fstride * 2 * m])
        v0r, v0i, sr, si = self._twiddled(xr, xi, tws, 5)
        s0 = (v0r, v0i)
        s1, s2, s3, s4 = ((sr[:, :, j], si[:, :, j]) for j in range(4))
        s7 = (a.add(s1[0], s4[0]), a.add(s1[1], s4[1]))
        s10 = (a.sub(s1[0], s4[0]), a.sub(s1[1], s4[1]))
        s8 = (a.add(s2[0], s3[0]), a.add(s2[1], s3[1]))
        s9 = (a.sub(s2[0], s3[0]), a.sub(s2[1], s3[1]))
        out_r[:, :, 0] = a.add(s0[0], a.add(s7[0], s8[0]))
        out_i[:, :, 0] = a.add(s0[1], a.add(s7[1], s8[1]))
        s5 = (a.add(a.add(s0[0], sm(s7[0], ya[0])), sm(s8[0], yb[0])),
              a.add(a.add(s0[1], sm(s7[1], ya[0])), sm(s8[1], yb[0])))
        s6 = (a.add(sm(s10[1], ya[1]), sm(s9[1], yb[1])), a.sub(a.neg(sm(s10[0], ya[1])), sm(s9[0], yb[1])))
        s11 = (a.add(a.add(s0[0], sm(s7[0], yb[0])), sm(s8[0], ya[0])),
               a.add(a.add(s0[1], sm(s7[1], yb[0])), sm(s8[1], ya[0])))
        s12 = (a.add(a.neg(sm(s10[1], yb[1])), sm(s9[1], ya[1])), a.sub(sm(s10[0], yb[1]), sm(s9[0], ya[1])))
        out_r[:, :, 1], out_i[:, :, 1] = a.sub(s5[0], s6[0]), a.sub(s5[1], s6[1])
        out_r[:, :, 2], out_i[:, :, 2] = a.add(s11[0], s12[0]), a.add(s11[1], s12[1])
        out_r[:, :, 3], out_i[:, :, 3] = a.sub(s11[0], s12[0]), a.sub(s11[1], s12[1])
        out_r[:, :, 4], out_i[:, :, 4] = a.add(s5[0], s6[0]), a.add(s5[1], s6[1])


@lru_cache(maxsize=16)
def vector_plan(nfft: int, type_name: str, inverse: bool = False) -> tuple[VectorKissFFT, np.ndarray, np.ndarray]:
    """``kiss_fftr_alloc`` for frames: the half-length complex FFT and the super twiddles (real, imaginary)."""
    from ._kiss_fft import real_fft_plan

    _, super_tw = real_fft_plan(nfft, type_name, inverse)
    sub = VectorKissFFT(nfft // 2, type_name, inverse)
    return sub, sub.a.factors([t[0] for t in super_tw]), sub.a.factors([t[1] for t in super_tw])


@lru_cache(maxsize=16)
def gather_rfft(nfft: int, type_name: str) -> GatherRfft:
    """:class:`._kiss_fft_gather.GatherRfft` of :func:`vector_plan`'s FFT (fixed point, factors 2 and 4)."""
    sub, sw_r, sw_i = vector_plan(nfft, type_name)
    return GatherRfft(sub, sw_r, sw_i)


def rfft_frames(frames: np.ndarray, nfft: int, type_name: str, out: np.ndarray | None = None) -> np.ndarray:
    """:func:`._kiss_fft.rfft` of every row of ``frames`` (``[F, nfft]``): ``[F, nfft + 2]`` interleaved bins, into
    ``out`` when given (C-contiguous, the value type).

    The split after the half-length FFT (``kiss_fftr``'s loop over ``k = 1 .. ncfft / 2``) reads bins ``k`` and
    ``ncfft - k`` as two slices of the transform (the second reversed) and stores its results through slices of
    the output seen as ``[F, ncfft + 1, 2]``: no gather, no separate interleaving pass; ``ncfft - k`` is stored
    after ``k`` (at ``k = ncfft / 2`` both name one bin, and the scalar loop's second store wins)."""
    sub, sw_r, sw_i = vector_plan(nfft, type_name)
    a, count, n = sub.a, len(frames), sub.n
    gathers = sub.gather is not None and count < GATHER_BELOW
    if gathers or out is None or not out.flags.c_contiguous:    # (the split stores through a view of the output)
        bins = gather_rfft(nfft, type_name)(frames) if gathers else \
            rfft_frames(frames, nfft, type_name, np.empty((count, 2 * (n + 1)), a.dtype))
        if out is None:
            return bins
        out[...] = bins
        return out
    x = frames if frames.dtype == a.dtype else a.values(frames)
    tr, ti = sub(x[:, 0::2], x[:, 1::2])
    h = n // 2
    bins = out.reshape(count, n + 1, 2)
    dc_r, dc_i = a.fixdiv(tr[:, 0], ti[:, 0], 2)
    bins[:, 0, 0], bins[:, n, 0] = a.add(dc_r, dc_i), a.sub(dc_r, dc_i)
    bins[:, 0, 1] = bins[:, n, 1] = 0
    k, nk = slice(1, h + 1), slice(n - 1, n - h - 1, -1)        # bins k and n - k, k = 1 .. h
    fpk = a.fixdiv(tr[:, k], ti[:, k], 2)
    fpnk = a.fixdiv(tr[:, nk], a.neg(ti[:, nk]), 2)
    f1k = (a.add(fpk[0], fpnk[0]), a.add(fpk[1], fpnk[1]))
    f2k = (a.sub(fpk[0], fpnk[0]), a.sub(fpk[1], fpnk[1]))
    tw = a.c_mul(*f2k, sw_r[:h], sw_i[:h])
    bins[:, k, 0], bins[:, k, 1] = a.half_sum(f1k[0], tw[0]), a.half_sum(f1k[1], tw[1])
    bins[:, nk, 0], bins[:, nk, 1] = a.half_sum(f1k[0], tw[0], -1), a.half_sum(tw[1], f1k[1], -1)
    return out


def irfft_frames(bins: np.ndarray, nfft: int, type_name: str) -> np.ndarray:
    """:func:`._kiss_fft.irfft` of every row of ``bins`` (``[F, nfft + 2]``): ``[F, nfft]`` samples."""
    sub, sw_r, sw_i = vector_plan(nfft, type_name, True)
    a = sub.a
    v = a.values(bins)
    fr, fi = v[:, 0::2], v[:, 1::2]
    n = sub.n
    tr = np.zeros((len(v), n), v.dtype)
    ti = np.zeros((len(v), n), v.dtype)
    tr[:, 0], ti[:, 0] = a.fixdiv(a.add(fr[:, 0], fr[:, n]), a.sub(fr[:, 0], fr[:, n]), 2)
    k = np.arange(1, n // 2 + 1)
    fk = a.fixdiv(fr[:, k], fi[:, k], 2)
    fnkc = a.fixdiv(fr[:, n - k], a.neg(fi[:, n - k]), 2)
    fek = (a.add(fk[0], fnkc[0]), a.add(fk[1], fnkc[1]))
    tmp = (a.sub(fk[0], fnkc[0]), a.sub(fk[1], fnkc[1]))
    fok = a.c_mul(*tmp, sw_r[k - 1], sw_i[k - 1])
    tr[:, k], ti[:, k] = a.add(fek[0], fok[0]), a.add(fek[1], fok[1])
    tr[:, n - k], ti[:, n - k] = a.sub(fek[0], fok[0]), a.neg(a.sub(fek[1], fok[1]))
    out_r, out_i = sub(tr, ti)
    samples = np.empty((len(v), 2 * n), bins.dtype)
    samples[:, 0::2], samples[:, 1::2] = out_r, out_i
    return samples
