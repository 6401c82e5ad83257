"""The fixed-point KISS FFT's radix-2 and radix-4 stages in a dozen NumPy calls each (:class:`GatherStages`): the
same operations on the same values as :class:`._kiss_fft_vec.VectorKissFFT` (and the scalar code), so the same bits.

A stage of factor ``p`` (``kf_bfly2`` / ``kf_bfly4``) is, for every component ``x_j`` of every butterfly:

1. ``C_FIXDIV(x_j, p)``: ``sround(x * (max // p))`` -- elementwise;
2. ``C_MUL(x_j, tw)`` for ``j >= 1``: ``sround(xr br - xi bi)``, ``sround(xr bi + xi br)`` -- elementwise; with the
   real and imaginary rows of the frame stacked (``[2, n]``) it is ``V * A + V[::-1] * B`` with ``A = [br, br]``
   and ``B = [-bi, bi]``, and component 0 (not multiplied) is the same form with ``b = 2^frac``:
   ``sround(v 2^frac) = v`` exactly; on the one-point stage every twiddle is ``tw[0] = (max, 0)``, which leaves
   a ``C_FIXDIV`` result unchanged (``_VFixed.unit_after_fixdiv``), and the step is skipped;
3. the butterfly's sums and differences (``C_ADD``, ``C_SUB``, the ``+-i`` turns of radix 4), each stored to the
   value type: additions wrapping modulo ``2^bits``, so every output is the wrapped sum of ``p`` twiddled values,
   each taken with a sign -- one gather of ``p`` terms per output, a multiply by the signs, a sum over the terms,
   all in the value type (NumPy's integer arithmetic wraps).

The radix-3 and radix-5 butterflies round inside their sums (``S_MUL`` by ``epi3`` and the fifth roots) and the
float build rounds every sum: those keep :class:`._kiss_fft_vec.VectorKissFFT`'s code.
"""

from __future__ import annotations

import numpy as np

from .._qutil import copyto

#: The butterflies as signed terms: for output ``q``, row ``rho`` (0 real, 1 imaginary), the terms ``(sign, row,
#: component)`` summed -- ``kf_bfly2``, and ``kf_bfly4`` forward (the inverse swaps outputs 1 and 3).
BUTTERFLY = {
    2: {0: [[(1, 0, 0), (1, 0, 1)], [(1, 1, 0), (1, 1, 1)]],
        1: [[(1, 0, 0), (-1, 0, 1)], [(1, 1, 0), (-1, 1, 1)]]},
    4: {0: [[(1, 0, 0), (1, 0, 1), (1, 0, 2), (1, 0, 3)], [(1, 1, 0), (1, 1, 1), (1, 1, 2), (1, 1, 3)]],
        2: [[(1, 0, 0), (-1, 0, 1), (1, 0, 2), (-1, 0, 3)], [(1, 1, 0), (-1, 1, 1), (1, 1, 2), (-1, 1, 3)]],
        1: [[(1, 0, 0), (1, 1, 1), (-1, 0, 2), (-1, 1, 3)], [(1, 1, 0), (-1, 0, 1), (-1, 1, 2), (1, 0, 3)]],
        3: [[(1, 0, 0), (-1, 1, 1), (-1, 0, 2), (1, 1, 3)], [(1, 1, 0), (1, 0, 1), (-1, 1, 2), (-1, 0, 3)]]},
}


class _Stage:
    """One stage on the stacked ``[frames, 2, n]`` values: its fixdiv multiplier, the twiddle rows ``A`` and ``B``
    (``[2, n]`` in the product type) and the butterfly's gather (``[p, 2n]`` indices into the flat ``[2n]`` row
    pair) and signs."""

    def __init__(self, arith, p: int, m: int, groups: int, tw_r: np.ndarray, tw_i: np.ndarray, inverse: bool):
        n = groups * p * m
        # a one-point stage multiplies by tw[0] alone, which may leave every C_FIXDIV result unchanged
        self.twiddled = not (m == 1 and arith.unit_after_fixdiv(p, tw_r[0, 0], tw_i[0, 0]))
        one = np.asarray(1 << arith.frac, arith.prod)
        br = np.broadcast_to(np.where(np.arange(p)[:, None] == 0, one, tw_r), (groups, p, m)).reshape(n)
        bi = np.broadcast_to(np.where(np.arange(p)[:, None] == 0, 0, tw_i), (groups, p, m)).reshape(n)
        self.a = np.stack([br, br]).astype(arith.prod)
        self.b = np.stack([-bi, bi]).astype(arith.prod)
        self.div = arith.prod.type(arith.max // p)
        table = dict(BUTTERFLY[p])
        if inverse and p == 4:
            table[1], table[3] = BUTTERFLY[4][3], BUTTERFLY[4][1]
        g, q, k = np.meshgrid(np.arange(groups), np.arange(p), np.arange(m), indexing="ij")
        index = np.empty((p, 2, n), np.intp)
        sign = np.empty((p, 2, n), arith.dtype)
        for qq in range(p):
            at = (g * p * m + q * m + k)[q == qq]            # the flat positions of output qq, in order
            for rho in (0, 1):
                for t, (s, row, j) in enumerate(table[qq][rho]):
                    index[t, rho, at] = row * n + (at - qq * m) + j * m
                    sign[t, rho, at] = s
        self.index, self.sign = index.reshape(p, 2 * n), sign.reshape(p, 2 * n)


class GatherStages:
    """Every stage of a fixed-point FFT whose factors are all 2 and 4 (``stages`` as
    :class:`._kiss_fft_vec.VectorKissFFT` keeps them, deepest first): ``__call__`` takes the stacked leaves
    ``[frames, 2, n]`` in the value type and returns the transform the same way."""

    def __init__(self, arith, stages, inverse: bool):
        self.arith = arith
        self.stages = [_Stage(arith, p, m, groups, tws[0], tws[1], inverse) for p, m, groups, tws in stages]

    @staticmethod
    def applies(arith, stages) -> bool:
        return arith.dtype.kind == "i" and all(p in (2, 4) for p, *_ in stages)

    def __call__(self, z: np.ndarray) -> np.ndarray:
        a = self.arith
        frames, _, n = z.shape
        v = np.empty(z.shape, a.prod)
        w = np.empty(z.shape, a.prod)
        r, frac = a.round, a.frac
        for st in self.stages:
            np.multiply(z, st.div, v)                   # C_FIXDIV: sround(x * (max / p))
            v += r
            v >>= frac
            if st.twiddled:
                np.multiply(v, st.a, w)                 # C_MUL: sround(vr br - vi bi), sround(vr bi + vi br):
                v[:, ::-1] *= st.b                          # the rows swapped in place: vi (-bi) and vr bi
                w += v[:, ::-1]
                w += r
                w >>= frac
                v, w = w, v
            t = v.astype(a.dtype).reshape(frames, 2 * n)    # stored to the value type (wraps as C's store)
            terms = np.take(t, st.index, axis=1)            # [frames, p, 2n]: every output's p terms
            terms *= st.sign
            z = np.add.reduce(terms, axis=1, dtype=a.dtype).reshape(frames, 2, n)
        return z


class GatherRfft:
    """``kiss_fftr`` of real frames in a fixed-point build whose half-length FFT runs as :class:`GatherStages`: the
    leaves gathered straight from the frames, the stages, then the split into ``nfft / 2 + 1`` bins with the real
    and imaginary rows stacked (``C_FIXDIV`` by 2, the sums and differences stored to the value type, ``C_MUL`` by
    the super twiddles, ``HALF_OF`` of the sums in C's ``int``), written interleaved."""

    def __init__(self, sub, super_r: np.ndarray, super_i: np.ndarray):
        a, n = sub.a, sub.n
        self.sub, self.a, self.n = sub, a, n
        self.leaves = np.stack([2 * sub.perm, 2 * sub.perm + 1])           # [2, n] into a frame of 2n samples
        h = n // 2
        k = np.arange(1, h + 1)
        # fpk = tmp[k] and fpnk = conj(tmp[n - k]): rows (fpk r, fpk i, fpnk r, fpnk i) of the flat [2n] result
        self.split = np.stack([k, n + k, n - k, 2 * n - k])
        self.conj = np.array([1, 1, 1, -1], a.dtype)[:, None]
        self.div = a.prod.type(a.max // 2)
        self.tw_a = np.stack([super_r[:h], super_r[:h]]).astype(a.prod)       # C_MUL by super_twiddles[k - 1]
        self.tw_b = np.stack([-super_i[:h], super_i[:h]]).astype(a.prod)
        self.flip = np.array([1, -1], a.prod)[:, None]                         # HALF_OF(tw.i - f1k.i)
        # bins k (all but n/2, which bin n - k writes last, as the C loop's second store) and n - k, interleaved
        self.low = np.stack([2 * k[:-1], 2 * k[:-1] + 1]) if h else np.zeros((2, 0), np.intp)
        self.high = np.stack([2 * (n - k), 2 * (n - k) + 1])

    def __call__(self, frames: np.ndarray) -> np.ndarray:
        a, n = self.a, self.n
        count = frames.shape[0]
        z = self.sub.gather(np.take(frames.astype(a.dtype, copy=False), self.leaves, axis=1))
        flat = z.reshape(count, 2 * n)
        out = np.zeros((count, 2 * (n + 1)), a.dtype)
        r, frac = a.round, a.frac
        dc = (flat[:, 0::n].astype(a.prod) * self.div + r) >> frac     # C_FIXDIV(tdc, 2): [count, 2]
        out[:, 0] = dc[:, 0] + dc[:, 1]
        out[:, 2 * n] = dc[:, 0] - dc[:, 1]
        fp = np.take(flat, self.split, axis=1)                          # [count, 4, n/2]
        fp *= self.conj                                                 # fpnk.i = -tmp[n - k].i, stored
        v = fp.astype(a.prod)
        v *= self.div                                                   # C_FIXDIV(fpk, 2), C_FIXDIV(fpnk, 2)
        v += r
        v >>= frac
        v = v.astype(a.dtype)
        f1 = v[:, :2] + v[:, 2:]                                        # C_ADD, C_SUB: stored to the value type
        f2 = (v[:, :2] - v[:, 2:]).astype(a.prod)
        tw = f2 * self.tw_a
        f2[:, ::-1] *= self.tw_b
        tw += f2[:, ::-1]
        tw += r
        tw >>= frac
        tw = tw.astype(a.dtype).astype(a.prod)                          # C_MUL's result, stored
        f1 = f1.astype(a.prod)
        high = (f1 - tw) * self.flip                                    # HALF_OF in C's int, then stored
        high >>= 1
        f1 += tw
        f1 >>= 1
        h = n // 2
        out[:, self.low] = f1[:, :, :h - 1]
        out[:, self.high] = high
        return out


class BoundGatherRfft:
    """:class:`GatherRfft` of the fixed frames view ``frames`` (``[F, nfft]`` in the value type) into the fixed
    output view ``out`` (``[F, nfft + 2]``), as a call without arguments on kept buffers: the same operations on the
    same values, each into a buffer of its own type and shape -- no temporaries, constants as 0-d arrays (a NumPy
    scalar operand costs a ufunc call as much again), the twiddle rows laid out in full (an operand to broadcast
    costs about 0.5 us more on a few hundred values), a value cast to the product type by a copy before its product
    (a mixed-type multiply costs twice a same-type one), a butterfly's signed terms gathered from the stored values
    and their negations (one negation of ``2n`` values instead of a product of ``p 2n`` terms by signs), an
    untwiddled first stage on the samples in frame order (the leaves' order composed into its gather), a 16-bit
    build's stage arithmetic in float64 (:meth:`_float_stages`), the gathers by the array's own ``take`` in
    ``wrap`` mode (every position is valid: no checked, buffered output; ``np.take``'s wrapper costs 0.5 us a call)
    and the bins written through an ``[F, n + 1, 2]`` view of the output instead of fancy indexing."""

    def __init__(self, rfft: GatherRfft, frames: np.ndarray, out: np.ndarray):
        a, n, sub = rfft.a, rfft.n, rfft.sub
        count, value, prod = frames.shape[0], a.dtype, a.prod
        self.frames, self.stages = frames, sub.gather.stages
        self.r, self.frac = np.array(a.round, prod), np.array(a.frac, prod)
        # 16-bit values: each stage's arithmetic in float64, exactly (:meth:`_float_stages`), on the values
        # interleaved (real, imaginary) so that the twiddle product is one complex multiply; else [real | imag]
        self.exact_float = a.bits == 16
        if self.exact_float:
            where = 2 * (np.arange(2 * n) % n) + np.arange(2 * n) // n     # [real | imag] position -> interleaved
            columns = (np.arange(2 * n) % 2) * n + np.arange(2 * n) // 2   # interleaved column -> [real | imag]
        else:
            where = columns = np.arange(2 * n)
        self.where = where
        self.leaves = where_leaves = np.empty(2 * n, np.intp)
        where_leaves[where] = rfft.leaves.reshape(-1)               # the frame sample each position starts from
        self.z = np.empty((count, 2 * n), value)
        self.v, self.w, self.s = (np.empty((count, 2, n), prod) for _ in range(3))
        self.f = np.empty((count, 2 * n), np.float64)
        self.f_complex, self.t32 = self.f.view(np.complex128), np.empty((count, 2 * n), np.int32)
        # the stored values and their negations: a butterfly's signed terms are gathered from both halves
        self.signed = np.empty((count, 4 * n), value)
        self.t, self.negated = self.signed[:, :2 * n], self.signed[:, 2 * n:]
        self.terms = {p: np.empty((count, p, 2 * n), value) for p in {st.index.shape[0] for st in self.stages}}
        # an untwiddled first stage runs on the samples in frame order: the leaves' order goes into its gather
        self.fused = bool(self.stages) and not self.stages[0].twiddled and frames.shape[1] == 2 * n
        self.consts = []
        for i, st in enumerate(self.stages):
            index = rfft.leaves.reshape(-1)[st.index] if i == 0 and self.fused else where[st.index]
            signed = (index + np.where(st.sign < 0, 2 * n, 0))[:, columns]
            # the complex twiddle over 2^15 (exact: 15-bit values), for the float stages
            twiddle = _full((st.a[0] + 1j * st.b[1]) / 2.0 ** a.frac, (count, n)) if self.exact_float else None
            self.consts.append((np.array(st.div, prod), np.array(st.div / 2.0 ** a.frac), st.twiddled,
                                _full(st.a, (count, 2, n)), _full(st.b, (count, 2, n)), twiddle, signed))
        self.half = np.array(0.5)
        self._bind_split(rfft, count, out)

    def _bind_split(self, rfft: GatherRfft, count: int, out: np.ndarray) -> None:
        """The split's kept buffers and constants, every bin a column (:meth:`_split`): bin ``j`` is the sum row of
        ``k = j`` (``1 <= j < n/2``), the difference row of ``k = n - j`` (``n/2 <= j < n``: the C loop's second
        store wins at ``n/2``), or a DC bin (0 and n), and its gathered values ``[fpk.r, fpk.i, fpnk.r, fpnk.i]``
        (a DC bin: ``tdc.r`` and ``tdc.i`` as ``fpk.r`` and ``fpnk.r``)."""
        a, n = rfft.a, rfft.n
        h, prod, cols = n // 2, a.prod, n + 1
        j = np.arange(cols)
        low, high = (j >= 1) & (j < h), (j >= h) & (j < n)
        k = np.where(low, j, n - j)                         # the loop's k for a sum or difference bin
        tw = np.clip(k - 1, 0, max(h - 1, 0))
        s_r = np.where(low | high, rfft.tw_a[0][tw] if h else 0, 0)
        s_i = np.where(low | high, rfft.tw_b[1][tw] if h else 0, 0)
        dc0, dcn = j == 0, j == n
        pick = low | high
        self.gather = self.where[np.stack([np.where(pick, k, 0), np.where(pick, n + k, 0),  # fpk = tmp[k]
                                           np.where(pick, n - k, n), np.where(pick, 2 * n - k, 0)])]  # conj(tmp[n - k])
        self.conj = _full(np.array([1, 1, 1, -1], a.dtype)[:, None], (count, 4, cols))
        self.div = np.array(rfft.div, prod)
        # C_MUL(f2k, super twiddle) as [f2.r, f2.i] x [[s.r, s.i], [-s.i, s.r]]; at bin n a product by 2^frac,
        # which sround returns unchanged: f2.r = tdc.r - tdc.i
        coef = np.zeros((2, 2, cols), np.int64)
        coef[0, 0], coef[0, 1], coef[1, 0], coef[1, 1] = s_r, s_i, -s_i, s_r
        coef[0, 0, dcn] = 1 << a.frac
        self.coef = _full(coef.astype(prod), (count, 2, 2, cols))
        # bin = (f1 * sx + tw * st) >> 1: a sum (f1 + tw), a difference (f1.r - tw.r, tw.i - f1.i), DC as
        # (2 (tdc.r + tdc.i)) >> 1 and (2 (tdc.r - tdc.i)) >> 1 with zero imaginary parts
        sx = np.stack([np.select([dc0, high | low], [2, 1], 0), np.select([high, low, dc0], [-1, 1, 0], 0)])
        st = np.stack([np.select([dcn, high, low], [2, -1, 1], 0), np.where(low | high, 1, 0)])
        self.sx, self.st = _full(sx.astype(prod), (count, 2, cols)), _full(st.astype(prod), (count, 2, cols))
        self.g = np.empty((count, 4, cols), a.dtype)
        self.fv = np.empty((count, 4, cols), prod)
        self.f2, self.f1, self.twp = (np.empty((count, 2, cols), prod) for _ in range(3))
        self.prods = np.empty((count, 2, 2, cols), prod)
        self.one, self.bits = np.array(1, prod), np.array(a.bits, prod)
        self.bins = out.reshape(count, n + 1, 2).transpose(0, 2, 1)          # [count, 2, n + 1]
        # the views the split reads (a slice costs about 0.15 us a call)
        self.fpk, self.fpnk, self.f2_rows = self.fv[:, :2], self.fv[:, 2:], self.f2[:, :, None]
        self.pair = (self.prods[:, 0], self.prods[:, 1])

    def __call__(self) -> None:
        z = self.z
        if self.fused:
            src = self.frames                               # the samples, in frame order
        else:
            self.frames.take(self.leaves, 1, z, "wrap")
            src = z
        if self.exact_float:
            self._float_stages(src)
        else:
            self._integer_stages(src)
        self._split(z)

    def _float_stages(self, src: np.ndarray) -> None:
        """The stages of a 16-bit build in float64, exactly: ``C_FIXDIV`` ``(x (max // p) + 2^14) >> 15`` is
        ``floor(x (max // p) / 2^15 + 0.5)`` (products below 2^30, dyadic: no rounding), ``C_MUL``'s two sums one
        complex product by the twiddle over 2^15 (each product and sum exact; below 2^30, as the C code's int32
        sums never wrap for values halved by ``C_FIXDIV``), its ``sround`` the same floor; the result stored to
        int16 through int32 (a float past int16 has no defined cast)."""
        f, fc, half, t, t32, negated, signed, z = self.f, self.f_complex, self.half, self.t, self.t32, \
            self.negated, self.signed, self.z
        for _, scale, twiddled, _, _, twiddle, index in self.consts:
            copyto(f, src)
            src = z
            np.multiply(f, scale, f)                    # C_FIXDIV
            np.add(f, half, f)
            np.floor(f, f)
            if twiddled:
                np.multiply(fc, twiddle, fc)            # C_MUL, then sround
                np.add(f, half, f)
                np.floor(f, f)
                copyto(t32, f, casting="unsafe")
                copyto(t, t32, casting="unsafe")            # stored to int16 (wraps as C's store)
            else:
                copyto(t, f, casting="unsafe")              # a C_FIXDIV result: within int16
            np.negative(t, negated)                     # (wrapping alike: the sum is modulo 2^16)
            signed.take(index, 1, self.terms[index.shape[0]], "wrap")
            np.add.reduce(self.terms[index.shape[0]], axis=1, out=z)    # the signed sum, wrapping in int16

    def _integer_stages(self, src: np.ndarray) -> None:
        """The stages in the value and product types (a 32-bit build)."""
        v, w, s, r, frac, t, negated, signed, z = self.v, self.w, self.s, self.r, self.frac, self.t, self.negated, \
            self.signed, self.z
        v_flat, v_rows_swapped = v.reshape(z.shape), v[:, ::-1]
        for div, _, twiddled, a_full, b_full, _, index in self.consts:
            copyto(v_flat, src)
            src = z
            np.multiply(v, div, v)                      # C_FIXDIV: sround(x * (max / p))
            np.add(v, r, v)
            np.right_shift(v, frac, v)
            result = v
            if twiddled:                                    # C_MUL: sround(vr br - vi bi), sround(vr bi + vi br)
                np.multiply(v, a_full, w)
                copyto(s, v_rows_swapped)                   # the rows swapped, contiguous (a reversed view
                np.multiply(s, b_full, s)               # costs every operation on it twice the time)
                np.add(w, s, w)
                np.add(w, r, w)
                np.right_shift(w, frac, w)
                result = w
            copyto(t, result.reshape(t.shape), casting="unsafe")     # stored to the value type (wraps as C's)
            np.negative(t, negated)                     # (wrapping alike: the sum is modulo 2^bits)
            signed.take(index, 1, self.terms[index.shape[0]], "wrap")
            np.add.reduce(self.terms[index.shape[0]], axis=1, out=z)    # the signed sum, wrapping in the value type

    def _split(self, flat: np.ndarray) -> None:
        """The real split, every bin at once on ``[count, rows, n + 1]`` buffers: fpk and fpnk gathered (fpnk.i
        negated in the value type, as stored), ``C_FIXDIV`` by 2, ``f1k`` and ``f2k`` (sums of halves: no wrap),
        the super twiddle's ``C_MUL`` with its ``sround`` stored to the value type as ``(x << 1) >> bits`` (the bits
        ``frac .. 2 frac`` of ``x``, sign-extended), then ``HALF_OF`` of the signed sum in the product type (C's
        ``int``, as the scalar code), stored."""
        r, frac, g, v, f1, f2, tw, prods = self.r, self.frac, self.g, self.fv, self.f1, self.f2, self.twp, self.prods
        flat.take(self.gather, 1, g, "wrap")
        np.multiply(g, self.conj, g)                    # fpnk.i = -tmp[n - k].i, stored
        copyto(v, g)
        np.multiply(v, self.div, v)                     # C_FIXDIV(fpk, 2), C_FIXDIV(fpnk, 2)
        np.add(v, r, v)
        np.right_shift(v, frac, v)
        fpk, fpnk = self.fpk, self.fpnk
        np.subtract(fpk, fpnk, f2)                      # C_SUB(f2k, fpk, fpnk)
        np.add(fpk, fpnk, f1)                           # C_ADD(f1k, fpk, fpnk)
        np.multiply(self.f2_rows, self.coef, prods)     # [f2.r, f2.i] x the twiddle rows
        np.add(*self.pair, tw)
        np.add(tw, r, tw)
        np.left_shift(tw, self.one, tw)                 # sround, stored: ((x + r) << 1) >> bits
        np.right_shift(tw, self.bits, tw)
        np.multiply(f1, self.sx, f1)
        np.multiply(tw, self.st, tw)
        np.add(f1, tw, f1)
        np.right_shift(f1, self.one, out=self.bins, casting="unsafe")      # HALF_OF in C's int, stored


def _full(values: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """``values`` broadcast to ``shape``, C-contiguous (a kept same-shaped operand)."""
    return np.ascontiguousarray(np.broadcast_to(values, shape))

