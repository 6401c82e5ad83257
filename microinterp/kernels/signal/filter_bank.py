"""SignalFilterBank: triangular mel channels over a power spectrum (``signal/src/filter_bank.cc``,
``signal/micro/kernels/filter_bank.cc``).

Options: ``num_channels``. Inputs (TFLM's Prepare): the 1-D UINT32 spectrum and five 1-D INT16 tensors -- weights,
unweights, channel frequency starts, channel weight starts, channel widths (``num_channels + 1`` entries); output
1-D UINT64. Eval (``FilterbankAccumulateChannels``) walks channels 0..num_channels: for each, over its width,
``w += weight * spectrum`` and ``u += unweight * spectrum`` in uint64 (an int16 weight converted to uint64, so a
negative one wraps), then ``work[i] = w``, ``w = u``, ``u = 0``; the output is ``work[1:]`` (a persistent work area
of ``num_channels + 1`` uint64 in the tail). Index ranges are checked here (TFLM would read out of bounds).

With constant tables (the usual case) the walk is an exact float64 matrix product (:class:`Taps`): ``work[i]`` is
channel ``i``'s weighted sum plus channel ``i - 1``'s unweighted one.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .._qutil import copyto
from ..contract import PURE, Kernel
from ..streams import BIND
from ._common import U32, U64, options


@dataclass(frozen=True)
class FilterBankData:
    channels: int
    work: np.ndarray = field(repr=False)
    taps: Taps | None = field(default=None, repr=False)      # constant tables: the vectorized walk


@dataclass(frozen=True)
class Taps:
    """Constant tables as one dense ``[spectrum bins, channels + 1]`` float64 matrix whose column ``i`` holds channel
    ``i``'s weights plus channel ``i - 1``'s unweights (signed int16 values): ``work[i]`` is then one column's sum.

    The C loop adds ``uint64(weight) * spectrum`` modulo 2^64: with a weight of ``-w`` that is ``-w * spectrum``
    modulo 2^64, so the exact integer sum, taken modulo 2^64 (int64), gives the same bits. float64 holds every
    partial sum exactly, whatever order a BLAS product adds them in, while the column's absolute sum times the
    largest spectrum value stays below 2^53 (``whole``: mel tables of Q12 weights, with a margin of 2^7); other
    tables split every spectrum value into its 16-bit halves, two products recombined in int64 (a half times a
    column stays below ``2^16 * 2^16 * bins``)."""

    matrix: np.ndarray          # [bins, channels + 1] float64
    channels: int
    whole: bool                 # one product of the spectrum itself is exact

    @classmethod
    def build(cls, weights, unweights, starts, wstarts, widths, channels: int, bins: int) -> Taps:
        matrix = np.zeros((bins, channels + 1), np.float64)
        for i in range(channels + 1):
            width = max(int(widths[i]), 0)
            f, w = int(starts[i]), int(wstarts[i])
            matrix[f:f + width, i] += np.asarray(weights[w:w + width], np.float64)
            if i < channels:        # channel i's unweighted sum goes to work[i + 1]; the last one is dropped
                matrix[f:f + width, i + 1] += np.asarray(unweights[w:w + width], np.float64)
        bound = float(np.abs(matrix).sum(axis=0).max(initial=0.0)) * float(U32)
        return cls(matrix, channels, bound < 2.0 ** 53)

    def sums(self, spectrum: np.ndarray, work: np.ndarray) -> None:
        """``work[..., i]`` = channel i's weighted sum + channel i - 1's unweighted sum, modulo 2^64 (every leading
        axis a spectrum of its own: streams)."""
        if self.whole:
            total = np.matmul(spectrum.astype(np.float64), self.matrix).astype(np.int64)
        else:
            s = spectrum.astype(np.int64)
            hi, lo = (s >> 16).astype(np.float64), (s & 0xFFFF).astype(np.float64)
            total = np.matmul(hi, self.matrix).astype(np.int64) << 16
            total += np.matmul(lo, self.matrix).astype(np.int64)
        work[...] = total.view(np.uint64)


class FilterBank(Kernel):
    ops = ("SignalFilterBank",)
    traits = PURE
    #: streams: its bound call (constant tables) runs every stream's spectrum at once, else invoke_streams
    streams = BIND

    def prepare(self, ctx, op) -> FilterBankData:
        n = int(options(ctx, op, ("num_channels",))["num_channels"])
        ctx.check_io_count(op, 6, 1)
        ts = [ctx.require_input(op, k) for k in range(6)]
        y = ctx.output(op, 0)
        if any(len(t.shape) != 1 for t in ts) or len(y.shape) != 1:
            raise ctx.fail(op, "every input and the output must be 1-D")
        if ts[0].type_name != "UINT32" or any(t.type_name != "INT16" for t in ts[1:]) or y.type_name != "UINT64":
            raise ctx.fail(op, "UINT32 spectrum, INT16 tables, UINT64 output")
        if n < 0 or any(t.num_elements < n + 1 for t in ts[3:]) or y.num_elements > n:
            # TFLM's Eval copies the output from work_area + 1, which holds n channels: a longer output would read
            # past the work area
            raise ctx.fail(op, f"{n} channels do not fit the channel tables / output of {y.num_elements}")
        work = ctx.arena.allocate_persistent(8 * (n + 1)).view(np.uint64) if n + 1 else np.zeros(0, np.uint64)
        if all(t.data is not None for t in ts[1:]):
            starts, wstarts, widths = (np.asarray(t.data, np.int64) for t in ts[3:])
            for i in range(n + 1):
                if widths[i] > 0 and (starts[i] < 0 or wstarts[i] < 0 or starts[i] + widths[i] > ts[0].num_elements
                                      or wstarts[i] + widths[i] > min(ts[1].num_elements, ts[2].num_elements)):
                    raise ctx.fail(op, f"channel {i} reads outside the spectrum or the weights")
            return FilterBankData(n, work, Taps.build(*(t.data for t in ts[1:]), n, ts[0].num_elements))
        return FilterBankData(n, work)

    def bind(self, ctx, op, data: FilterBankData):
        """Constant tables whose one product is exact (:class:`Taps`, ``whole``), on fixed views: the spectrum
        into a kept float64 row, the product into a kept row, its int64 cast into the work area (over streams, a
        kept one per stream: the area is written whole at every invoke), the channels copied out (None otherwise:
        :meth:`invoke`)."""
        taps = data.taps
        if taps is None or not taps.whole:
            return None
        x, out = ctx.input(op, 0), ctx.output(op, 0)
        lead = x.shape[:-1]                 # a stream axis (:mod:`..streams`): a work row of its own per stream
        spectrum, total = np.empty(x.shape, np.float64), np.empty((*lead, data.channels + 1), np.float64)
        whole = data.work if not lead else np.empty((*lead, data.channels + 1), np.uint64)
        work, channels = whole.view(np.int64), whole[..., 1:1 + out.shape[-1]]
        matrix, matmul = taps.matrix, np.matmul

        def call() -> None:
            copyto(spectrum, x)
            matmul(spectrum, matrix, total)
            copyto(work, total, casting="unsafe")       # exact integers below 2^53, modulo 2^64 as int64
            copyto(out, channels)
        return call

    def invoke_streams(self, ctx, op, data: FilterBankData, state: None) -> None:
        """Streams (:mod:`..streams`): every stream's spectrum at once with constant tables, else one by one."""
        x, out = ctx.input(op, 0), ctx.output(op, 0)
        work = np.empty((x.shape[0], data.channels + 1), np.uint64)
        if data.taps is not None:
            data.taps.sums(x, work)
        else:
            tables = [ctx.input(op, k) for k in range(1, 6)]       # a table given at invoke has a stream axis
            for s in range(x.shape[0]):
                _walk(x[s], [t[s] if t.ndim > 1 else t for t in tables], data.channels, work[s])
        out[...] = work[:, 1:1 + out.shape[1]]

    def invoke(self, ctx, op, data: FilterBankData) -> None:
        if data.taps is not None:
            data.taps.sums(ctx.input(op, 0), data.work)
            out = ctx.output(op, 0)
            out[...] = data.work[1:1 + out.shape[0]]
            return
        _walk(ctx.input(op, 0), [ctx.input(op, k) for k in range(1, 6)], data.channels, data.work)
        out = ctx.output(op, 0)
        out[...] = data.work[1:1 + out.shape[0]]


def _walk(spectrum: np.ndarray, tables: list[np.ndarray], channels: int, work: np.ndarray) -> None:
    """The C loop on one spectrum, for tables given at invoke (their ranges are checked as they are read)."""
    spectrum = [int(v) for v in spectrum]
    weights, unweights, starts, wstarts, widths = ([int(v) for v in t] for t in tables)
    w = u = 0
    for i in range(channels + 1):
        f0, w0 = starts[i], wstarts[i]
        for j in range(widths[i]):
            s = spectrum[f0 + j]
            w = (w + (weights[w0 + j] & U64) * s) & U64
            u = (u + (unweights[w0 + j] & U64) * s) & U64
        work[i] = w
        w, u = u, 0


KERNEL = FilterBank()
